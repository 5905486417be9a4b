"""The target's ``stack.json`` for a streamed compare: each API's stack by entry number, lines kept once.

The whole-table path keeps ``stack.json`` as a dict from API name to its list of lines
(:func:`msprobe_core.load.dumpjson.load_stack`): at a million entries, millions of API-name strings.
A streamed compare needs a chunk's stacks only, by the chunk's APIs: :class:`StackIndex` maps every
entry of the target's :class:`~msprobe_core.load.dumpindex.DumpIndex` to a record, a record to the ids
of its lines, and keeps each distinct line once; :meth:`StackIndex.stacks` gives a chunk the dict the
whole table would have had, for its APIs. API names are found by the index's key hashes (64-bit; the
target's keys are distinct by hash, see ``dumpindex``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .dumpindex import DumpIndex, key_hashes


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
