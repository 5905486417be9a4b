"""Matching on the index (pass 1 of a streamed compare): the exact join and the dtype gate, in numpy.

The built-in exact mapper joins row keys (:func:`msprobe_core.match.matching.join_on_keys`); here the
same join runs on the compare-key hashes of :class:`~msprobe_core.load.dumpindex.DumpIndex` rows, with
no string and no Python object per row: when both sides hold the same keys in the same order, none
repeated, row i pairs with row i; otherwise a sort-merge join (a stable sort of the golden hashes,
binary searches of the target's) gives the pairs ``join_on_keys`` gives, a repeated golden key
pairing a target row with each of its rows in golden order. Equal hashes are not equal texts for
certain: pass 2 compares the texts of every pair (:func:`keys_differ`), and a difference sends the
compare back to whole tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from msprobe_core.plugin import DumpIndex, MatchNotes

if TYPE_CHECKING:
    from msprobe_core.model import DumpTable


@dataclass
class IndexMatch:
    """The result's rows as (target row, golden row) pairs, in output order.

    ``target``: row numbers of the target (int64), or ``None`` for every row in order;
    ``golden``: the golden row of each (-1: none), or ``None`` for row i of the golden for result row i.
    ``hashed``: the pairs come from equal hashes (their texts are compared in pass 2).
    """

    target: np.ndarray | None
    golden: np.ndarray | None
    rows: int
    hashed: bool = True
    notes: MatchNotes = field(default_factory=MatchNotes)

    def target_rows(self, start: int, stop: int) -> np.ndarray:
        """The target rows of result rows ``start:stop``."""
        return np.arange(start, stop, dtype=np.int64) if self.target is None else self.target[start:stop]

    def golden_rows(self, start: int, stop: int) -> np.ndarray:
        """The golden rows of result rows ``start:stop`` (-1: unmatched)."""
        return np.arange(start, stop, dtype=np.int64) if self.golden is None else self.golden[start:stop]


def golden_paired(match: IndexMatch, golden_rows: int) -> int:
    """How many distinct golden rows ``match`` pairs with a target row (of a golden side of ``golden_rows``)."""
    if match.golden is None:
        return min(match.rows, golden_rows)
    taken = match.golden[match.golden >= 0]
    return int(np.unique(taken).size) if taken.size else 0


#: entries (target) or rows whose hashes or ids are compared at a time: the temporaries of a step stay small
STEP = 1 << 18


def join_indexes(target: DumpIndex, golden: DumpIndex) -> IndexMatch:
    """``join_on_keys`` of the two sides' compare keys, on their hashes."""
    if len(target) == len(golden) and len(target) and _same_row_hashes(target, golden):
        if not golden.repeats_a_row():
            return IndexMatch(None, None, len(golden))
    return _sort_merge(target.all_row_hashes(), golden.all_row_hashes())


def _same_row_hashes(target: DumpIndex, golden: DumpIndex) -> bool:
    """Whether row i of both sides has one hash, for every i (both sides have the same number of rows)."""
    for a0 in range(0, target.n_apis, STEP):
        a1 = min(a0 + STEP, target.n_apis)
        r0, r1 = int(target.first_row[a0]), int(target.first_row[a1])
        g0 = int(np.searchsorted(golden.first_row, r0, side="right")) - 1  # the golden entries holding rows r0:r1
        g1 = max(int(np.searchsorted(golden.first_row, r1, side="left")), g0)
        base = int(golden.first_row[g0])
        hg = golden.row_hashes(g0, min(g1, golden.n_apis))[r0 - base: r1 - base]
        if not np.array_equal(target.row_hashes(a0, a1), hg):
            return False
    return True


