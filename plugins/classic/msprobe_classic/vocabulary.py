"""The classic tables' vocabulary: their column names and the texts of their cells (msprobe 8.3.3's).

Shared by the table's assembly (:mod:`.table`), the tensor metrics (:mod:`.tensor`), the verdicts and the
advisor, so that none of them needs another's module for a name.
"""

from __future__ import annotations

from msprobe_core.plugin import MODE_MD5, MODE_STATISTICS, MODE_TENSOR
from msprobe_core.plugin import result_columns as C

BASIC = C.COMMON_COLUMNS
TENSOR_METRICS = C.TENSOR_METRIC_COLUMNS
STATS_DIFFS = C.STATS_METRIC_COLUMNS
STAT_VALUES = C.STAT_VALUE_COLUMNS
MD5_COLUMNS = C.MD5_COLUMNS
REQ_GRAD_CONSIST = C.REQUIRES_GRAD_CONSISTENT
#: the verdict of the classic tensor tables: ``No`` is an error (declared with the tensor metric set, so that
#: the summary, the report and ``--fail-on`` read it)
ACCURACY_COLUMN = C.ColumnSpec("Accuracy Reached or Not", C.VERDICT, (MODE_TENSOR,),
                               levels=(("No", "error"), ("Unmatched", "warning")))
ACCURACY = ACCURACY_COLUMN.name
RESULT = C.RESULT
ERR = C.ERR_MESSAGE
STACK = C.STACK_INFO
DATA_NAME = C.DATA_NAME
#: the columns the verdict rules give, by mode
VERDICT_COLUMNS = {MODE_TENSOR: (ACCURACY,), MODE_STATISTICS: (RESULT, ERR), MODE_MD5: (RESULT,)}

NO_BENCH = "No bench data matched."
NEED_CHECK = "Need double check api accuracy. "
REQ_GRAD_MSG = "Requires_grad inconsistent. "
WARNING = "Warning"
PASS = "pass"
DIFFERENT = "Different"
NAN_TEXT = "Nan"
MAGNITUDE = 0.5
EPSILON = 1e-10
