"""The first divergence: the first node whose rows go wrong, per part of a run and for the whole run.

The ``-da`` analysis answers when it ran (its ``diff_analyze`` JSON); otherwise a first-row rule
picks, in execution order, the first row past a threshold (or with a dtype drift) whose verdict
is not a pass.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import result_columns as C
from ..model import MODE_KERNEL, MODE_STATISTICS, MODE_TENSOR
from .views import ResultView, err_messages, framework_specs, node_of, verdict_of_result

#: Thresholds of the built-in first-divergence rule (used until/unless ``-da`` gives an answer).
COSINE_MIN = 0.99
COSINE_HARD_MIN = 0.9
MAX_ABS_ERR_MIN = 0.001
MAX_ABS_ERR_HARD = 1.0
NORM_REL_ERR_MAX = 0.01


@dataclass
class Divergence:
    """The first divergent node of one view (or of the whole run)."""

    node: str
    row: str
    label: str
    index: int
    reason: str
    source: str = "threshold"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "node": self.node,
            "row": self.row,
            "rank": self.label,
            "index": self.index,
            "reason": self.reason,
            "source": self.source,
        }


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def _threshold_reason(view: ResultView, i: int, nums: dict[str, list[float | None]]) -> str | None:
    mode = view.mode
    if mode in (MODE_TENSOR, MODE_KERNEL):
        cos = nums[C.COSINE][i] if C.COSINE in nums else None
        mae = nums[C.MAX_ABS_ERR][i] if C.MAX_ABS_ERR in nums else None
        if cos is not None and cos < COSINE_HARD_MIN:
            return f"{C.COSINE} {_fmt(cos)} < {COSINE_HARD_MIN}"
        if cos is not None and mae is not None and cos < COSINE_MIN and mae > MAX_ABS_ERR_MIN:
            return f"{C.COSINE} {_fmt(cos)} < {COSINE_MIN} and {C.MAX_ABS_ERR} {_fmt(mae)} > {MAX_ABS_ERR_MIN}"
        if mae is not None and mae > MAX_ABS_ERR_HARD:
            return f"{C.MAX_ABS_ERR} {_fmt(mae)} > {MAX_ABS_ERR_HARD:g}"
    elif mode == MODE_STATISTICS and C.NORM_RELATIVE_ERR in nums:
        rel = nums[C.NORM_RELATIVE_ERR][i]
        if rel is not None and abs(rel) > NORM_REL_ERR_MAX:
            if abs(rel) == math.inf:  # the golden L2 norm is 0: no percentage to give
                diff = view.cells[C.L2NORM_DIFF][i].strip() if C.L2NORM_DIFF in view.cells else ""
                return (f"{C.NORM_RELATIVE_ERR} inf: the golden L2 norm is 0"
                        + (f", {C.L2NORM_DIFF} {diff}" if diff else ""))
            return f"{C.NORM_RELATIVE_ERR} {abs(rel) * 100:.4g}% > {NORM_REL_ERR_MAX * 100:g}%"
    return None


def _dtype_of(view: ResultView, side: int, dtype: str) -> tuple[str, str | None]:
    """(framework-neutral name, family) of a dtype of one side of ``view``: as the side's framework spec
    describes it, else the first spec that knows it (``torch.float32`` and ``Float32`` are both ``float32``)."""
    specs = view.__dict__.get("_dtype_specs")
    if specs is None:
        every = framework_specs()
        names = view.frameworks or ("", "")
        specs = view.__dict__["_dtype_specs"] = tuple(
            [f for f in every if f.name == names[k]] + [f for f in every if f.name != names[k]] for k in (0, 1)
        )
    for spec in specs[side]:
        info = spec.dtype_info(dtype)
        if info is not None:
            return info.canonical, info.family
    from ..host.specs import default_canonical

    return default_canonical(dtype), None


def _drift_reason(view: ResultView, i: int) -> str | None:
    """Floating-point dtype drift or shape drift between the two sides of a matched row."""
    cols = view.cells
    nd, bd = cols.get(C.NPU_DTYPE), cols.get(C.BENCH_DTYPE)
    ns, bs = cols.get(C.NPU_SHAPE), cols.get(C.BENCH_SHAPE)
    if nd is not None and bd is not None and ns is not None and bs is not None and nd[i] == bd[i] and ns[i] == bs[i]:
        return None  # the common case, decided without parsing anything
    if nd is not None and bd is not None:
        a, b = nd[i].strip(), bd[i].strip()
        (ca, fa), (cb, fb) = _dtype_of(view, 0, a), _dtype_of(view, 1, b)
        if ca != cb and fa == fb == "float":
            return f"dtype drift: NPU {a} vs Bench {b}"
    if ns is not None and bs is not None:
        a, b = ns[i].strip(), bs[i].strip()
        if a not in ("", "N/A") and b not in ("", "N/A") and a.replace(" ", "") != b.replace(" ", ""):
            return f"shape drift: NPU {a} vs Bench {b}"
    return None


#: Error messages that do not by themselves mean the numbers differ: requires_grad flags, and dtype spellings
#: (a floating-point dtype change is caught by the drift rule; an integer width change is not a divergence).
_NOT_NUMERIC = ("Required_Grad", "Requires_grad inconsistent", "dtype of NPU and Bench", "Dtype of NPU and bench")
_LEVEL_PREFIX = re.compile(r"^\s*(error|warning)\s*:\s*", re.IGNORECASE)


def plain_messages(messages: Iterable[str], verdict: str) -> list[str]:
    """``Err_message`` sentences as a reason quotes them after the row's verdict.

    The level prefix a sentence repeats (``error: …`` on an ``error`` row) and its final
    full stop are dropped, so ``Result error: The shape … are inconsistent`` does not
    stutter; a sentence of another level keeps its prefix (``warning: …``). Repeated
    sentences are given once.
    """
    out: list[str] = []
    for message in messages:
        text = message.strip()
        m = _LEVEL_PREFIX.match(text)
        if m and m.group(1).lower() == verdict:
            text = text[m.end():]
        text = text.rstrip(" .;")
        if text and text not in out:
            out.append(text)
    return out


def _verdict_text(view: ResultView, i: int, messages: Sequence[str]) -> str:
    """``Result error: <messages>`` (or ``Accuracy Reached or Not is No``): the cell that made row ``i`` an error."""
    verdict = view.verdicts()[i]
    res = view.column(C.RESULT)
    acc = view.column(C.ACCURACY_REACHED)
    if res is not None and verdict_of_result(res[i]) == verdict:
        head = f"{C.RESULT} {res[i].strip()}"
    elif acc is not None:
        head = f"{C.ACCURACY_REACHED} is {acc[i].strip()}"
    else:
        head = f"verdict {verdict}"
    return f"{head}: {'; '.join(messages)}" if messages else head


def first_divergence_of(view: ResultView) -> Divergence | None:
    """First row in execution order that diverges, and why.

    A row diverges when its verdict is ``error`` for a numeric reason (not only a
    requires_grad or dtype-spelling message), when its two sides differ in
    floating-point dtype or in shape (dtypes compared framework-neutrally, so
    ``Float32`` equals ``torch.float32``), or when a metric
    crosses a threshold: tensor/kernel — Cosine < 0.9, or Cosine < 0.99 with
    MaxAbsErr > 0.001, or MaxAbsErr > 1 (the classic "accuracy not reached"
    rule); statistics — relative L2-norm error > 1 %; md5 — a differing CRC
    (an ``error`` verdict). Unmatched rows are skipped.

    When no row diverges by these rules but some row is an ``error`` (say, for a
    requires_grad flag only), the first ``error`` row in execution order is named
    (``source`` ``verdict``; a matched row before an unmatched one), so a table with
    errors always has a first divergence.
    """
    verdicts = view.verdicts()
    names = view.names
    unmatched = view.unmatched()
    msgs = view.column(C.ERR_MESSAGE) or [""] * len(view)
    nums: dict[str, list[float | None]] = {}
    for col in (C.COSINE, C.MAX_ABS_ERR, C.NORM_RELATIVE_ERR):
        parsed = view.numbers(col)
        if parsed is not None:
            nums[col] = parsed
    first_error: tuple[int, int] | None = None
    first_unmatched_error: tuple[int, int] | None = None
    for pos, i in enumerate(view.order()):
        if unmatched[i]:
            if first_unmatched_error is None and verdicts[i] == "error":
                first_unmatched_error = (pos, i)
            continue
        reason = _drift_reason(view, i) or _threshold_reason(view, i, nums)
        if verdicts[i] == "error":
            messages = plain_messages(err_messages(msgs[i]), "error")
            numeric = [m for m in messages if not any(k in m for k in _NOT_NUMERIC)]
            if reason is None and (numeric or not messages):
                reason = _verdict_text(view, i, numeric)
            elif reason is not None and messages:
                reason = f"{reason} ({_verdict_text(view, i, messages)})"
            elif first_error is None:
                first_error = (pos, i)
        if reason:
            return Divergence(node_of(names[i])[0], names[i], view.label, pos, reason)
    fallback = first_error or first_unmatched_error
    if fallback is None:
        return None
    pos, i = fallback
    text = _verdict_text(view, i, plain_messages(err_messages(msgs[i]), "error"))
    which = "the first error row, unmatched" if unmatched[i] else "the first error row"
    return Divergence(node_of(names[i])[0], names[i], view.label, pos,
                      f"{text} ({which}; no row drifts in dtype or shape or crosses a metric threshold)",
                      source="verdict")


def _evidence_rows(node: Mapping[str, Any]) -> list[str]:
    """The rows an analysis node's evidence is about: its ``row`` first, then its evidence, most telling kind first."""
    rows: list[str] = []
    if isinstance(node.get("row"), str) and node["row"]:
        rows.append(node["row"])
    evidence = [e for e in node.get("evidence") or () if isinstance(e, dict) and isinstance(e.get("row"), str)]
    evidence.sort(key=lambda e: _EVIDENCE_ORDER.get(str(e.get("kind")), 9))
    rows.extend(e["row"] for e in evidence if e["row"] not in rows)
    return rows


