"""The hook the default plugin ``summary`` calls and declares (``msprobe_add_hookspecs``): what it asks the
framework plugins when a cross-framework run paired few rows.

An implementation is marked ``@hookimpl(optionalhook=True)``: with the summary turned off the hook is not declared.
"""

from __future__ import annotations

from msprobe_core.plugin import hookspec


@hookspec(firstresult=True)
def msprobe_mapping_options(framework: str) -> tuple[tuple[str, str], ...] | None:
    """The options that pair the names of ``framework``'s dumps with another framework's, each with the rows it
    pairs (``"api"`` or ``"module"``), e.g. ``(("-am", "api"), ("-cm", "module"))``; ``None``: none of this plugin's.

    Asked by the ``summary`` plugin when most rows of a cross-framework run found no counterpart: the commands it
    suggests to try name these options (the most rows they would pair first), then ``--auto-map``. Declared by
    the default plugin ``summary``.

    .. versionadded:: 0.1
    """
