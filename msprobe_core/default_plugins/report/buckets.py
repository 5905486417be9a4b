"""Bounded summaries of a stream of rows, fed chunk by chunk, whatever the stream's length.

The HTML report of a result of millions of rows (:mod:`msprobe_core.default_plugins.report.sampling`) keeps a few
thousand rows of it, chosen by these structures. Each gives the same answer whatever the chunk
sizes (ties go to the earliest row), so a result fed in chunks of 7 rows or of 65,536 is sampled
alike, and each is small and picklable.

* :class:`Buckets`: consecutive units (row positions, or calls) in buckets of a power-of-two width
  that doubles whenever the buckets would outnumber their cap; per bucket and channel the lowest and
  highest value and the position of the row holding each, and the worst verdict;
* :class:`Decimated`: every k-th item of a stream, k doubling whenever the items kept would outnumber
  their cap (an evenly spaced, deterministic sample);
* :class:`TopRows`: the rows with the smallest sort keys.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_NONE = -1


def _segments(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts of the runs of equal values of ``keys`` (non-decreasing) and, per element, its run number."""
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    run = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(keys)]))
    return starts, run


def _first_extreme(values: np.ndarray, starts: np.ndarray, run: np.ndarray, highest: bool
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per run of ``values`` (NaN: no value) its highest (lowest) value and the index of its first row holding it
    (-1 where the run has no value)."""
    fill = -np.inf if highest else np.inf
    valid = ~np.isnan(values)
    filled = np.where(valid, values, fill)
    best = (np.maximum if highest else np.minimum).reduceat(filled, starts)
    hit = valid & (filled == best[run])
    at = np.full(len(starts), _NONE, dtype=np.int64)
    rows = np.flatnonzero(hit)
    runs, first = np.unique(run[rows], return_index=True)
    at[runs] = rows[first]
    return best, at


class Buckets:
    """Units ``[k * width, (k + 1) * width)`` as bucket ``k``; at most ``cap`` buckets.

    Per bucket: for each of ``channels`` value channels, the highest value and the position of the
    first row holding it (and, with ``lows``, the lowest); ``verdict``, the highest verdict code (-1:
    no row yet). Units must arrive in non-decreasing order; a bucket may span several chunks.
    """

    __slots__ = ("cap", "width", "lows", "hi", "hi_pos", "lo", "lo_pos", "verdict", "tags")

    def __init__(self, cap: int, channels: int, lows: bool = True) -> None:
        self.cap = max(2, int(cap))
        self.width = 1
        self.lows = lows
        self.hi = [np.empty(0) for _ in range(channels)]
        self.hi_pos = [np.empty(0, dtype=np.int64) for _ in range(channels)]
        self.lo = [np.empty(0) for _ in range(channels if lows else 0)]
        self.lo_pos = [np.empty(0, dtype=np.int64) for _ in range(channels if lows else 0)]
        self.verdict = np.empty(0, dtype=np.int8)
        #: per bucket, what the caller tagged its first unit with (a call's name); kept across merges
        self.tags: list[str] = []

    def __len__(self) -> int:
        return len(self.verdict)

    def _halve(self) -> None:
        """Merge buckets pairwise (width doubles); on a tie the earlier bucket's row stays."""
        pad = len(self) % 2

        def pairs(a: np.ndarray, fill: float) -> np.ndarray:
            return np.r_[a, np.full(pad, fill, dtype=a.dtype)].reshape(-1, 2)

        def pick(values: np.ndarray, positions: np.ndarray, highest: bool) -> tuple[np.ndarray, np.ndarray]:
            v, p = pairs(values, np.nan), pairs(positions, _NONE)
            better = (v[:, 1] > v[:, 0]) if highest else (v[:, 1] < v[:, 0])
            right = ((p[:, 1] != _NONE) & ((p[:, 0] == _NONE) | better)).astype(np.intp)
            rows = np.arange(len(right))
            return v[rows, right], p[rows, right]

        for c in range(len(self.hi)):
            self.hi[c], self.hi_pos[c] = pick(self.hi[c], self.hi_pos[c], True)
        for c in range(len(self.lo)):
            self.lo[c], self.lo_pos[c] = pick(self.lo[c], self.lo_pos[c], False)
        self.verdict = pairs(self.verdict, _NONE).max(axis=1).astype(np.int8)
        self.tags = self.tags[::2]
        self.width *= 2

    def add(self, units: np.ndarray, positions: np.ndarray, channels: Sequence[np.ndarray], verdicts: np.ndarray,
            tags: dict[int, str] | None = None) -> None:
        """Rows of one chunk: their units (non-decreasing), positions, one value array per channel (NaN: no
        value) and verdict codes. ``tags``: unit → tag for units that start here (a call's name)."""
        if not len(units):
            return
        while int(units[-1]) // self.width >= self.cap:
            self._halve()
        b = units // self.width
        first_new = len(self)
        grow = int(b[-1]) + 1 - first_new
        if grow > 0:
            for vals, where in (self.hi, self.hi_pos), (self.lo, self.lo_pos):
                for c in range(len(vals)):
                    vals[c] = np.r_[vals[c], np.full(grow, np.nan)]
                    where[c] = np.r_[where[c], np.full(grow, _NONE, dtype=np.int64)]
            self.verdict = np.r_[self.verdict, np.full(grow, _NONE, dtype=np.int8)]
            for k in range(first_new, first_new + grow):
                unit = k * self.width
                self.tags.append(tags.get(unit, "") if tags else "")
        starts, run = _segments(b)
        seg = b[starts]
        self.verdict[seg] = np.maximum(self.verdict[seg], np.maximum.reduceat(verdicts, starts))
        for c, values in enumerate(channels):
            jobs = [(self.hi[c], self.hi_pos[c], True)]
            if self.lows:
                jobs.append((self.lo[c], self.lo_pos[c], False))
            for stored, stored_pos, highest in jobs:
                best, at = _first_extreme(values, starts, run, highest)
                found = at != _NONE
                old, old_pos = stored[seg], stored_pos[seg]
                better = found & ((old_pos == _NONE) | ((best > old) if highest else (best < old)))
                stored[seg[better]] = best[better]
                stored_pos[seg[better]] = positions[at[better]]

    def positions(self) -> set[int]:
        """Every row position a bucket keeps."""
        out: set[int] = set()
        for p in self.hi_pos + self.lo_pos:
            out.update(p[p != _NONE].tolist())
        return out


class Decimated:
    """Every ``stride``-th item of a stream (by its ordinal), ``stride`` doubling to keep at most ``cap`` items."""

    __slots__ = ("cap", "stride", "seen", "ordinals", "positions")

    def __init__(self, cap: int) -> None:
        self.cap = max(1, int(cap))
        self.stride = 1
        self.seen = 0
        self.ordinals = np.empty(0, dtype=np.int64)
        self.positions = np.empty(0, dtype=np.int64)

    def offer(self, positions: np.ndarray) -> np.ndarray:
        """The next items (their row positions, in order); returns the positions newly kept."""
        ordinals = self.seen + np.arange(len(positions), dtype=np.int64)
        self.seen += len(positions)
        while True:
            take = ordinals % self.stride == 0
            if len(self.ordinals) + int(take.sum()) <= self.cap:
                break
            self.stride *= 2
            keep = self.ordinals % self.stride == 0
            self.ordinals, self.positions = self.ordinals[keep], self.positions[keep]
        self.ordinals = np.r_[self.ordinals, ordinals[take]]
        self.positions = np.r_[self.positions, positions[take]]
        return positions[take]


class TopRows:
    """The ``cap`` rows with the smallest keys (tuples compared in order; the row position breaks ties)."""

    __slots__ = ("cap", "keys", "positions")

    def __init__(self, cap: int, width: int) -> None:
        self.cap = max(1, int(cap))
        self.keys = [np.empty(0) for _ in range(width)]
        self.positions = np.empty(0, dtype=np.int64)

    def offer(self, keys: Sequence[np.ndarray], positions: np.ndarray) -> np.ndarray:
        """Candidate rows (one array per key part, and their positions); returns the positions newly kept."""
        all_keys = [np.r_[old, new] for old, new in zip(self.keys, keys)]
        all_pos = np.r_[self.positions, positions]
        order = np.lexsort((all_pos, *reversed(all_keys)))[: self.cap]
        self.keys = [k[order] for k in all_keys]
        self.positions = all_pos[order]
        fresh = order >= len(all_pos) - len(positions)
        return self.positions[fresh]
