"""Differences of *form*: two implementations of the same math that record the same values otherwise.

Two programs that compute the same thing still call it differently: ``residual + h`` against
``h + residual`` (the operands of a commutative call in the other order), or a tensor of
``[16, 64]`` against ``[2, 8, 64]`` (the same elements in another shape). Row by row such
a pair looks like a divergence; it is not one. These judgements say when a row's difference
is only one of form, from what the result table records for it (statistics, or md5 checksums):

* :func:`operands_swapped`: a call the framework declares commutative
  (``FrameworkSpec.commutative_calls``) whose two tensor operands agree once their slots are
  exchanged, and did not agree as they were;
* :func:`reshaped`: a row whose two shapes hold the same number of elements and whose values agree;
* :func:`permuted`: a tensor-mode row whose statistics agree (strictly) although its element-wise metrics
  say the elements differ: the same values in another order, which the statistics that every later row is
  judged on cannot see (a permutation that matters shows further on);
* :func:`applied_inside`: a call's output that a unary call turns from one side's value into the other's.

They never change a cell of the table (msprobe's cells stay msprobe's): the first divergence,
``-da`` and the summary use them to leave such rows out, and say so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

#: A row's statistics as recorded: max, min, mean, L2 norm (``None``: not a number, e.g. ``N/A``).
Stats = Sequence[float | None]

#: How far a statistic may move and still count as the same value, of the tensor's range ``max|x|``
#: (the L2 norm: of the norm). The first divergence's statistics rule starts at 1 %; a form judgement
#: is asked only where values must agree, so it is stricter.
FORM_RTOL = 1e-3

#: How many unit roundoffs of the coarser dtype a statistic may move and still agree (bf16 runs round at 2^-8).
FORM_EPS_FACTOR = 4.0


def tolerance(*eps: float) -> float:
    """The agreement tolerance for tensors of dtypes with unit roundoff ``eps``: :data:`FORM_RTOL`, or a few
    roundoffs of the coarser dtype when that is more (two runs in bf16 agree only to about 1 %)."""
    return max(FORM_RTOL, FORM_EPS_FACTOR * max(eps, default=0.0))


#: What a row skipped for its form is called in a reason or a note.
FORM_SWAPPED = "operands of a commutative call in the other order"
FORM_RESHAPED = "the same elements in another shape"
FORM_PERMUTED = "the same values in another order (a permutation, such as a converter's q/k rows for another RoPE layout)"
FORM_INSIDE = "a unary call (an activation) applied inside the call on one side, after it on the other"
FORM_SCALAR = "a number argument equal up to rounding (one library computes it, the other writes it out)"
#: How close two number arguments must be to be the same number computed two ways: float64 rounding, a few ulps
#: (a scalar that differs more, even by 0.1 %, is a different argument: an eps, a scale)
SCALAR_RTOL = 1e-12

_CALL = re.compile(r"^(?P<call>.+\.\d+\.(?:forward|backward))\.(?P<state>input|output)\.(?P<slot>\d+)$")
_ANY_CALL = re.compile(r"^(?P<call>.+\.(?:\d+\.(?:forward|backward)|(?:forward|backward)\.\d+))"
                       r"\.(?P<state>input|output)\.(?P<slot>\d+)$")
_SHAPE_NUMBERS = re.compile(r"-?\d+")


def call_and_slot(row: str) -> tuple[str, str, int] | None:
    """``(call, state, slot)`` of a row of an API call's top-level tensor (``Tensor.__add__.0.forward.input.1`` →
    ``("Tensor.__add__.0.forward", "input", 1)``); ``None`` for a nested, keyword, parameter or module row."""
    m = _CALL.match(row)
    return (m["call"], m["state"], int(m["slot"])) if m else None


def any_call_and_slot(row: str) -> tuple[str, str, int] | None:
    """:func:`call_and_slot` for API and module calls alike (``Module.mlp.gate.Linear.forward.0.output.0``)."""
    m = _ANY_CALL.match(row)
    return (m["call"], m["state"], int(m["slot"])) if m else None


def applied_inside(target: Stats, golden: Stats, inner_input: Stats, inner_output: Stats,
                   rtol: float = FORM_RTOL) -> bool:
    """Whether a call's output differs only because one side applies another call (an activation) inside it.

    ``target``/``golden``: the call's output on each side. ``inner_input``/``inner_output``: one side's values
    at a unary call nearby. True when that call turns the other side's output into this side's (the target's
    ``w1`` ends with the SiLU that the golden run applies after its ``gate_proj``, or the other way round).
    """
    return not stats_agree(target, golden, rtol) and stats_agree(inner_output, target, rtol) and stats_agree(
        inner_input, golden, rtol)


def is_backward(call: str) -> bool:
    """Whether a call key is a backward call's (``Tensor.mul.0.backward``, ``Module.mlp.MLP.backward.0``)."""
    parts = call.rsplit(".", 2)
    return "backward" in parts[-2:]


