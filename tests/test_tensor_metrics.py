"""Tensor-mode metrics: msprobe's own answers on real dumps, spec edge cases, fast == reference."""

from __future__ import annotations

import ast
import csv
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from msprobe_pytorch.pt_reader import read_pt

import msprobe_core.default_plugins.tensor_metrics.blocks as tb
import msprobe_core.default_plugins.tensor_metrics.metrics as tm
from msprobe_core.default_plugins.tensor_metrics.metrics import (
    METRIC_COLUMNS,
    compare_tensors,
    reference_metrics,
    squeeze_loaded,
)

from .conftest import corpora_dir, corpus_mark, no_corpora_reason
from .dumps import same_text_or_blas_rounding

CORPORA = corpora_dir()
U, S, NA = "unsupported", "shape unmatched", "N/A"


def _same(ours: object, theirs: str, rtol: float = 1e-5, atol: float = 1e-8) -> bool:
    """oracle_diff.py's cell rule: numbers within rtol/atol (nan == nan), else equal strings."""
    a, b = str(ours).strip(), theirs.strip()
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= atol + rtol * abs(y)


# --------------------------------------------------------------------------- oracle
def _oracle_rows(case: str) -> list[dict[str, str]]:
    table = CORPORA / "pytorch" / case / "oracle" / "compare" / "compare_result_rank0.csv"
    if not table.is_file():
        pytest.skip(no_corpora_reason())
    with table.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("case", ["c02", "c06b"])
def test_metrics_agree_with_msprobe_oracle(case: str) -> None:
    root = CORPORA / "pytorch" / case
    compared = exact = 0
    failures = []
    for row in _oracle_rows(case):
        npu_name, bench_name = ast.literal_eval(row["Data_name"])
        if "-1" in (npu_name, bench_name) or "N/A" in (npu_name, bench_name):
            continue  # the caller's business (unsupported without reading)
        npu = squeeze_loaded(read_pt(root / "target/step0/rank0/dump_tensor_data" / npu_name))
        bench = squeeze_loaded(read_pt(root / "golden/step0/rank0/dump_tensor_data" / bench_name))
        cells = compare_tensors(npu, bench)
        want = [row[c] for c in METRIC_COLUMNS]
        compared += 1
        if not all(_same(c, w) for c, w in zip(cells, want, strict=True)):
            failures.append((row["NPU Name"], cells, want))
        # exact spelling; BLAS-summed metrics up to the order this machine's BLAS adds in (tests/dumps.py)
        exact += all(same_text_or_blas_rounding(col, str(c), w) for col, c, w in zip(METRIC_COLUMNS, cells, want,
                                                                                       strict=True))
    assert not failures, failures[:5]
    assert compared > 250
    # the CSV writes floats with repr: small tensors give msprobe's exact strings
    assert exact == compared


@corpus_mark("pytorch/c02/oracle/compare")
def test_oracle_covers_the_interesting_cells() -> None:
    rows = _oracle_rows("c02")
    cells = {row[c] for row in rows for c in METRIC_COLUMNS}
    assert {"unsupported", "1.0", "0.0"} <= cells
    assert any(row["Cosine"] == U and row["MaxAbsErr"] not in (U, "") for row in rows)  # 0-d rows


# --------------------------------------------------------------------------- spec examples
def f32(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def test_spec_observed_examples() -> None:
    assert compare_tensors(np.zeros(4, np.float32), np.ones(4, np.float32)) == \
        ("Nan", 2.0, 1.0, 1.0, 0.0, 0.0)
    assert compare_tensors(np.zeros(4, np.float32), np.zeros(4, np.float32)) == \
        (1.0, 0.0, 0.0, 0.0, 1.0, 1.0)
    one = compare_tensors(squeeze_loaded(f32(2.0)), squeeze_loaded(f32(1.5)))
    assert one == (U, U, 0.5, format_rel(2.0, 1.5), U, U)
    assert compare_tensors(np.ones(4, np.float32), np.zeros(4, np.float32))[0] == "Nan"


def format_rel(n: float, b: float) -> float:
    return float(f"{abs((np.float32(n) - np.float32(b)) / np.float32(b)):.12f}")


def test_empty_and_shape_rules() -> None:
    assert compare_tensors(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32)) == (U,) * 6
    assert compare_tensors(np.zeros(0, np.float32), np.ones(5, np.float32)) == (U,) * 6
    assert compare_tensors(np.ones(3, np.float32), np.zeros(0, np.float32)) == (S,) * 6
    assert compare_tensors(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)) == (S,) * 6
    # squeeze makes [1, 5] and [5] the same shape; [1] and [1, 1] become 0-d
    a = squeeze_loaded(np.arange(5, dtype=np.float32).reshape(1, 5))
    b = squeeze_loaded(np.arange(5, dtype=np.float32))
    assert compare_tensors(a, b) == (1.0, 0.0, 0.0, 0.0, 1.0, 1.0)
    assert squeeze_loaded(np.ones((1, 1), np.float32)).shape == ()


