"""What a classic run carries through the core engine's stages: :class:`ClassicSettings` in the options'
``plugin_data["classic"]``, :class:`ClassicFindings` in the result's (``ctx.meta.plugin_data["classic"]``).

Every hook of this plugin is active only for options built by the classic interface
(:func:`is_classic`); a ``msprobe compare -tp … -gp …`` run never sees them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the name the classic plugin keeps its data under (``CompareOptions.plugin_data``, ``ResultNotes.plugin_data``)
PLUGIN = "classic"


@dataclass(frozen=True)
class ClassicSettings:
    """The classic interface's own settings of one compare (what has no core option).

    ``framework``: the ``-f`` framework, for dumps that name none; ``highlight``: colour rows
    (``-hl``, the default; ``-nhl`` off); ``auto_analyze``: write the advisor (off with ``-c``);
    ``stack``: write ``NPU_Stack_Info``; ``stack_path``: the stack file compare.json names
    (``None``: the ``stack.json`` next to the NPU dump).
    """

    framework: str | None = None
    highlight: bool = True
    auto_analyze: bool = True
    stack: bool = False
    stack_path: Path | None = None


@dataclass
class ClassicFindings:
    """What the classic metric set and verdict rules leave with a result for the rules and the writer after them.

    ``magnitude_warnings``: per row of a statistics result, whether a diff is large against its statistic
    (the ``Warning`` verdict); ``fills``: per row of a highlighted result, its colour
    (``highlight.NONE``/``RED``/``YELLOW``) for the workbook writer.
    """

    magnitude_warnings: list[bool] | None = None
    fills: list[Any] | None = None


def settings_of(options: Any) -> ClassicSettings | None:
    """The classic settings of a run (``None``: not a classic run)."""
    return options.plugin_data.get(PLUGIN)


def is_classic(options: Any) -> bool:
    """Whether these options come from the classic interface."""
    return PLUGIN in options.plugin_data


def findings_of(meta: Any) -> ClassicFindings:
    """The classic findings kept with a result (``meta``: its :class:`~msprobe_core.plugin.ResultNotes`)."""
    return meta.plugin_data.setdefault(PLUGIN, ClassicFindings())


#: the classic workbook writer (registered by :mod:`.plugin`; the front end asks for it by this name)
WRITER = "classic-xlsx"
#: the classic mapper's name (registered by :mod:`.plugin`; :mod:`.matching` hands on after it)
CLASSIC_MAPPER = "classic"
