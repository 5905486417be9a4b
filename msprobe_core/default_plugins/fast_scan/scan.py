"""The default plugin ``fast_scan``'s table load: the optional C scanner ``_dumpscan``, ahead of the core's
pure-Python ``load_dump_file`` (:mod:`msprobe_core.plugin.dump_json`'s).

On a 100k-entry statistics dump, Python's json decoder and the Python walk cost about
2.5 s per side; the scanner reads the bytes block by block and appends the same rows in
a fraction of that. It is an accelerator only: it declines every document it does not
fully understand (a syntax error, an escape in a name, a wrong field type, a repeated key,
see ``_dumpscan.c``), and :func:`scan_dump` then returns ``None`` so the Python walk reads
the file and reports any problem exactly as before. The four statistics columns come as
:class:`~.statcells.StatCells` (arrays, not float objects), which read as the
Python walk's lists. Without a C compiler at install time
the module is absent and the Python walk always runs. ``tests/test_dumpscan.py`` checks
that both paths give the same table, value by value and type by type.
"""

from __future__ import annotations

import codecs
import json
import os
from operator import sub
from pathlib import Path
from typing import Any

import numpy as np

from msprobe_core.plugin import (
    ROW_COLUMNS,
    STAT_COLUMNS,
    STATE_DEBUG,
    STATE_INPUT,
    STATE_OUTPUT,
    STATE_PARAMETERS,
    STATE_PARAMETERS_GRAD,
    DumpTable,
    dump_json,
)

from .statcells import StatCells

#: the core reader's block size and leaf reader, bound here: the tests shrink the block and break the leaf reader
BLOCK_BYTES, non_tensor = dump_json.BLOCK_BYTES, dump_json.non_tensor

#: the C scanner, or ``None`` where the extension was built without a C compiler (the core's loader reads every file)
Scanner = dump_json.dump_scanner()

#: set to any non-empty value to always read dump files with the Python walk
ENV_PYTHON_LOADER = "MSPROBE_PY_LOADER"

_CONSTANTS = (
    STATE_INPUT, STATE_OUTPUT, STATE_PARAMETERS, STATE_PARAMETERS_GRAD, STATE_DEBUG,
    "-1", dump_json.EMPTY_CRC, "True", "False", "Nan",
)


#: the leaf fields most leaves have, first: the scanner checks each member key against the list in order
_COMMON_FIELDS = ("type", "dtype", "shape", "Max", "Min", "Mean", "Norm", "requires_grad", "data_name", "md5", "value")
#: what the scanner may read without declining: (entry members, leaf fields, P2P op members); its ENTRY_KEYS
#: are the dump_json.CURRENT_MEMBERS
_KNOWN = (
    dump_json.CURRENT_MEMBERS + tuple(sorted(dump_json.ENTRY_METADATA)),
    _COMMON_FIELDS + tuple(sorted((dump_json.LEAF_DATA_FIELDS | dump_json.LEAF_METADATA) - set(_COMMON_FIELDS))),
    tuple(sorted(dump_json.P2P_FIELDS)),
)


def available() -> bool:
    """Whether the C scanner is built and not switched off by ``MSPROBE_PY_LOADER``."""
    return Scanner is not None and not os.environ.get(ENV_PYTHON_LOADER)


def scan_dump(path: Path, kind: str) -> DumpTable | None:
    """The table of a dump/debug file read by the C scanner, or ``None`` when it declines.

    ``None`` also when the scanner is not available or the file cannot be opened: the
    Python walk then reads the file (and names whatever is wrong with it).
    """
    if not available():
        return None
    table = dump_json.new_table(path, kind, "")
    columns = tuple(getattr(table, c) for c in ROW_COLUMNS)
    scanner = Scanner(columns, kind == "debug", other_leaf_reader(), _CONSTANTS, _KNOWN)
    try:
        if not feed_file(scanner, path):
            return None
    except Exception:  # noqa: BLE001 - anything unexpected: the Python walk reads the file and reports it
        return None
    header = _header(scanner.header)
    if header is None:
        return None
    take_rows(table, scanner)
    return dump_json.finish_streamed(table, scanner.md5_seen, header, path)


def other_leaf_reader() -> Any:
    """The scanner's ``other_leaf``: :func:`dump_json.non_tensor` for the leaves it leaves to Python."""
    crcs: dict[str, str] = {}

    def other_leaf(leaf: dict, name: str, md5: str | None) -> tuple:
        dtype, shape_text, stats, md5 = non_tensor(leaf, name, md5, crcs)
        if stats.__class__ is list:
            return dtype, shape_text, *stats, md5
        return dtype, shape_text, stats, stats, stats, stats, md5

    return other_leaf


def take_rows(table: DumpTable, scanner: Any) -> None:
    """Give ``table`` (whose row lists the scanner filled) its statistics columns and its APIs."""
    for attr, (kinds, nums, others) in zip(STAT_COLUMNS, scanner.stats):
        setattr(table, attr, StatCells(np.frombuffer(kinds, dtype=np.int8), np.frombuffer(nums, dtype=np.float64),
                                       others))
    keys, prefixes, calls, directions, first_rows = scanner.apis
    ends = first_rows[1:]
    ends.append(len(table.name))
    table.apis = dump_json.api_entries((keys, prefixes, calls, directions, first_rows, list(map(sub, ends, first_rows))))


def feed_file(scanner: Any, path: Path) -> bool:
    """Feed the whole file to ``scanner`` block by block; ``False`` when it declines (or cannot read it).

    The blocks are read into one reused buffer, the cut end of a block moved to its front before
    the next read: no fresh 8 MB buffer to zero per block and no joining copy. (A memory map was
    as fast, but a file truncated by another program while it is mapped kills the process.)
    Each block goes with its offset in the file (where the index mode records the entries).
    """
    from msprobe_core.plugin import size_text, tick

    filled = 0  # bytes at the front of buf not consumed yet
    at = 0  # file offset of buf[0]
    first = True
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            # a small file needs no 8 MB buffer (zeroed, it would count in the process's memory)
            buf = bytearray(min(BLOCK_BYTES, size + 1))
            while True:
                if at and size:  # a block a time: the load's progress in bytes read
                    tick(f"{size_text(at)} of {size_text(size)} ({min(at / size, 1):.0%}) read")
                if filled == len(buf):  # an entry larger than the buffer: widen it
                    buf.extend(bytes(len(buf)))
                n = handle.readinto(memoryview(buf)[filled:])
                if not n:
                    break
                end = filled + n
                start = 0
                if first and buf[:3] == codecs.BOM_UTF8:  # the Python walk decodes with utf-8-sig
                    start = len(codecs.BOM_UTF8)
                first = False
                used = scanner.feed(memoryview(buf)[start:end], False, at + start)
                if used < 0:
                    return False
                used += start
                buf[: end - used] = buf[used:end]
                filled = end - used
                at += used
    except OSError:  # unreadable: the Python walk names the problem
        return False
    return scanner.feed(memoryview(buf)[:filled], True, at) >= 0 and bool(scanner.done)


def _header(members: list[tuple[str, bytes | None]]) -> dict[str, Any] | None:
    """The top-level members but ``data`` (``True``), parsed by json as the Python walk does."""
    header: dict[str, Any] = {}
    for key, raw in members:
        if raw is None:
            header[key] = True
            continue
        try:
            header[key] = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            return None
    return header
