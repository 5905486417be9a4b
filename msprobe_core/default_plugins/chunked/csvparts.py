"""The core's CSV result written chunk by chunk (a streamed compare): the files the CSV writer gives.

The core's CSV writer takes a whole :class:`~msprobe_core.plugin.ResultTable`; :class:`ChunkedResult` takes the
parts of one, in row order, and writes each as it comes: part files switch every ``CSV_MAX_ROWS`` rows, as there.
Every file is written under its hidden temporary name and all are renamed only when the whole result is written
(:meth:`ChunkedResult.commit`); any failure or interruption before that, or :meth:`ChunkedResult.abort`, removes
them all, so nothing that looks finished is left half-written. Another format is written part by part by its own
writer (``WriterSpec.open_chunked``: the ``xlsx`` format's).
"""

from __future__ import annotations

import shutil
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

import msprobe_core.plugin as api
from msprobe_core.plugin import TEXT_ERRORS, ResultTable, WholeTablesNeeded, atomic_path, output_error, write_csv_rows


class ColumnsDiffer(WholeTablesNeeded):
    """A part of the result does not have the columns of the first part (the whole table must be written: a
    strategy writing parts hands the job back to whole tables)."""


def open_parts(writer: Any) -> Any:
    """How the result of ``writer`` (a :class:`~msprobe_core.plugin.WriterSpec`) is written part by part: its own
    ``open_chunked``, this module's for the core's CSV writer, else ``None`` (whole tables)."""
    if writer.open_chunked is not None:
        return writer.open_chunked
    if writer.name == "csv" and writer.plugin == api.BUILTIN_PLUGIN:
        return ChunkedResult
    return None


class ChunkedResult:
    """The CSV files of one result of ``rows`` rows at ``path``, written part by part.

    A context manager: leaving it without :meth:`commit` (an exception, Ctrl-C) removes every file begun.
    """

    def __init__(self, path: Path, rows: int) -> None:
        self.path = path
        self.rows = rows
        self.header: list[str] | None = None
        self._stack: ExitStack | None = ExitStack()
        self._files: list[Path] = []
        self._csv: TextIO | None = None
        self._done = 0  # rows written so far
        self._header_due = False
        self._limit = api.CSV_MAX_ROWS
        self._parts = max(1, -(-rows // self._limit))

    def __enter__(self) -> ChunkedResult:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._stack is not None:
            self.abort(exc if exc is not None else RuntimeError("the result was not committed"))

    def append(self, table: ResultTable) -> None:
        """Write the rows of ``table``, the next part of the result."""
        if self.header is None:
            self.header = list(table.columns)
        elif list(table.columns) != self.header:
            raise ColumnsDiffer(f"{table.columns} after {self.header}")
        columns = [table.data[c] for c in table.columns]
        n = min([len(table), *map(len, columns)])
        at = 0
        while at < n:
            part, within = divmod(self._done, self._limit)
            if within == 0 and part >= len(self._files):
                self._begin(part)
            take = min(n - at, self._limit - within)
            self._write(columns, at, at + take)
            at += take
            self._done += take

    @property
    def part_rows(self) -> int:
        """Rows per CSV part file (what another process spelling rows for :meth:`adopt_csv` splits them by)."""
        return self._limit

    def adopt_csv(self, columns: list[str], segments: list[tuple[int, int, Path]]) -> None:
        """Append rows another process spelled as this writer spells them: ``segments`` are ``(part, rows,
        file)`` in order, each ``file`` the CSV text of the next ``rows`` rows, all in part file ``part``
        (:attr:`part_rows` rows per part), with the header when they begin the part."""
        if self.header is None:
            raise ValueError("CSV rows are adopted after the first part")
        if list(columns) != self.header:
            raise ColumnsDiffer(f"{columns} after {self.header}")
        for part, rows, file in segments:
            at, within = divmod(self._done, self._limit)
            if at != part or within + rows > self._limit:
                raise ValueError(f"rows of part {part} offered at row {self._done}")
            if within == 0 and part >= len(self._files):
                self._begin(part)
                self._header_due = False  # the segment begins with it
            assert self._csv is not None
            try:
                self._csv.flush()
                with open(file, "rb") as src:
                    shutil.copyfileobj(src, self._csv.buffer, 1 << 20)  # type: ignore[attr-defined]
            except OSError as exc:
                raise output_error(exc, self._files[-1]) from None
            self._done += rows

    def commit(self) -> list[Path]:
        """Finish and rename every file into place; returns the result's files."""
        if self.header is None:
            raise ValueError("no part of the result was written")
        stack, self._stack = self._stack, None
        try:
            stack.close()  # type: ignore[union-attr]
        except OSError as exc:
            raise output_error(exc, self._files[-1]) from None
        return list(self._files)

    def abort(self, exc: BaseException | None = None) -> None:
        """Remove every file begun (they were never renamed into place)."""
        stack, self._stack = self._stack, None
        if stack is None:
            return
        error = exc or RuntimeError("the result was abandoned")
        try:
            stack.__exit__(type(error), error, error.__traceback__)
        except BaseException:  # noqa: BLE001 - the caller reports its own error; the temporaries are gone
            pass

    def _begin(self, part: int) -> None:
        stack = self._stack
        assert stack is not None
        if self._csv is not None:
            self._csv.close()
        final = self.path if self._parts == 1 else self.path.with_name(
            f"{self.path.stem}_part_{part + 1}{self.path.suffix}")
        self._files.append(final)
        tmp = stack.enter_context(atomic_path(final))
        self._csv = stack.enter_context(open(tmp, "w", newline="", encoding="utf-8", errors=TEXT_ERRORS))
        self._header_due = True  # the header goes with the part's first rows (write_csv_rows)

    def _write(self, columns: list[Any], start: int, stop: int) -> None:
        assert self._csv is not None
        header, self._header_due = (self.header if self._header_due else None), False
        try:
            write_csv_rows(self._csv, header, columns, start, stop)
        except OSError as exc:
            raise output_error(exc, self._files[-1]) from None
