"""The index of a dump file (pass 1 of a streamed compare): where each entry is, what matching needs, no rows.

A streamed statistics or md5 compare (:mod:`msprobe_core.pipeline.streamed`) reads each dump twice:
once here, into a :class:`DumpIndex` of numpy arrays (a few bytes per row, no Python object per row
or per entry), and again chunk by chunk (:mod:`msprobe_core.load.chunks`), into ordinary
:class:`~msprobe_core.model.DumpTable` parts. The C scanner builds the index in its index mode: it
accepts and declines exactly the documents its table mode does, so a file it indexes is one whose
chunks it will read. :func:`index_dump_file` returns ``None`` for any file it does not index (the
scanner is absent or declines, a repeated key, a tensor dump, a header the loader refuses): the
compare then loads whole tables as it always did, and reports whatever is wrong with the file.

The hashes are the scanner's (64-bit FNV-1a with a final mix), the same in every process, unlike
Python's ``hash`` of a str, which is salted per interpreter.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MsprobeError
from ..model import MODE_TENSOR, ROW_COLUMNS
from .document import finish_streamed, new_table
from .dumpscan import _CONSTANTS, _KNOWN, _header, available, feed_file, other_leaf_reader

try:
    from .._dumpscan import Scanner, hash_texts, row_hashes
except ImportError:  # built without a C compiler: nothing is indexed
    Scanner = hash_texts = row_hashes = None

#: bytes read from the start of a file to see its task before indexing it (a tensor dump is never indexed)
PEEK_BYTES = 65536
#: entries (or elements) whose row hashes are computed or compared at a time: the temporaries stay small
STEP = 1 << 18
_TASK = re.compile(rb'"task"\s*:\s*"([^"\\]*)"')


@dataclass(frozen=True)
class FileIdentity:
    """What says that a file is still the one indexed: size, modification time, inode and device."""

    size: int
    mtime_ns: int
    inode: int
    device: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileIdentity:
        """The identity of a file from its ``stat``."""
        return cls(st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


@dataclass
class DumpIndex:
    """The index of one dump file: per entry (API) and per row, arrays; the header fields of a table.

    Per entry: ``offsets`` (file offset of its key's opening quote; one more element, the offset of the
    ``}`` closing ``data``), ``key_hash`` (of the key), ``head`` (the FNV state of the compare head: the key,
    or with ``renumbered`` the backward-renumbered key), ``rank`` (the backward rank, -1 when not
    renumbered), ``n_rows``; ``first_row`` is their running sum (one more element: the row count). Per row:
    ``suffix`` (id into ``suffixes``: the name after the key, or ``\\x01`` + the whole name when the name
    does not start with the key), ``dtype`` (0 for ``None``, else id + 1 into ``dtypes``), ``flags`` (bit k:
    statistic k (Max, Min, Mean, Norm) is an int or a float; bit k + 4: a float).
    """

    source: Path
    kind: str
    task: str
    mode: str
    framework: str
    level: str | None
    identity: FileIdentity
    renumbered: bool
    offsets: np.ndarray
    key_hash: np.ndarray
    head: np.ndarray
    rank: np.ndarray
    n_rows: np.ndarray
    first_row: np.ndarray
    suffix: np.ndarray
    dtype: np.ndarray
    flags: np.ndarray
    suffixes: list[bytes]
    dtypes: list[str | None]
    tensor_dir: Path | None = None
    stack: Any = None  # the target's StackIndex (:mod:`msprobe_core.load.stackindex`), once attached
    #: the scanned table's :attr:`~msprobe_core.model.DumpTable.unrecognised` and ``dialects``
    unrecognised: list[dict[str, Any]] = field(default_factory=list)
    dialects: list[str] = field(default_factory=list)
    #: whether two rows have one compare-key hash, once :meth:`repeats_a_row` has looked (``None``: not yet)
    repeated_rows: bool | None = None
    #: the two-process load (:mod:`msprobe_core.load.pairload`) sends it pickled, whole
    pickled_whole = True

    def __len__(self) -> int:
        return len(self.suffix)

    @property
    def n_apis(self) -> int:
        """The number of entries."""
        return len(self.n_rows)

    def row_hashes(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """The compare-key hash of every row of entries ``start:stop`` (uint64)."""
        stop = self.n_apis if stop is None else stop
        r0, r1 = int(self.first_row[start]), int(self.first_row[stop])
        suffix = np.ascontiguousarray(self.suffix[r0:r1], dtype=np.uint32)  # the scanner's width (kept narrower)
        raw = row_hashes(self.head[start:stop], self.n_rows[start:stop], suffix, self.suffixes)
        return np.frombuffer(raw, dtype=np.uint64)

    def all_row_hashes(self) -> np.ndarray:
        """:meth:`row_hashes` of every row, computed :data:`STEP` entries at a time into one array."""
        out = np.empty(len(self), dtype=np.uint64)
        for a0 in range(0, self.n_apis, STEP):
            a1 = min(a0 + STEP, self.n_apis)
            out[int(self.first_row[a0]): int(self.first_row[a1])] = self.row_hashes(a0, a1)
        return out

    def repeats_a_row(self) -> bool:
        """Whether two rows have one compare-key hash (looked at once, then kept in :attr:`repeated_rows`).

        The load asks it of the golden side while the target is indexed (:mod:`msprobe_core.load.stage`), so the
        join does not sort the golden's hashes while both indexes are held.
        """
        if self.repeated_rows is None:
            hashes = self.all_row_hashes()
            hashes.sort()
            self.repeated_rows = any_repeat(hashes)
        return self.repeated_rows

    def api_of_rows(self, rows: np.ndarray) -> np.ndarray:
        """The entry of each row number of ``rows``."""
        return np.searchsorted(self.first_row, rows, side="right") - 1

    def same_file(self) -> bool:
        """Whether the file is still the one indexed (size, mtime, inode, device)."""
        try:
            return FileIdentity.of(self.source.stat()) == self.identity
        except OSError:
            return False


def peek_task(path: Path) -> str | None:
    """The ``task`` member when it comes before ``data`` in the first bytes of the file (``None``: not seen)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(PEEK_BYTES)
    except OSError:
        return None
    data = head.find(b'"data"')
    m = _TASK.search(head, 0, data if data >= 0 else len(head))
    return m.group(1).decode("ascii", "replace") if m else None


