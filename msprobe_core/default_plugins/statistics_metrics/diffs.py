"""Statistics-mode diffs (``Max diff`` … ``NormRelativeErr``), computed column-wise.

msprobe compares the four dumped statistics of each pair with a small rule
table keyed by what kind of value each side holds (number, NaN, ±inf, device
string, ``N/A``, other). Here each column is classified once into numpy arrays
and every rule is applied as a vectorised mask.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from msprobe_core.plugin import NA
from msprobe_core.plugin import stat_cells as _cells

from .coded import CodedTextColumn

_T_FLOAT, _T_INT, _T_NONE, _T_STR = _cells.FLOAT, _cells.INT, _cells.NONE, _cells.STR
cells_at, classify_values = _cells.cells_at, _cells.classify_values

NAN, INF, NEG_INF, NUM, DEVICE, NA_CLS, OTHER = range(7)

STAT_NAMES = ("max", "min", "mean", "norm")


def _classify_str(text: str) -> tuple[int, float]:
    low = text.lower()
    if low == "nan":
        return NAN, np.nan
    if low == "inf":
        return INF, np.inf
    if low == "-inf":
        return NEG_INF, -np.inf
    if low not in ("true", "false"):
        try:
            return NUM, float(text)
        except ValueError:
            pass
    if "npu" in low or "cpu" in low or "cuda" in low:
        return DEVICE, np.nan
    if text == NA:
        return NA_CLS, np.nan
    return OTHER, np.nan




class StatColumn:
    """One statistics column classified for the rule table.

    ``cls`` holds the value class per row, ``num`` the number (NaN where the
    value is not a number), ``kind`` the Python type of each raw value as a code.
    """

    def __init__(self, values: Sequence[Any]) -> None:
        n = len(values)
        self.values = values
        kind, num = classify_values(values)
        self.kind = kind
        is_float = kind == _T_FLOAT
        is_int = kind == _T_INT
        numeric = is_float | is_int
        cls = np.full(n, OTHER, dtype=np.int8)
        cls[numeric] = NUM
        cls[is_float & np.isnan(num)] = NAN
        cls[num == np.inf] = INF
        cls[num == -np.inf] = NEG_INF
        is_str = kind == _T_STR
        str_rows = np.flatnonzero(is_str).tolist()
        texts = cells_at(values, str_rows)
        classes = {text: _classify_str(text) for text in set(texts)}  # a few texts ("N/A", "cpu") on many rows
        for i, text in zip(str_rows, texts):
            cls[i], num[i] = classes[text]
        self.cls = cls
        self.num = num
        self.is_float = is_float
        self.is_int = is_int
        self.is_str = is_str
        self.is_none = kind == _T_NONE


def str_equal(a: StatColumn, b: StatColumn) -> np.ndarray:
    """Per row, whether ``str(a) == str(b)`` (msprobe's equality test), without building strings."""
    same_type = a.kind == b.kind
    eq = np.zeros(len(a.cls), dtype=bool)
    num_like = same_type & (a.is_float | a.is_int)
    with np.errstate(invalid="ignore"):
        numeq = (a.num == b.num) & (np.signbit(a.num) == np.signbit(b.num))
    both_nan = np.isnan(a.num) & np.isnan(b.num)
    eq |= num_like & (numeq | (a.is_float & both_nan))
    eq |= same_type & a.is_none
    rest = np.flatnonzero(same_type & ~(a.is_float | a.is_int | a.is_none)).tolist()
    for i, x, y in zip(rest, cells_at(a.values, rest), cells_at(b.values, rest)):
        eq[i] = x == y
    return eq


def _as_text(value: Any) -> str:
    """The text msprobe parses a statistic from (``str()`` of the cell, as pandas' ``astype(str)``)."""
    return repr(value) if type(value) is float else str(value)


def _parsed(col: StatColumn, rows: np.ndarray, parse: Callable[[str], float | None]) -> np.ndarray:
    out = col.num[rows].copy()
    for k, cell in enumerate(cells_at(col.values, rows.tolist())):
        value = parse(_as_text(cell))
        if value is not None:
            out[k] = value
    return out


# labels of the diff and relative-error cells that are not numbers (code 0: a number)
_LABELS = ("", NA, "Diff", "inf", "-inf", "Nan", "0")
_L_NA, _L_DIFF, _L_INF, _L_NEG_INF, _L_NAN, _L_ZERO = range(1, 7)


def stat_diffs(
    npu: Sequence[Any], bench: Sequence[Any], parse: Callable[[str], float | None] | None = None
) -> tuple[CodedTextColumn, CodedTextColumn]:
    """The ``<S> diff`` and ``<S>RelativeErr`` text columns for one statistic.

    Each is a :class:`~.coded.CodedTextColumn`: the cells read as
    msprobe's text (``repr`` of the difference, ``x%`` for the relative error,
    or a label such as ``N/A``), spelled only when read; ``numbers()`` gives the
    differences and relative errors (in percent) without parsing text.

    ``parse`` turns the text of a numeric cell into the number the differences
    are computed from (default: the correctly rounded value, what ``float()``
    gives); see :attr:`msprobe_core.plugin.FrameworkSpec.parse_statistic`.
    """
    a, b = StatColumn(npu), StatColumn(bench)
    n = len(a.cls)
    diff = np.full(n, np.nan)
    rel = np.full(n, np.nan)
    diff_code = np.full(n, _L_NA, dtype=np.int8)
    rel_code = np.full(n, _L_NA, dtype=np.int8)
    ca, cb = a.cls, b.cls

    def put(mask: np.ndarray, d: int, r: int | None = None) -> None:
        diff_code[mask] = d
        rel_code[mask] = d if r is None else r

    finite_cls = (ca == NUM) | (ca == NAN) | (ca == INF) | (ca == NEG_INF)
    finite_cls_b = (cb == NUM) | (cb == NAN) | (cb == INF) | (cb == NEG_INF)
    dev_other_a = (ca == DEVICE) | (ca == OTHER)
    dev_other_b = (cb == DEVICE) | (cb == OTHER)
    put((dev_other_a & (finite_cls_b | dev_other_b)) | (dev_other_b & finite_cls), _L_DIFF)
    put((ca == DEVICE) & (cb == DEVICE), _L_NA)
    put(((ca == INF) & ((cb == NUM) | (cb == NEG_INF))) | ((ca == NUM) & (cb == NEG_INF)), _L_INF)
    put(((ca == NEG_INF) & ((cb == NUM) | (cb == INF))) | ((ca == NUM) & (cb == INF)), _L_NEG_INF)
    put(((ca == NAN) & finite_cls_b) | ((cb == NAN) & finite_cls), _L_NAN)
    put((ca == NA_CLS) | (cb == NA_CLS), _L_NA)
    both = (ca == NUM) & (cb == NUM)
    if both.any():
        if parse is None:
            x, y = a.num[both], b.num[both]
        else:
            rows = np.flatnonzero(both)
            x, y = _parsed(a, rows, parse), _parsed(b, rows, parse)
        with np.errstate(all="ignore"):
            d = x - y
            r = np.abs(d / y * 100)
        diff[both] = d
        rel[both] = r
        diff_code[both] = CodedTextColumn.NUMBER
        rel_code[both] = np.where(y == 0, _L_INF, CodedTextColumn.NUMBER)
    eq = str_equal(a, b)
    diff_code[eq] = _L_ZERO
    rel_code[eq] = _L_ZERO
    return CodedTextColumn(diff, diff_code, _LABELS), CodedTextColumn(rel, rel_code, _LABELS, suffix="%")
