"""How one cell value is spelled in a CSV file, and formula neutralising (which the xlsx writer uses too)."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

import numpy as np

from .csv_rows import quote_chars
from .floattext import float_texts

#: what a spreadsheet skips in front of a formula: TAB, space, NUL, zero-width space, CR, LF
FORMULA_PREFIXES = "\t \x00\u200b\r\n"
_FORMULA_START = re.compile(r"(?:^|;)[\t \x00\u200b\r\n]*[＋－＝％＠+\-=%@]")
_FORMULA_CHARS = frozenset("＋－＝％＠+-=%@")
#: the first character of a text that may be formula-like
_FORMULA_FIRST = _FORMULA_CHARS | frozenset(FORMULA_PREFIXES)
_first_char = itemgetter(slice(0, 1))


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
    if text[0] not in _FORMULA_FIRST and ";" not in text:
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


# type code of a cell, for splitting a mixed column into runs spelled in bulk
_FLOAT, _INT, _STR, _NONE, _BOOL, _OTHER = range(6)
_KIND: defaultdict[type, int] = defaultdict(
    lambda: _OTHER, {float: _FLOAT, int: _INT, str: _STR, type(None): _NONE, bool: _BOOL}
)
_NONFINITE_TEXT = {math.inf: " inf", -math.inf: " -inf"}


_NUMERIC_CHARSET = "0123456789.e+- infNoTrueFals"
"""Every character a cell spelled from a float, int, bool or None can hold (``1e-05``, `` -inf``, ``None``…)."""


def may_hold_formula(values: Sequence[str], joined: str | None = None) -> bool:
    """False when no text of ``values`` is formula-like; True when some may be (C-level substring scans).

    ``joined``: ``"\\x00".join(values)`` when the caller has it already.
    """
    if joined is None:
        joined = "\x00".join(values)
    if ";" in joined:
        return True
    if all(c not in joined for c in _FORMULA_CHARS):  # nearly always: then no cell can be a formula
        return False
    # some formula character somewhere: does a cell start with one, or with a prefix? (one pass over the cells,
    # whatever their length: stack texts are long)
    return not _FORMULA_FIRST.isdisjoint(map(_first_char, values))


def _text_column(values: Sequence[str], joined: str | None = None) -> list[str]:
    """:func:`neutralise` over text cells: C-level scans, cell by cell only when something may be a formula."""
    if not may_hold_formula(values, joined):
        return values if isinstance(values, list) else list(values)
    return [neutralise(v) for v in values]


def _float_column(values: Sequence[float]) -> list[str]:
    """:func:`csv_cell` over float cells: ``repr`` digits in bulk, non-finite cells patched."""
    arr = np.fromiter(values, dtype=np.float64, count=len(values))
    out = float_texts(arr)
    for i in np.flatnonzero(~np.isfinite(arr)).tolist():
        v = float(arr[i])
        out[i] = "" if v != v else _NONFINITE_TEXT[v]
    return out


def _spell_kind(kind: int, values: Sequence[Any]) -> list[str]:
    if kind == _FLOAT:
        return _float_column(values)
    if kind == _STR:
        return _text_column(values)
    if kind == _INT:
        return list(map(str, values))
    if kind == _NONE:
        return ["None"] * len(values)
    if kind == _BOOL:
        return ["True" if v else "False" for v in values]
    return list(map(csv_cell, values))


def _take(values: Sequence[Any], idx: list[int]) -> Sequence[Any]:
    if len(idx) == 1:
        return [values[idx[0]]]
    return itemgetter(*idx)(values)


def csv_cells(values: Sequence[Any]) -> tuple[list[str], str | None]:
    """:func:`csv_column`, plus a charset: a text holding every character the cells hold
    that the csv module quotes for (``None``: unknown).

    The charset lets a CSV writer skip looking for characters to quote in columns of
    numbers or of text already scanned; lean columns give theirs as ``csv_charset``.
    """
    spell = getattr(values, "csv_texts", None)
    if spell is not None:
        return spell(0, len(values)), getattr(values, "csv_charset", None)
    n = len(values)
    if n == 0:
        return [], ""
    types = set(map(type, values))
    if len(types) == 1:
        kind = _KIND[types.pop()]
        if kind == _STR:
            # one scan of the joined text serves the formula test and the CSV's quoting test (a leading
            # apostrophe changes neither); the characters to quote found there are the column's charset
            joined = "\x00".join(values)
            return _text_column(values, joined), "".join(c for c in quote_chars() if c in joined)
        return _spell_kind(kind, values), None if kind == _OTHER else _NUMERIC_CHARSET
    kinds = np.fromiter(map(_KIND.__getitem__, map(type, values)), dtype=np.int8, count=n)
    present = np.flatnonzero(np.bincount(kinds, minlength=_OTHER + 1)).tolist()
    charset = None if (_STR in present or _OTHER in present) else _NUMERIC_CHARSET
    if _FLOAT in present and _OTHER not in present:  # scalars only: an object array holds them as they are
        # mostly floats (statistics): spell the whole column as floats, then the other cells over it
        cells = np.empty(n, dtype=object)
        cells[:] = values
        is_float = kinds == _FLOAT
        numbers = np.zeros(n)
        numbers[is_float] = cells[is_float].astype(np.float64)
        out = float_texts(numbers)
        for i in np.flatnonzero(is_float & ~np.isfinite(numbers)).tolist():
            out[i] = csv_cell(values[i])
        for kind in present:
            if kind != _FLOAT:
                idx = np.flatnonzero(kinds == kind)
                for i, text in zip(idx.tolist(), _spell_kind(kind, cells[idx].tolist())):
                    out[i] = text
        return out, charset
    out_cells = np.empty(n, dtype=object)
    for kind in present:
        idx = np.flatnonzero(kinds == kind)
        out_cells[idx] = _spell_kind(kind, _take(values, idx.tolist()))
    return out_cells.tolist(), charset


def csv_column(values: Sequence[Any]) -> list[str]:
    """:func:`csv_cell` over a whole column, in bulk.

    Lean columns (:mod:`msprobe_core.text.columns`) spell themselves. Otherwise the cells are split by type: floats
    are spelled with ``repr``'s digits in one C call (:func:`msprobe_core.text.floattext.float_texts`), text is
    scanned once for anything formula-like (nearly always nothing), ints, ``None`` and bools in C-level passes; only
    other types go cell by cell.
    """
    return csv_cells(values)[0]
