"""The columns of a kernel table, in msprobe's order: the core's columns, and the three of this plugin.

The names come from the core's column registry (:mod:`msprobe_core.result_columns`); the
``statistic.csv`` file of each side and the ``Accuracy Reached or Not`` verdict are this plugin's own
columns, declared here and registered with the ``kernel`` metric set (``MetricSpec.columns``), as are
the kernel mode's main and plotted metrics.
"""

from __future__ import annotations

from msprobe_core.plugin import result_columns as C

#: ``DumpTable.kind`` and dump mode of kernel tables
KIND = "kernel"

#: the ``statistic.csv`` a row of a statistics kernel dump comes from, per side
NPU_CSV_FILE = C.ColumnSpec("NPU CSV File", C.IDENTITY, (KIND,), side=C.NPU, of="csv_file")
BENCH_CSV_FILE = C.ColumnSpec("Bench CSV File", C.IDENTITY, (KIND,), side=C.BENCH, of="csv_file")
#: msprobe's verdict of a kernel row: ``No`` is an error, ``Unmatched`` a warning (``Yes``, ``None``: a pass)
ACCURACY_REACHED = C.ColumnSpec("Accuracy Reached or Not", C.VERDICT, (KIND,),
                                levels=(("No", "error"), ("Unmatched", "warning")))
#: the summary ranks kernel rows by Cosine; the report plots it and MaxRelativeErr along execution order
RANKED = (C.ColumnSpec(C.COSINE, C.METRIC, (KIND,), ranks=(KIND,), plots=(KIND,)),
          C.ColumnSpec(C.MAX_RELATIVE_ERR, C.METRIC, (KIND,), plots=(KIND,)))

_BASE_COLUMNS = [
    C.NPU_NAME, C.BENCH_NAME, C.NPU_DTYPE, C.BENCH_DTYPE, C.NPU_SHAPE, C.BENCH_SHAPE,
    *C.STAT_VALUE_COLUMNS, ACCURACY_REACHED.name, C.ERR_MESSAGE,
]
#: the metric columns of a tensor (npy) kernel compare
METRIC_COLUMNS = list(C.TENSOR_METRIC_COLUMNS)
#: the diffs and relative errors of a statistics kernel compare
STAT_DIFF_COLUMNS = list(C.STATS_METRIC_COLUMNS)
#: Columns of a tensor (npy) kernel compare, in msprobe's order.
NPY_COLUMNS = _BASE_COLUMNS + METRIC_COLUMNS
#: Columns of a statistics (statistic.csv) kernel compare, in msprobe's order.
STATISTIC_COLUMNS = _BASE_COLUMNS + STAT_DIFF_COLUMNS + [NPU_CSV_FILE.name, BENCH_CSV_FILE.name]
#: every column a kernel table may have, as the ``kernel`` metric set declares them
DECLARED = (*RANKED, ACCURACY_REACHED, *NPY_COLUMNS, *STAT_DIFF_COLUMNS, NPU_CSV_FILE, BENCH_CSV_FILE)


def is_kernel_header(columns: object) -> bool:
    """Whether a result header read back is a kernel table's: the verdict column and a Cosine or Max diff, and
    neither ``Result`` nor ``Requires_grad Consistent`` (the classic interface's tensor tables have the same
    verdict column, and the requires_grad columns a kernel dump lacks)."""
    cols = set(columns)  # type: ignore[call-overload]
    return (ACCURACY_REACHED.name in cols and C.RESULT not in cols and C.REQUIRES_GRAD_CONSISTENT not in cols
            and (C.COSINE in cols or C.MAX_DIFF in cols))

#: per side: what a column holds -> its name (``SIDE[C.NPU]["max"]`` is ``NPU max``)
SIDE = {
    side: {**{of: C.CORE_COLUMNS.column_of(side, of) for of in ("name", "dtype", "shape", *C.STAT_NAMES)},
           "csv_file": csv.name}
    for side, csv in ((C.NPU, NPU_CSV_FILE), (C.BENCH, BENCH_CSV_FILE))
}
