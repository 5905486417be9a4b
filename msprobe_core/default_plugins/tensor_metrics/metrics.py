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
and exotic dtypes and as the test oracle of the fast path (:mod:`.reference`; the blocked pass is
:mod:`.blocks`). This module is the metrics' interface: the plugin's engine (:mod:`.stage`) calls it for every
pair, and it answers ``msprobe_compare_tensors`` for a plugin with arrays of its own (the kernel plugin).
"""

from __future__ import annotations

import os

import numpy as np

from .blocks import BLAS_SINGLE_THREAD, BLOCK, FAST_DTYPES, MAX_THREADS, PARALLEL_MIN, fused_metrics
from .reference import (
    METRIC_COLUMNS,
    NAN,
    NOT_AVAILABLE,
    SHAPE_UNMATCHED,
    UNSUPPORTED,
    Cells,
    format_value,
    reference_metrics,
    squeeze_loaded,
)

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
    if n.dtype not in FAST_DTYPES or b.dtype not in FAST_DTYPES:
        return reference_metrics(n, b)
    cells = fused_metrics(n, b, default_threads(n.size) if threads is None else threads)
    if cells is None:
        return (NOT_AVAILABLE,) * 6  # type: ignore[return-value]
    return cells
