"""The index of a dump file (pass 1 of a streamed compare): where each entry is, what matching needs, no rows.

A streamed statistics or md5 compare (the default plugin ``chunked``) reads each dump twice:
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

import re
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MsprobeError
from ..host.strategies import DumpIndex, FileIdentity
from ..model import MODE_TENSOR, ROW_COLUMNS
from .document import finish_streamed, new_table
from .dumpscan import _CONSTANTS, _KNOWN, _header, available, feed_file, other_leaf_reader

try:
    from .._dumpscan import Scanner, hash_texts, row_hashes
except ImportError:  # built without a C compiler: nothing is indexed
    Scanner = hash_texts = row_hashes = None

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
        suffixes=suffixes, dtypes=[None, *(d.decode("utf-8") for d in dtypes)], unrecognised=table.unrecognised,
        dialects=table.dialects,
        whole=_whole_file,  # the built-in loader adds its reader of byte ranges (builtin.msprobe_load_dump)
    )


def _whole_file(index: DumpIndex) -> Any:
    """The built-in loader's whole table of an indexed file (read whole, as without an index)."""
    from .dumpjson import load_dump_file

    return load_dump_file(index.source, index.kind)


def key_hashes(texts: list[str]) -> np.ndarray:
    """The index's key hash of each text (uint64), as :attr:`DumpIndex.key_hash` has them."""
    return np.frombuffer(hash_texts(texts), dtype=np.uint64)


def index_table(table: Any, renumber: bool, reader: Any, whole: Any) -> DumpIndex:
    """A :class:`~msprobe_core.plugin.DumpIndex` of a table a loader has read: its way to opt in to the chunked
    strategy without indexing its file itself (the table may be let go once this returns).

    ``renumber``: the compare keys with backward calls renumbered, as the built-in normaliser renumbers them (the
    ``index`` argument of ``msprobe_load_dump``); ``reader(index)`` and ``whole(index)``: see ``DumpIndex``
    (``offsets`` holds each entry's number, for a reader that finds entries again by number). The row hashes are
    the built-in index's, so such an index pairs with one of the built-in loader's.
    """
    apis = list(table.apis)
    rank = np.full(len(apis), -1, dtype=np.int32)
    seen: dict[str, int] = {}
    suffixes: list[bytes] = []
    suffix_id: dict[bytes, int] = {}
    suffix = np.zeros(len(table.name), dtype=np.uint32)
    names = table.name
    for a, api in enumerate(apis):
        head = api.key
        if renumber and api.direction == "backward":  # the built-in normaliser's rule (match.naming)
            k = seen.get(api.prefix, 0)
            seen[api.prefix] = k + 1
            rank[a] = k
            call = ".".join(str(k) if p.isdigit() else p for p in api.call.split("."))
            head = f"{api.prefix}.{call}" if api.prefix else call
        for r in range(api.first_row, api.first_row + api.n_rows):
            name = names[r]
            text = b"\x01" + (head + name[len(api.key):] if name.startswith(api.key) else name).encode("utf-8")
            suffix[r] = suffix_id.setdefault(text, len(suffix_id))
    suffixes = list(suffix_id)
    dtypes: dict[str | None, int] = {None: 0}
    dtype = np.fromiter((dtypes.setdefault(d, len(dtypes)) for d in table.dtype), dtype=np.uint16,
                        count=len(table.dtype))
    flags = np.zeros(len(table.name), dtype=np.uint8)
    for k, column in enumerate((table.max, table.min, table.mean, table.norm)):
        for r, value in enumerate(column):
            kind = type(value)
            if kind is float:
                flags[r] |= (1 << k) | (1 << (k + 4))
            elif kind is int:
                flags[r] |= 1 << k
    n_rows = np.fromiter((api.n_rows for api in apis), dtype=np.int32, count=len(apis))
    first_row = np.zeros(len(apis) + 1, dtype=np.int64)
    np.cumsum(n_rows, out=first_row[1:])
    source = Path(table.source)
    return DumpIndex(
        source=source, kind=table.kind, task=table.task, mode=table.mode, framework=table.framework,
        level=table.level, identity=FileIdentity.of(source.stat()), renumbered=renumber,
        offsets=np.arange(len(apis) + 1, dtype=np.int64), key_hash=key_hashes([api.key for api in apis]),
        head=np.zeros(len(apis), dtype=np.uint64), rank=rank, n_rows=n_rows, first_row=first_row, suffix=suffix,
        dtype=dtype, flags=flags, suffixes=suffixes, dtypes=list(dtypes), tensor_dir=table.tensor_dir,
        unrecognised=list(table.unrecognised), dialects=list(table.dialects), reader=reader,
        whole=whole,
    )
