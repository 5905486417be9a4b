"""Order-preserving alignment of two token sequences (a minimal diff).

:func:`align` returns the index pairs ``(i, j)`` with ``a[i] == b[j]`` of a
longest-possible, strictly increasing matching, the way a text diff pairs
unchanged lines. It is built for long call sequences that differ in a few
places (a run with one extra call, a few calls whose shapes changed):

* the common prefix and suffix are matched first, for free;
* the middle goes to Myers' O((N+M)·D) diff when the edit distance ``D`` is
  small, which finds a minimal edit script;
* when ``D`` would be large, tokens that occur exactly once on each side are
  used as anchors (patience diff: the longest increasing run of their
  positions) and every stretch between two anchors is aligned on its own;
* a stretch with no anchor and too many edits falls back to pairing the k-th
  occurrence of a token on one side with its k-th occurrence on the other,
  keeping the longest increasing subset of those pairs.

Everything is plain Python on hashable tokens; nothing here knows what a token is.

``-fm`` (this package) and ``--auto-map`` (the default plugin ``automap``, which imports this module from here) pair
calls by it; turning ``fuzzy`` off drops only its registration, so ``--auto-map`` keeps its alignment.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Hashable, Sequence

#: Largest edit distance handed to Myers' algorithm (its trace costs O(D²) memory).
MAX_MYERS_D = 1000


def align(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[tuple[int, int]]:
    """Index pairs of an order-preserving matching of equal tokens of ``a`` and ``b``."""
    out: list[tuple[int, int]] = []
    _align(a, b, 0, len(a), 0, len(b), out)
    out.sort()
    return out


def align_in_gaps(
    gaps: list[tuple[int, int, int, int]],
    levels: Sequence[int],
    token_a: Callable[[int, int], Hashable],
    token_b: Callable[[int, int], Hashable],
) -> dict[int, tuple[int, int]]:
    """Pairs found level by level inside ``gaps`` (``(a0, a1, b0, b1)`` ranges of both sequences): at each level
    the tokens ``token_a(k, level)`` / ``token_b(k, level)`` of every gap are aligned (:func:`align`), and the
    stretches between the pairs found are the next level's gaps, so that a coarser token only pairs what a finer
    one left. Returns ``a index -> (b index, level)``."""
    out: dict[int, tuple[int, int]] = {}
    for level in levels:
        next_gaps: list[tuple[int, int, int, int]] = []
        for a0, a1, b0, b1 in gaps:
            if a0 == a1 or b0 == b1:
                continue
            matched = align([token_a(k, level) for k in range(a0, a1)], [token_b(k, level) for k in range(b0, b1)])
            pa, pb = a0, b0
            for i, j in matched:
                out[a0 + i] = (b0 + j, level)
                if a0 + i > pa and b0 + j > pb:
                    next_gaps.append((pa, a0 + i, pb, b0 + j))
                pa, pb = a0 + i + 1, b0 + j + 1
            if a1 > pa and b1 > pb:
                next_gaps.append((pa, a1, pb, b1))
        gaps = next_gaps
    return out


def _align(a: Sequence[Hashable], b: Sequence[Hashable], a0: int, a1: int, b0: int, b1: int,
           out: list[tuple[int, int]]) -> None:
    # common prefix
    while a0 < a1 and b0 < b1 and a[a0] == b[b0]:
        out.append((a0, b0))
        a0 += 1
        b0 += 1
    # common suffix
    tail: list[tuple[int, int]] = []
    while a0 < a1 and b0 < b1 and a[a1 - 1] == b[b1 - 1]:
        a1 -= 1
        b1 -= 1
        tail.append((a1, b1))
    out.extend(tail)
    if a0 == a1 or b0 == b1:
        return
    pairs = _myers(a, b, a0, a1, b0, b1, MAX_MYERS_D)
    if pairs is not None:
        out.extend(pairs)
        return
    anchors = _unique_anchors(a, b, a0, a1, b0, b1)
    if anchors:
        pa, pb = a0, b0
        for i, j in anchors:
            _align(a, b, pa, i, pb, j, out)
            out.append((i, j))
            pa, pb = i + 1, j + 1
        _align(a, b, pa, a1, pb, b1, out)
        return
    out.extend(_occurrence_pairs(a, b, a0, a1, b0, b1))


def _myers(a: Sequence[Hashable], b: Sequence[Hashable], a0: int, a1: int, b0: int, b1: int,
           max_d: int) -> list[tuple[int, int]] | None:
    """Matched pairs of a minimal edit script, or ``None`` when it needs more than ``max_d`` edits."""
    n, m = a1 - a0, b1 - b0
    limit = min(n + m, max_d)
    offset = limit + 1
    v = [0] * (2 * limit + 3)
    trace: list[list[int]] = []
    for d in range(limit + 1):
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[offset + k - 1] < v[offset + k + 1]):
                x = v[offset + k + 1]
            else:
                x = v[offset + k - 1] + 1
            y = x - k
            while x < n and y < m and a[a0 + x] == b[b0 + y]:
                x += 1
                y += 1
            v[offset + k] = x
            if x >= n and y >= m:
                trace.append(list(v))
                return _backtrack(trace, offset, n, m, a0, b0)
        trace.append(list(v))
    return None


def _backtrack(trace: list[list[int]], offset: int, n: int, m: int, a0: int, b0: int) -> list[tuple[int, int]]:
    pairs: list[tuple[int, int]] = []
    x, y = n, m
    for d in range(len(trace) - 1, 0, -1):
        v = trace[d - 1]
        k = x - y
        if k == -d or (k != d and v[offset + k - 1] < v[offset + k + 1]):
            prev_k = k + 1
        else:
            prev_k = k - 1
        prev_x = v[offset + prev_k]
        prev_y = prev_x - prev_k
        while x > prev_x and y > prev_y:
            x -= 1
            y -= 1
            pairs.append((a0 + x, b0 + y))
        x, y = prev_x, prev_y
    while x > 0 and y > 0:
        x -= 1
        y -= 1
        pairs.append((a0 + x, b0 + y))
    pairs.reverse()
    return pairs


def _unique_anchors(a: Sequence[Hashable], b: Sequence[Hashable], a0: int, a1: int, b0: int, b1: int
                    ) -> list[tuple[int, int]]:
    """Tokens seen exactly once on each side, kept where their positions increase together."""
    count_a: dict[Hashable, int] = {}
    pos_a: dict[Hashable, int] = {}
    for i in range(a0, a1):
        t = a[i]
        count_a[t] = count_a.get(t, 0) + 1
        pos_a[t] = i
    count_b: dict[Hashable, int] = {}
    pos_b: dict[Hashable, int] = {}
    for j in range(b0, b1):
        t = b[j]
        count_b[t] = count_b.get(t, 0) + 1
        pos_b[t] = j
    cands = sorted(
        (pos_a[t], pos_b[t]) for t, c in count_a.items() if c == 1 and count_b.get(t) == 1
    )
    return _longest_increasing(cands)


def _occurrence_pairs(a: Sequence[Hashable], b: Sequence[Hashable], a0: int, a1: int, b0: int, b1: int
                      ) -> list[tuple[int, int]]:
    """The k-th occurrence of a token in ``a`` with its k-th in ``b``, longest increasing subset."""
    where: dict[Hashable, list[int]] = {}
    for j in range(b0, b1):
        where.setdefault(b[j], []).append(j)
    seen: dict[Hashable, int] = {}
    cands: list[tuple[int, int]] = []
    for i in range(a0, a1):
        t = a[i]
        k = seen.get(t, 0)
        js = where.get(t)
        if js is not None and k < len(js):
            cands.append((i, js[k]))
        seen[t] = k + 1
    return _longest_increasing(cands)


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Longest subsequence of ``pairs`` (sorted by first item) whose second items strictly increase."""
    if not pairs:
        return []
    tails: list[int] = []
    tail_idx: list[int] = []
    parent = [-1] * len(pairs)
    for idx, (_, j) in enumerate(pairs):
        pos = bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tail_idx.append(idx)
        else:
            tails[pos] = j
            tail_idx[pos] = idx
        parent[idx] = tail_idx[pos - 1] if pos > 0 else -1
    out: list[tuple[int, int]] = []
    k = tail_idx[-1]
    while k >= 0:
        out.append(pairs[k])
        k = parent[k]
    out.reverse()
    return out


#: public name of :func:`_longest_increasing` (the anchors ``--auto-map``'s passes align around)
longest_increasing = _longest_increasing
