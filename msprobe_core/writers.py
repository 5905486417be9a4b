"""Built-in result writers (CSV and xlsx); both write atomically.

A result is first written to a hidden temporary file in the output
directory and renamed into place only when complete, so an interrupted run
never leaves a file that looks finished.
"""

from __future__ import annotations

import csv
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .cells import csv_cell, xlsx_cell
from .errors import OutputError
from .result import ResultTable

XLSX_SHEET_ROWS = 1_048_500
CSV_MAX_ROWS = 1_000_000


@contextmanager
def atomic_path(final: Path) -> Iterator[Path]:
    """Yield a temporary path next to ``final``; rename it to ``final`` on success, delete it on failure."""
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".part", dir=final.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o644 & ~_umask())
        os.replace(tmp_path, final)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


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
            raise OutputError(f"cannot write result ({exc.strerror or exc})", path=target) from None
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
        raise OutputError(f"cannot write result ({exc.strerror or exc})", path=path) from None
    return [path]


WRITERS: dict[str, tuple[str, Callable[[ResultTable, Path], list[Path]]]] = {
    "csv": (".csv", write_csv),
    "xlsx": (".xlsx", write_xlsx),
}
