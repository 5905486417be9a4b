"""The index of a dump file (pass 1 of a streamed compare) as the core knows it: the key hashes and
:func:`index_table`, which makes a :class:`DumpIndex` of a table a loader has read.

A streamed statistics or md5 compare (the default plugin ``chunked``) pairs rows on each dump's
:class:`DumpIndex` of numpy arrays (a few bytes per row, no Python object per row or per entry); the default
plugin ``fast_scan`` indexes a file with the C scanner's index mode, a loader of its own may use
:func:`index_table`. The hashes are the C extension's (64-bit FNV-1a with a final mix), the same in every
process, unlike Python's ``hash`` of a str, which is salted per interpreter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..host.strategies import DumpIndex, FileIdentity
from ..model import ApiEntry

try:
    from .._dumpscan import Scanner, hash_texts, row_hashes
except ImportError:  # built without a C compiler: no key hashes, no scanner
    Scanner = hash_texts = row_hashes = None


def dump_scanner() -> Any:
    """The C scanner of dump.json (the class ``Scanner`` of the optional extension ``msprobe_core._dumpscan``, built
    by ``setup.py`` where a C compiler is), or ``None`` where it is not built (the default plugin ``fast_scan``'s)."""
    return Scanner


def api_entries(columns: tuple[list[Any], ...]) -> list[ApiEntry]:
    """``list(map(ApiEntry, *columns))`` (``columns``: ApiEntry's fields in order), made by the C scanner where built
    (``Scanner.slot_objects`` fills the dataclass's slots without a Python call per object)."""
    made = None if Scanner is None else Scanner.slot_objects(ApiEntry, tuple(ApiEntry.__dataclass_fields__), columns)
    return made if made is not None else list(map(ApiEntry, *columns))


def key_hashes(texts: list[str]) -> np.ndarray:
    """The index's key hash of each text (uint64), as :attr:`DumpIndex.key_hash` has them."""
    return np.frombuffer(hash_texts(texts), dtype=np.uint64)


def index_table(table: Any, renumber: bool, reader: Any, whole: Any) -> DumpIndex:
    """A :class:`~msprobe_core.plugin.DumpIndex` of a table a loader has read: its way to opt in to the chunked
    strategy without indexing its file itself (the table may be let go once this returns).

    ``renumber``: the compare keys with backward calls renumbered, as the built-in normaliser renumbers them (the
    ``index`` argument of ``msprobe_load_dump``); ``reader(index)`` and ``whole(index)``: see ``DumpIndex``
    (``offsets`` holds each entry's number, for a reader that finds entries again by number). The row hashes are
    the C scanner's index's, so such an index pairs with one of the default plugin ``fast_scan``'s.
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
