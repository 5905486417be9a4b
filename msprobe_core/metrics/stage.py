"""The metric stage for a matched pair of tables: the columns of the result before its verdicts.

The metric set of the table's mode (``msprobe_register_metrics``) computes the metric columns;
for a set that is not ``whole_table`` the identity and statistics columns of both sides come first
(:func:`msprobe_core.result.base_columns`), the stack and ``Data_name`` columns after, in the
order the column registry lays out. A mode whose metric set is a turned-off default plugin's (``-p
no:tensor_metrics``) still gets its table: every metric cell ``N/A``, and one warning saying whose set is off.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .. import result_columns as C
from ..errors import UsageError
from ..host.defaults import turned_off_note, turned_off_specs
from ..host.specs import MetricContext, MetricSpec, always_applies
from ..model import MODE_TENSOR, NA, CompareOptions, DumpTable, MatchResult, ResultNotes
from ..result import base_columns, data_name_column, result_columns, stack_column

if TYPE_CHECKING:
    from ..host.registry import PluginHost


def metric_columns(
    target: DumpTable, golden: DumpTable, match: MatchResult, options: CompareOptions, host: PluginHost
) -> tuple[list[str], dict[str, Any], list[int], ResultNotes]:
    """``(column order, columns, target API of each row, meta)`` of the result of matched pairs, verdicts to come.

    A metric set declared ``whole_table`` gives every column itself (kernel dumps: msprobe's kernel table,
    the classic interface's tables), in its order, and all rows count as one API group.
    """
    mode = target.mode
    spec = host.metric_set(mode, options)
    off = _turned_off_owner(mode, host) if spec is None else None
    if spec is None and off is None:
        raise UsageError(f"no installed plugin computes metrics for {mode} mode")
    if off is not None:
        logging.getLogger("msprobe").warning("%s mode's metric set is not computed: every metric cell says %s, the "
                                             "verdicts judge the other columns only (%s)", mode, NA, turned_off_note(off))
    notes = match.notes  # the golden rows no target row took and a mapper's account, for the run's summary
    meta = ResultNotes(target.source, golden.source, attachments=list(notes.attachments),
                       pairing=dict(notes.pairing) if notes.pairing else None, summary_notes=list(notes.summary_notes))
    if spec is not None and spec.whole_table:
        columns = spec.compute(MetricContext(target, golden, match, {}, options, meta, host))
        n = len(next(iter(columns.values()), ()))
        return list(columns), columns, [0] * n, meta
    columns = base_columns(target, golden, match)
    if spec is not None:
        columns.update(spec.compute(MetricContext(target, golden, match, columns, options, meta, host)))
    group_of_row = [target.row_api[i] for i in match.target]
    with_stack = target.stack is not None
    if with_stack:
        columns[C.STACK_INFO] = stack_column(target, match)
    if mode == MODE_TENSOR:
        columns[C.DATA_NAME] = data_name_column(target, golden, match)
    extra = [m.column for m in host.tensor_metrics_for(options)] if mode == MODE_TENSOR else []
    order = result_columns(mode, with_stack, extra, host.columns)
    if off is not None:  # the turned-off set's metric columns, and the plugin metrics it would have run
        metrics = {*host.columns.names(mode=mode, kind=C.METRIC), *extra}
        columns.update({name: [NA] * len(match.target) for name in order if name in metrics and name not in columns})
    return order, columns, group_of_row, meta


def _turned_off_owner(mode: str, host: PluginHost) -> str | None:
    """The turned-off default plugin whose metric set computes every table of ``mode``, else ``None``."""
    declared = turned_off_specs("msprobe_register_metrics", sorted(host.disabled), named=True)
    return next((spec.plugin for spec in declared if isinstance(spec, MetricSpec) and spec.mode == mode
                 and spec.applies is always_applies and not spec.whole_table), None)
