"""The classic result table (msprobe 8.3.3, spec compare-legacy.md §5-§6).

Built from the core's loaded tables and matched row pairs; this module only shapes
cells the way 8.3.3 writes them: ``None``-valued dtypes/shapes/statistics become the
text ``None``, missing bench cells ``N/A``, statistics diffs are numbers with
``x%`` relative errors, ``Result``/``Err_message`` use 8.3.3's plain sentences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from msprobe_core.model import MODE_MD5, MODE_STATISTICS, MODE_TENSOR, NA, DumpTable, MatchResult
from msprobe_core.result import STAT_VALUE_COLUMNS, STATS_METRIC_COLUMNS
from msprobe_core.strtod import pandas_strtod

BASIC = [
    "NPU Name",
    "Bench Name",
    "NPU Dtype",
    "Bench Dtype",
    "NPU Tensor Shape",
    "Bench Tensor Shape",
    "NPU Requires_grad",
    "Bench Requires_grad",
]
TENSOR_METRICS = [
    "Cosine",
    "EucDist",
    "MaxAbsErr",
    "MaxRelativeErr",
    "One Thousandth Err Ratio",
    "Five Thousandths Err Ratio",
]
STATS_DIFFS = STATS_METRIC_COLUMNS
STAT_VALUES = STAT_VALUE_COLUMNS
REQ_GRAD_CONSIST = "Requires_grad Consistent"
ACCURACY = "Accuracy Reached or Not"
RESULT = "Result"
ERR = "Err_message"
STACK = "NPU_Stack_Info"
DATA_NAME = "Data_name"

NO_BENCH = "No bench data matched."
NEED_CHECK = "Need double check api accuracy. "
REQ_GRAD_MSG = "Requires_grad inconsistent. "
WARNING = "Warning"
PASS = "pass"
DIFFERENT = "Different"
NAN_TEXT = "Nan"
MAGNITUDE = 0.5
EPSILON = 1e-10


def header(mode: str, stack: bool) -> list[str]:
    """The 8.3.3 columns of a result table of ``mode`` (§5.1)."""
    if mode == MODE_TENSOR:
        cols = BASIC + TENSOR_METRICS + STAT_VALUES + [REQ_GRAD_CONSIST, ACCURACY, ERR]
    elif mode == MODE_STATISTICS:
        cols = BASIC + STATS_DIFFS + STAT_VALUES + [REQ_GRAD_CONSIST, RESULT, ERR]
    else:
        cols = BASIC + ["NPU MD5", "BENCH MD5", REQ_GRAD_CONSIST, RESULT]
    if stack:
        cols.append(STACK)
    if mode == MODE_TENSOR:
        cols.append(DATA_NAME)
    return cols


@dataclass
class LegacyTable:
    """A classic result: columns of cells plus, per row, the dump key and state it came from."""

    mode: str
    columns: list[str]
    data: dict[str, list[Any]]
    api_key: list[str]
    state: list[str]
    matched: list[bool]
    kind: str = "dump"
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.api_key)

    def rows(self):
        """Rows as lists of cells in column order."""
        return zip(*(self.data[c] for c in self.columns))

    def to_dataframe(self):
        """The table as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame({c: self.data[c] for c in self.columns}, columns=self.columns)


def _text(value: str | None) -> str:
    return "None" if value is None else value


def _stat(value: Any) -> Any:
    """A statistic cell as 8.3.3 keeps it (``None`` → ``'None'``, NaN → ``'Nan'``)."""
    if value is None:
        return "None"
    if isinstance(value, float) and value != value:
        return NAN_TEXT
    if isinstance(value, str) and value.lower() == "nan":
        return NAN_TEXT
    return value


def _number(value: Any) -> float | None:
    """``pd.to_numeric(str(value), errors='coerce')`` as pandas 2.0 computes it; ``None`` when not numeric."""
    return pandas_strtod(str(value))


def _is_num_or_nan(value: Any) -> bool:
    return _number(value) is not None or str(value).lower() == "nan"


