"""The six tensor metrics by msprobe's own expressions, and the cells they give (spec §6.1-6.2).

:func:`reference_metrics` is the direct transcription of msprobe's whole-array numpy
expressions: the path of 0-d and exotic dtypes, and the test oracle of the blocked path
(:mod:`.blocks`). The literal cells, thresholds and rounding here are
shared by both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from msprobe_core.plugin import result_columns as C

UNSUPPORTED = "unsupported"
SHAPE_UNMATCHED = "shape unmatched"
NOT_AVAILABLE = "N/A"
NAN = "Nan"
#: the six columns :func:`compare_tensors` fills, in order
METRIC_COLUMNS = tuple(C.TENSOR_METRIC_COLUMNS)
Cells = tuple[Any, Any, Any, Any, Any, Any]
FLOAT_EPSILON = float(np.finfo(float).eps)  # msprobe Const.FLOAT_EPSILON (cosine zero test)
COSINE_THRESHOLD = 0.9999
ONE_THOUSANDTH = 0.001
FIVE_THOUSANDTHS = 0.005


def squeeze_loaded(array: np.ndarray) -> np.ndarray:
    """What msprobe does to every loaded tensor: ``np.squeeze`` (all size-1 dims go; ``[1]`` -> 0-d)."""
    return np.squeeze(array)


def format_value(value: Any) -> float:
    """msprobe's ``format_value``: round to 12 decimals through ``'{:.12f}'``."""
    return float(f"{value:.12f}")


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
        return cosine_cell(num, a_norm, b_norm)


def cosine_cell(num: float, a_norm: float, b_norm: float) -> Any:
    """The Cosine cell from the dot product and both norms, zero norms and rounding as msprobe treats them."""
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
