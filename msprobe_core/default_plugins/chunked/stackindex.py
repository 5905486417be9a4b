"""The target's stack for a compare read in chunks: each entry's ``stack.json`` lines, each line kept once.

The whole-table path keeps ``stack.json`` as a dict from API name to its list of lines
(:func:`~msprobe_core.plugin.load_stack`): at a million entries, millions of API-name strings. A chunk
needs its own entries' stacks only: :class:`StackIndex` maps every entry of the target's
:class:`~msprobe_core.plugin.DumpIndex` to a record, a record to the ids of its lines, and keeps each
distinct line once; :meth:`StackIndex.stacks` gives a chunk the dict the whole table would have had, for
its entries. API names are found by the index's key hashes (64-bit; the target's keys are distinct by
hash). The load stage leaves on the index what it read of ``stack.json`` (the records of
:func:`.stackrecords.read_stack_records`, which this plugin gives the load through ``msprobe_read_index_stack``, or
``load_stack``'s dict where that reader declines the file); :func:`entry_stacks` makes it per entry once matching is
done.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from msprobe_core.plugin import key_hashes

if TYPE_CHECKING:
    from msprobe_core.plugin import DumpIndex

#: index entries looked up at a time among the names of ``stack.json`` (the temporaries stay small)
SEARCH_STEP = 1 << 18


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
    def from_records(cls, records: Any, index: DumpIndex) -> StackIndex:
        """The stack index of ``index``'s entries from :func:`.stackrecords.read_stack_records`' records (their
        names are used up)."""
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


def entry_stacks(index: Any) -> StackIndex | None:
    """The calling code of an indexed target's entries, for a strategy that reads the target in chunks: an object
    whose ``stacks(entries, keys)`` is a chunk table's ``stack`` (``None``: the dump has no ``stack.json``).

    Asked once matching is done (the stack's records become a per-entry index then, with the index holding less);
    handed to the run's plugins (``msprobe_stack_read``), so that the first divergence's path finds the calling
    code there, not in a second read of ``stack.json``. A fallback to whole tables reads ``stack.json`` again
    (:func:`~msprobe_core.plugin.whole_tables`). What the load stage left on the index: the records of
    :func:`.stackrecords.read_stack_records`, or ``load_stack``'s dict of a file that reader declines.
    """
    from msprobe_core.plugin import run_host

    stack = index.stack
    if stack is None:
        return None
    if isinstance(stack, dict):
        stack = StackIndex(stack, index)
    elif not isinstance(stack, StackIndex):
        stack = StackIndex.from_records(stack, index)
    index.stack = stack  # the records let go
    host = run_host()
    if host is not None:
        host.notify("msprobe_stack_read", path=Path(index.source).parent / "stack.json", stack=stack,
                    key_hash=index.key_hash)
    return stack


def stack_index_file(path: Path, index: DumpIndex) -> StackIndex:
    """The stack index of ``index``'s entries from ``stack.json`` at ``path``, as ``StackIndex(load_stack(path), index)``."""
    from msprobe_core.plugin import load_stack

    from .stackrecords import read_stack_records

    records = read_stack_records(path)
    if records is None:
        return StackIndex(load_stack(path), index)
    return StackIndex.from_records(records, index)
