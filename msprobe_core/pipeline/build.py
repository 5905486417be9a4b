"""Building a result table from matched rows: the metric stage, then the verdict stage."""

from __future__ import annotations

from ..host.registry import PluginHost
from ..host.specs import VerdictContext
from ..metrics.stage import metric_columns
from ..model import CompareOptions, DumpTable, MatchResult
from ..result import ResultTable
from ..verdicts.stage import judge_rows

#: the warning of a job none of whose rows could be matched
NO_MATCH = "Can`t match any op. No compare result file generated."


def build_result(
    target: DumpTable, golden: DumpTable, match: MatchResult, options: CompareOptions, host: PluginHost
) -> ResultTable:
    """Metrics and verdicts for matched pairs, as a finished result table.

    The metric stage gives the columns (:func:`~msprobe_core.metrics.stage.metric_columns`), the verdict
    rules of the mode then add theirs (:func:`~msprobe_core.verdicts.stage.judge_rows`).
    """
    names, columns, group_of_row, meta = metric_columns(target, golden, match, options, host)
    ctx = VerdictContext(target.mode, target, golden, match, columns, group_of_row, options, meta)
    names = judge_rows(names, columns, ctx, host)
    return ResultTable(target.mode, names, columns, group_of_row, match, meta=meta)