#: Evidence kinds of the analysis, most telling first (as its reasons cite them).
_EVIDENCE_ORDER = {"nan_inf": 0, "dtype": 1, "shape": 2, "md5": 3, "argument": 4, "statistics": 5}


def _find_row(views: Sequence[ResultView], label: str, op: str, wanted: Sequence[str]
              ) -> tuple[ResultView, int, str] | None:
    """The view (same label first), execution position and name of the row of call ``op`` to name.

    The first of ``wanted`` (the rows the analysis' evidence is about) that the view holds; else
    the call's first output row (what the call computed); else its first row.
    """
    ordered = [v for v in views if v.label == label] + [v for v in views if v.label != label]
    prefix = op + "."
    rank = {r: k for k, r in enumerate(wanted)}
    for v in ordered:
        names = v.names
        best: tuple[int, int, str] | None = None  # (preference, position, name)
        for pos, i in enumerate(v.order()):
            name = names[i]
            if name != op and not name.startswith(prefix):
                continue
            pref = rank.get(name)
            if pref is None:
                pref = len(wanted) + (0 if ".output." in name[len(op):] else 1)
            if best is None or pref < best[0]:
                best = (pref, pos, name)
                if pref == 0:
                    break
        if best is not None:
            return v, best[1], best[2]
    return None


