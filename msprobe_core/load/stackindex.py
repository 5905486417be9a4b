"""The target's ``stack.json`` for a streamed compare: each API's stack by entry number, lines kept once.

The whole-table path keeps ``stack.json`` as a dict from API name to its list of lines
(:func:`msprobe_core.load.dumpjson.load_stack`): at a million entries, millions of API-name strings.
A streamed compare needs a chunk's stacks only, by the chunk's APIs: :class:`StackIndex` maps every
entry of the target's :class:`~msprobe_core.load.dumpindex.DumpIndex` to a record, a record to the ids
of its lines, and keeps each distinct line once; :meth:`StackIndex.stacks` gives a chunk the dict the
whole table would have had, for its APIs. API names are found by the index's key hashes (64-bit; the
target's keys are distinct by hash, see ``dumpindex``).

:func:`read_stack_records` reads ``stack.json`` member by member into :class:`StackRecords` (API-name
hashes, records, lines kept once) without ever holding the file's dict, and needs no index: it runs
while the target is indexed. It takes the layouts :func:`~msprobe_core.load.dumpjson.load_stack` takes
and returns ``None`` for anything whose meaning depends on more than one member at a time (a repeated
top-level key, a ``"0"`` member that is not the first, an API name that is not a text, an old-layout
stack that is not a list): the caller then reads the file with ``load_stack``, which gives today's
result or today's error. A syntax error is raised as ``load_stack`` raises it (the same parser).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .dumpindex import DumpIndex, hash_texts, key_hashes

#: API names hashed at a time while ``stack.json`` is read
HASH_BATCH = 65536
#: index entries looked up at a time among the names of ``stack.json`` (the temporaries stay small)
SEARCH_STEP = 1 << 18


@dataclass
class StackRecords:
    """``stack.json`` without its API names: per name (by its key hash) a record; per record its lines or an object.

    ``name_hash``/``name_record``: one element per API name in file order (a repeated name: the last one
    counts, as in ``load_stack``'s dict); a record's lines are ``ids[starts[rec]:starts[rec + 1]]`` into
    ``lines``, or ``objects[rec]`` when its value is not a list of texts.
    """

    name_hash: np.ndarray
    name_record: np.ndarray
    lines: list[Any]
    objects: dict[int, Any]
    starts: np.ndarray
    ids: np.ndarray


class StackIndex:
    """Per target entry a record number (-1: no stack); per record its lines (ids into ``lines``) or an object."""

    def __init__(self, stack: dict[str, Any], index: DumpIndex) -> None:
        self.api_record = np.full(index.n_apis, -1, dtype=np.int32)
        self.lines: list[Any] = []
        self.objects: dict[int, Any] = {}  # records whose items are not all texts, kept as they are
        names = list(stack)
        if not names:
            self._starts = np.zeros(1, dtype=np.int64)
            self._ids = np.zeros(0, dtype=np.int32)
            return
        hashes = key_hashes([str(n) for n in names])
        order = np.argsort(index.key_hash)
        sorted_keys = index.key_hash[order]
        at = np.minimum(np.searchsorted(sorted_keys, hashes), len(sorted_keys) - 1)
        hit = sorted_keys[at] == hashes
        records: dict[int, int] = {}  # id() of a value → record number (APIs of one record share its list)
        values = list(stack.values())
        line_ids: dict[Any, int] = {}
        starts = [0]
        ids: list[int] = []
        for k in np.flatnonzero(hit).tolist():
            value = values[k]
            rec = records.get(id(value))
            if rec is None:
                rec = records[id(value)] = len(starts) - 1
                if isinstance(value, list) and all(v.__class__ is str for v in value):
                    for line in value:
                        lid = line_ids.get(line)
                        if lid is None:
                            lid = line_ids[line] = len(self.lines)
                            self.lines.append(line)
                        ids.append(lid)
                else:
                    self.objects[rec] = value
                starts.append(len(ids))
            self.api_record[int(order[at[k]])] = rec
        self._starts = np.asarray(starts, dtype=np.int64)
        self._ids = np.asarray(ids, dtype=np.int32)

    @classmethod
    def from_records(cls, records: StackRecords, index: DumpIndex) -> StackIndex:
        """The stack index of ``index``'s entries from :func:`read_stack_records`' output (its names are used up)."""
        self = cls.__new__(cls)
        self.api_record = np.full(index.n_apis, -1, dtype=np.int32)
        self.lines, self.objects = records.lines, records.objects
        self._starts, self._ids = records.starts, records.ids
        hashes, recs = records.name_hash, records.name_record
        records.name_hash = records.name_record = np.zeros(0, dtype=np.uint64)  # freed as soon as sorted
        if not len(hashes) or not index.n_apis:
            return self
        order = np.argsort(hashes, kind="stable")  # a repeated name: its last record, found last below
        hashes = hashes[order]
        recs = recs[order]
        del order
        step = SEARCH_STEP
        for a0 in range(0, index.n_apis, step):
            keys = index.key_hash[a0: a0 + step]
            at = np.searchsorted(hashes, keys, side="right") - 1
            np.maximum(at, 0, out=at)
            hit = hashes[at] == keys
            self.api_record[a0: a0 + step][hit] = recs[at[hit]]
        return self

    def stacks(self, apis: Sequence[int], keys: Sequence[str]) -> dict[str, Any]:
        """``{key: lines}`` of the entries ``apis`` (named ``keys``) that have a stack, lines as ``load_stack`` gives them."""
        out: dict[str, Any] = {}
        lines, starts, ids = self.lines, self._starts, self._ids
        built: dict[int, Any] = {}
        for api, key in zip(apis, keys):
            rec = int(self.api_record[api])
            if rec < 0:
                continue
            value = built.get(rec)
            if value is None:
                value = self.objects.get(rec)
                if value is None:
                    value = [lines[i] for i in ids[starts[rec]: starts[rec + 1]].tolist()]
                built[rec] = value
            out[key] = value
        return out


class _RecordReader:
    """The members of ``stack.json`` as they are decoded, turned into :class:`StackRecords` (see the module)."""

    def __init__(self) -> None:
        self.layout = ""  # "new" ({"0": [[apis], [lines]], ...}) or "old" ({api: [lines]}), from the first member
        self.declined = False
        self.not_list = False  # an old-layout member that is not a list: load_stack words the error
        self.lines: list[Any] = []
        self.line_ids: dict[str, int] = {}
        self.objects: dict[int, Any] = {}
        self.starts = array("q", [0])
        self.ids = array("i")
        self.names: list[str] = []  # API names not hashed yet
        self.name_hash = bytearray()
        self.name_record = array("i")
        self.keys: list[str] = []  # top-level keys not hashed yet (a repeated key: declined)
        self.key_hash = bytearray()

    def record(self, value: Any) -> int:
        rec = len(self.starts) - 1
        if value.__class__ is list and all(v.__class__ is str for v in value):
            ids, line_ids, lines = self.ids, self.line_ids, self.lines
            for line in value:
                lid = line_ids.get(line)
                if lid is None:
                    lid = line_ids[line] = len(lines)
                    lines.append(line)
                ids.append(lid)
        else:
            self.objects[rec] = value
        self.starts.append(len(self.ids))
        return rec

    def on_member(self, key: str, value: Any) -> None:
        if self.declined:
            return
        self.keys.append(key)
        if not self.layout:
            self.layout = "new" if key == "0" and value else "old"
        elif key == "0" and self.layout == "old" and value:
            self.declined = True  # a later "0" makes the file the new layout: decided by the whole dict
            return
        if self.layout == "new":
            if value.__class__ is list and len(value) == 2 and value[0].__class__ is list:
                apis = value[0]
                if not all(a.__class__ is str for a in apis):  # load_stack's str(api): its own path
                    self.declined = True
                    return
                if apis:
                    rec = self.record(value[1])
                    self.names.extend(apis)
                    self.name_record.extend([rec] * len(apis))
        elif value.__class__ is not list:
            self.not_list = True
        else:
            self.names.append(key)
            self.name_record.append(self.record(value))
        if len(self.names) >= HASH_BATCH or len(self.keys) >= HASH_BATCH:
            self.flush()

    def flush(self) -> None:
        try:
            self.name_hash += hash_texts(self.names)
            self.key_hash += hash_texts(self.keys)
        except (UnicodeError, TypeError):  # a text that is not UTF-8 encodable: load_stack's path
            self.declined = True
        self.names.clear()
        self.keys.clear()

    def result(self) -> StackRecords | None:
        self.flush()
        if self.declined or (self.layout == "old" and self.not_list):
            return None
        keys = np.frombuffer(self.key_hash, dtype=np.uint64)
        if len(keys) > 1:
            keys = np.sort(keys)
            if bool((keys[1:] == keys[:-1]).any()):  # a repeated key (or two keys of one hash): load_stack's dict
                return None
        return StackRecords(
            name_hash=np.frombuffer(self.name_hash, dtype=np.uint64), name_record=np.frombuffer(self.name_record, dtype=np.int32),
            lines=self.lines, objects=self.objects, starts=np.frombuffer(self.starts, dtype=np.int64),
            ids=np.frombuffer(self.ids, dtype=np.int32),
        )


def read_stack_records(path: Path) -> StackRecords | None:
    """``stack.json`` read member by member into :class:`StackRecords`, or ``None`` (see the module's docstring).

    Raises what :func:`~msprobe_core.load.dumpjson.load_stack` raises for a file that is not JSON or
    whose top level is not an object.
    """
    from ..errors import DumpFormatError
    from ..files.jsonfile import parse_streamed

    reader = _RecordReader()

    def not_object(value: Any) -> Exception:
        return DumpFormatError("top level of stack.json must be an object", path=path)

    parse_streamed(path, "stack", None, not_object, reader.on_member, scanner_messages=True)
    return reader.result()


def entry_stacks(index: Any) -> StackIndex | None:
    """The calling code of an indexed target's entries, for a strategy that reads the target in chunks: an object
    whose ``stacks(entries, keys)`` is a chunk table's ``stack`` (``None``: the dump has no ``stack.json``).

    Asked once matching is done (the stack's records become a per-entry index then, with the index holding less);
    handed to the run's plugins (``msprobe_stack_read``), so that the first divergence's path finds the calling
    code there, not in a second read of ``stack.json``. A fallback to whole tables reads ``stack.json`` again
    (:func:`~msprobe_core.pipeline.strategy.whole_tables`).
    """
    from ..running import run_host

    stack = index.stack
    if stack is None:
        return None
    if isinstance(stack, StackRecords):
        stack = StackIndex.from_records(stack, index)
    elif not isinstance(stack, StackIndex):
        stack = StackIndex(stack, index)
    index.stack = stack  # the records let go
    host = run_host()
    if host is not None:
        host.notify("msprobe_stack_read", path=Path(index.source).parent / "stack.json", stack=stack,
                    key_hash=index.key_hash)
    return stack


def stack_index_file(path: Path, index: DumpIndex) -> StackIndex:
    """The stack index of ``index``'s entries from ``stack.json`` at ``path``, as ``StackIndex(load_stack(path), index)``."""
    records = read_stack_records(path)
    if records is None:
        from .dumpjson import load_stack

        return StackIndex(load_stack(path), index)
    return StackIndex.from_records(records, index)