def test_zero_d_skips_nan_handling_and_ratios() -> None:
    nan, one = np.float32(np.nan).reshape(()), np.array(1.0, np.float32)
    assert compare_tensors(nan, one) == (U, U, "Nan", "Nan", U, U)
    assert compare_tensors(nan, nan.copy()) == (U, U, "Nan", "Nan", U, U)
    inf = np.array(np.inf, np.float32)
    assert compare_tensors(inf, one) == (U, U, math.inf, math.inf, U, U)
    # native dtype arithmetic on 0-d: uint8 3 - 5 wraps to 254 (msprobe quirk kept)
    assert compare_tensors(np.array(3, np.uint8), np.array(5, np.uint8))[2] == 254.0
    assert compare_tensors(np.array(False), np.array(True))[2:4] == (1.0, 1.0)
    # bool/int data take float64 maths: a bench zero gets eps(float64)
    assert compare_tensors(np.array(True), np.array(False))[3] == 1 / np.finfo(np.float64).eps
    # a bench zero gets eps(float32) on both sides
    got = compare_tensors(np.array(1e-6, np.float32), np.array(0.0, np.float32))
    eps = np.finfo(np.float32).eps
    want = abs((np.float32(1e-6) + eps - eps) / eps)
    assert got[3] == float(f"{want:.12f}")


def test_inf_nan_positions() -> None:
    n = f32(1.0, np.inf, np.nan, 4.0, -np.inf)
    b = f32(1.0, np.inf, np.nan, 4.5, np.inf)  # -inf vs +inf at the same place counts as equal
    cells = compare_tensors(n, b)
    assert cells == compare_tensors(f32(1.0, 0, 0, 4.0, 0), f32(1.0, 0, 0, 4.5, 0))
    assert cells[2] == 0.5 and cells[3] == format_rel(4.0, 4.5)
    assert np.isinf(n[1]) and np.isnan(n[2])  # the caller's arrays are not modified
    assert compare_tensors(f32(1, np.nan, 3), f32(1, 2, 3)) == (NA,) * 6
    assert compare_tensors(f32(1, 2, 3), f32(np.inf, 2, 3)) == (NA,) * 6
    assert compare_tensors(f32(np.inf, 2, 3), f32(np.nan, 2, 3)) == (NA,) * 6
    assert compare_tensors(f32(np.nan, np.nan), f32(np.nan, np.nan)) == (1.0, 0.0, 0.0, 0.0, 1.0, 1.0)


def test_float32_maths_for_relative_error() -> None:
    n = f32(1.0001, 2.0, 0.0, 3e-8)
    b = f32(1.0, 2.002, 0.0, 0.0)
    cells = compare_tensors(n, b)
    eps = np.finfo(np.float32).eps
    with np.errstate(all="ignore"):
        rel = np.abs(np.array([(n[0] - b[0]) / b[0], (n[1] - b[1]) / b[1], 0.0,
                               (n[3] + eps - eps) / eps], np.float32))
    assert cells[3] == float(f"{rel.max():.12f}")
    assert cells[4] == float(f"{np.count_nonzero(rel < np.float32(0.001)) / 4:.12f}")
    assert cells[5] == 0.75
    # float16 data is also compared in float32; float64 data in float64
    h = compare_tensors(n.astype(np.float16), b.astype(np.float16))
    assert h == reference_metrics(n.astype(np.float16), b.astype(np.float16))
    d = compare_tensors(n.astype(np.float64), b.astype(np.float64))
    assert d == reference_metrics(n.astype(np.float64), b.astype(np.float64))
    x = float(np.float32(3e-8))
    assert d[3] == float(f"{(x + 2**-52 - 2**-52) / 2**-52:.12f}")  # eps(float64) this time


def test_ints_and_bools_are_numbers() -> None:
    a = np.array([[1, 2], [3, 4]], np.int64)
    assert compare_tensors(a, a.copy()) == (1.0, 0.0, 0.0, 0.0, 1.0, 1.0)
    m = np.array([True, False, True])
    assert compare_tensors(m, m.copy()) == (1.0, 0.0, 0.0, 0.0, 1.0, 1.0)
    got = compare_tensors(np.array([1, 0, 5], np.int32), np.array([1, 2, 4], np.int32))
    assert got == reference_metrics(np.array([1, 0, 5], np.int32), np.array([1, 2, 4], np.int32))
    assert got[2] == 2.0 and got[3] == 1.0


def test_cosine_rounding() -> None:
    x = np.linspace(1, 2, 1000)
    cos = compare_tensors(x, x * (1 + 1e-9 * np.arange(1000)))[0]
    assert cos == round(cos, 6) and cos > 0.9999
    y = np.array([1.0, 0.0, 0.3])
    cos = compare_tensors(y, np.array([0.2, 1.0, 0.3]))[0]
    assert cos == float(f"{cos:.12f}") and cos < 0.9999


