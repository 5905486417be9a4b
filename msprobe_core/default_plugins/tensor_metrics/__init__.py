"""The default plugin ``tensor_metrics``: the metric columns of tensor mode (``Cosine``, ``EucDist``, ``MaxAbsErr``,
``MaxRelativeErr``, the two error ratios, and every plugin's :class:`~msprobe_core.plugin.TensorMetricSpec`).

It registers the tensor-mode metric set through ``msprobe_register_metrics``, as a third party's would. Its engine
(:mod:`.stage`) reads every matched tensor pair once, through the frameworks' readers into reusable buffers, in
chunks on the run's executor, and computes the cells with :func:`.metrics.compare_tensors` (the six metrics of one
pair: :mod:`.metrics`, its blocked pass :mod:`.blocks` with the optional C kernel ``_fused``, msprobe's own
expressions :mod:`.reference`). A plugin that reads tensors of its own (the kernel plugin) asks for the same cells
through ``msprobe_compare_tensors``, which this plugin declares and answers, as it declares the hook its stage tells
the rows' watchers through (``msprobe_tensor_rows_compared``, :mod:`.hookspecs`). Turned off (``-p no:tensor_metrics``), a tensor-mode
compare still writes its table: the metric cells say ``N/A`` and the run warns once that this plugin is off; so does
a kernel compare.
"""

from __future__ import annotations

from typing import Any

from msprobe_core.plugin import MODE_TENSOR, MetricSpec, Register, TensorMetricSpec, hookimpl


def _tensor_columns(ctx: Any) -> dict[str, list[Any]]:
    # the engine (numpy, the executors) loads when a tensor table is compared, not when the plugins register
    from .stage import tensor_metric_columns

    return tensor_metric_columns(ctx)


@hookimpl
def msprobe_add_hookspecs(pluginmanager: Any) -> None:
    """``msprobe_tensor_rows_compared`` (what the tensor stage tells the plugins that watch its rows) and
    ``msprobe_compare_tensors`` (the six cells of a pair, asked by a plugin that reads tensors of its own)."""
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def msprobe_register_metrics(register: Register[MetricSpec | TensorMetricSpec]) -> None:
    """The metric set of tensor mode: the six metrics of every pair, and the plugins' tensor metrics."""
    register(MetricSpec(MODE_TENSOR, _tensor_columns))


@hookimpl
def msprobe_compare_tensors(npu: Any, bench: Any) -> tuple[Any, ...]:
    """The six metric cells of one pair of squeezed arrays, as tensor mode computes them."""
    from .metrics import compare_tensors  # numpy: loaded by the first pair, not when the plugins register

    return compare_tensors(npu, bench)
