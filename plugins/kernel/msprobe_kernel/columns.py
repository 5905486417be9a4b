"""The columns of a kernel table, in msprobe's order: the core's columns, and the two of this plugin.

The names come from the core's column registry (:mod:`msprobe_core.result_columns`); the
``statistic.csv`` file of each side is this plugin's own column, declared here and registered
with the ``kernel`` metric set (``MetricSpec.columns``).
"""

from __future__ import annotations

from msprobe_core.plugin import result_columns as C
from msprobe_core.unstable import MODE_KERNEL

#: the ``statistic.csv`` a row of a statistics kernel dump comes from, per side
NPU_CSV_FILE = C.ColumnSpec("NPU CSV File", C.IDENTITY, (MODE_KERNEL,), side=C.NPU, of="csv_file")
BENCH_CSV_FILE = C.ColumnSpec("Bench CSV File", C.IDENTITY, (MODE_KERNEL,), side=C.BENCH, of="csv_file")

_BASE_COLUMNS = [
    C.NPU_NAME, C.BENCH_NAME, C.NPU_DTYPE, C.BENCH_DTYPE, C.NPU_SHAPE, C.BENCH_SHAPE,
    *C.STAT_VALUE_COLUMNS, C.ACCURACY_REACHED, C.ERR_MESSAGE,
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
DECLARED = (*NPY_COLUMNS, *STAT_DIFF_COLUMNS, NPU_CSV_FILE, BENCH_CSV_FILE)

#: per side: what a column holds -> its name (``SIDE[C.NPU]["max"]`` is ``NPU max``)
SIDE = {
    side: {**{of: C.CORE_COLUMNS.column_of(side, of) for of in ("name", "dtype", "shape", *C.STAT_NAMES)},
           "csv_file": csv.name}
    for side, csv in ((C.NPU, NPU_CSV_FILE), (C.BENCH, BENCH_CSV_FILE))
}
