"""Pairing target rows with golden rows by key, and the dtype gate."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import compress, repeat
from operator import is_not
from typing import TYPE_CHECKING

from ..model import MatchResult

if TYPE_CHECKING:
    from ..host.specs import MatchContext


def join_on_keys(target_keys: Sequence[str], golden_keys: Sequence[str]) -> MatchResult:
    """Outer join on equal keys, keeping target order and dropping golden-only rows.

    A key repeated on the golden side pairs the target row with every such
    golden row (in golden order), as a relational join does.
    """
    # one list of int objects serves both sides (row numbers are not small ints: 28 bytes each)
    ints = list(range(max(len(target_keys), len(golden_keys))))
    if _aligned_and_unique(target_keys, golden_keys):  # the usual case: the same names in the same order
        return MatchResult(target=ints, golden=ints[:])
    # first golden row of each key: built from the end so the first occurrence wins
    first = dict(zip(reversed(golden_keys), reversed(ints[: len(golden_keys)])))
    if len(first) == len(golden_keys):  # unique golden keys (the usual case): one pass, no Python loop
        return MatchResult(target=ints[: len(target_keys)], golden=list(map(first.get, target_keys, repeat(-1))))
    repeated: dict[str, list[int]] = {}
    for j, key in enumerate(golden_keys):
        if first[key] != j:
            repeated.setdefault(key, [first[key]]).append(ints[j])
    t_out: list[int] = []
    g_out: list[int] = []
    for i, key in enumerate(target_keys):
        hits = repeated.get(key)
        if hits is None:
            t_out.append(ints[i])
            g_out.append(first.get(key, -1))
        else:
            for j in hits:
                t_out.append(ints[i])
                g_out.append(j)
    return MatchResult(target=t_out, golden=g_out)


def mapped_golden_keys(ctx: MatchContext) -> list[str]:
    """The golden keys to join with target keys that a name mapping built from the *raw* row names.

    A mapping (``-dm``/``-am``/``-cm``/``-lm``) turns target names into golden names as the
    golden dump spells them, call numbers included; so the golden side is joined on its
    names as written, not on the backward-re-numbered keys of a plain compare (which
    would pair ``X.5.backward`` with the golden call that merely ranks fifth in file order).
    """
    return list(ctx.golden.name)


def _aligned_and_unique(target_keys: Sequence[str], golden_keys: Sequence[str]) -> bool:
    """Whether both sides hold the same keys in the same order, none repeated: the join pairs row i with row i.

    Said without a hash table of every key: on millions of rows its random accesses miss the
    caches and cost three times as much per row as on a hundred thousand. The list comparison
    runs in C, and the keys are distinct when their hashes are (sorted, compared with the next);
    equal hashes (a repeated key, or a collision) answer ``False`` and the join decides.
    """
    if type(target_keys) is not list or type(golden_keys) is not list or target_keys != golden_keys:
        return False
    import numpy as np

    hashes = np.fromiter(map(hash, golden_keys), dtype=np.int64, count=len(golden_keys))
    hashes.sort()
    return not bool((hashes[1:] == hashes[:-1]).any())


def apply_dtype_gate(
    match: MatchResult,
    target_dtypes: Sequence[str | None],
    golden_dtypes: Sequence[str | None],
    compatible: Callable[[str | None, str | None], bool],
) -> MatchResult:
    """Unpair every pair whose dtypes are not compatible (its golden side becomes -1)."""
    golden = list(match.golden)
    # the loader keeps one object per dtype spelling, so `is` settles almost every pair at C speed
    differ = list(map(is_not, map(target_dtypes.__getitem__, match.target),
                      [golden_dtypes[j] if j >= 0 else None for j in golden]))
    verdicts: dict[tuple[str | None, str | None], bool] = {}
    for k in compress(range(len(golden)), differ):
        j = golden[k]
        if j < 0:
            continue
        a, b = target_dtypes[match.target[k]], golden_dtypes[j]
        if a == b:
            continue
        ok = verdicts.get((a, b))
        if ok is None:
            ok = verdicts[(a, b)] = bool(compatible(a, b))
        if not ok:
            golden[k] = -1
    return MatchResult(target=list(match.target), golden=golden, dtype_gate=match.dtype_gate, notes=match.notes)
