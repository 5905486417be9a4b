"""The index of a dump file by the C scanner's index mode (pass 1 of a streamed compare): where each entry is,
what matching needs, no rows.

A streamed statistics or md5 compare (the default plugin ``chunked``) reads each dump twice: once here, into a
:class:`~msprobe_core.plugin.DumpIndex` of numpy arrays, and again chunk by chunk (:mod:`.chunks`), into ordinary
:class:`~msprobe_core.plugin.DumpTable` parts. The scanner's index mode accepts and declines exactly the
documents its table mode does, so a file it indexes is one whose chunks it will read. :func:`index_dump_file`
returns ``None`` for any file it does not index (the scanner is absent or declines, a repeated key, a tensor
dump, a header the loader refuses): the compare then loads whole tables as it always did, and reports whatever
is wrong with the file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from msprobe_core.plugin import (
    MODE_TENSOR,
    ROW_COLUMNS,
    DumpIndex,
    FileIdentity,
    MsprobeError,
    dump_json,
)

from .scan import _CONSTANTS, _KNOWN, Scanner, _header, available, feed_file, other_leaf_reader, scan_dump

#: bytes read from the start of a file to see its task before indexing it (a tensor dump is never indexed)
PEEK_BYTES = 65536
_TASK = re.compile(rb'"task"\s*:\s*"([^"\\]*)"')


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
    table = dump_json.new_table(path, kind, "")
    columns = tuple([] for _ in ROW_COLUMNS)  # left empty: the index mode keeps no rows
    scanner = Scanner(columns, kind == "debug", other_leaf_reader(), _CONSTANTS, _KNOWN, 2 if renumber else 1)
    try:
        st = path.stat()
        if not feed_file(scanner, path):
            return None
        header = _header(scanner.header)
        if header is None:
            return None
        dump_json.finish_streamed(table, scanner.md5_seen, header, path)
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
        suffixes=suffixes, dtypes=[None, *(d.decode("utf-8") for d in dtypes)], unrecognised=table.unrecognised,
        dialects=table.dialects,
        whole=_whole_file,  # the plugin's loader adds its reader of byte ranges (fast_scan.msprobe_load_dump)
    )


def _whole_file(index: DumpIndex) -> Any:
    """The whole table of an indexed file (read whole, as without an index: the scanner, else the core's loader)."""
    return scan_dump(index.source, index.kind) or dump_json.load_dump_file(index.source, index.kind)
