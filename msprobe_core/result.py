"""Assembling the result table: columns in msprobe's order, cell values as it writes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .model import MODE_MD5, MODE_STATISTICS, MODE_TENSOR, NA, DumpTable, MatchResult

COMMON_COLUMNS = [
    "NPU Name",
    "Bench Name",
    "NPU Dtype",
    "Bench Dtype",
    "NPU Tensor Shape",
    "Bench Tensor Shape",
    "NPU Requires_grad",
    "Bench Requires_grad",
]
TENSOR_METRIC_COLUMNS = [
    "Cosine",
    "EucDist",
    "MaxAbsErr",
    "MaxRelativeErr",
    "One Thousandth Err Ratio",
    "Five Thousandths Err Ratio",
]
STATS_METRIC_COLUMNS = [
    "Max diff",
    "Min diff",
    "Mean diff",
    "L2norm diff",
    "MaxRelativeErr",
    "MinRelativeErr",
    "MeanRelativeErr",
    "NormRelativeErr",
]
STAT_VALUE_COLUMNS = [
    "NPU max",
    "NPU min",
    "NPU mean",
    "NPU l2norm",
    "Bench max",
    "Bench min",
    "Bench mean",
    "Bench l2norm",
]
MD5_COLUMNS = ["NPU MD5", "BENCH MD5"]
TAIL_COLUMNS = ["Requires_grad Consistent", "Result", "Err_message"]
STACK_COLUMN = "NPU_Stack_Info"
DATA_NAME_COLUMN = "Data_name"


def result_columns(mode: str, with_stack: bool, extra_metrics: list[str] | None = None) -> list[str]:
    """Column headers, in order, for a result table of ``mode``."""
    cols = list(COMMON_COLUMNS)
    if mode == MODE_TENSOR:
        cols += TENSOR_METRIC_COLUMNS + list(extra_metrics or []) + STAT_VALUE_COLUMNS
    elif mode == MODE_STATISTICS:
        cols += STATS_METRIC_COLUMNS + STAT_VALUE_COLUMNS
    elif mode == MODE_MD5:
        cols += MD5_COLUMNS
    cols += TAIL_COLUMNS
    if with_stack:
        cols.append(STACK_COLUMN)
    if mode == MODE_TENSOR:
        cols.append(DATA_NAME_COLUMN)
    return cols


@dataclass
class ResultTable:
    """A finished (or finishing) result: ordered columns of cell values, plus provenance."""

    mode: str
    columns: list[str]
    data: dict[str, list[Any]]
    group_of_row: list[int]
    pairs: MatchResult | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.group_of_row)

    def rows(self):
        """Iterate rows as lists of cells in column order."""
        cols = [self.data[c] for c in self.columns]
        return zip(*cols)

    def to_dataframe(self):
        """The table as a pandas DataFrame (object columns, values as written)."""
        import pandas as pd

        return pd.DataFrame({c: self.data[c] for c in self.columns}, columns=self.columns)


def _pick(values: list[Any], idx: list[int], missing: Any = NA, none: Any = NA) -> list[Any]:
    """``values[j]`` for each ``j`` of ``idx`` (``missing`` where ``j`` is -1, ``none`` for ``None`` values)."""
    import numpy as np  # lazily: the column names of this module are read by light start-up paths

    n = len(values)
    arr = np.empty(n + 1, dtype=object)
    arr[:n] = values
    arr[n] = missing
    if none is not None:
        arr[:n][arr[:n] == None] = none  # noqa: E711 - elementwise comparison on an object array
    where = np.asarray(idx, dtype=np.int64)
    where[where < 0] = n
    return arr.take(where).tolist()


def numeric_column(values: list[Any]) -> list[Any]:
    """A statistics column as msprobe's table holds it: all ints become floats when the column is all numbers.

    msprobe builds each statistics column with pandas, which stores a column holding
    only ints and floats (no text, ``N/A``, ``None`` or bool) as float64, so an int
    statistic next to float ones reads ``63.0``; the statistics diffs and the
    written cells then see that float.
    """
    has_float = False
    for v in values:
        t = type(v)
        if t is float:
            has_float = True
        elif t is not int:
            return values
    if not has_float:
        return values
    return [float(v) for v in values]


def base_columns(target: DumpTable, golden: DumpTable, match: MatchResult) -> dict[str, list[Any]]:
    """Name, dtype, shape, requires_grad and statistics cells of both sides."""
    ti, gi = match.target, match.golden
    data: dict[str, list[Any]] = {
        "NPU Name": _pick(target.name, ti),
        "Bench Name": _pick(golden.name, gi),
        "NPU Dtype": _pick(target.dtype, ti),
        "Bench Dtype": _pick(golden.dtype, gi),
        "NPU Tensor Shape": _pick(target.shape, ti),
        "Bench Tensor Shape": _pick(golden.shape, gi),
        "NPU Requires_grad": _pick(target.requires_grad, ti),
        "Bench Requires_grad": _pick(golden.requires_grad, gi),
    }
    for side, table, idx in (("NPU", target, ti), ("Bench", golden, gi)):
        data[f"{side} max"] = numeric_column(_pick(table.max, idx, none=None))
        data[f"{side} min"] = numeric_column(_pick(table.min, idx, none=None))
        data[f"{side} mean"] = numeric_column(_pick(table.mean, idx, none=None))
        data[f"{side} l2norm"] = numeric_column(_pick(table.norm, idx, none=None))
    data["NPU MD5"] = _pick(target.md5, ti)
    data["BENCH MD5"] = _pick(golden.md5, gi)
    data["Requires_grad Consistent"] = [
        a == b for a, b in zip(data["NPU Requires_grad"], data["Bench Requires_grad"])
    ]
    return data


def stack_column(target: DumpTable, match: MatchResult) -> list[str]:
    """``NPU_Stack_Info``: the stack of each API on its first row only, ``N/A`` elsewhere."""
    stack = target.stack or {}
    out: list[str] = []
    last_api = -1
    for i in match.target:
        api = target.row_api[i]
        if api != last_api:
            last_api = api
            lines = stack.get(target.apis[api].key)
            out.append(NA if lines is None else str(lines))
        else:
            out.append(NA)
    return out


def data_name_column(target: DumpTable, golden: DumpTable, match: MatchResult) -> list[str]:
    """``Data_name``: ``str([npu_file, bench_file])`` per row."""
    return [
        str([target.data_name[i], golden.data_name[j] if j >= 0 else NA])
        for i, j in zip(match.target, match.golden)
    ]

#: (statistic column suffix, diff column, relative-error column)
REL_COLUMNS_ORDER = (
    ("max", "Max diff", "MaxRelativeErr"),
    ("min", "Min diff", "MinRelativeErr"),
    ("mean", "Mean diff", "MeanRelativeErr"),
    ("l2norm", "L2norm diff", "NormRelativeErr"),
)
