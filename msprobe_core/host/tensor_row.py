"""What a tensor metric that asks for it (``TensorMetricSpec(row_context=True)``) is told of its row."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TensorRow:
    """The row a tensor metric computes a cell of (:attr:`TensorMetricSpec.row_context`): what dump.json says of
    each side's tensor, as the result table shows it. ``None`` where a side does not say."""

    #: the row's name on each side (``Functional.linear.0.forward.output.0``)
    target_name: str
    golden_name: str
    #: each side's dtype as its dump names it (``torch.bfloat16``), before any reader widened it
    target_dtype: str | None
    golden_dtype: str | None
    #: each side's shape as its dump gives it (``[2, 8]``)
    target_shape: str | None
    golden_shape: str | None
    #: each side's framework (``pytorch``), whose spec knows its dtypes (``host.framework(name).dtype_info``)
    target_framework: str = ""
    golden_framework: str = ""
