"""The ``xlsx`` workbook written part by part (a streamed compare: ``WriterSpec.open_chunked``).

The parts of one result come in row order and are written as they come, into the workbook
:func:`.workbook.write_xlsx` writes for the whole table, sheet for sheet (sheets switch every
``XLSX_SHEET_ROWS`` rows, inside a part or between two). The workbook is written under its hidden
temporary name and renamed only by :meth:`ChunkedWorkbook.commit`; any failure or interruption before
that, or :meth:`ChunkedWorkbook.abort`, removes it, so nothing that looks finished is left half-written.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from msprobe_core.plugin import WholeTablesNeeded, atomic_path, output_error

from . import workbook
from .stream import XlsxStreamWriter
from .workbook import XLSX_CHUNK_ROWS, _xlsx_values

if TYPE_CHECKING:
    from msprobe_core.plugin import ResultTable


class ChunkedWorkbook:
    """The workbook of one result of ``rows`` rows at ``path``, written part by part.

    A context manager: leaving it without :meth:`commit` (an exception, Ctrl-C) removes the file begun.
    """

    def __init__(self, path: Path, rows: int) -> None:
        self.path = path
        self.rows = rows
        self.header: list[str] | None = None
        self._stack: ExitStack | None = ExitStack()
        self._book: XlsxStreamWriter | None = None
        self._done = 0  # rows written so far
        self._limit = workbook.XLSX_SHEET_ROWS  # the whole-table writer's sheet size, read when opened
        self._sheets = max(1, -(-rows // self._limit))
        self._begun = 0  # sheets begun

    def __enter__(self) -> ChunkedWorkbook:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._stack is not None:
            self.abort(exc if exc is not None else RuntimeError("the result was not committed"))

    def append(self, table: ResultTable) -> None:
        """Write the rows of ``table``, the next part of the result (a part with other columns than the first's:
        :class:`~msprobe_core.plugin.WholeTablesNeeded`)."""
        if self.header is None:
            self.header = list(table.columns)
        elif list(table.columns) != self.header:
            raise WholeTablesNeeded(f"{table.columns} after {self.header}")
        columns = [table.data[c] for c in table.columns]
        n = min([len(table), *map(len, columns)])
        at = 0
        while at < n:
            sheet, within = divmod(self._done, self._limit)
            if within == 0 and sheet >= self._begun:
                self._begin(sheet)
            take = min(n - at, self._limit - within)
            self._write(columns, at, at + take)
            at += take
            self._done += take

    def commit(self) -> list[Path]:
        """Finish the workbook and rename it into place; returns ``[path]`` (``[]`` when no row was written)."""
        if self.header is None:
            raise ValueError("no part of the result was written")
        stack, self._stack = self._stack, None
        try:
            if stack is not None:
                stack.close()
        except OSError as exc:
            raise output_error(exc, self.path) from None
        return [] if self._book is None else [self.path]

    def abort(self, exc: BaseException | None = None) -> None:
        """Remove the workbook begun (it was never renamed into place)."""
        stack, self._stack = self._stack, None
        if stack is None:
            return
        error = exc or RuntimeError("the result was abandoned")
        try:
            stack.__exit__(type(error), error, error.__traceback__)
        except BaseException:  # noqa: BLE001 - the caller reports its own error; the temporary file is gone
            pass

    def _begin(self, sheet: int) -> None:
        assert self._stack is not None and self.header is not None
        if self._book is None:
            tmp = self._stack.enter_context(atomic_path(self.path))
            self._book = self._stack.enter_context(XlsxStreamWriter(tmp))
        self._book.add_sheet("Sheet1" if self._sheets == 1 else f"part_{sheet}")
        self._book.append(self.header)
        self._begun += 1

    def _write(self, columns: list[Any], start: int, stop: int) -> None:
        assert self._book is not None
        try:
            for k in range(start, stop, XLSX_CHUNK_ROWS):
                end = min(stop, k + XLSX_CHUNK_ROWS)
                self._book.append_rows(zip(*[_xlsx_values(col, k, end) for col in columns]))
        except OSError as exc:
            raise output_error(exc, self.path) from None
