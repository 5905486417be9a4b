"""Pairing target rows with golden rows by key, and the dtype gate."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .model import MatchResult


def join_on_keys(target_keys: Sequence[str], golden_keys: Sequence[str]) -> MatchResult:
    """Outer join on equal keys, keeping target order and dropping golden-only rows.

    A key repeated on the golden side pairs the target row with every such
    golden row (in golden order), as a relational join does.
    """
    index: dict[str, list[int]] = {}
    for j, key in enumerate(golden_keys):
        index.setdefault(key, []).append(j)
    t_out: list[int] = []
    g_out: list[int] = []
    for i, key in enumerate(target_keys):
        hits = index.get(key)
        if hits is None:
            t_out.append(i)
            g_out.append(-1)
        elif len(hits) == 1:
            t_out.append(i)
            g_out.append(hits[0])
        else:
            for j in hits:
                t_out.append(i)
                g_out.append(j)
    return MatchResult(target=t_out, golden=g_out)


def apply_dtype_gate(
    match: MatchResult,
    target_dtypes: Sequence[str | None],
    golden_dtypes: Sequence[str | None],
    compatible: Callable[[str | None, str | None], bool],
) -> MatchResult:
    """Unpair every pair whose dtypes are not compatible (its golden side becomes -1)."""
    golden = list(match.golden)
    for k, (i, j) in enumerate(zip(match.target, golden)):
        if j >= 0:
            a, b = target_dtypes[i], golden_dtypes[j]
            if a != b and not compatible(a, b):
                golden[k] = -1
    return MatchResult(target=list(match.target), golden=golden, dtype_gate=match.dtype_gate, notes=match.notes)
