"""The built-in result writer (CSV), atomic; the default plugin ``xlsx`` writes xlsx.

A result is first written to a hidden temporary file in the output directory and renamed into place only
when complete: an interrupted run never leaves a file that looks finished
(:func:`msprobe_core.files.outputs.atomic_path`, re-exported here for plugin writers).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from ..files.outputs import TEXT_ERRORS, atomic_path, output_error
from ..result import ResultTable
from ..text.cells import FORMULA_PREFIXES, csv_cells
from ..text.csv_rows import csv_chunk, csv_line

__all__ = ["WRITERS", "atomic_path", "write_csv"]

CSV_MAX_ROWS = 1_000_000
"""Rows per CSV file: a bigger result is split into ``_part_N`` files of this many rows (and so is one written in
parts, the default plugin ``chunked``'s)."""


CSV_CHUNK_ROWS = 2048
"""Rows spelled and written at a time: the CSV writer holds one chunk of text, never the whole table.

A chunk's text (about thirty columns of cells) should stay in the caches until it is joined: with 8,192 rows it
did not, and in the large heap of a million-entry compare a row cost 1.3x what it costs at 100,000 entries."""


def _csv_texts(column: Sequence[Any], start: int, stop: int) -> tuple[Any, str | None]:
    """Cells ``start:stop`` of one column as the CSV spells them (or a column of numbers for the C join to spell,
    :func:`msprobe_core.text.csv_rows.number_column`), and the characters they can hold."""
    numbers = getattr(column, "csv_number_column", None)
    if numbers is not None and (form := numbers(start, stop)) is not None:
        return form, ""
    spell = getattr(column, "csv_texts", None)  # lean columns (msprobe_core.text.columns) spell themselves
    if spell is not None:
        return spell(start, stop), getattr(column, "csv_charset", None)
    return csv_cells(column[start:stop])


def write_csv_rows(fh: TextIO, header: list[str] | None, columns: list[Sequence[Any]], start: int, stop: int) -> None:
    """Header (unless ``None``) and rows ``start:stop``, chunk by chunk, as ``csv.writer(fh, lineterminator="\\n")``
    writes them, a field holding a carriage return quoted (:mod:`msprobe_core.text.csv_rows`)."""
    if header is not None:
        fh.write(csv_line(header) if header else "\n")
    if not columns:
        return
    for k in range(start, stop, CSV_CHUNK_ROWS):
        texts, charsets = zip(*[_csv_texts(col, k, min(stop, k + CSV_CHUNK_ROWS)) for col in columns])
        fh.write(csv_chunk(texts, charsets))


def write_csv(table: ResultTable, path: Path, tail: Any = None) -> list[Path]:
    """Write ``table`` as CSV (split into ``_part_N`` files past one million rows), chunk by chunk.

    ``tail``: a tail already spelling the rows from ``tail.start`` on (``StrategySpec.tail``: the default plugin
    ``chunked``); its text is appended, or those rows are written here if it failed.
    """
    columns = [table.data[c] for c in table.columns]
    # a tail with ``stop``: the table holds only the rows before it, the tail every other (see pipeline.whole)
    n = getattr(tail, "stop", None) or (min(map(len, columns)) if columns else 0)
    bounds = [(0, n)] if n <= CSV_MAX_ROWS else [(k, min(n, k + CSV_MAX_ROWS)) for k in range(0, n, CSV_MAX_ROWS)]
    if len(bounds) > 1:
        tail = None  # a tail's rows are for one file; the core never asks for one for such a table
    written: list[Path] = []
    for part, (start, stop) in enumerate(bounds, start=1):
        target = path if len(bounds) == 1 else path.with_name(f"{path.stem}_part_{part}{path.suffix}")
        try:
            with atomic_path(target) as tmp:
                if tail is not None and start < tail.start < stop:
                    _write_with_tail(tmp, table.columns, columns, start, stop, tail)
                else:
                    write_csv_file(tmp, table.columns, columns, start, stop)
        except OSError as exc:
            raise output_error(exc, target) from None
        written.append(target)
    return written


def write_csv_file(path: Path, header: list[str], columns: list[Sequence[Any]], start: int, stop: int) -> None:
    """Write the header and rows ``start:stop`` to ``path``; a plugin may spell the second half meanwhile.

    Spelling the cells is pure Python (one core): the run's plugins are asked for a tail spelling the second
    half elsewhere (``msprobe_csv_tail``: the default plugin ``forking`` forks a child for a big file), which is
    appended once this process has written the first half; without one, or if it fails in any way, this
    process spells every row itself.
    """
    from ..running import run_host

    host = run_host()
    tail = None if host is None else host.csv_tail(path, columns, start, stop)
    if tail is None:
        with open(path, "w", newline="", encoding="utf-8", errors=TEXT_ERRORS) as fh:
            write_csv_rows(fh, header, columns, start, stop)
        return
    try:
        _write_with_tail(path, header, columns, start, stop, tail)
    finally:
        tail.close()


def _append_rows(path: Path, side: Path | None, columns: list[Sequence[Any]], start: int, stop: int) -> None:
    """Append rows ``start:stop`` to ``path``: the text a child wrote into ``side``, or (None) spelled here."""
    if side is None:
        with open(path, "a", newline="", encoding="utf-8", errors=TEXT_ERRORS) as fh:
            write_csv_rows(fh, None, columns, start, stop)
        return
    with open(path, "r+b") as out, open(side, "rb") as text:
        append_file(text, out)


def append_file(src: BinaryIO, dst: BinaryIO) -> None:
    """Append all of ``src`` to ``dst``, copied inside the kernel where it can (``copy_file_range``)."""
    src_at, dst_at = 0, dst.seek(0, os.SEEK_END)
    copy = getattr(os, "copy_file_range", None)
    if copy is not None:
        try:
            while n := copy(src.fileno(), dst.fileno(), 1 << 30, src_at, dst_at):
                src_at += n
                dst_at += n
            return
        except OSError:  # not between these files (another file system, an old kernel): copy through here
            pass
    src.seek(src_at)
    dst.seek(dst_at)
    shutil.copyfileobj(src, dst, 16 * 1024 * 1024)


def _write_with_tail(path: Path, header: list[str], columns: list[Sequence[Any]], start: int, stop: int,
                     tail: Any) -> None:
    """Header and rows ``start:tail.start`` from here, then the child's text of the rest (or, if it failed, the
    rest spelled here)."""
    with open(path, "w", newline="", encoding="utf-8", errors=TEXT_ERRORS) as fh:
        write_csv_rows(fh, header, columns, start, tail.start)
    _append_rows(path, tail.side if tail.finish() else None, columns, tail.start, stop)


def any_formula_like(values: list[str]) -> bool:
    """False when no text of ``values`` is formula-like (C-level scans); True when some may be."""
    if not _FORMULA_FIRST.isdisjoint(map(_first_char, values)):
        return True
    return ";" in "".join(values)  # text after a ';' may be a formula: let neutralise decide, cell by cell


_FORMULA_FIRST = frozenset("＋－＝％＠+-=%@" + FORMULA_PREFIXES)
_first_char = itemgetter(slice(0, 1))


WRITERS: dict[str, tuple[str, Callable[[ResultTable, Path], list[Path]]]] = {
    "csv": (".csv", write_csv),
}
