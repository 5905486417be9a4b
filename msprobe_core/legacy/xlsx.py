"""Writing the classic result workbook, with or without row fills (spec compare-legacy.md §5.3, §7.3).

Both writers stream rows through openpyxl's write-only mode. Fills use two style
arrays built once (red ``FFFF0000``, yellow ``FFFF00``) and shared by every cell of a
highlighted row, so colouring adds almost nothing to the write. Past 1,048,500 rows
the table continues on further sheets (``part_0``, ``part_1``… of equal size, as
msprobe names them) and those rows are highlighted too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..cells import neutralise
from ..errors import OutputError
from ..writers import atomic_path
from .highlight import RED, YELLOW

MAX_SHEET_ROWS = 1_048_500
RED_RGB = "FFFF0000"
YELLOW_RGB = "FFFF00"


def highlight_value(value: Any) -> Any:
    """8.3.3 ``compare_result_df_convert``: numbers stay, everything else becomes text (inf/nan get a TAB)."""
    t = type(value)
    if t is float:
        if value != value or value in (math.inf, -math.inf):
            return f"{value}\t"
        return value
    if t is int:
        return value
    if isinstance(value, (np.floating, np.integer)) and not isinstance(value, np.bool_):
        return highlight_value(value.item())
    text = str(value)
    if text in ("inf", "-inf", "nan"):
        return text + "\t"
    return neutralise(text)


def plain_value(value: Any) -> Any:
    """A cell as pandas ``to_excel`` writes it: bools and numbers typed, NaN empty, inf as text."""
    t = type(value)
    if t is bool or t is int:
        return value
    if t is float:
        if value != value:
            return None
        if value in (math.inf, -math.inf):
            return "inf" if value > 0 else "-inf"
        return value
    if value is None:
        return None
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return plain_value(value.item())
    if t is str:
        return neutralise(value) if value != "" else None
    return neutralise(str(value))


def _slices(n: int) -> list[tuple[str, int, int]]:
    if n <= MAX_SHEET_ROWS:
        return [("", 0, n)]
    parts = -(-n // MAX_SHEET_ROWS)
    size = -(-n // parts)
    return [(f"part_{i}", i * size, min((i + 1) * size, n)) for i in range(parts)]


def write_workbook(
    path: Path,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    n_rows: int,
    colour: np.ndarray | None,
    highlighted: bool,
) -> Path:
    """Write one result workbook atomically; ``colour`` (per row: 0/RED/YELLOW) only with ``highlighted``."""
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Alignment, Border, Font, PatternFill, Side

    wb = Workbook(write_only=True)
    convert = highlight_value if highlighted else plain_value
    first_name = "Sheet" if highlighted else "Sheet1"
    it = iter(rows)
    styles: dict[int, Any] = {}
    for name, start, end in _slices(n_rows):
        ws = wb.create_sheet(name or first_name)
        if not styles:
            for code, rgb in ((RED, RED_RGB), (YELLOW, YELLOW_RGB)):
                probe = WriteOnlyCell(ws)
                probe.fill = PatternFill(start_color=rgb, end_color=rgb, fill_type="solid")
                styles[code] = probe._style
            head = WriteOnlyCell(ws)
            thin = Side(style="thin")
            head.font = Font(bold=True)
            head.border = Border(left=thin, right=thin, top=thin, bottom=thin)
            head.alignment = Alignment(horizontal="center", vertical="top")
            styles[-1] = head._style
        if highlighted:
            ws.append(list(columns))
        else:
            header_cells = []
            for c in columns:
                cell = WriteOnlyCell(ws, c)
                cell._style = styles[-1]
                header_cells.append(cell)
            ws.append(header_cells)
        for k in range(start, end):
            row = [convert(v) for v in next(it)]
            code = int(colour[k]) if colour is not None and highlighted else 0
            if code:
                style = styles[code]
                cells = []
                for v in row:
                    cell = WriteOnlyCell(ws, v)
                    cell._style = style
                    cells.append(cell)
                ws.append(cells)
            else:
                ws.append(row)
    try:
        with atomic_path(path) as tmp:
            wb.save(tmp)
    except OSError as exc:
        raise OutputError(f"cannot write result ({exc.strerror or exc})", path=path) from None
    return path
