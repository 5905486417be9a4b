"""Result files read back as :class:`~msprobe_core.default_plugins.summary.views.ResultView` (``msprobe report``): CSV and xlsx."""

from __future__ import annotations

import csv
import math
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from msprobe_core.plugin import InputError
from msprobe_core.plugin import result_columns as C

from .chunks import ResultChunk, concat_chunks
from .views import ResultView, detect_mode, guess_frameworks

_RANK_IN_NAME = re.compile(r"(?:^|_)(rank\d*|proc\d+|\d+_\d+)_\d{14}(?:_part_\d+)?$")


def label_from_path(path: Path) -> str:
    """``rank1`` from ``compare_result_rank1_20260101120000.csv``; ``rank 0 step 1`` for ``<rank>_<step>`` names (a result per rank and step)."""
    m = _RANK_IN_NAME.search(path.stem)
    if not m:
        return ""
    tag = m.group(1)
    if re.fullmatch(r"\d+_\d+", tag):
        rank, step = tag.split("_")
        return f"rank {rank} step {step}"
    return tag


#: Rows read from a result file at a time (its cells, as strings, are what a chunk of a file costs).
READ_ROWS = 16384
#: Rows the frameworks of a result are guessed from (:func:`~msprobe_core.default_plugins.summary.views.guess_frameworks`).
GUESS_ROWS = 2000


def read_result_file(path: Path, label: str | None = None) -> ResultView:
    """Read a compare result (``.csv`` or ``.xlsx``) back into a view (every row: see :func:`read_result_chunks`)."""
    return _whole(read_result_chunks([Path(path)], label, rows=sys.maxsize))


def read_files_as_view(files: Sequence[Path], label: str) -> ResultView:
    """One view from a result written as one file or as ``_part_N`` files (parts whose header is not the
    first file's are left out)."""
    return _whole(read_result_chunks(files, label, rows=sys.maxsize))


def _whole(chunks: Iterable[ResultChunk]) -> ResultView:
    chunks = list(chunks)
    if len(chunks) == 1:
        c = chunks[0]
        return ResultView(c.label, c.mode, c.columns, c.cells, c.files, c.frameworks, c.level, c.dump_mode)
    whole = concat_chunks(chunks)
    return ResultView(whole.label, whole.mode, whole.columns, whole.cells, whole.files, whole.frameworks)


def read_result_chunks(files: Sequence[Path], label: str | None = None, rows: int = READ_ROWS
                       ) -> Iterator[ResultChunk]:
    """A result written as one file or as ``_part_N`` files (``.csv`` or ``.xlsx``), read in chunks of ``rows``
    rows: no more than a chunk's cells (and the reader's buffer) is held at a time.

    ``label``: the result's label (default: the rank in the first file's name). The header, mode and
    frameworks are the first file's; a later part whose header differs is left out. A file that cannot
    be read or is not a compare result stops the reading with an :class:`~msprobe_core.errors.InputError`
    naming it (possibly after chunks of the rows before the problem were given).
    """
    files = [Path(f) for f in files]
    first = files[0]
    header = _header(first)
    if C.NPU_NAME not in header:
        raise InputError(f"not a compare result: no '{C.NPU_NAME}' column", path=first)
    kept = [f for f in files if f == first or _header(f) == header]
    mode = detect_mode(header)
    label = label if label is not None else label_from_path(first)
    rows = max(1, int(rows))
    start = 0
    frameworks: tuple[str, str] | None = None
    for n, path in enumerate(files):
        blocks = _row_blocks(path, header, max(rows, GUESS_ROWS) if n == 0 else rows, rows)
        if path not in kept:
            for _ in blocks:  # a part of another table: read (it must be well-formed), not shown
                pass
            continue
        for k, block in enumerate(blocks):
            cells = _columns(header, block)
            if n == 0 and k == 0:
                frameworks = guess_frameworks(cells, mode)
            for a in range(0, len(block), rows):
                sub = cells if a == 0 and len(block) <= rows else {c: v[a:a + rows] for c, v in cells.items()}
                chunk = ResultChunk(label, mode, header, sub, kept, frameworks, start=start)
                start += len(chunk)
                yield chunk
    if not start:  # a result of no row: one empty chunk
        yield ResultChunk(label, mode, header, {c: [] for c in header}, kept, frameworks)


