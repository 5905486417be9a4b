"""Pass 2 of a streamed compare: the rows of a few entries of a dump, read by byte range into a table.

The index of a dump (:mod:`.index`) knows where each entry starts. A run of
consecutive entries is one byte range of the file; read with ``os.pread`` and wrapped as a small
document (``{"data": {…}}``), it goes through the same C scanner as a whole file, in table mode, and
gives the same rows the whole table has for those entries (``row_api`` and the rows numbered from the
chunk's start). Before use, the entries read are checked against the index (their keys' hashes and row
counts) and the file against what it was when it was indexed (size, modification time, inode): a file
changed between the two passes stops the compare with one line naming it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import numpy as np

from msprobe_core.plugin import (
    ROW_COLUMNS,
    DumpIndex,
    DumpTable,
    FileIdentity,
    InputError,
    WholeTablesNeeded,
    dump_json,
    key_hashes,
)

from .scan import _CONSTANTS, _KNOWN, Scanner, other_leaf_reader, take_rows

_BLANKS = b" \t\r\n"


def changed(path: Path) -> InputError:
    """The error of a dump file that changed while it was being compared."""
    return InputError("the file changed while it was being compared (it was read twice)", path=path)


class ChunkDeclined(WholeTablesNeeded):
    """Entries read by range are not what the index says, in a file that looks unchanged: compare whole tables."""


class ChunkReader:
    """Reads runs of entries of one indexed dump file (a context manager holding the file open)."""

    def __init__(self, index: DumpIndex) -> None:
        self.index = index
        self._fd = -1

    def __enter__(self) -> ChunkReader:
        try:
            self._fd = os.open(self.index.source, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            same = FileIdentity.of(os.fstat(self._fd)) == self.index.identity
        except OSError:
            same = False
        if not same:
            self.close()
            raise changed(self.index.source)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close the file."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def read(self, runs: Sequence[tuple[int, int]]) -> DumpTable:
        """The table of the entries of ``runs`` (``(first, stop)`` entry numbers, ascending), in that order."""
        index = self.index
        offsets = index.offsets
        parts = [b'{"data": {']
        for k, (a, b) in enumerate(runs):
            raw = self._pread(int(offsets[a]), int(offsets[b]) - int(offsets[a]))
            raw = raw.rstrip(_BLANKS)
            if b < index.n_apis:  # the separator before the next entry
                if not raw.endswith(b","):
                    raise self._differs()
                raw = raw[:-1]
            if k:
                parts.append(b",")
            parts.append(raw)
        parts.append(b"}}")
        table = dump_json.new_table(index.source, index.kind, index.framework)
        scanner = Scanner(tuple(getattr(table, c) for c in ROW_COLUMNS), index.kind == "debug",
                          other_leaf_reader(), _CONSTANTS, _KNOWN)
        if scanner.feed(b"".join(parts), True) < 0 or not scanner.done:
            raise self._differs()
        take_rows(table, scanner)
        table.task, table.mode, table.level, table.tensor_dir = index.task, index.mode, index.level, index.tensor_dir
        self._check(table, runs)
        return table

    def _pread(self, at: int, size: int) -> bytes:
        chunks = []
        while size > 0:
            try:
                data = os.pread(self._fd, size, at)
            except OSError as exc:
                raise InputError(f"cannot read it ({exc.strerror or exc})", path=self.index.source) from None
            if not data:
                raise self._differs()
            chunks.append(data)
            at += len(data)
            size -= len(data)
        return b"".join(chunks)

    def _check(self, table: DumpTable, runs: Sequence[tuple[int, int]]) -> None:
        """The entries read are those indexed: same keys (by hash) and row counts."""
        index = self.index
        want = np.concatenate([np.arange(a, b) for a, b in runs]) if runs else np.zeros(0, dtype=np.int64)
        got = key_hashes([a.key for a in table.apis])
        counts = np.fromiter((a.n_rows for a in table.apis), dtype=np.int64, count=len(table.apis))
        if (len(got) != len(want) or not np.array_equal(got, index.key_hash[want])
                or not np.array_equal(counts, index.n_rows[want])):
            raise self._differs()

    def _differs(self) -> Exception:
        """What to raise when the entries read differ from the index: the file changed, or (it did not) a fallback."""
        try:
            same = FileIdentity.of(os.fstat(self._fd)) == self.index.identity and self.index.same_file()
        except OSError:
            same = False
        return ChunkDeclined(str(self.index.source)) if same else changed(self.index.source)

