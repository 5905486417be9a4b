"""Settings of the first-divergence analysis (``-da``), with their defaults.

The defaults are chosen so that fp32 rounding noise between two frameworks or two devices (≈1e-7…1e-6 of
a tensor's range) never counts, while a dtype change, a NaN/Inf, a changed argument or a real numeric
fault (≥1e-4 of the range in fp32, more in half precision) always does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    itself), where ``tolerance = max(base_tolerance, eps_factor × eps(dtype))`` and ``eps(dtype)`` is the
    unit roundoff the dtype's framework spec gives (``FrameworkSpec.dtypes``).
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

    def tolerance(self, *eps: float) -> float:
        """The row tolerance for the unit roundoffs of a pair of dtypes (the coarser one decides;
        each framework's spec knows its dtypes' ``eps``, :class:`~msprobe_core.host.specs.DtypeInfo`)."""
        return max(self.base_tolerance, self.eps_factor * max(eps, default=0.0))

    def exact_input_tol(self, *eps: float) -> float:
        """The output tolerance of a call whose tensor inputs are all bit-identical."""
        return max(self.exact_input_tolerance, self.exact_input_eps_factor * max(eps, default=0.0))
