"""The default plugin ``statistics_metrics``: the metric columns of statistics mode (``Max diff`` …
``NormRelativeErr``, from the four dumped statistics of each pair) and md5 mode's (none: its verdicts compare the
checksums themselves).

It registers both metric sets through ``msprobe_register_metrics``, as a third party's would; the differences are
computed column-wise by :mod:`.diffs`. Turned off (``-p no:statistics_metrics``), a statistics compare still writes
its table: the metric cells say ``N/A`` and the run warns once that this plugin is off (an md5 table has no metric
column: it is written as it always is, after the same warning).
"""

from __future__ import annotations

from typing import Any

from msprobe_core.plugin import MODE_MD5, MODE_STATISTICS, MetricSpec, Register, TensorMetricSpec, hookimpl


def _stats_columns(ctx: Any) -> dict[str, list[Any]]:
    # the differences (numpy) load when a statistics table is compared, not when the plugins register
    from msprobe_core.plugin import result_columns as C

    from .diffs import stat_diffs

    data = ctx.columns
    frameworks = ctx.match.notes.frameworks
    parse = frameworks[0].parse_statistic if frameworks else None
    out: dict[str, list[Any]] = {}
    for stat, diff_col, rel_col in zip(C.STAT_NAMES, C.STAT_DIFF_COLUMNS, C.STAT_RELATIVE_COLUMNS):
        diff, rel = stat_diffs(data[C.stat_column(C.NPU, stat)], data[C.stat_column(C.BENCH, stat)], parse)
        out[diff_col] = diff
        out[rel_col] = rel
    return out


def _md5_columns(ctx: Any) -> dict[str, list[Any]]:
    return {}


@hookimpl
def msprobe_register_metrics(register: Register[MetricSpec | TensorMetricSpec]) -> None:
    """The metric sets of statistics and md5 mode."""
    register(MetricSpec(MODE_STATISTICS, _stats_columns, splittable=True))
    register(MetricSpec(MODE_MD5, _md5_columns, splittable=True))
