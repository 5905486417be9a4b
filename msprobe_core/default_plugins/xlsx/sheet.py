"""The sheet XML of the streaming xlsx writer: cells typed as openpyxl types them, rendered a chunk of rows at a time.

Each column of a chunk is classified with C-level scans (one type? finite? text needing no
escape?), the classes pick a compiled f-string that renders a whole row, and only columns that
need it (mixed types, escapes, empty cells) are rendered cell by cell in Python. How each value
is typed and spelled is described in :mod:`msprobe_core.default_plugins.xlsx.stream`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from itertools import repeat
from math import isfinite
from operator import is_not
from typing import Any

# how a column of a chunk is written: straight into the row template, or pre-rendered cell by cell
_FLOAT, _INT, _BOOL, _TEXT, _TEXT_OR_EMPTY, _CELLS, _TEXT_ESCAPE = range(7)


MAX_STRING = 32_767
"""Longest text a cell holds (Excel's limit; openpyxl truncates to it)."""


# characters that need escaping in element text, and those XML 1.0 cannot hold at all
_SPECIAL = re.compile("[&<>\r\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"}


def _escape_char(match: re.Match[str]) -> str:
    ch = match.group(0)
    return _ENTITIES.get(ch) or f"_x{ord(ch):04x}_"


def xml_text(text: str) -> str:
    """``text`` as element content: ``& < >`` and CR as entities, XML-illegal characters as ``_xHHHH_``."""
    return _SPECIAL.sub(_escape_char, text) if _SPECIAL.search(text) else text


def column_letter(index: int) -> str:
    """Spreadsheet column name of the 0-based ``index`` (0 → ``A``, 26 → ``AA``)."""
    if index < 0:
        raise ValueError(f"column index must be >= 0, got {index}")
    letters = ""
    n = index + 1
    while n:
        n, rem = divmod(n - 1, 26)
        letters = chr(65 + rem) + letters
    return letters


_INF = float("inf")
_NINF = float("-inf")


def _text_cell(col: str, ref: str, text: str) -> str:
    """One inline-string cell (``text`` not empty)."""
    if len(text) > MAX_STRING:
        text = text[:MAX_STRING]
    space = ' xml:space="preserve"' if text[0].isspace() or text[-1].isspace() else ""
    if _SPECIAL.search(text):
        text = _SPECIAL.sub(_escape_char, text)
    return f'<c r="{col}{ref} t="inlineStr"><is><t{space}>{text}</t></is></c>'


def _float_text(value: float) -> str:
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def _cell(col: str, ref: str, value: Any, styled: bool) -> str:
    """One cell of any kind (see the module doc); ``ref`` is the row number, a quote, and the style attribute."""
    cls = value.__class__
    if cls is str:
        return _text_cell(col, ref, value) if value else f'<c r="{col}{ref}/>'
    if cls is float:
        if value != value:
            return f'<c r="{col}{ref}/>' if styled else ""
        if value in (_INF, _NINF):
            return _text_cell(col, ref, "inf" if value > 0 else "-inf")
        return f'<c r="{col}{ref}><v>{_float_text(value)}</v></c>'
    if cls is int:
        return f'<c r="{col}{ref}><v>{value}</v></c>'
    if cls is bool:
        return f'<c r="{col}{ref} t="b"><v>{1 if value else 0}</v></c>'
    if value is None:
        return f'<c r="{col}{ref}/>' if styled else ""
    item = getattr(value, "item", None)  # numpy scalars
    if item is not None and not isinstance(value, (str, bytes)):
        try:
            plain = item()
        except (TypeError, ValueError):
            plain = None
        if plain is not None and plain.__class__ in (bool, int, float, str):
            return _cell(col, ref, plain, styled)
    if isinstance(value, bool):
        return _cell(col, ref, bool(value), styled)
    if isinstance(value, int):
        return _cell(col, ref, int(value), styled)
    if isinstance(value, float):
        return _cell(col, ref, float(value), styled)
    return _cell(col, ref, str(value), styled)


def _column_kind(values: Sequence[Any]) -> int:
    """The template kind of one column of a chunk (all C-level scans; ``_CELLS`` when in doubt)."""
    kinds = set(map(type, values))
    if len(kinds) != 1:
        return _CELLS
    kind = kinds.pop()
    if kind is float:
        return _FLOAT if all(map(isfinite, values)) else _CELLS
    if kind is int:
        return _INT
    if kind is bool:
        return _BOOL
    if kind is str:
        if max(map(len, values)) > MAX_STRING:
            return _CELLS
        if any(map(is_not, values, map(str.strip, values))):  # leading/trailing space: xml:space
            return _CELLS
        joined = " ".join(values)
        if not (joined.isprintable() and "&" not in joined and "<" not in joined and ">" not in joined):
            if _SPECIAL.search(joined):
                # escaped in one pass over the column joined by tabs, when no cell holds a tab itself
                return _TEXT_ESCAPE if "\t" not in joined else _CELLS
        return _TEXT if all(values) else _TEXT_OR_EMPTY
    return _CELLS


def _escaped_texts(values: Sequence[str]) -> list[str]:
    """:func:`xml_text` of each text (none holding a tab): one regex pass over the texts joined by tabs.

    A tab is a character XML holds as it is (``_SPECIAL`` never matches it), so the joints survive.
    """
    return _SPECIAL.sub(_escape_char, "\t".join(values)).split("\t")


@lru_cache(maxsize=256)
def _row_renderer(kinds: tuple[int, ...]) -> Callable[[str, str, Sequence[Any]], str]:
    """A compiled f-string rendering one row whose columns have these template kinds.

    The function takes the row number (as text), the row's style attribute and the row's fields: typed
    values for ``_FLOAT``/``_INT``/``_BOOL``/``_TEXT`` columns (already known to need no
    escaping), finished cells for ``_CELLS`` columns. Its source holds only column letters
    and fixed markup, never a cell value.
    """
    parts = ['<row r="{r}">']
    for j, kind in enumerate(kinds):
        cell = f'<c r="{column_letter(j)}{{r}}"{{s}}'
        if kind == _FLOAT:
            parts.append(f"{cell}><v>{{v[{j}]!r}}</v></c>")
        elif kind == _INT:
            parts.append(f"{cell}><v>{{v[{j}]}}</v></c>")
        elif kind == _BOOL:
            parts.append(f"{cell} t=\"b\"><v>{{v[{j}]:d}}</v></c>")
        elif kind == _TEXT:
            parts.append(f"{cell} t=\"inlineStr\"><is><t>{{v[{j}]}}</t></is></c>")
        else:
            parts.append(f"{{v[{j}]}}")
    parts.append("</row>")
    source = "lambda r, s, v: f'" + "".join(parts) + "'"
    return eval(compile(source, "<xlsx row template>", "eval"), {"__builtins__": {}})  # noqa: S307 - fixed markup only


_BULK_FLOATS = 16


def _number_texts(values: Sequence[float]) -> list[str]:
    """:func:`_float_text` of many finite floats: ``repr`` digits in one C call, ``.0`` trimmed as openpyxl does."""
    import numpy as np  # numpy and orjson: only once a sheet has many float cells

    from msprobe_core.plugin import float_texts

    texts = float_texts(np.fromiter(values, dtype=np.float64, count=len(values)))
    return [t[:-2] if t[-2:] == ".0" else t for t in texts]


def _column_cells(col: str, refs: list[str], values: Sequence[Any], styled: list[bool] | None) -> list[str]:
    """Every cell of one column of a chunk (the general path): floats spelled in bulk, the rest one by one."""
    flags: Iterable[bool] = repeat(False) if styled is None else styled
    floats = [i for i, v in enumerate(values) if v.__class__ is float and isfinite(v)]
    if len(floats) < _BULK_FLOATS:
        return [_cell(col, ref, v, s) for ref, v, s in zip(refs, values, flags)]
    cells = [None if v.__class__ is float else _cell(col, ref, v, s) for ref, v, s in zip(refs, values, flags)]
    for i, text in zip(floats, _number_texts(list(map(values.__getitem__, floats)))):
        cells[i] = f'<c r="{col}{refs[i]}><v>{text}</v></c>'  # a finite float's cell is the same styled or not
    for i, cell in enumerate(cells):
        if cell is None:  # non-finite floats: empty or inf text, as _cell has them
            cells[i] = _cell(col, refs[i], values[i], bool(styled and styled[i]))
    return cells


def checked_column(values: Sequence[Any], n: int) -> Sequence[Any]:
    """``values`` (what a ``convert`` callback returned for a column of ``n`` cells), refused if not ``n`` long."""
    if len(values) != n:
        raise ValueError(f"convert returned {len(values)} values for {n}")
    return values


def render_rows(letters: list[str], numbers: range, attrs: Sequence[str], styles: list[int], styled: bool,
                columns: Iterable[Sequence[Any]]) -> str:
    """The ``<row>`` elements of a chunk of rows, given column by column.

    ``letters``: the column letters (at least as many as columns); ``numbers``: the rows' numbers
    in the sheet; ``attrs[s]``: the style attribute of style ``s``; ``styles``: each row's style
    (``styled``: whether any is not 0). Each column is classified once (:func:`_column_kind`) and
    a compiled template renders whole rows (:func:`_row_renderer`).
    """
    fields: list[Sequence[Any]] = []
    kinds: list[int] = []
    refs: list[str] | None = None
    for letter, values in zip(letters, columns):
        kind = _column_kind(values)
        if kind == _TEXT_ESCAPE:  # text needing entities (dtype "<class 'float'>"): escaped in bulk
            values = _escaped_texts(values)
            kind = _TEXT if all(values) else _TEXT_OR_EMPTY
        if kind == _TEXT_OR_EMPTY or kind == _CELLS:
            if refs is None:
                refs = [f'{r}"{attrs[s]}' for r, s in zip(numbers, styles)]
            if kind == _TEXT_OR_EMPTY:
                values = [
                    f'<c r="{letter}{ref} t="inlineStr"><is><t>{v}</t></is></c>' if v else f'<c r="{letter}{ref}/>'
                    for ref, v in zip(refs, values)
                ]
            else:
                values = _column_cells(letter, refs, values, [bool(s) for s in styles] if styled else None)
            kind = _CELLS
        elif kind == _FLOAT:
            values, kind = _number_texts(values), _INT  # spelled in bulk: the template only places them
        kinds.append(kind)
        fields.append(values)
    render = _row_renderer(tuple(kinds))
    style_attrs: Iterable[str] = [attrs[s] for s in styles] if styled else repeat("")
    row_numbers = list(map(str, numbers))  # spelled once, used by every cell of the row
    text = "".join(
        [render(r, a, v) for r, a, v in zip(row_numbers, style_attrs, zip(*fields) if fields else repeat(()))]
    )
    return text