def index_dump_file(path: Path, kind: str, renumber: bool) -> DumpIndex | None:
    """The index of a dump/debug file, or ``None`` when it is not indexed (see the module's docstring).

    ``renumber``: compare heads with backward calls renumbered (the built-in normaliser's keys).
    """
    if Scanner is None or not available() or peek_task(path) == MODE_TENSOR:
        return None
    table = new_table(path, kind, "")
    columns = tuple([] for _ in ROW_COLUMNS)  # left empty: the index mode keeps no rows
    scanner = Scanner(columns, kind == "debug", other_leaf_reader(), _CONSTANTS, _KNOWN, 2 if renumber else 1)
    try:
        st = path.stat()
        if not feed_file(scanner, path):
            return None
        header = _header(scanner.header)
        if header is None:
            return None
        finish_streamed(table, scanner.md5_seen, header, path)
    except (OSError, MsprobeError):  # the whole-table load reports it
        return None
    except Exception:  # noqa: BLE001 - anything unexpected: the whole-table load reads the file
        return None
    if table.mode == MODE_TENSOR:
        return None
    cols, suffixes, dtypes, data_end = scanner.take_index()
    del scanner
    offsets = np.frombuffer(cols[0], dtype=np.int64)
    key_hash = np.frombuffer(cols[1], dtype=np.uint64)
    if len(key_hash) > 1:
        ordered = np.sort(key_hash)
        if bool((ordered[1:] == ordered[:-1]).any()):  # a repeated key (or two keys of one hash): the table path
            return None
        del ordered
    n_rows = np.frombuffer(cols[4], dtype=np.int32)
    suffix = np.frombuffer(cols[5], dtype=np.uint32)
    if len(suffixes) <= 1 << 16:  # ids kept in the fewest bytes that hold them: the per-row arrays dominate at scale
        suffix = suffix.astype(np.uint16)
    dtype_ids = np.frombuffer(cols[6], dtype=np.uint16)
    if len(dtypes) < 1 << 8:  # ids 0 (None) to len(dtypes)
        dtype_ids = dtype_ids.astype(np.uint8)
    first_row = np.zeros(len(n_rows) + 1, dtype=np.int64)
    np.cumsum(n_rows, out=first_row[1:])
    return DumpIndex(
        source=path, kind=kind, task=table.task, mode=table.mode, framework=table.framework, level=table.level,
        identity=FileIdentity.of(st), renumbered=renumber,
        offsets=np.append(offsets, np.int64(data_end)), key_hash=key_hash,
        head=np.frombuffer(cols[2], dtype=np.uint64), rank=np.frombuffer(cols[3], dtype=np.int32),
        n_rows=n_rows, first_row=first_row, suffix=suffix, dtype=dtype_ids,
        flags=np.frombuffer(cols[7], dtype=np.uint8),
        suffixes=suffixes, dtypes=[None, *(d.decode("utf-8") for d in dtypes)], unrecognised=table.unrecognised, dialects=table.dialects,
    )


def any_repeat(ordered: np.ndarray) -> bool:
    """Whether a sorted array holds a value twice (compared :data:`STEP` elements at a time)."""
    return any(bool((ordered[i + 1: i + STEP + 1] == ordered[i: i + STEP][: len(ordered) - i - 1]).any())
               for i in range(0, max(len(ordered) - 1, 0), STEP))


def key_hashes(texts: list[str]) -> np.ndarray:
    """The index's key hash of each text (uint64), as :attr:`DumpIndex.key_hash` has them."""
    return np.frombuffer(hash_texts(texts), dtype=np.uint64)