def test_unsqueezed_single_element() -> None:
    # not what the caller sends (it squeezes), but msprobe's per-metric rules still hold
    assert compare_tensors(f32(2.0), f32(1.0)) == (U, 1.0, 1.0, 1.0, 0.0, 0.0)


def test_exotic_dtypes_fall_back_to_reference() -> None:
    c = np.array([1 + 1j, 2 - 1j], np.complex64)
    assert compare_tensors(c, c.copy()) == reference_metrics(c, c.copy())


# --------------------------------------------------------------------------- fast == reference
FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=32)


@st.composite
def pairs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(all="ignore"):
        return _draw_pair(draw)


def _draw_pair(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    dt_n = draw(st.sampled_from([np.float32, np.float16, np.float64, np.int32, np.int64, np.bool_,
                                 np.uint8]))
    dt_b = draw(st.sampled_from([dt_n, dt_n, np.float32]))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=12))
    if np.dtype(dt_n).kind == "f":
        elems = st.one_of(FLOATS, st.sampled_from([0.0, -0.0, 1.0, 1e-3]))
        n = draw(hnp.arrays(dt_n, shape, elements=elems.map(lambda v: np.array(v).astype(dt_n).item())))
    else:
        n = draw(hnp.arrays(dt_n, shape))
    mode = draw(st.sampled_from(["noise", "independent", "copy"]))
    if mode == "copy":
        b = n.astype(dt_b)
    elif mode == "noise" and np.dtype(dt_b).kind == "f":
        noise = draw(hnp.arrays(np.float64, shape, elements=st.floats(-1e-2, 1e-2)))
        b = (n.astype(np.float64) * (1 + noise)).astype(dt_b)
        zero = draw(hnp.arrays(np.bool_, shape))
        b[zero] = 0
    else:
        b = draw(hnp.arrays(dt_b, shape))
    return n, b


def _assert_cells_match(fast: tuple, ref: tuple, rtol: float) -> None:
    for column, x, y in zip(METRIC_COLUMNS, fast, ref, strict=True):
        if isinstance(y, str) or isinstance(x, str):
            assert x == y, (column, fast, ref)
        elif column in ("Cosine", "EucDist") and rtol:
            assert math.isclose(x, y, rel_tol=rtol, abs_tol=1e-12) or (math.isnan(x) and math.isnan(y)), \
                (column, fast, ref)
        else:
            assert x == y or (math.isnan(x) and math.isnan(y)), (column, fast, ref)


@settings(max_examples=300, deadline=None)
@given(pair=pairs())
def test_fast_path_equals_reference(pair: tuple[np.ndarray, np.ndarray]) -> None:
    n, b = pair
    n0, b0 = n.copy(), b.copy()
    _assert_cells_match(compare_tensors(n, b), reference_metrics(n, b), rtol=0.0)
    np.testing.assert_array_equal(n, n0)
    np.testing.assert_array_equal(b, b0)


@settings(max_examples=150, deadline=None)
@given(pair=pairs(), block=st.integers(1, 17))
def test_blocked_path_equals_reference(pair: tuple[np.ndarray, np.ndarray], block: int) -> None:
    n, b = pair
    old = tb.BLOCK
    tb.BLOCK = block
    try:
        fast = compare_tensors(n, b)
    finally:
        tb.BLOCK = old
    _assert_cells_match(fast, reference_metrics(n, b), rtol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int64])
def test_large_arrays_blocked(dtype: type) -> None:
    rng = np.random.default_rng(7)
    size = 3 * tb.BLOCK + 12345
    n = (rng.standard_normal(size) * 100).astype(dtype)
    b = (n.astype(np.float64) * (1 + rng.standard_normal(size) * 1e-3)).astype(dtype)
    b[::97] = 0
    if np.dtype(dtype).kind == "f":
        n[5::1001] = np.inf
        b[5::1001] = -np.inf
        n[7::999] = np.nan
        b[7::999] = np.nan
    _assert_cells_match(compare_tensors(n, b), reference_metrics(n, b), rtol=1e-9)
    if np.dtype(dtype).kind == "f":
        b2 = b.copy()
        b2[-1] = np.nan
        assert compare_tensors(n, b2) == (NA,) * 6


def test_byte_order_and_threads_do_not_change_cells() -> None:
    rng = np.random.default_rng(11)
    n = rng.standard_normal(5 * tb.BLOCK + 3).astype(np.float32)
    b = n + rng.standard_normal(n.size).astype(np.float32) * np.float32(1e-4)
    b[::50] = 0
    one = compare_tensors(n, b, threads=1)
    assert compare_tensors(n, b, threads=3) == one
    assert compare_tensors(n.astype(">f4"), b.astype(">f4"), threads=1) == one
    assert tm.default_threads(10) == 1
