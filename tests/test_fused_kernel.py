"""The optional C kernel of tensor mode (``msprobe_core.default_plugins.tensor_metrics._fused``) gives the numpy path's cells, bit for bit.

Each float32 pair is computed twice, with the kernel and with it switched off, and every cell
must be the same object value (``repr``): zeros in the bench side (msprobe's eps rule),
denormals, values whose difference or ratio overflows, signed zeros, exact equality, inf/NaN
(which the kernel hands back to the numpy path), and sizes around the piece and row lengths.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from msprobe_core.default_plugins.tensor_metrics import blocks as tb
from msprobe_core.default_plugins.tensor_metrics import metrics as tm

fused = pytest.importorskip("msprobe_core.default_plugins.tensor_metrics._fused", reason="the C kernel was not built here (no compiler)")


def _both(n: np.ndarray, b: np.ndarray, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple, tuple]:
    with_kernel = tm.compare_tensors(n, b, threads=1)
    with monkeypatch.context() as m:
        m.setattr(tb, "_FUSED_F32", None)
        without = tm.compare_tensors(n, b, threads=1)
    return with_kernel, without


SPECIAL = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-38, 3.4e38, -3.4e38, 1.0, -1.0, 1e-3, 5e-3, 2.0 ** -126],
                   dtype=np.float32)


@pytest.mark.parametrize("size", [2, 3, 17, 4096, 10_000, 10_001, 8192 * 4 - 1, 8192 * 4 + 5, 131_072 + 3])
@pytest.mark.parametrize("seed", range(3))
def test_kernel_equals_numpy_path(size: int, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed * 1000 + size)
    n = (rng.standard_normal(size) * 10.0 ** rng.integers(-8, 8, size)).astype(np.float32)
    b = (n * (1 + rng.standard_normal(size).astype(np.float32) * 1e-3)).astype(np.float32)
    picks = rng.integers(0, size, size // 7 + 1)
    b[picks] = rng.choice(SPECIAL, picks.size)  # zeros (eps rule), denormals, overflowing ratios
    n[picks[::2]] = rng.choice(SPECIAL, picks[::2].size)
    k, plain = _both(n, b, monkeypatch)
    assert [repr(c) for c in k] == [repr(c) for c in plain]


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("where", ["npu", "bench", "both"])
def test_inf_nan_go_to_the_numpy_path(bad: float, where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    n = rng.standard_normal(50_000).astype(np.float32)
    b = (n + 1e-4).astype(np.float32)
    if where in ("npu", "both"):
        n[123] = bad
    if where in ("bench", "both"):
        b[123] = bad
    k, plain = _both(n, b, monkeypatch)
    assert [repr(c) for c in k] == [repr(c) for c in plain]


def test_kernel_reports_what_numpy_computes() -> None:
    rng = np.random.default_rng(3)
    n = rng.standard_normal(1000).astype(np.float32)
    b = rng.standard_normal(1000).astype(np.float32)
    b[::50] = 0.0
    n64, b64, d64 = (np.empty(1000) for _ in range(3))
    eps, t1, t5 = np.float32(np.finfo(np.float32).eps), np.float32(0.001), np.float32(0.005)
    max_abs, max_rel, c1, c5 = fused.fused_f32(n, b, n64, b64, d64, eps, t1, t5)
    assert np.array_equal(n64, n.astype(np.float64)) and np.array_equal(b64, b.astype(np.float64))
    assert np.array_equal(d64, n.astype(np.float64) - b.astype(np.float64))
    assert max_abs == np.max(np.abs(d64))
    with np.errstate(divide="ignore", invalid="ignore"):
        nn, bb = n.copy(), b.copy()
        zero = bb == 0
        nn[zero] += eps
        bb[zero] += eps
        rel = np.abs((nn - bb) / bb)
    assert max_rel == float(rel.max())
    assert (c1, c5) == (int(np.count_nonzero(rel < t1)), int(np.count_nonzero(rel < t5)))
    n[5] = np.nan
    assert fused.fused_f32(n, b, n64, b64, d64, eps, t1, t5) is None


def test_kernel_refuses_buffers_that_do_not_agree() -> None:
    n = np.zeros(10, np.float32)
    small = np.empty(5)
    with pytest.raises(ValueError, match="buffer sizes"):
        fused.fused_f32(n, n, small, small, small, 1e-7, 1e-3, 5e-3)
    with pytest.raises(ValueError, match="buffer sizes"):
        fused.fused_f32(n, np.zeros(9, np.float32), np.empty(10), np.empty(10), np.empty(10), 1e-7, 1e-3, 5e-3)


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.float32, st.integers(2, 300), elements=st.floats(width=32, allow_nan=True, allow_infinity=True)),
       st.data())
def test_any_float32_pair(n: np.ndarray, data: st.DataObject) -> None:
    b = data.draw(hnp.arrays(np.float32, n.shape, elements=st.floats(width=32, allow_nan=True, allow_infinity=True)))
    with_kernel = tm.compare_tensors(n, b, threads=1)
    saved = tb._FUSED_F32
    tb._FUSED_F32 = None
    try:
        without = tm.compare_tensors(n, b, threads=1)
    finally:
        tb._FUSED_F32 = saved
    assert [repr(c) for c in with_kernel] == [repr(c) for c in without]