def build_base(
    target: DumpTable, golden: DumpTable, match: MatchResult, stack: dict[str, list[str]] | None
) -> LegacyTable:
    """Name, dtype, shape, requires_grad, statistics and stack cells of every matched row."""
    mode = target.mode
    ti, gi = match.target, match.golden
    cols = header(mode, stack is not None)
    data: dict[str, list[Any]] = {c: [] for c in cols}
    data["_npu_data"] = []
    data["_bench_data"] = []
    api_key, state, matched = [], [], []
    last_api = -1
    for i, j in zip(ti, gi):
        has = j >= 0
        data["NPU Name"].append(target.name[i])
        data["NPU Dtype"].append(_text(target.dtype[i]))
        data["NPU Tensor Shape"].append(_text(target.shape[i]))
        npu_rg = NA if target.requires_grad[i] is None else target.requires_grad[i]
        data["NPU Requires_grad"].append(npu_rg)
        if has:
            data["Bench Name"].append(golden.name[j])
            data["Bench Dtype"].append(_text(golden.dtype[j]))
            data["Bench Tensor Shape"].append(_text(golden.shape[j]))
            bench_rg = NA if golden.requires_grad[j] is None else golden.requires_grad[j]
        else:
            for c in ("Bench Name", "Bench Dtype", "Bench Tensor Shape"):
                data[c].append(NA)
            bench_rg = NA
        data["Bench Requires_grad"].append(bench_rg)
        data[REQ_GRAD_CONSIST].append(npu_rg == bench_rg)
        if mode == MODE_MD5:
            data["NPU MD5"].append(NA if target.md5[i] is None else target.md5[i])
            data["BENCH MD5"].append(NA if not has or golden.md5[j] is None else golden.md5[j])
        else:
            for side, table, k in (("NPU", target, i), ("Bench", golden, j)):
                for stat, values in (("max", table.max), ("min", table.min), ("mean", table.mean), ("l2norm", table.norm)):
                    data[f"{side} {stat}"].append(_stat(values[k]) if k >= 0 else NA)
        if stack is not None:
            api = target.row_api[i]
            if api != last_api:
                lines = stack.get(target.apis[api].key)
                data[STACK].append(NA if lines is None else str(lines))
            else:
                data[STACK].append(NA)
            last_api = api
        else:
            last_api = target.row_api[i]
        data["_npu_data"].append(target.data_name[i])
        data["_bench_data"].append(golden.data_name[j] if has else NA)
        api_key.append(target.apis[target.row_api[i]].key)
        state.append(target.state[i])
        matched.append(has)
    return LegacyTable(mode, cols, data, api_key, state, matched, kind=target.kind)


def _pct(value: float) -> str:
    return f"{repr(float(abs(value)))}%"


def stats_columns(table: LegacyTable) -> None:
    """Statistics mode: the diff and relative-error cells, ``Result`` and ``Err_message`` (§6.1)."""
    data = table.data
    n = len(table)
    warn = [False] * n
    for stat, diff_col, rel_col in (
        ("max", "Max diff", "MaxRelativeErr"),
        ("min", "Min diff", "MinRelativeErr"),
        ("mean", "Mean diff", "MeanRelativeErr"),
        ("l2norm", "L2norm diff", "NormRelativeErr"),
    ):
        npu, bench = data[f"NPU {stat}"], data[f"Bench {stat}"]
        diffs, rels = [], []
        for k in range(n):
            a, b = npu[k], bench[k]
            if not table.matched[k] or not (_is_num_or_nan(a) and _is_num_or_nan(b)):
                diffs.append(NA)
                rels.append(NA)
                continue
            x, y = _number(a), _number(b)
            d = math.nan if x is None or y is None else x - y
            if d != d:
                diffs.append(NAN_TEXT)
                rels.append(NAN_TEXT)
                continue
            diffs.append(d)
            if y == 0:
                rels.append(NA)
            else:
                rels.append(_pct(d / float(b) * 100))
            top = max(x, y) if x == x and y == y else math.nan
            dd = _number(repr(d))
            if dd is not None and abs(dd) / (abs(top) + EPSILON) > MAGNITUDE:
                warn[k] = True
        data[diff_col] = diffs
        data[rel_col] = rels
    result, err = [], []
    for k in range(n):
        if not table.matched[k]:
            result.append(NA)
            msg = NO_BENCH
        elif warn[k]:
            result.append(WARNING)
            msg = NEED_CHECK
        else:
            result.append("")
            msg = ""
        if not data[REQ_GRAD_CONSIST][k]:
            msg += REQ_GRAD_MSG
        err.append(msg)
    data[RESULT] = result
    data[ERR] = err


def md5_columns(table: LegacyTable) -> None:
    """md5 mode: ``pass`` / ``Different`` / ``N/A`` (§6.2)."""
    a, b = table.data["NPU MD5"], table.data["BENCH MD5"]
    table.data[RESULT] = [
        PASS if x == y else (DIFFERENT if m else NA) for x, y, m in zip(a, b, table.matched)
    ]
