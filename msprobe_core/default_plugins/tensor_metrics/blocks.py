"""The blocked, fused pass of the six tensor metrics over a pair of arrays (the fast path of ``compare_tensors``).

Each block of :data:`BLOCK` elements is converted once and every reduction is taken from it while
it sits in cache (about 15 numpy passes over an L2-sized block, no full-size temporaries; for
float32 pairs the optional C kernel ``_fused`` does all but the dot products in one loop, with the
same IEEE operations); partial results are combined in block order, so large pairs can be spread
over threads without changing a bit.
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .reference import FIVE_THOUSANDTHS, NAN, ONE_THOUSANDTH, UNSUPPORTED, Cells, cosine_cell, format_value

#: block length of the fused path (fits the per-core L2 cache with its scratch buffers)
BLOCK = 1 << 17
#: longest vector handed to BLAS ddot (OpenBLAS runs ddot single-threaded up to 10000)
BLAS_SINGLE_THREAD = 10000
#: row length of the batched dot products of longer vectors (<= BLAS_SINGLE_THREAD)
DOT_ROW = 8192
#: arrays of at least this many elements may be shared by several threads
PARALLEL_MIN = 4 << 20
#: most threads one pair uses by default
MAX_THREADS = 4
_FLOAT_KINDS = (np.float16, np.float32, np.float64)  # dtypes msprobe keeps as they are (FLOAT_TYPE)
FAST_DTYPES = frozenset(
    np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
                          np.uint8, np.uint16, np.uint32, np.uint64, np.bool_)
)


def _nonfinite_fixup(nb: np.ndarray, bb: np.ndarray, n64: np.ndarray, b64: np.ndarray) -> bool:
    """Handle inf/nan in one block: False when the masks differ (-> all N/A), else zero them."""
    n_inf, b_inf = np.isinf(nb), np.isinf(bb)
    n_nan, b_nan = np.isnan(nb), np.isnan(bb)
    if not (np.array_equal(n_inf, b_inf) and np.array_equal(n_nan, b_nan)):
        return False
    bad = n_inf | n_nan
    n64[bad] = 0.0
    b64[bad] = 0.0
    return True


_VECDOT = getattr(np, "vecdot", None)  # numpy >= 2.0


try:  # the optional C kernel (setup.py): one pass instead of a dozen numpy passes for float32 pairs
    from ._fused import fused_f32 as _FUSED_F32
except ImportError:  # no compiler where this was installed: the numpy path gives the same cells
    _FUSED_F32 = None


def _row_dots(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    """``out[i] = x[i] . y[i]`` for the rows of two 2-D float64 arrays, one ddot per row."""
    if _VECDOT is None:  # pragma: no cover - numpy 1.x
        np.einsum("ij,ij->i", x, y, out=out)
    else:
        _VECDOT(x, y, out=out)


def _dot(x: np.ndarray, y: np.ndarray) -> float:
    """float64 dot product of two contiguous 1-D float64 arrays, without BLAS threads.

    Up to ``BLAS_SINGLE_THREAD`` elements this is ``np.dot`` (OpenBLAS' single-threaded ddot,
    exactly what msprobe computes for such sizes).  Longer vectors are cut in rows of
    ``DOT_ROW`` elements, each row a single-threaded ddot (``np.vecdot``), and the row sums
    added: OpenBLAS splits a long ddot over threads that spin-wait, which on a small or busy
    machine costs 10-100x; msprobe's own value for such sizes depends on its thread count.
    """
    size = x.size
    if size <= BLAS_SINGLE_THREAD:
        return float(np.dot(x, y))
    if _VECDOT is None:  # pragma: no cover - numpy 1.x
        return float(np.einsum("i,i->", x, y))
    cut = size - size % DOT_ROW
    total = float(_VECDOT(x[:cut].reshape(-1, DOT_ROW), y[:cut].reshape(-1, DOT_ROW)).sum())
    if cut < size:
        total += float(np.dot(x[cut:], y[cut:]))
    return total


#: elements converted and reduced at a time inside a block: whole ``DOT_ROW`` rows, few enough
#: that the three float64 and three float32 scratch vectors stay in a core's L2 cache
PIECE = 4 * DOT_ROW


class _Scratch:
    """One thread's scratch vectors of one piece, reused for every pair that thread computes."""

    __slots__ = ("b32", "b64", "d64", "n32", "n64", "r32", "rows")

    def __init__(self) -> None:
        self.n64 = np.empty(PIECE, np.float64)
        self.b64 = np.empty(PIECE, np.float64)
        self.d64 = np.empty(PIECE, np.float64)
        self.r32 = np.empty(PIECE, np.float32)
        self.n32 = np.empty(PIECE, np.float32)
        self.b32 = np.empty(PIECE, np.float32)
        self.rows = np.empty((4, 16), np.float64)  # per-row dot products of one block: nn, bb, nb, dd

    def row_sums(self, nrows: int) -> np.ndarray:
        """The row-dot table, grown to ``nrows`` rows (a block larger than usual: tests change BLOCK)."""
        if self.rows.shape[1] < nrows:
            self.rows = np.empty((4, nrows), np.float64)
        return self.rows


