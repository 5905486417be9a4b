"""The hook the default plugin ``tensor_metrics`` calls and declares (``msprobe_add_hookspecs``): its tensor stage
tells the plugins that watch the computed rows of a tensor-mode table (the default plugin ``tensor_log``).

An implementation is marked ``@hookimpl(optionalhook=True)``: with this plugin turned off the hook is not declared,
and tensor mode computes no metric cells to watch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msprobe_core.plugin import hookspec

if TYPE_CHECKING:
    from msprobe_core.plugin import CompareOptions, DumpTable, MatchResult, PluginHost


@hookspec
def msprobe_tensor_rows_compared(target: DumpTable, golden: DumpTable, match: MatchResult,
                                 columns: dict[str, list[Any]], names: list[str], options: CompareOptions,
                                 host: PluginHost) -> None:
    """A tensor-mode table's metric columns are computed: look at them (log, count), change nothing.

    Called once per tensor-mode job (per chunk of a streamed one), in the process that ran its tensor stage,
    after every tensor metric of the rows is in ``columns`` (column name -> one cell per row of ``match``, in
    ``match`` order); ``names`` are the metric columns in the table's order. The default plugin ``tensor_log``
    logs each row with ``-tensor_log``. The return value is ignored; an installed plugin's implementation that
    raises is named in a warning (once) and the run goes on. Declared by the default plugin ``tensor_metrics``.

    .. versionadded:: 0.1
    """
