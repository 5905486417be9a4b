"""Built-in result writers (CSV and xlsx); both write atomically.

A result is first written to a hidden temporary file in the output
directory and renamed into place only when complete, so an interrupted run
never leaves a file that looks finished (:func:`msprobe_core.outputs.atomic_path`,
re-exported here for plugin writers).
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

from .cells import csv_cell, xlsx_cell
from .outputs import atomic_path, output_error
from .result import ResultTable

__all__ = ["WRITERS", "atomic_path", "write_csv", "write_xlsx"]

XLSX_SHEET_ROWS = 1_048_500
CSV_MAX_ROWS = 1_000_000


def write_csv(table: ResultTable, path: Path) -> list[Path]:
    """Write ``table`` as CSV (split into ``_part_N`` files past one million rows)."""
    rows = [list(map(csv_cell, row)) for row in table.rows()]
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


def write_xlsx(table: ResultTable, path: Path) -> list[Path]:
    """Write ``table`` as an xlsx workbook (``Sheet1``, or ``part_N`` sheets past the row limit)."""
    from openpyxl import Workbook

    wb = Workbook(write_only=True)
    rows = table.rows()
    n = len(table)
    sheets = max(1, -(-n // XLSX_SHEET_ROWS))
    for s in range(sheets):
        ws = wb.create_sheet("Sheet1" if sheets == 1 else f"part_{s}")
        ws.append(table.columns)
        for _ in range(min(XLSX_SHEET_ROWS, n - s * XLSX_SHEET_ROWS)):
            ws.append([xlsx_cell(v) for v in next(rows)])
    try:
        with atomic_path(path) as tmp:
            wb.save(tmp)
    except OSError as exc:
        raise output_error(exc, path) from None
    return [path]


WRITERS: dict[str, tuple[str, Callable[[ResultTable, Path], list[Path]]]] = {
    "csv": (".csv", write_csv),
    "xlsx": (".xlsx", write_xlsx),
}