def _columns(header: list[str], block: list[list[str]]) -> dict[str, list[str]]:
    """Rows of cells as columns (rows are as wide as the header)."""
    if not block:
        return {c: [] for c in header}
    return dict(zip(header, map(list, zip(*block))))


def read_csv_table(path: Path) -> tuple[list[str], list[list[str]]]:
    """The header and every row of a CSV result, cells as written (an :class:`~msprobe_core.errors.InputError`
    naming the file when it cannot be read, is empty or has a row wider or narrower than its header)."""
    blocks = _csv_blocks(Path(path), sys.maxsize, sys.maxsize, header_only=False)
    header = _header(Path(path))
    return header, [row for block in blocks for row in block]


def _header(path: Path) -> list[str]:
    """The header of a result file (an :class:`~msprobe_core.errors.InputError` when it has none)."""
    return next(_row_blocks(path, None, 1, 1, header_only=True))[0]


def _row_blocks(path: Path, header: list[str] | None, first: int, rows: int, header_only: bool = False
                ) -> Iterator[list[list[str]]]:
    """The rows of a result file after its header, ``first`` rows in the first block then ``rows`` per block
    (at least one block), every row as wide as ``header``. ``header_only``: one block, ``[header]``."""
    if not path.is_file():
        raise InputError("result file does not exist", path=path)
    suffix = path.suffix.lower()
    if suffix == ".xlsx":
        yield from _xlsx_blocks(path, first, rows, header_only)
    elif suffix == ".csv":
        yield from _csv_blocks(path, first, rows, header_only)
    else:
        raise InputError("a result file must be .csv or .xlsx", path=path)


def _csv_blocks(path: Path, first: int, rows: int, header_only: bool) -> Iterator[list[list[str]]]:
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None:
                raise InputError("result file is empty", path=path)
            if header_only:
                yield [header]
                return
            width, seen, size = len(header), 0, first
            while True:
                raw = list(islice(reader, size))
                block = [row for row in raw if row]  # blank lines are no rows (as pandas reads them)
                for k, row in enumerate(block, seen + 1):
                    if len(row) != width:  # e.g. a bare carriage return in a cell started a row of its own
                        raise InputError(f"row {k} has {len(row)} fields where the header has {width}: not a "
                                         "well-formed result table", path=path)
                if block or (not seen and len(raw) < size):
                    yield block
                seen += len(block)
                if len(raw) < size:
                    return
                size = rows
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read result ({exc})", path=path) from None


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


def _xlsx_blocks(path: Path, first: int, rows: int, header_only: bool) -> Iterator[list[list[str]]]:
    """Rows of every sheet whose header is the first sheet's (results past the row limit continue on further
    sheets), in blocks, each row cut or padded to the header's width."""
    from openpyxl import load_workbook

    try:
        wb = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many kinds for a broken workbook
        raise InputError(f"cannot read xlsx result ({exc})", path=path) from None
    header: list[str] | None = None
    block: list[list[str]] = []
    size, yielded = first, False
    try:
        for ws in wb.worksheets:
            it = ws.iter_rows(values_only=True)
            head = next(it, None)
            if head is None:
                continue
            head_s = [_xlsx_text(h) for h in head]
            if header is None:
                header = head_s
                if header_only:
                    yield [header]
                    return
            elif head_s != header:
                continue
            width = len(header)
            for r in it:
                row = [_xlsx_text(v) for v in r[:width]]
                if len(row) < width:
                    row += [""] * (width - len(row))
                block.append(row)
                if len(block) >= size:
                    yield block
                    block, size, yielded = [], rows, True
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - a sheet is parsed as it is read: broken XML, entity bombs…
        raise InputError(f"cannot read xlsx result ({exc})", path=path) from None
    finally:
        wb.close()
    if header is None:
        raise InputError("result workbook is empty", path=path)
    if block or not yielded:
        yield block
