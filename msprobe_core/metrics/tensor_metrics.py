"""The six tensor-mode metrics of one NPU/bench pair, as msprobe 26.2.0 computes them (spec §6.1-6.2).

:func:`compare_tensors` takes two arrays that the caller already squeezed (:func:`squeeze_loaded`,
msprobe's ``np.squeeze`` after loading) and returns the cells ``Cosine, EucDist, MaxAbsErr,
MaxRelativeErr, One Thousandth Err Ratio, Five Thousandths Err Ratio`` as Python floats or
msprobe's literal strings.

Steps (first hit decides), after the caller handled missing files:

* NPU array empty -> all ``unsupported``; shapes differ -> all ``shape unmatched``;
* 0-d -> ``unsupported`` except MaxAbsErr / MaxRelativeErr, computed on the raw values
  (no inf/nan handling, native dtype arithmetic);
* inf/nan: if the ``isinf`` masks and the ``isnan`` masks agree (sign-blind), those elements are
  zeroed on both sides and the metrics computed; otherwise all ``N/A``;
* Cosine / EucDist / MaxAbsErr in float64; MaxRelativeErr and the ratios in
  ``T = result_type(n, b, float32)`` (float32 data stays float32; ints/bools are float64) with
  ``eps(T)`` added to both sides where bench == 0; values rounded by ``float("%.12f" % x)``,
  Cosine > 0.9999 rounded again to 6 decimals, EucDist raw.

Arrays go through a blocked, fused path: each block of ``BLOCK`` elements is converted once and
every reduction is taken from it while it sits in cache (about 15 numpy passes over an L2-sized
block, no full-size temporaries; for float32 pairs the optional C kernel ``_fused`` does all but
the dot products in one loop, with the same IEEE operations); partial results are combined in block order, so large pairs
can be spread over threads without changing a bit.  Maxima, counts and ratios are exact
whatever the blocking; sums (Cosine, EucDist) are bit-identical to msprobe up to
``BLAS_SINGLE_THREAD`` elements and agree to ~1e-13 relative beyond (where msprobe's own value
depends on how many threads its OpenBLAS used).
:func:`reference_metrics` is the direct transcription of msprobe's expressions, used for 0-d
and exotic dtypes and as the test oracle of the fast path.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..result_columns import TENSOR_METRIC_COLUMNS

__all__ = [
    "BLAS_SINGLE_THREAD",
    "BLOCK",
    "METRIC_COLUMNS",
    "NAN",
    "NOT_AVAILABLE",
    "SHAPE_UNMATCHED",
    "UNSUPPORTED",
    "compare_tensors",
    "default_threads",
    "format_value",
    "reference_metrics",
    "squeeze_loaded",
]

UNSUPPORTED = "unsupported"
SHAPE_UNMATCHED = "shape unmatched"
NOT_AVAILABLE = "N/A"
NAN = "Nan"

#: the six columns :func:`compare_tensors` fills, in order
METRIC_COLUMNS = tuple(TENSOR_METRIC_COLUMNS)

Cells = tuple[Any, Any, Any, Any, Any, Any]

FLOAT_EPSILON = float(np.finfo(float).eps)  # msprobe Const.FLOAT_EPSILON (cosine zero test)
COSINE_THRESHOLD = 0.9999
ONE_THOUSANDTH = 0.001
FIVE_THOUSANDTHS = 0.005

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
_FAST_DTYPES = frozenset(
    np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
                          np.uint8, np.uint16, np.uint32, np.uint64, np.bool_)
)


def squeeze_loaded(array: np.ndarray) -> np.ndarray:
    """What msprobe does to every loaded tensor: ``np.squeeze`` (all size-1 dims go; ``[1]`` -> 0-d)."""
    return np.squeeze(array)


def format_value(value: Any) -> float:
    """msprobe's ``format_value``: round to 12 decimals through ``'{:.12f}'``."""
    return float(f"{value:.12f}")


# --------------------------------------------------------------------------- reference
def _flatten(n: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """msprobe ``flatten_numpy``: float64 1-D copies; 0-d kept (bool 0-d -> float)."""
    if not n.shape:
        if n.dtype == bool:
            return n.astype(float), b.astype(float)
        return n, b
    return n.reshape(-1).astype(float), b.reshape(-1).astype(float)


def _is_float(a: np.ndarray) -> bool:
    return a.dtype in (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64),
                       np.dtype(np.longdouble))