def _analysis_divergence(views: Sequence[ResultView], analysis: Any) -> Divergence | None:
    """The answer of ``-da`` (its ``diff_analyze_*.json``, as a path or a parsed document), when it has one.

    Per rank the first node whose ``role`` is ``cause`` is taken (else the first node);
    across ranks a cause beats a propagated divergence, then the earliest step and
    position win. The row named is the one the node's evidence is about (its ``row``).
    Nodes that are not in ``views`` (a stale file) are ignored.
    """
    if not analysis:
        return None
    if isinstance(analysis, Divergence):
        return analysis
    if isinstance(analysis, (str, Path)):
        analysis = read_analysis(Path(analysis))
    if not isinstance(analysis, dict):
        return None
    best: tuple[tuple[int, int, int], Divergence] | None = None
    for rank_key, nodes in analysis.items():
        if not isinstance(nodes, list):
            continue
        nodes = [n for n in nodes if isinstance(n, dict) and n.get("op_name")]
        if not nodes:
            continue
        node = next((n for n in nodes if n.get("role") == "cause"), nodes[0])
        op = str(node["op_name"])
        label = str(rank_key).replace("_", "") if str(rank_key).startswith("rank_") else str(rank_key)
        hit = _find_row(views, label, op, _evidence_rows(node))
        if hit is None:  # a stale or foreign analysis file: its node is not in these results
            continue
        view, pos, row = hit
        why = node.get("reason") or node.get("why") or "first diff node found by -da"
        if not isinstance(why, str):
            why = json.dumps(why)
        cand = Divergence(op, row, view.label, pos, why, source="diff_analyze")
        key = (0 if node.get("role", "cause") == "cause" else 1, _step_of(view.label), pos)
        if best is None or key < best[0]:
            best = (key, cand)
    return best[1] if best else None


