"""The metric stage for a matched pair of tables: the columns of the result before its verdicts.

The metric set of the table's mode (``msprobe_register_metrics``) computes the metric columns;
for a set that is not ``whole_table`` the identity and statistics columns of both sides come first
(:func:`msprobe_core.result.base_columns`), the stack and ``Data_name`` columns after, in the
order the column registry lays out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import result_columns as C
from ..errors import UsageError
from ..host.specs import MetricContext
from ..model import MODE_TENSOR, CompareOptions, DumpTable, MatchResult, ResultNotes
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
    if spec is None:
        raise UsageError(f"no installed plugin computes metrics for {mode} mode")
    notes = match.notes  # the golden rows no target row took and a mapper's account, for the run's summary
    meta = ResultNotes(target.source, golden.source, attachments=list(notes.attachments),
                       pairing=dict(notes.pairing) if notes.pairing else None, summary_notes=list(notes.summary_notes))
    if spec.whole_table:
        columns = spec.compute(MetricContext(target, golden, match, {}, options, meta, host))
        n = len(next(iter(columns.values()), ()))
        return list(columns), columns, [0] * n, meta
    columns = base_columns(target, golden, match)
    columns.update(spec.compute(MetricContext(target, golden, match, columns, options, meta, host)))
    group_of_row = [target.row_api[i] for i in match.target]
    with_stack = target.stack is not None
    if with_stack:
        columns[C.STACK_INFO] = stack_column(target, match)
    if mode == MODE_TENSOR:
        columns[C.DATA_NAME] = data_name_column(target, golden, match)
    extra = [m.column for m in host.tensor_metrics_for(options)] if mode == MODE_TENSOR else []
    return result_columns(mode, with_stack, extra, host.columns), columns, group_of_row, meta