def _sort_merge(ht: np.ndarray, hg: np.ndarray) -> IndexMatch:
    nt, ng = len(ht), len(hg)
    if not ng:
        return IndexMatch(None, np.full(nt, -1, dtype=np.int64), nt)
    order = np.argsort(hg, kind="stable")
    ordered = hg[order]
    lo = np.searchsorted(ordered, ht, side="left")
    count = np.searchsorted(ordered, ht, side="right") - lo
    del ordered
    if not bool((count > 1).any()):  # unique golden keys (the usual case): one golden row or none per target row
        return IndexMatch(None, np.where(count == 1, order[np.minimum(lo, ng - 1)], -1), nt)
    reps = np.maximum(count, 1)
    total = int(reps.sum())
    target = np.repeat(np.arange(nt, dtype=np.int64), reps)
    ends = np.cumsum(reps)
    within = np.arange(total, dtype=np.int64) - np.repeat(ends - reps, reps)
    pos = np.minimum(np.repeat(lo, reps) + within, ng - 1)
    golden = np.where(np.repeat(count, reps) > 0, order[pos], -1)
    return IndexMatch(target, golden, total)


def gate_dtypes(match: IndexMatch, target: DumpIndex, golden: DumpIndex,
                compatible: Callable[[str | None, str | None], bool]) -> IndexMatch:
    """``apply_dtype_gate`` on the index: unpair every pair whose dtypes are neither equal nor compatible."""
    bad = _bad_combos(match, target, golden, compatible)
    if not bad:
        return match
    rows = match.rows
    t_ids = target.dtype if match.target is None else target.dtype[match.target]
    g_rows = np.arange(rows, dtype=np.int64) if match.golden is None else match.golden
    paired = g_rows >= 0
    g_ids = np.zeros(rows, dtype=np.uint16)
    g_ids[paired] = golden.dtype[g_rows[paired]]
    combo = (t_ids.astype(np.uint32) << 16) | g_ids
    unpair = paired & np.isin(combo, np.asarray(bad, dtype=np.uint32))
    golden_rows = g_rows.copy() if match.golden is not None else g_rows
    golden_rows[unpair] = -1
    return IndexMatch(match.target, golden_rows, rows, match.hashed, match.notes)


def _bad_combos(match: IndexMatch, target: DumpIndex, golden: DumpIndex,
                compatible: Callable[[str | None, str | None], bool]) -> list[int]:
    """The (target dtype id << 16 | golden dtype id) of the paired rows whose dtypes may not pair, a step at a time."""
    combos: set[int] = set()
    for r0 in range(0, match.rows, STEP):
        r1 = min(r0 + STEP, match.rows)
        t_ids = target.dtype[r0:r1] if match.target is None else target.dtype[match.target[r0:r1]]
        if match.golden is None:
            g_ids = golden.dtype[r0:r1]
        else:
            g_rows = match.golden[r0:r1]
            paired = g_rows >= 0
            t_ids, g_ids = t_ids[paired], golden.dtype[g_rows[paired]]
        combos.update(np.unique((t_ids.astype(np.uint32) << 16) | g_ids).tolist())
    bad = []
    for key in sorted(combos):
        a, b = target.dtypes[key >> 16], golden.dtypes[key & 0xFFFF]
        if a != b and not compatible(a, b):
            bad.append(key)
    return bad


def framework_view(index: DumpIndex) -> Any:
    """What :func:`~msprobe_core.match.frameworks.resolve_frameworks` reads of a table, for an index."""
    from types import SimpleNamespace

    return SimpleNamespace(framework=index.framework, source=index.source, dtype=index.dtypes)


def compare_keys(table: DumpTable, ranks: Sequence[int] | None, rows: Sequence[int]) -> list[str]:
    """The compare keys of ``rows`` of a chunk table: names, backward-renumbered with ``ranks`` (per API, -1: not).

    ``naming.renumber_backward`` with each API's rank in its whole dump (a chunk holds only some of its APIs).
    """
    out = []
    apis, row_api, names = table.apis, table.row_api, table.name
    for r in rows:
        name = names[r]
        a = row_api[r]
        k = -1 if ranks is None else ranks[a]
        if k < 0:
            out.append(name)
            continue
        api = apis[a]
        call = ".".join(str(k) if p.isdigit() else p for p in api.call.split("."))
        head = f"{api.prefix}.{call}" if api.prefix else call
        out.append(head + name[len(api.key):] if name.startswith(api.key) else name)
    return out
