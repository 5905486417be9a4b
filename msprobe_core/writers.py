"""Built-in result writers (CSV and xlsx); both write atomically.

A result is first written to a hidden temporary file in the output
directory and renamed into place only when complete, so an interrupted run
never leaves a file that looks finished (:func:`msprobe_core.outputs.atomic_path`,
re-exported here for plugin writers).
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from itertools import islice
from operator import itemgetter
from pathlib import Path
from typing import Any

from .cells import csv_column, xlsx_cell
from .outputs import atomic_path, output_error
from .result import ResultTable
from .xlsx_stream import XlsxStreamWriter

__all__ = ["WRITERS", "atomic_path", "write_csv", "write_xlsx"]

XLSX_SHEET_ROWS = 1_048_500
CSV_MAX_ROWS = 1_000_000


def write_csv(table: ResultTable, path: Path) -> list[Path]:
    """Write ``table`` as CSV (split into ``_part_N`` files past one million rows)."""
    rows = list(zip(*(csv_column(table.data[c]) for c in table.columns)))
    chunks = [rows] if len(rows) <= CSV_MAX_ROWS else [
        rows[k : k + CSV_MAX_ROWS] for k in range(0, len(rows), CSV_MAX_ROWS)
    ]
    written: list[Path] = []
    for n, chunk in enumerate(chunks, start=1):
        target = path if len(chunks) == 1 else path.with_name(f"{path.stem}_part_{n}{path.suffix}")
        try:
            with atomic_path(target) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh, lineterminator="\n")
                w.writerow(table.columns)
                w.writerows(chunk)
        except OSError as exc:
            raise output_error(exc, target) from None
        written.append(target)
    return written


def any_formula_like(values: list[str]) -> bool:
    """False when no text of ``values`` is formula-like (C-level scans); True when some may be."""
    if not _FORMULA_FIRST.isdisjoint(map(_first_char, values)):
        return True
    return ";" in "".join(values)  # text after a ';' may be a formula: let xlsx_cell decide, cell by cell


_FORMULA_FIRST = frozenset("＋－＝％＠+-=%@")
_first_char = itemgetter(slice(0, 1))
_XLSX_TYPED = frozenset({float, int, bool})


def _xlsx_column(values: list[Any]) -> list[Any]:
    """:func:`xlsx_cell` over one column chunk; columns the stream writer already spells that way pass through."""
    kinds = set(map(type, values))
    if kinds <= _XLSX_TYPED:  # NaN: empty cell, inf: text "inf", as xlsx_cell has them
        return values
    if kinds == {str} and not any_formula_like(values):
        return values
    return list(map(xlsx_cell, values))


def write_xlsx(table: ResultTable, path: Path) -> list[Path]:
    """Write ``table`` as an xlsx workbook (``Sheet1``, or ``part_N`` sheets past the row limit), streamed."""
    rows = table.rows()
    n = len(table)
    sheets = max(1, -(-n // XLSX_SHEET_ROWS))
    try:
        with atomic_path(path) as tmp, XlsxStreamWriter(tmp) as book:
            for s in range(sheets):
                book.add_sheet("Sheet1" if sheets == 1 else f"part_{s}")
                book.append(table.columns)
                book.append_rows(islice(rows, min(XLSX_SHEET_ROWS, n - s * XLSX_SHEET_ROWS)), convert=_xlsx_column)
    except OSError as exc:
        raise output_error(exc, path) from None
    return [path]


WRITERS: dict[str, tuple[str, Callable[[ResultTable, Path], list[Path]]]] = {
    "csv": (".csv", write_csv),
    "xlsx": (".xlsx", write_xlsx),
}
