"""The metric thresholds of the built-in first-divergence rule (:mod:`msprobe_core.default_plugins.summary.divergence`).

Tensor rows: Cosine < 0.9, or Cosine < 0.99 with MaxAbsErr > 0.001, or MaxAbsErr > 1, or a relative L2-norm
error (EucDist over the golden tensor's L2 norm) over 1 %, the statistics rows' rule on the tensors themselves: a
weight scaled by 1.5 keeps its Cosine at 1 and, small, its MaxAbsErr under 1, yet moved by half. Rows of a mode
judged on relative error (``MetricSpec.relative_errors``): the same Cosine rules, then an error of more
than 1 % of the golden tensor (not an absolute floor: the outputs of one graph may range from variances
near 0.3 to logits near 1e4). Statistics rows: a relative L2-norm error over 1 %. A plugin's mode is
judged as tensor rows where its table has a Cosine column, as statistics rows otherwise.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from msprobe_core.plugin import MODE_STATISTICS, MODE_TENSOR
from msprobe_core.plugin import result_columns as C

from .modes import CORE_MODES

if TYPE_CHECKING:
    from .views import ResultView

#: Thresholds of the built-in first-divergence rule (used until/unless ``-da`` gives an answer).
COSINE_MIN = 0.99
COSINE_HARD_MIN = 0.9
MAX_ABS_ERR_MIN = 0.001
MAX_ABS_ERR_HARD = 1.0
NORM_REL_ERR_MAX = 0.01
#: Rows judged on relative error: the largest error relative to the golden tensor that is still noise
#: (as ``NORM_REL_ERR_MAX``).
REL_ERR_MAX = 0.01


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def _cell(nums: dict[str, list[float | None]], column: str, i: int) -> float | None:
    values = nums.get(column)
    return values[i] if values is not None else None


def _relative_reason(nums: dict[str, list[float | None]], i: int) -> str | None:
    """A row whose error is more than :data:`REL_ERR_MAX` of its golden tensor.

    Two shares, both from the row's own cells: ``EucDist / Bench l2norm`` (the whole tensor moved: the
    relative L2 error) and ``MaxAbsErr / max|Bench|`` (a part of it moved, relative to the golden range,
    so elements near 0 do not blow it up as they do ``MaxRelativeErr``). An absolute floor
    (``MaxAbsErr > 1``) took a 30 % change of a variance near 0.3 for noise, and a rounding error of a
    tensor near 1e4 for a divergence. A golden tensor of zeros has no scale: there the error must pass
    the tensor rule's ``MaxAbsErr > 0.001``.
    """
    mae = _cell(nums, C.MAX_ABS_ERR, i)
    limit = f"{REL_ERR_MAX * 100:g}%"
    euc, norm = _cell(nums, C.EUC_DIST, i), _cell(nums, C.BENCH_L2NORM, i)
    bmax, bmin = _cell(nums, C.BENCH_MAX, i), _cell(nums, C.BENCH_MIN, i)
    span = None if bmax is None or bmin is None else max(abs(bmax), abs(bmin))
    for name, err, scale, what in ((C.EUC_DIST, euc, norm, f"of {C.BENCH_L2NORM}"),
                                   (C.MAX_ABS_ERR, mae, span, "of the golden range max|x|")):
        if err is None or scale is None or math.isnan(err) or math.isnan(scale):
            continue
        if scale == 0:
            if mae is not None and mae > MAX_ABS_ERR_MIN:
                return f"{C.MAX_ABS_ERR} {_fmt(mae)} > {MAX_ABS_ERR_MIN} where the golden tensor is all 0"
            return None
        share = err / abs(scale)
        if share > REL_ERR_MAX:
            return f"{name} {_fmt(err)} is {share * 100:.4g}% {what} {_fmt(abs(scale))} (> {limit})"
    return None


def _l2_share_reason(nums: dict[str, list[float | None]], i: int) -> str | None:
    """A tensor row whose L2 error is more than :data:`NORM_REL_ERR_MAX` of the golden tensor's L2 norm."""
    euc, norm = _cell(nums, C.EUC_DIST, i), _cell(nums, C.BENCH_L2NORM, i)
    if euc is None or norm is None or math.isnan(euc) or math.isnan(norm) or norm == 0:
        return None
    share = euc / abs(norm)
    if share > NORM_REL_ERR_MAX:
        return (f"{C.EUC_DIST} {_fmt(euc)} is {share * 100:.4g}% of {C.BENCH_L2NORM} {_fmt(abs(norm))} "
                f"(> {NORM_REL_ERR_MAX * 100:g}%)")
    return None


def threshold_columns(relative: bool = False) -> tuple[str, ...]:
    """The numeric columns :func:`threshold_reason` reads (``relative``: on rows judged on relative error)."""
    columns = (C.COSINE, C.MAX_ABS_ERR, C.NORM_RELATIVE_ERR, C.EUC_DIST, C.BENCH_L2NORM)
    if relative:  # what the relative-error rule reads besides
        columns += (C.BENCH_MAX, C.BENCH_MIN)
    return columns


def threshold_reason(view: ResultView, i: int, nums: dict[str, list[float | None]],
                     relative: bool = False) -> str | None:
    """Why row ``i`` of ``view`` crosses a metric threshold (``None``: it does not).

    ``nums``: the columns of :func:`threshold_columns` parsed as numbers, by name; ``relative``: the
    view's mode is judged on relative error (``MetricSpec.relative_errors``).
    """
    mode = view.mode
    if mode not in CORE_MODES:  # a plugin's mode: judged as the core mode whose metrics its table has
        mode = MODE_TENSOR if C.COSINE in nums else MODE_STATISTICS
    if mode == MODE_TENSOR:
        cos = nums[C.COSINE][i] if C.COSINE in nums else None
        mae = nums[C.MAX_ABS_ERR][i] if C.MAX_ABS_ERR in nums else None
        if cos is not None and cos < COSINE_HARD_MIN:
            return f"{C.COSINE} {_fmt(cos)} < {COSINE_HARD_MIN}"
        if cos is not None and mae is not None and cos < COSINE_MIN and mae > MAX_ABS_ERR_MIN:
            return f"{C.COSINE} {_fmt(cos)} < {COSINE_MIN} and {C.MAX_ABS_ERR} {_fmt(mae)} > {MAX_ABS_ERR_MIN}"
        if relative:  # judged on relative error, not on an absolute floor
            return _relative_reason(nums, i)
        if mae is not None and mae > MAX_ABS_ERR_HARD:
            return f"{C.MAX_ABS_ERR} {_fmt(mae)} > {MAX_ABS_ERR_HARD:g}"
        return _l2_share_reason(nums, i)
    elif mode == MODE_STATISTICS and C.NORM_RELATIVE_ERR in nums:
        rel = nums[C.NORM_RELATIVE_ERR][i]
        if rel is not None and abs(rel) > NORM_REL_ERR_MAX:
            if abs(rel) == math.inf:  # the golden L2 norm is 0: no percentage to give
                diff = view.cells[C.L2NORM_DIFF][i].strip() if C.L2NORM_DIFF in view.cells else ""
                return (f"{C.NORM_RELATIVE_ERR} inf: the golden L2 norm is 0"
                        + (f", {C.L2NORM_DIFF} {diff}" if diff else ""))
            return f"{C.NORM_RELATIVE_ERR} {abs(rel) * 100:.4g}% > {NORM_REL_ERR_MAX * 100:g}%"
    return None
