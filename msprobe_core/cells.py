"""How one cell value is spelled in a CSV or an xlsx sheet, and formula neutralising."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

_FORMULA_START = re.compile(r"^[＋－＝％＠+\-=%@]|;[＋－＝％＠+\-=%@]")
_FORMULA_CHARS = frozenset("＋－＝％＠+-=%@")


def _all_parts_numeric(text: str) -> bool:
    for part in text.split(";"):
        try:
            float(part)
        except ValueError:
            return False
    return True


def is_formula_like(text: str) -> bool:
    """True for text a spreadsheet would evaluate (``=1+1``, ``@x``, ``-cmd``…) and that is not a number."""
    if not text:
        return False
    if text[0] not in _FORMULA_CHARS and ";" not in text:
        return False
    return bool(_FORMULA_START.search(text)) and not _all_parts_numeric(text)


def neutralise(text: str) -> str:
    """Make formula-like text inert by prefixing an apostrophe (spreadsheet convention for literal text)."""
    return "'" + text if is_formula_like(text) else text


def numpy_float_text(value: np.floating) -> str:
    """A numpy float scalar spelled as msprobe's tables show it, whatever numpy is installed.

    Shortest digits that round-trip in the scalar's own type, positional for
    ``1e-4 <= |x| < 1e16`` and 0, scientific otherwise (numpy >= 2.3 switched
    float16/float32 to scientific earlier; msprobe's outputs predate that).
    """
    if isinstance(value, np.float64):
        return repr(float(value))
    a = abs(float(value))
    if not math.isfinite(a):
        return repr(float(value))
    if a == 0 or 1e-4 <= a < 1e16:
        return np.format_float_positional(value, unique=True, trim="0")
    return np.format_float_scientific(value, unique=True, trim="-", exp_digits=2)


def csv_cell(value: Any) -> str:
    """Spell a cell for CSV the way msprobe's tables have it."""
    t = type(value)
    if t is str:
        return neutralise(value)
    if t is float:
        if value != value:
            return ""  # a missing number, as pandas writes it; NaN values are the text "Nan" by then
        if value == math.inf:
            return " inf"
        if value == -math.inf:
            return " -inf"
        return repr(value)
    if t is bool:
        return "True" if value else "False"
    if value is None:
        return "None"
    if t is int:
        return str(value)
    if isinstance(value, np.floating):
        return csv_cell(float(value)) if not math.isfinite(float(value)) else numpy_float_text(value)
    return neutralise(str(value))


def xlsx_cell(value: Any) -> Any:
    """Value for an xlsx cell: numbers and bools stay typed, non-finite floats become text."""
    t = type(value)
    if t is str:
        return neutralise(value)
    if t is float:
        if value != value:
            return None
        if value == math.inf:
            return "inf"
        if value == -math.inf:
            return "-inf"
        return value
    if t is bool or t is int:
        return value
    if value is None:
        return "None"
    if isinstance(value, np.generic):
        return xlsx_cell(value.item())
    return neutralise(str(value))


_FORMULA_ANYWHERE = re.compile(r"(?:^|\x00)[＋－＝％＠+\-=%@]|;")


def csv_column(values: list[Any]) -> list[str]:
    """:func:`csv_cell` over a whole column, with fast paths for the common column shapes.

    Text columns are scanned once for anything formula-like (nearly always
    nothing), float columns are spelled with ``repr`` in one C-level pass and
    only their non-finite cells are patched; other columns go cell by cell.
    """
    kinds = set(map(type, values))
    if kinds == {str}:
        if not _FORMULA_ANYWHERE.search("\x00".join(values)):
            return values
        return [neutralise(v) for v in values]
    if kinds == {float}:
        out = list(map(repr, values))
        arr = np.fromiter(values, dtype=np.float64, count=len(values))
        for i in np.flatnonzero(~np.isfinite(arr)).tolist():
            out[i] = csv_cell(values[i])
        return out
    if kinds == {bool}:
        return ["True" if v else "False" for v in values]
    return list(map(csv_cell, values))