_LOCAL = threading.local()


def _scratch() -> _Scratch:
    """This thread's scratch (allocated once: fresh pages per pair cost page faults)."""
    s = getattr(_LOCAL, "scratch", None)
    if s is None:
        s = _LOCAL.scratch = _Scratch()
    return s


#: partial results of one block: nn, bb, nb, dd, max |d|, max rel, count < 1e-3, count < 5e-3
_Partial = tuple[float, float, float, float, float, float, int, int]


class _Kind:
    """What the dtypes of a pair fix: which side is float, the dtype of the relative-error maths."""

    __slots__ = ("b_float", "b_native32", "both32", "eps", "n_float", "n_native32", "rel32", "thr1", "thr5")

    def __init__(self, nd: np.dtype, bd: np.dtype) -> None:
        self.n_float = nd.type in _FLOAT_KINDS
        self.b_float = bd.type in _FLOAT_KINDS
        rel_t = np.result_type(nd if self.n_float else np.float64, bd if self.b_float else np.float64, np.float32)
        self.rel32 = rel_t == np.float32
        self.eps = rel_t.type(np.finfo(rel_t).eps)
        self.thr1 = rel_t.type(ONE_THOUSANDTH)
        self.thr5 = rel_t.type(FIVE_THOUSANDTHS)
        self.n_native32 = nd == np.float32
        self.b_native32 = bd == np.float32
        self.both32 = self.n_native32 and self.b_native32 and nd.isnative and bd.isnative


_KINDS: dict[tuple[np.dtype, np.dtype], _Kind] = {}


def _kind(nd: np.dtype, bd: np.dtype) -> _Kind:
    k = _KINDS.get((nd, bd))
    if k is None:
        k = _KINDS[(nd, bd)] = _Kind(nd, bd)
    return k


def _nan_max(a: float, b: float) -> float:
    """``max`` that keeps a NaN (numpy's ``max`` over the two pieces' elements)."""
    if a != a or b != b:  # noqa: PLR0124 - NaN test
        return math.nan
    return a if a >= b else b


