"""The default plugin ``tensor_metrics``: the metric columns of tensor mode (``Cosine``, ``EucDist``, ``MaxAbsErr``,
``MaxRelativeErr``, the two error ratios, and every plugin's :class:`~msprobe_core.plugin.TensorMetricSpec`).

It registers the tensor-mode metric set through ``msprobe_register_metrics``, as a third party's would. Its engine
(:mod:`.stage`) reads every matched tensor pair once, through the frameworks' readers into reusable buffers, in
chunks on the run's executor, and computes the cells with the core's public :func:`~msprobe_core.plugin.compare_tensors`
(the pure metrics a plugin reuses, as the kernel plugin does). Turned off (``-p no:tensor_metrics``), a tensor-mode
compare still writes its table: the metric cells say ``N/A`` and the run warns once that this plugin is off.
"""

from __future__ import annotations

from typing import Any

from msprobe_core.plugin import MODE_TENSOR, MetricSpec, Register, TensorMetricSpec, hookimpl


def _tensor_columns(ctx: Any) -> dict[str, list[Any]]:
    # the engine (numpy, the executors) loads when a tensor table is compared, not when the plugins register
    from .stage import tensor_metric_columns

    return tensor_metric_columns(ctx)


@hookimpl
def msprobe_register_metrics(register: Register[MetricSpec | TensorMetricSpec]) -> None:
    """The metric set of tensor mode: the six metrics of every pair, and the plugins' tensor metrics."""
    register(MetricSpec(MODE_TENSOR, _tensor_columns))
