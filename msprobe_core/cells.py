"""How one cell value is spelled in a CSV or an xlsx sheet, and formula neutralising."""

from __future__ import annotations

import math
import re
from typing import Any

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


def csv_cell(value: Any) -> str:
    """Spell a cell for CSV the way msprobe's tables have it."""
    t = type(value)
    if t is str:
        return neutralise(value)
    if t is float:
        if value != value:
            return "Nan"
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
    return neutralise(str(value))


def xlsx_cell(value: Any) -> Any:
    """Value for an xlsx cell: numbers and bools stay typed, non-finite floats become text."""
    t = type(value)
    if t is str:
        return neutralise(value)
    if t is float:
        if value != value:
            return "Nan"
        if value == math.inf:
            return "inf"
        if value == -math.inf:
            return "-inf"
        return value
    if t is bool or t is int:
        return value
    if value is None:
        return "None"
    return neutralise(str(value))