class _Plan:
    """One pair: flat views and the dtype facts of its relative-error maths."""

    __slots__ = ("b", "kind", "n", "size", "step")

    def __init__(self, n: np.ndarray, b: np.ndarray) -> None:
        self.n = n.reshape(-1)
        self.b = b.reshape(-1)
        self.size = self.n.size
        self.kind = _kind(n.dtype, b.dtype)
        self.step = min(self.size, BLOCK)

    def block(self, start: int, s: _Scratch) -> _Partial | None:
        """Every reduction of elements ``[start, start + step)``; None if inf/nan masks differ.

        The sums are those of :func:`_dot` over the whole block (one ddot up to
        ``BLAS_SINGLE_THREAD`` elements, else one ddot per ``DOT_ROW`` row, rows summed by
        numpy, then the tail), but the block is converted and reduced ``PIECE`` elements at a
        time so that the scratch stays in cache.  Every other reduction is elementwise or a
        maximum/count, the same whatever the pieces.
        """
        stop = min(start + self.step, self.size)
        m = stop - start
        if m <= BLAS_SINGLE_THREAD:
            return self._piece(start, stop, s, None)
        cut = start + (m - m % DOT_ROW)
        nrows = (cut - start) // DOT_ROW
        rows = s.row_sums(nrows)
        max_abs = rmax = -math.inf
        c1 = c5 = 0
        for lo in range(start, cut, PIECE):
            part = self._piece(lo, min(lo + PIECE, cut), s, (lo - start) // DOT_ROW)
            if part is None:
                return None
            max_abs = _nan_max(max_abs, part[4])
            rmax = _nan_max(rmax, part[5])
            c1 += part[6]
            c5 += part[7]
        sums = [float(rows[i, :nrows].sum()) for i in range(4)]
        if cut < stop:
            part = self._piece(cut, stop, s, None)
            if part is None:
                return None
            sums = [sums[i] + part[i] for i in range(4)]
            max_abs = _nan_max(max_abs, part[4])
            rmax = _nan_max(rmax, part[5])
            c1 += part[6]
            c5 += part[7]
        return sums[0], sums[1], sums[2], sums[3], max_abs, rmax, c1, c5

    def _piece(self, lo: int, hi: int, s: _Scratch, row0: int | None) -> _Partial | None:
        """Reductions of elements ``[lo, hi)``: dot products as one ddot (``row0`` None, returned)
        or one per row (stored in ``s.rows`` from column ``row0``; zeros returned)."""
        k = self.kind
        m = hi - lo
        nb, bb = self.n[lo:hi], self.b[lo:hi]
        nv, bv, dv = s.n64[:m], s.b64[:m], s.d64[:m]
        if k.both32 and _FUSED_F32 is not None:
            fused = _FUSED_F32(nb, bb, nv, bv, dv, k.eps, k.thr1, k.thr5)
            if fused is not None:  # None: inf/nan inside, handled by the numpy path below
                return self._sums(nv, bv, dv, m, s, row0) + fused
        np.copyto(nv, nb, casting="unsafe")
        np.copyto(bv, bb, casting="unsafe")
        if row0 is None:
            nn, bb2 = float(np.dot(nv, nv)), float(np.dot(bv, bv))
            finite = math.isfinite(nn) and math.isfinite(bb2)
        else:
            r = m // DOT_ROW
            nr, br, dr = nv.reshape(r, DOT_ROW), bv.reshape(r, DOT_ROW), dv.reshape(r, DOT_ROW)
            out = s.rows[:, row0:row0 + r]
            _row_dots(nr, nr, out[0])
            _row_dots(br, br, out[1])
            finite = math.isfinite(float(out[0].sum()) + float(out[1].sum()))
        zeroed = False
        if not finite and (k.n_float or k.b_float):
            if not _nonfinite_fixup(nb if k.n_float else nv, bb if k.b_float else bv, nv, bv):
                return None
            zeroed = True
            if row0 is None:
                nn, bb2 = float(np.dot(nv, nv)), float(np.dot(bv, bv))
            else:
                _row_dots(nr, nr, out[0])
                _row_dots(br, br, out[1])
        np.subtract(nv, bv, out=dv)
        if row0 is None:
            nb2, dd = float(np.dot(nv, bv)), float(np.dot(dv, dv))
        else:
            _row_dots(nr, br, out[2])
            _row_dots(dr, dr, out[3])
            nn = bb2 = nb2 = dd = 0.0
        max_abs = max(abs(float(dv.max())), abs(float(dv.min())))
        # relative error in rel_t: float32 maths for float32/float16 data, else float64
        if k.rel32:
            nt = nb if k.n_native32 and not zeroed else _as32(s.n32, m, nv if zeroed else nb)
            bt = bb if k.b_native32 and not zeroed else _as32(s.b32, m, bv if zeroed else bb)
            rel = s.r32[:m]
        else:
            nt, bt, rel = nv, bv, dv
        np.subtract(nt, bt, out=rel)
        np.divide(rel, bt, out=rel)
        np.abs(rel, out=rel)
        rmax = float(rel.max())
        if not math.isfinite(rmax):  # bench zeros (x/0) or overflow: redo the b == 0 places
            idx = np.flatnonzero(bt == 0)
            if idx.size:
                fix_b = bt[idx] + k.eps
                rel[idx] = np.abs((nt[idx] + k.eps - fix_b) / fix_b)
                rmax = float(rel.max())
        c1 = int(np.count_nonzero(rel < k.thr1))
        c5 = int(np.count_nonzero(rel < k.thr5))
        return nn, bb2, nb2, dd, max_abs, rmax, c1, c5


    @staticmethod
    def _sums(nv: np.ndarray, bv: np.ndarray, dv: np.ndarray, m: int, s: _Scratch,
              row0: int | None) -> tuple[float, float, float, float]:
        """The four dot products of a piece whose float64 vectors are filled (as :meth:`_piece` takes them)."""
        if row0 is None:
            return float(np.dot(nv, nv)), float(np.dot(bv, bv)), float(np.dot(nv, bv)), float(np.dot(dv, dv))
        r = m // DOT_ROW
        nr, br, dr = nv.reshape(r, DOT_ROW), bv.reshape(r, DOT_ROW), dv.reshape(r, DOT_ROW)
        out = s.rows[:, row0:row0 + r]
        _row_dots(nr, nr, out[0])
        _row_dots(br, br, out[1])
        _row_dots(nr, br, out[2])
        _row_dots(dr, dr, out[3])
        return 0.0, 0.0, 0.0, 0.0


def _as32(buf: np.ndarray, m: int, src: np.ndarray) -> np.ndarray:
    out = buf[:m]
    np.copyto(out, src, casting="unsafe")
    return out


def _run_blocks(plan: _Plan, starts: range, out: list[_Partial | None], stop_flag: list[bool]) -> None:
    scratch = _scratch()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # thread-local state
        for start in starts:
            if stop_flag[0]:
                return
            part = plan.block(start, scratch)
            out[start // plan.step] = part
            if part is None:
                stop_flag[0] = True
                return


def fused_metrics(n: np.ndarray, b: np.ndarray, threads: int) -> Cells | None:
    """Blocked pass over both arrays; None when the inf/nan masks disagree.

    Blocks may be spread over ``threads`` threads (numpy and BLAS release the GIL); partial
    results are combined in block order, so the cells do not depend on the thread count.
    """
    plan = _Plan(n, b)
    starts = range(0, plan.size, plan.step)
    parts: list[_Partial | None] = [None] * len(starts)
    stop_flag = [False]
    workers = max(1, min(threads, len(starts) // 4))
    if workers == 1:
        _run_blocks(plan, starts, parts, stop_flag)
    else:
        per = -(-len(starts) // workers)
        chunks = [starts[i:i + per] for i in range(0, len(starts), per)]
        with ThreadPoolExecutor(max_workers=len(chunks)) as pool:
            for fut in [pool.submit(_run_blocks, plan, c, parts, stop_flag) for c in chunks]:
                fut.result()
    if stop_flag[0]:
        return None
    nn = bb = nb = dd = 0.0
    max_abs = max_rel = -math.inf
    count1 = count5 = 0
    for part in parts:
        assert part is not None
        nn += part[0]
        bb += part[1]
        nb += part[2]
        dd += part[3]
        max_abs = max(max_abs, part[4])
        max_rel = max(max_rel, part[5])
        count1 += part[6]
        count5 += part[7]
    size = plan.size
    cosine: Any = UNSUPPORTED if size == 1 else cosine_cell(nb, float(np.sqrt(nn)), float(np.sqrt(bb)))
    return (
        cosine,
        float(np.sqrt(dd)),
        NAN if math.isnan(max_abs) else format_value(max_abs),
        NAN if math.isnan(max_rel) else format_value(max_rel),
        format_value(count1 / size),
        format_value(count5 / size),
    )