def call_prefix(call: str) -> str:
    """A call without its number and direction (``Tensor.__add__.0.forward`` → ``Tensor.__add__``)."""
    return call.rsplit(".", 2)[0]


def commutative_calls(specs: Iterable[object]) -> frozenset[str]:
    """Every call the given framework specs declare commutative."""
    out: set[str] = set()
    for spec in specs:
        out.update(getattr(spec, "commutative_calls", ()) or ())
    return frozenset(out)


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def stats_agree(a: Stats, b: Stats, rtol: float = FORM_RTOL) -> bool:
    """Whether two tensors' statistics say the same values (within ``rtol``; NaN/Inf where both have them).

    Statistics missing on both sides are no evidence of a difference; missing on one side only, or no
    statistic at all, is no evidence of agreement.
    """
    if len(a) != len(b) or not any(_finite(x) for x in a):
        return False
    scale = max((abs(v) for v in (*a[:2], *b[:2]) if _finite(v)), default=0.0)
    for k, (x, y) in enumerate(zip(a, b)):
        if x is None or y is None:
            if x is not y:
                return False
            continue
        if not (_finite(x) and _finite(y)):
            if not (math.isnan(x) and math.isnan(y)) and x != y:
                return False
            continue
        denom = max(abs(x), abs(y)) if k == len(a) - 1 else scale
        if abs(x - y) > rtol * denom:
            return False
    return True


def values_agree(a: Stats | str, b: Stats | str, rtol: float = FORM_RTOL) -> bool:
    """:func:`stats_agree` for statistics; equality for md5 checksums (text)."""
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b and a not in ("", "N/A")
    return stats_agree(a, b, rtol)


def operands_swapped(target: Sequence[Stats | str], golden: Sequence[Stats | str], rtol: float = FORM_RTOL) -> bool:
    """Whether a two-operand call's operands agree in the other order only.

    ``target``/``golden``: the values of operand slots 0 and 1 on each side (statistics, or md5 text).
    """
    if len(target) != 2 or len(golden) != 2:
        return False
    straight = values_agree(target[0], golden[0], rtol) and values_agree(target[1], golden[1], rtol)
    return not straight and values_agree(target[0], golden[1], rtol) and values_agree(target[1], golden[0], rtol)


def shape_dims(shape: str) -> list[int] | None:
    """The dimensions of a shape as a table spells it (``[2, 8, 64]`` → ``[2, 8, 64]``; ``None``: no shape)."""
    text = str(shape).strip()
    if not text.startswith(("[", "(")) or not text.endswith(("]", ")")):
        return None
    return [int(n) for n in _SHAPE_NUMBERS.findall(text)]


def shape_size(shape: str) -> int | None:
    """The number of elements of a shape as a table spells it (``[2, 8, 64]`` → 1024; ``None``: no shape)."""
    dims = shape_dims(shape)
    return None if dims is None else math.prod(dims)


def same_elements_other_shape(shape_a: str, shape_b: str) -> bool:
    """Whether two shapes differ but hold the same elements in the same order: as many elements, and not the
    same dimensions in another order (``[16, 64]`` and ``[2, 8, 64]``, ``[1, 16, 64]`` and ``[16, 64]``; not
    ``[8, 2, 64]`` and ``[2, 8, 64]``, which may be a transpose, whose statistics would not tell)."""
    a, b = shape_dims(shape_a), shape_dims(shape_b)
    if a is None or b is None or a == b or math.prod(a) != math.prod(b):
        return False
    a, b = [n for n in a if n != 1], [n for n in b if n != 1]
    return a == b or sorted(a) != sorted(b)


def reshaped(shape_a: str, shape_b: str, a: Stats | str, b: Stats | str, rtol: float = FORM_RTOL) -> bool:
    """Whether a row is one tensor in another shape: the same number of elements, and values that agree."""
    return same_elements_other_shape(shape_a, shape_b) and values_agree(a, b, rtol)


def permuted(shape_a: str, shape_b: str, a: Stats | str, b: Stats | str) -> bool:
    """Whether a row holds the same values in another order: equal shapes and statistics that agree within
    :data:`FORM_RTOL` whatever the dtype (asked only of rows whose element-wise metrics differ)."""
    if isinstance(a, str) or isinstance(b, str):
        return False
    same_shape = str(shape_a).replace(" ", "") == str(shape_b).replace(" ", "")
    return same_shape and shape_dims(shape_a) is not None and stats_agree(a, b, FORM_RTOL)
