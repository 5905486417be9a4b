"""Result files read back as :class:`~msprobe_core.report.views.ResultView` (``msprobe report``): CSV and xlsx."""

from __future__ import annotations

import csv
import math
import re
import sys
from pathlib import Path
from typing import Any

from .. import result_columns as C
from ..errors import InputError
from .views import ResultView, detect_mode, guess_frameworks

_RANK_IN_NAME = re.compile(r"(?:^|_)(rank\d*|proc\d+|\d+_\d+)_\d{14}(?:_part_\d+)?$")


def label_from_path(path: Path) -> str:
    """``rank1`` from ``compare_result_rank1_20260101120000.csv``; ``rank 0 step 1`` for kernel names."""
    m = _RANK_IN_NAME.search(path.stem)
    if not m:
        return ""
    tag = m.group(1)
    if re.fullmatch(r"\d+_\d+", tag):
        rank, step = tag.split("_")
        return f"rank {rank} step {step}"
    return tag


def read_result_file(path: Path, label: str | None = None) -> ResultView:
    """Read a compare result (``.csv`` or ``.xlsx``) back into a view."""
    path = Path(path)
    if not path.is_file():
        raise InputError("result file does not exist", path=path)
    if path.suffix.lower() == ".xlsx":
        columns, rows = _read_xlsx(path)
    elif path.suffix.lower() == ".csv":
        columns, rows = _read_csv(path)
    else:
        raise InputError("a result file must be .csv or .xlsx", path=path)
    if C.NPU_NAME not in columns:
        raise InputError(f"not a compare result: no '{C.NPU_NAME}' column", path=path)
    cells = {c: [] for c in columns}
    lists = [cells[c] for c in columns]
    width = len(columns)
    for row in rows:
        if len(row) < width:
            row = list(row) + [""] * (width - len(row))
        for lst, v in zip(lists, row):
            lst.append(v)
    mode = detect_mode(columns)
    return ResultView(label if label is not None else label_from_path(path), mode, columns, cells, [path],
                      guess_frameworks(cells, mode))


def _read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None:
                raise InputError("result file is empty", path=path)
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read result ({exc})", path=path) from None
    width = len(header)
    rows = [row for row in rows if row]  # blank lines are no rows (as pandas reads them)
    for k, row in enumerate(rows, 1):
        if len(row) != width:  # e.g. a bare carriage return in a cell started a row of its own
            raise InputError(f"row {k} has {len(row)} fields where the header has {width}: not a well-formed "
                             "result table", path=path)
    return header, rows


def _xlsx_text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, float):
        if math.isinf(v):
            return " inf" if v > 0 else " -inf"
        return repr(v)
    return str(v)


def _read_xlsx(path: Path) -> tuple[list[str], list[list[str]]]:
    from openpyxl import load_workbook

    try:
        wb = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many kinds for a broken workbook
        raise InputError(f"cannot read xlsx result ({exc})", path=path) from None
    header: list[str] | None = None
    rows: list[list[str]] = []
    try:
        for ws in wb.worksheets:  # results past the row limit continue on further sheets
            it = ws.iter_rows(values_only=True)
            head = next(it, None)
            if head is None:
                continue
            head_s = [_xlsx_text(h) for h in head]
            if header is None:
                header = head_s
            elif head_s != header:
                continue
            rows.extend([_xlsx_text(v) for v in r] for r in it)
    except Exception as exc:  # noqa: BLE001 - a sheet is parsed as it is read: broken XML, entity bombs…
        raise InputError(f"cannot read xlsx result ({exc})", path=path) from None
    finally:
        wb.close()
    if header is None:
        raise InputError("result workbook is empty", path=path)
    return header, rows
