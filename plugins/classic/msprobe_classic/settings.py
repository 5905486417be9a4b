"""What a classic run carries through the core engine's stages: :class:`ClassicSettings` in ``options.extra``.

Every hook of this plugin is active only for options built by the classic interface
(:func:`is_classic`); a ``msprobe compare -tp … -gp …`` run never sees them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the ``CompareOptions.extra`` key of a classic run
KEY = "classic"


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


def settings_of(options: Any) -> ClassicSettings | None:
    """The classic settings of a run (``None``: not a classic run)."""
    return options.extra.get(KEY)


def is_classic(options: Any) -> bool:
    """Whether these options come from the classic interface."""
    return KEY in options.extra


#: the classic workbook writer (registered by :mod:`.plugin`; the front end asks for it by this name)
WRITER = "classic-xlsx"