def _relative_err(n: np.ndarray, b: np.ndarray) -> np.ndarray:
    """msprobe ``get_relative_err``: ``|(n-b)/b|`` in ``result_type(n, b, float32)``, eps where b == 0."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if not _is_float(n):
            n = n.astype(float)
        if not _is_float(b):
            b = b.astype(float)
        zero = b == 0
        rt = np.result_type(n, b, np.float32)
        n2 = n.astype(rt)
        b2 = b.astype(rt)
        eps = np.finfo(rt).eps
        n2[zero] += eps
        b2[zero] += eps
        return np.abs(np.divide(n2 - b2, b2))


def _cosine(n: np.ndarray, b: np.ndarray) -> Any:
    if n.ndim == 0 or b.ndim == 0 or n.size == 0 or b.size == 0 or n.size == 1 or b.size == 1:
        return UNSUPPORTED
    n, b = _flatten(n, b)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        num = np.dot(n, b)
        a_norm = np.linalg.norm(n)
        b_norm = np.linalg.norm(b)
        return _cosine_cell(num, a_norm, b_norm)


def _cosine_cell(num: float, a_norm: float, b_norm: float) -> Any:
    if a_norm <= FLOAT_EPSILON and b_norm <= FLOAT_EPSILON:
        return 1.0
    if a_norm <= FLOAT_EPSILON or b_norm <= FLOAT_EPSILON:
        return NAN
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        cos = np.float64(num) / (np.float64(a_norm) * np.float64(b_norm))
    if np.isnan(cos):
        return NAN
    result = format_value(cos)
    if result > COSINE_THRESHOLD:
        result = round(result, 6)
    return result


def _euclidean(n: np.ndarray, b: np.ndarray) -> Any:
    if n.ndim == 0 or b.ndim == 0:
        return UNSUPPORTED
    n, b = _flatten(n, b)
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.linalg.norm(n - b, ord=2))


def _max_abs(n: np.ndarray, b: np.ndarray) -> Any:
    n, b = _flatten(n, b)
    with np.errstate(over="ignore", invalid="ignore"):
        value = np.max(np.abs(n - b))
    return NAN if np.isnan(value) else format_value(value)


def _max_rel(n: np.ndarray, b: np.ndarray) -> Any:
    value = np.max(np.abs(_relative_err(n, b)))
    return NAN if np.isnan(value) else format_value(value)


def _ratio(threshold: float) -> Callable[[np.ndarray, np.ndarray], Any]:
    def metric(n: np.ndarray, b: np.ndarray) -> Any:
        if n.ndim == 0 or b.ndim == 0:
            return UNSUPPORTED
        rel = _relative_err(n, b)
        if not np.size(rel):
            return NAN
        return format_value(np.sum(rel < threshold) / rel.size)

    return metric


_METRICS = (_cosine, _euclidean, _max_abs, _max_rel, _ratio(ONE_THOUSANDTH), _ratio(FIVE_THOUSANDTHS))


def _apply_all(n: np.ndarray, b: np.ndarray) -> Cells:
    cells = []
    for metric in _METRICS:
        try:  # msprobe's scheduler turns a raising metric into 'unsupported'
            cells.append(metric(n, b))
        except Exception:  # noqa: BLE001 - mirror msprobe: any failure of one metric
            cells.append(UNSUPPORTED)
    return tuple(cells)  # type: ignore[return-value]


def reference_metrics(npu: np.ndarray, bench: np.ndarray) -> Cells:
    """The six cells by msprobe's own whole-array numpy expressions (slow, exact).

    Never modifies its arguments (msprobe zeroes inf/nan in place; this works on copies).
    """
    n, b = np.asarray(npu), np.asarray(bench)
    if n.size == 0:
        return (UNSUPPORTED,) * 6  # type: ignore[return-value]
    if n.shape != b.shape:
        return (SHAPE_UNMATCHED,) * 6  # type: ignore[return-value]
    if n.ndim == 0:
        return _apply_all(n, b)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            nf, bf = n.astype(float), b.astype(float)
        except (ValueError, TypeError):
            return (UNSUPPORTED,) * 6  # type: ignore[return-value]  # msprobe: "unreadable"
        n_inf, b_inf = np.isinf(nf), np.isinf(bf)
        n_nan, b_nan = np.isnan(nf), np.isnan(bf)
        if n_inf.any() or n_nan.any() or b_inf.any() or b_nan.any():
            if not (np.array_equal(n_inf, b_inf) and np.array_equal(n_nan, b_nan)):
                return (NOT_AVAILABLE,) * 6  # type: ignore[return-value]
            n, b = n.copy(), b.copy()
            n[n_inf] = 0
            b[b_inf] = 0
            n[n_nan] = 0
            b[b_nan] = 0
        return _apply_all(n, b)


# --------------------------------------------------------------------------- fast path
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
    from .._fused import fused_f32 as _FUSED_F32
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


def _fused(n: np.ndarray, b: np.ndarray, threads: int) -> Cells | None:
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
    cosine: Any = UNSUPPORTED if size == 1 else _cosine_cell(nb, float(np.sqrt(nn)), float(np.sqrt(bb)))
    return (
        cosine,
        float(np.sqrt(dd)),
        NAN if math.isnan(max_abs) else format_value(max_abs),
        NAN if math.isnan(max_rel) else format_value(max_rel),
        format_value(count1 / size),
        format_value(count5 / size),
    )


def default_threads(size: int) -> int:
    """Threads used for an array of ``size`` elements when the caller does not say."""
    if size < PARALLEL_MIN:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, cpus))


def compare_tensors(npu: np.ndarray, bench: np.ndarray, *, threads: int | None = None) -> Cells:
    """The six metric cells of one pair of already-squeezed arrays (spec §6.1 steps 6-11, §6.2).

    Returns floats or the strings ``unsupported`` / ``shape unmatched`` / ``N/A`` / ``Nan``.
    The arguments are never modified.  ``threads``: how many threads may share a large pair
    (default: :func:`default_threads`); the cells are the same whatever the count.
    """
    n, b = np.asarray(npu), np.asarray(bench)
    if n.size == 0:
        return (UNSUPPORTED,) * 6  # type: ignore[return-value]
    if n.shape != b.shape:
        return (SHAPE_UNMATCHED,) * 6  # type: ignore[return-value]
    if n.ndim == 0:
        return reference_metrics(n, b)
    if not n.dtype.isnative:
        n = n.astype(n.dtype.newbyteorder("="))
    if not b.dtype.isnative:
        b = b.astype(b.dtype.newbyteorder("="))
    if n.dtype not in _FAST_DTYPES or b.dtype not in _FAST_DTYPES:
        return reference_metrics(n, b)
    cells = _fused(n, b, default_threads(n.size) if threads is None else threads)
    if cells is None:
        return (NOT_AVAILABLE,) * 6  # type: ignore[return-value]
    return cells
