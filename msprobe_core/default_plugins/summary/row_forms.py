"""Rows of a result whose difference is only one of form (:mod:`..msprobe_verdicts.forms`, the verdict rule's), as the
first divergence asks about them: from the cells of a result (or of one chunk of it), framework-neutrally."""

from __future__ import annotations

from typing import Any

from msprobe_core.default_plugins.msprobe_verdicts import forms
from msprobe_core.plugin import result_columns as C

from .thresholds import COSINE_MIN
from .views import ResultView, framework_specs

#: How a dump spells a non-tensor argument's type (``<class 'float'>``): Python's own words, any framework
_PYTHON_NUMBER = "<class '"
#: How far from a row its call's other operand rows may be in the table (a call's rows are written together).
_CALL_WINDOW = 8


def _row_values(view: ResultView, i: int, side: str) -> forms.Stats | str | None:
    """What the table records of one side of row ``i``: its statistics, or its md5 checksum (md5 tables)."""
    md5 = view.column(C.NPU_MD5 if side == C.NPU else C.BENCH_MD5)
    if md5 is not None:
        return md5[i].strip()
    columns = [view.numbers(C.stat_column(side, s)) for s in C.STAT_NAMES]
    if any(c is None for c in columns):
        return None
    return [c[i] for c in columns]  # type: ignore[index]


def _view_commutative(view: ResultView) -> frozenset[str]:
    cached = view.__dict__.get("_commutative")
    if cached is None:
        cached = view.__dict__["_commutative"] = forms.commutative_calls(framework_specs())
    return cached


def row_form(view: ResultView, i: int) -> str | None:
    """Why matched row ``i`` differs only in form (:mod:`..msprobe_verdicts.forms`), or ``None``.

    An operand of a call its framework declares commutative whose two operands agree with the golden
    call's in the other order; a tensor whose two shapes hold the same elements and whose values agree; a
    tensor-mode row whose statistics agree while its element-wise metrics differ (a permutation); a call's
    output that one side's nearby unary call explains (an activation inside the call on one side only).
    """
    names = view.names
    shapes = view.column(C.NPU_SHAPE), view.column(C.BENCH_SHAPE)
    npu, bench = _row_values(view, i, C.NPU), _row_values(view, i, C.BENCH)
    if npu is None or bench is None:
        return None
    dtypes = view.column(C.NPU_DTYPE)
    if (dtypes is not None and dtypes[i].startswith(_PYTHON_NUMBER) and isinstance(npu, list)
            and isinstance(bench, list) and forms.stats_agree(npu, bench, forms.SCALAR_RTOL)):
        return forms.FORM_SCALAR
    rtol = _row_tolerance(view, i)
    if shapes[0] is not None and shapes[1] is not None and forms.reshaped(shapes[0][i], shapes[1][i], npu, bench,
                                                                          rtol):
        return forms.FORM_RESHAPED
    cosine = view.numbers(C.COSINE)
    if cosine is not None and cosine[i] is not None and cosine[i] < COSINE_MIN and shapes[0] is not None and (
            shapes[1] is not None and forms.permuted(shapes[0][i], shapes[1][i], npu, bench)):
        return forms.FORM_PERMUTED  # element-wise metrics see a difference the statistics do not
    where = forms.call_and_slot(names[i])
    if where is None or where[1] != "input" or where[2] > 1:
        return _inside_form(view, i, npu, bench, rtol)
    call = where[0]
    if forms.call_prefix(call) not in _view_commutative(view):
        return None
    slots: dict[int, int] = {}
    unmatched = view.unmatched()
    for j in range(max(0, i - _CALL_WINDOW), min(len(view), i + _CALL_WINDOW + 1)):
        other = forms.call_and_slot(names[j])
        if other is not None and other[0] == call and other[1] == "input":
            slots[other[2]] = j
    if sorted(slots) != [0, 1] or any(unmatched[j] for j in slots.values()):
        return None
    target = [_row_values(view, slots[k], C.NPU) for k in (0, 1)]
    golden = [_row_values(view, slots[k], C.BENCH) for k in (0, 1)]
    if any(v is None for v in (*target, *golden)):
        return None
    rtol = max(rtol, *(_row_tolerance(view, j) for j in slots.values()))
    return forms.FORM_SWAPPED if forms.operands_swapped(target, golden, rtol) else None  # type: ignore[arg-type]


