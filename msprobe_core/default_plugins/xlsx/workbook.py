"""The ``xlsx`` format's workbook of a result table: ``Sheet1``, or ``part_N`` sheets past the row limit, streamed.

A cell is given to the stream writer (:mod:`.stream`) as :func:`xlsx_cell` has it (numbers and bools typed,
non-finite floats as text, formula-like text neutralised), converted a column chunk at a time; the same cells
whether the table is written whole (:func:`write_xlsx`) or part by part (:mod:`.parts`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from math import isfinite
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from msprobe_core.plugin import any_formula_like, atomic_path, neutralise, output_error

from .stream import CHUNK_ROWS as XLSX_STREAM_CHUNK
from .stream import XlsxStreamWriter

if TYPE_CHECKING:
    from msprobe_core.plugin import ResultTable

XLSX_SHEET_ROWS = 1_048_500
"""Rows a sheet of the result takes before the next sheet begins (msprobe's limit, under Excel's)."""


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


_XLSX_TYPED = frozenset({float, int, bool})
_XLSX_KEPT = frozenset({float, int, bool, type(None)})


def _xlsx_column(values: list[Any]) -> list[Any]:
    """:func:`xlsx_cell` over one column chunk; columns the stream writer already spells that way pass through."""
    kinds = set(map(type, values))
    if kinds <= _XLSX_TYPED:  # NaN: empty cell, inf: text "inf", as xlsx_cell has them
        return values
    if kinds == {str} and not any_formula_like(values):
        return values
    if str in kinds or not kinds <= _XLSX_KEPT:
        return list(map(xlsx_cell, values))
    # numbers with a few None cells (statistics): only the None and non-finite cells change
    out = list(values)
    for i, v in enumerate(values):
        if v is None or (v.__class__ is float and not isfinite(v)):
            out[i] = xlsx_cell(v)
    return out


XLSX_CHUNK_ROWS = 8 * XLSX_STREAM_CHUNK
"""Rows converted at a time for the xlsx writer (a multiple of the stream writer's own chunk)."""


def _xlsx_values(column: Sequence[Any], start: int, stop: int) -> list[Any]:
    """Cells ``start:stop`` of one column as :func:`_xlsx_column` gives them, chunk by stream-writer chunk."""
    spell = getattr(column, "csv_texts", None)
    if spell is not None and not getattr(column, "typed_cells", False):
        return spell(start, stop)  # lean text columns: xlsx_cell of a text is its neutralised text, as in the CSV
    out: list[Any] = []
    for k in range(start, stop, XLSX_STREAM_CHUNK):  # the chunks the stream writer would have converted
        out += _xlsx_column(list(column[k : min(stop, k + XLSX_STREAM_CHUNK)]))
    return out


def write_xlsx(table: ResultTable, path: Path) -> list[Path]:
    """Write ``table`` as an xlsx workbook (``Sheet1``, or ``part_N`` sheets past the row limit), streamed."""
    columns = [table.data[c] for c in table.columns]
    n = len(table)
    rows = min([n, *map(len, columns)])
    sheets = max(1, -(-n // XLSX_SHEET_ROWS))
    try:
        with atomic_path(path) as tmp, XlsxStreamWriter(tmp) as book:
            for s in range(sheets):
                book.add_sheet("Sheet1" if sheets == 1 else f"part_{s}")
                book.append(table.columns)
                first, last = s * XLSX_SHEET_ROWS, min(rows, (s + 1) * XLSX_SHEET_ROWS)
                for k in range(first, last, XLSX_CHUNK_ROWS):
                    stop = min(last, k + XLSX_CHUNK_ROWS)
                    book.append_rows(zip(*[_xlsx_values(col, k, stop) for col in columns]))
    except OSError as exc:
        raise output_error(exc, path) from None
    return [path]