def read_analysis(path: Path) -> Any:
    """The parsed ``diff_analyze_*.json`` (``None`` when it cannot be read: the summary then does without)."""
    from ..errors import MsprobeError
    from ..files.jsonfile import read_json_file

    try:
        return read_json_file(path, "analysis")
    except MsprobeError:
        return None


def _step_of(label: str) -> int:
    m = re.search(r"step\s*(\d+)", label)
    return int(m.group(1)) if m else 0


def first_divergence(views: Sequence[ResultView], analysis: Any = None) -> tuple[Divergence | None, list[Divergence]]:
    """The run's first divergence and each view's own.

    The answer of ``-da`` when it has one; else a divergence found by the rules of
    :func:`first_divergence_of` beats a mere first ``error`` row, then the earliest step
    wins, then the earliest position in execution order (ranks run side by side, so
    their positions are comparable), then the first view. Among the parts of a mixed
    graph/pynative dump, a divergence that arises in its part beats one carried into
    its part (:func:`carried_in`).
    """
    per_view = [d for d in (first_divergence_of(v) for v in views) if d is not None]
    chosen = _analysis_divergence(views, analysis)
    if chosen is None and per_view:
        carried = _carried_rule(views)
        chosen = min(per_view, key=lambda d: (d.source == "verdict", _step_of(d.label), carried(d), d.index))
    return chosen, per_view


#: Labels of the parts of a mixed graph/pynative dump (``graph/step0/rank0``): the parts of one
#: step run one after the other, so a part can receive a divergence that arose in another.
_MIXED_PART = re.compile(r"^(?:graph|pynative)/")


def is_mixed_layout(views: Sequence[ResultView]) -> bool:
    """Whether ``views`` are the graph and pynative parts of a mixed dump."""
    return len(views) > 1 and all(_MIXED_PART.match(v.label) for v in views)


def carried_in(view: ResultView, d: Divergence) -> str | None:
    """Why the first divergence ``d`` of ``view`` was carried into that part from outside it, or ``None``.

    A divergence at a call's parameters was there before the call ran (weights loaded or
    updated differently, e.g. by an earlier step); one at an input of the part's very
    first call was handed over by code outside the part. Neither arises in the part.
    """
    rest = d.row[len(d.node):] if d.row.startswith(d.node) else ""
    if rest.startswith(".parameters.") and "parameters_grad" not in d.node:
        return "its parameters already differ when the call starts (set before this part ran, e.g. by an earlier step)"
    if rest.startswith(".input.") and len(view):
        if node_of(view.names[view.order()[0]])[0] == d.node:
            return "an input of the part's first call already differs (handed over from outside the part)"
    return None


def _carried_rule(views: Sequence[ResultView]) -> Any:
    """``d -> 0 | 1``: 1 when ``d`` was carried into its part of a mixed graph/pynative dump."""
    if not is_mixed_layout(views):
        return lambda d: 0
    by_label = {v.label: v for v in views}
    return lambda d: int(d.label in by_label and carried_in(by_label[d.label], d) is not None)
