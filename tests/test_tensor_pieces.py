"""The fused pass reduces each block piece by piece; its sums must be those of whole blocks, bit for bit.

``tensor_blocks._dot`` is the definition of a block's dot product (one ddot up to
``BLAS_SINGLE_THREAD`` elements, else one per ``DOT_ROW`` row, rows summed, then the tail).
These tests recompute every pair the direct way, block by block, and compare the cells
exactly (``repr``), around every size boundary of blocks, rows and pieces.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import msprobe_core.default_plugins.tensor_metrics.blocks as tb
import msprobe_core.default_plugins.tensor_metrics.metrics as tm
import msprobe_core.default_plugins.tensor_metrics.reference as tr
from msprobe_core.default_plugins.tensor_metrics.metrics import compare_tensors


def _direct_cells(n: np.ndarray, b: np.ndarray) -> tuple:
    """The six cells from block-level sums (the unpieced algorithm), for float/int pairs."""
    n, b = n.reshape(-1), b.reshape(-1)
    size = n.size
    step = min(size, tb.BLOCK)
    n_float = n.dtype.kind == "f"
    b_float = b.dtype.kind == "f"
    rel_t = np.result_type(n.dtype if n_float else np.float64, b.dtype if b_float else np.float64, np.float32)
    eps = rel_t.type(np.finfo(rel_t).eps)
    nn = bb = nb = dd = 0.0
    max_abs = max_rel = -math.inf
    c1 = c5 = 0
    with np.errstate(all="ignore"):
        for start in range(0, size, step):
            nv = n[start:start + step].astype(np.float64)
            bv = b[start:start + step].astype(np.float64)
            bad = np.isinf(nv) | np.isnan(nv)
            if (bad != (np.isinf(bv) | np.isnan(bv))).any() or (np.isnan(nv) != np.isnan(bv)).any():
                return (tm.NOT_AVAILABLE,) * 6
            nv[bad] = 0.0
            bv[bad] = 0.0
            d = nv - bv
            nn += tb._dot(nv, nv)
            bb += tb._dot(bv, bv)
            nb += tb._dot(nv, bv)
            dd += tb._dot(d, d)
            max_abs = max(max_abs, float(np.abs(d).max()))
            nt, bt = nv.astype(rel_t), bv.astype(rel_t)
            zero = bt == 0
            nt[zero] += eps
            bt[zero] += eps
            rel = np.abs((nt - bt) / bt)
            max_rel = max(max_rel, float(rel.max()))
            c1 += int(np.count_nonzero(rel < rel_t.type(tr.ONE_THOUSANDTH)))
            c5 += int(np.count_nonzero(rel < rel_t.type(tr.FIVE_THOUSANDTHS)))
    cosine = tm.UNSUPPORTED if size == 1 else tr.cosine_cell(nb, float(np.sqrt(nn)), float(np.sqrt(bb)))
    return (cosine, float(np.sqrt(dd)), tm.format_value(max_abs), tm.format_value(max_rel),
            tm.format_value(c1 / size), tm.format_value(c5 / size))


_B = tb.BLOCK
SIZES = [2, 7, 8191, 8192, 8193, 9999, 10000, 10001, 16384, tb.PIECE, tb.PIECE + 1, tb.PIECE + 8192 + 5,
         _B - 1, _B, _B + 1, _B + 8192, _B + 10000, _B + 10001, 2 * _B + tb.PIECE + 17, 3 * _B + 12345]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32])
def test_pieces_sum_like_whole_blocks(size: int, dtype: type) -> None:
    rng = np.random.default_rng(size)
    n = (rng.standard_normal(size) * 50).astype(dtype)
    b = (n.astype(np.float64) * (1 + rng.standard_normal(size) * 1e-3)).astype(dtype)
    b[::89] = 0
    if np.dtype(dtype).kind == "f" and size > 100:
        n[3::1777] = np.inf
        b[3::1777] = -np.inf
        n[11::2001] = np.nan
        b[11::2001] = np.nan
    assert repr(compare_tensors(n, b, threads=1)) == repr(_direct_cells(n, b))


def test_mixed_dtypes_and_threads_match_direct() -> None:
    rng = np.random.default_rng(5)
    size = 4 * _B + 999
    n = rng.standard_normal(size).astype(np.float32)
    b = rng.integers(-3, 4, size)
    assert repr(compare_tensors(n, b, threads=1)) == repr(_direct_cells(n, b))
    assert repr(compare_tensors(b, n, threads=2)) == repr(_direct_cells(b, n))


def test_mask_mismatch_in_a_late_piece_is_not_available() -> None:
    n = np.ones(_B + tb.PIECE + 3, np.float32)
    b = n.copy()
    n[_B + tb.PIECE + 1] = np.nan  # only one side: the masks differ
    assert compare_tensors(n, b) == (tm.NOT_AVAILABLE,) * 6


def test_scratch_is_reused_between_pairs() -> None:
    rng = np.random.default_rng(9)
    n = rng.standard_normal(3 * tb.PIECE).astype(np.float32)
    compare_tensors(n, n + np.float32(1))
    first = tb._scratch()
    compare_tensors(n, n * np.float32(2))
    assert tb._scratch() is first