#: How far from a call's output row a call applied inside it (or right after it) may be in the table.
_INSIDE_WINDOW = 48


def _row_tolerance(view: ResultView, i: int) -> float:
    """:func:`forms.tolerance` for row ``i``'s two dtypes (as each side's framework spec knows them)."""
    eps = []
    for side, col in ((0, C.NPU_DTYPE), (1, C.BENCH_DTYPE)):
        cells = view.column(col)
        if cells is None:
            continue
        for spec in _dtype_specs(view, side):
            info = spec.dtype_info(cells[i].strip())
            if info is not None:
                eps.append(info.eps)
                break
    return forms.tolerance(*eps)


def _dtype_specs(view: ResultView, side: int) -> list[Any]:
    """The framework specs to ask about one side's dtypes: that side's framework first."""
    specs = view.__dict__.get("_form_specs")
    if specs is None:
        every = framework_specs()
        names = view.frameworks or ("", "")
        specs = view.__dict__["_form_specs"] = tuple(
            [f for f in every if f.name == names[k]] + [f for f in every if f.name != names[k]] for k in (0, 1))
    return specs[side]


def _inside_form(view: ResultView, i: int, npu: forms.Stats | str, bench: forms.Stats | str,
                 rtol: float = forms.FORM_RTOL) -> str | None:
    """:data:`forms.FORM_INSIDE` when output row ``i`` differs only by a unary call that one side applies inside
    the call and the other after it (found nearby in the table, on either side: ``forms.applied_inside``); in
    the backward pass, the call's incoming gradient, which that unary call's backward explains the same way."""
    names = view.names
    where = forms.any_call_and_slot(names[i])
    if where is None or isinstance(npu, str) or isinstance(bench, str):
        return None
    backward = forms.is_backward(where[0])
    # a forward output, or a backward call's incoming gradient (its input): the gradient at the activation's
    # output on one side, at its input on the other, which the activation's own backward turns one into the other
    if where[1] != ("input" if backward else "output"):
        return None
    rows: dict[str, dict[str, int]] = {}
    for j in range(max(0, i - _INSIDE_WINDOW), min(len(view), i + _INSIDE_WINDOW + 1)):
        other = forms.any_call_and_slot(names[j])
        if (other is not None and other[2] == 0 and other[0] != where[0]
                and forms.is_backward(other[0]) == backward):
            rows.setdefault(other[0], {})[other[1]] = j
    for call, slots in rows.items():
        if "input" not in slots or "output" not in slots or f"{call}.input.1" in names[slots["input"]:slots["output"]]:
            continue
        # backward, the gradient flows from the activation's backward input (at its output) to its output
        inner = ("output", "input") if backward else ("input", "output")
        for side, own, other in ((C.NPU, npu, bench), (C.BENCH, bench, npu)):
            inner_in, inner_out = (_row_values(view, slots[inner[0]], side), _row_values(view, slots[inner[1]], side))
            if isinstance(inner_in, list) and isinstance(inner_out, list) and forms.applied_inside(
                    own, other, inner_in, inner_out, rtol):
                return forms.FORM_INSIDE
    return None


def form_note(counts: dict[tuple[str, str], int]) -> str | None:
    """One sentence on the rows set aside for their form, from ``(form, verdict) → rows`` (``None``: none was)."""
    if not counts:
        return None
    total: dict[str, int] = {}
    errors = 0
    for (form, verdict), count in counts.items():
        total[form] = total.get(form, 0) + count
        errors += count if verdict == "error" else 0
    kinds = "; ".join(f"{count} {form}" for form, count in total.items())
    rows = sum(total.values())
    said = f", {errors} of them {'an error row' if errors == 1 else 'error rows'}" if errors else ""
    return (f"{rows} row{'s' if rows != 1 else ''} differ from the golden run only in form ({kinds}){said}:"
            " not taken as divergences (docs/scenarios/first-divergence.md, differences of form)")
