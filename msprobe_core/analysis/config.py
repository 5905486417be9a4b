"""Settings of the first-divergence analysis (``-da``), with their defaults.

The defaults are chosen so that fp32 rounding noise between two frameworks or two devices (≈1e-7…1e-6 of
a tensor's range) never counts, while a dtype change, a NaN/Inf, a changed argument or a real numeric
fault (≥1e-4 of the range in fp32, more in half precision) always does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Unit roundoff of the float dtypes, by canonical dtype name.
DTYPE_EPS: dict[str, float] = {
    "float64": 2.0**-52,
    "float32": 2.0**-23,
    "tfloat32": 2.0**-10,
    "float16": 2.0**-10,
    "bfloat16": 2.0**-7,
    "float8_e4m3fn": 2.0**-3,
    "float8_e5m2": 2.0**-2,
}

#: Canonical dtype names of tensors (anything else with a dtype is a non-tensor argument: int, str, size, group…).
TENSOR_DTYPES: frozenset[str] = frozenset(
    {"bool", "complex32", "complex64", "complex128", "float", "double", "half"}
    | {f"int{b}" for b in (4, 8, 16, 32, 64)}
    | {f"uint{b}" for b in (1, 4, 8, 16, 32, 64)}
    | set(DTYPE_EPS)
    | {"float8_e4m3fnuz", "float8_e5m2fnuz", "hifloat8"}
)

#: Ops whose output is uninitialised memory or whose dumped data is not the data they computed
#: (matched on the op name, the part of the key before the call number).
DEFAULT_IGNORED_OPS: frozenset[str] = frozenset(
    {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_with_format", "__setitem__"}
)


@dataclass(frozen=True)
class DiffAnalyzeConfig:
    """Thresholds and switches of the analysis.

    A matched tensor row *differs* when one of its four statistics moved by more than
    ``tolerance(dtype)`` of the tensor's range (``max|x|`` over both sides; the norm relative to
    itself), where ``tolerance = max(base_tolerance, eps_factor × eps(dtype))``.
    """

    base_tolerance: float = 1e-4
    eps_factor: float = 4.0
    #: A call whose tensor inputs are all bit-identical is judged on its outputs with this smaller tolerance
    #: (``max(exact_input_tolerance, exact_input_eps_factor × eps(dtype))``): with identical inputs only the call
    #: itself can have moved its output, and rounding alone moves it by a few eps at most.
    exact_input_tolerance: float = 1e-5
    exact_input_eps_factor: float = 2.0
    ignored_ops: frozenset[str] = DEFAULT_IGNORED_OPS
    #: Compare backward rows when the two dumps come from different frameworks. Off by default: each
    #: framework hooks the backward of a composite op at a different point (PyTorch's cross_entropy
    #: backward is dumped at its nll_loss step), so their backward rows differ without any divergence.
    cross_framework_backward: bool = False
    #: Relative tolerance of numeric non-tensor arguments (a Python float computed two ways).
    argument_rtol: float = 1e-6
    extra: dict[str, object] = field(default_factory=dict)

    def tolerance(self, *canonical_dtypes: str | None) -> float:
        """The row tolerance for a pair of dtypes (the coarser one decides)."""
        eps = max((DTYPE_EPS.get(d or "", 0.0) for d in canonical_dtypes), default=0.0)
        return max(self.base_tolerance, self.eps_factor * eps)

    def exact_input_tol(self, *canonical_dtypes: str | None) -> float:
        """The output tolerance of a call whose tensor inputs are all bit-identical."""
        eps = max((DTYPE_EPS.get(d or "", 0.0) for d in canonical_dtypes), default=0.0)
        return max(self.exact_input_tolerance, self.exact_input_eps_factor * eps)
