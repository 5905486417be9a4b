"""The first divergence: the first node whose rows go wrong, per part of a run and for the whole run.

The ``-da`` analysis answers when it ran (its ``diff_analyze`` JSON); otherwise a first-row rule
picks, in execution order, the first row past a threshold (or with a dtype drift) whose verdict
is not a pass.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from msprobe_core.default_plugins.msprobe_verdicts import messages as verdict_messages
from msprobe_core.plugin import result_columns as C

from .chunks import head_first
from .modes import relative_errors
from .row_forms import form_note, row_form
from .rowsearch import RowSearch
from .thresholds import threshold_columns, threshold_reason
from .views import ResultView, err_messages, framework_specs, levelled_verdict, node_of, verdict_of_result, view_grammar


@dataclass
class Divergence:
    """The first divergent node of one view (or of the whole run)."""

    node: str
    row: str
    label: str
    index: int
    reason: str
    source: str = "threshold"
    #: the row's golden counterpart (its ``Bench Name``; ``""`` when not known, e.g. from ``-da``)
    golden: str = ""
    #: the row's own verdict in the result table (``""``: not known); ``pass`` says the rules of the table did
    #: not flag what the first-divergence thresholds did
    verdict: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out = {"node": self.node, "row": self.row, "rank": self.label, "index": self.index,
               "reason": self.reason, "source": self.source, "golden_row": self.golden}
        if self.verdict:
            out["verdict"] = self.verdict
        return out


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
    from msprobe_core.plugin import default_canonical

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
_NOT_JUDGED = verdict_messages.MSG_SHAPE_RECORDED_APART.split(": ", 1)[1]  # the verdict rule found two tensors under one name
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
    """``Result error: <messages>`` (or ``<a plugin's verdict column> is No``): the cell that made row ``i`` an error."""
    verdict = view.verdicts()[i]
    res = view.column(C.RESULT)
    own = levelled_verdict(view)
    if res is not None and verdict_of_result(res[i]) == verdict:
        head = f"{C.RESULT} {res[i].strip()}"
    elif own is not None:
        head = f"{own} is {view.cells[own][i].strip()}"
    else:
        head = f"verdict {verdict}"
    return f"{head}: {'; '.join(messages)}" if messages else head


def first_divergence_of(view: ResultView) -> Divergence | None:
    """First row in execution order that diverges, and why.

    A row diverges when its verdict is ``error`` for a numeric reason (not only a
    requires_grad or dtype-spelling message; not for rows of a mode judged on relative
    error (``MetricSpec.relative_errors``), whose verdict is the absolute rule the
    relative thresholds replace), when its two sides differ in
    floating-point dtype or in shape (dtypes compared framework-neutrally), or when a metric
    crosses a threshold (:mod:`msprobe_core.default_plugins.summary.thresholds`): rows with a Cosine —
    Cosine < 0.9, or Cosine < 0.99 with MaxAbsErr > 0.001; then MaxAbsErr > 1 (the
    classic "accuracy not reached" rule), or for a mode judged on relative error an
    error of more than 1 % of the golden tensor (EucDist / Bench l2norm, or
    MaxAbsErr / max|Bench|); statistics rows — relative L2-norm error > 1 %; md5 — a
    differing CRC (an ``error`` verdict). Unmatched rows are skipped, and so are
    rows the verdict rule did not judge (two frameworks' backward tensors recorded with other shapes).

    When no row diverges by these rules but some row is an ``error`` (say, for a requires_grad flag only), the
    first ``error`` row in execution order is named (``source`` ``verdict``; a matched row before an unmatched
    one), so a table with errors always has a first divergence.
    """
    scan = DivergenceScan()
    scan.feed(view)
    return scan.result()


class DivergenceScan:
    """:func:`first_divergence_of` over a result fed chunk by chunk, in execution order.

    ``feed(chunk, offset)``: the chunk's rows (in the chunk's :meth:`~ResultView.order`) are
    positions ``offset + k`` of the whole result in execution order. The first chunk holding a
    divergent row decides; until one does, the first ``error`` row (matched, then unmatched)
    seen is kept as the fallback. Picklable (a rank's partial carries it).
    """

    __slots__ = ("found", "first_error", "first_unmatched_error", "forms")

    def __init__(self) -> None:
        self.found: Divergence | None = None
        self.first_error: Divergence | None = None
        self.first_unmatched_error: Divergence | None = None
        #: rows set aside before the first divergence because only their form differs: (form, verdict) → rows
        self.forms: dict[tuple[str, str], int] = {}

    def __getstate__(self) -> tuple[Any, ...]:
        return self.found, self.first_error, self.first_unmatched_error, self.forms

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.found, self.first_error, self.first_unmatched_error, self.forms = state

    def feed(self, view: ResultView, offset: int = 0) -> None:
        """Scan the rows of ``view`` (a chunk), position ``offset`` onwards (its head first: see
        :func:`~msprobe_core.default_plugins.summary.chunks.head_first`)."""
        for part, at in head_first(view):
            self._scan(part, offset + at)

    def _scan(self, view: ResultView, offset: int) -> None:
        if self.found is not None or not len(view):
            return
        verdicts = view.verdicts()
        names = view.names
        unmatched = view.unmatched()
        msgs = view.column(C.ERR_MESSAGE) or [""] * len(view)
        nums: dict[str, list[float | None]] = {}
        relative = relative_errors(view.mode)
        for col in threshold_columns(relative):
            parsed = view.numbers(col)
            if parsed is not None:
                nums[col] = parsed
        first_error = first_unmatched_error = None
        # the error verdict of a mode judged on relative error is an absolute rule (MaxAbsErr > 1), which the
        # relative thresholds replace: alone it names a row only as the fallback
        verdict_decides = not relative
        grammar = view_grammar(view)
        for pos, i in enumerate(view.order(), start=offset):
            if unmatched[i]:
                if first_unmatched_error is None and verdicts[i] == "error":
                    first_unmatched_error = (pos, i)
                continue
            if msgs[i] and _NOT_JUDGED in msgs[i]:
                continue  # no evidence either way
            reason = _drift_reason(view, i) or threshold_reason(view, i, nums, relative)
            if reason or verdicts[i] == "error":
                form = row_form(view, i)
                if form is not None:  # only the form differs (operands in the other order, a reshape…)
                    self.forms[(form, verdicts[i])] = self.forms.get((form, verdicts[i]), 0) + 1
                    continue
            if verdicts[i] == "error":
                messages = plain_messages(err_messages(msgs[i]), "error")
                numeric = [m for m in messages if not any(k in m for k in _NOT_NUMERIC)]
                if reason is None and (numeric or not messages) and verdict_decides:
                    reason = _verdict_text(view, i, numeric)
                elif reason is not None and messages:
                    reason = f"{reason} ({_verdict_text(view, i, messages)})"
                elif first_error is None:
                    first_error = (pos, i)
            if reason:
                bench = view.column(C.BENCH_NAME)
                self.found = Divergence(node_of(names[i], grammar)[0], names[i], view.label, pos, reason,
                                        golden=bench[i] if bench is not None else "", verdict=verdicts[i])
                break
        # a fallback is spelled while its chunk is at hand; only the first of the whole result is kept
        if self.first_error is None and first_error is not None:
            self.first_error = _fallback(view, *first_error, msgs)
        if self.first_unmatched_error is None and first_unmatched_error is not None:
            self.first_unmatched_error = _fallback(view, *first_unmatched_error, msgs)

    def absorb(self, later: DivergenceScan) -> None:
        """Take ``later``, the scan of the rows right after those fed here, as if they had been fed here."""
        if self.found is not None:
            return
        for key, count in later.forms.items():
            self.forms[key] = self.forms.get(key, 0) + count
        self.found = later.found
        self.first_error = self.first_error or later.first_error
        self.first_unmatched_error = self.first_unmatched_error or later.first_unmatched_error

    def form_note(self) -> str | None:
        """One sentence on the rows set aside for their form (``None``: none was)."""
        return form_note(self.forms)

    def result(self) -> Divergence | None:
        """The first divergence of everything fed (``None``: nothing diverges and no row is an ``error``)."""
        return self.found or self.first_error or self.first_unmatched_error


def _fallback(view: ResultView, pos: int, i: int, msgs: Sequence[str]) -> Divergence:
    """Row ``i`` (position ``pos``) named as the first error row: no row diverges by the rules."""
    names = view.names
    text = _verdict_text(view, i, plain_messages(err_messages(msgs[i]), "error"))
    which = "the first error row, unmatched" if view.unmatched()[i] else "the first error row"
    return Divergence(node_of(names[i], view_grammar(view))[0], names[i], view.label, pos,
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


@dataclass(frozen=True)
class AnalysisQuery:
    """One rank's answer in a ``-da`` analysis: its node ``op`` and the rows its evidence is about."""

    rank_key: str
    op: str
    wanted: tuple[str, ...]
    why: str
    cause: bool


def analysis_queries(analysis: Any) -> list[AnalysisQuery]:
    """The nodes of a ``-da`` analysis (its ``diff_analyze_*.json``, as a path or a parsed document) whose row
    a summary names: per rank the first node whose ``role`` is ``cause`` (else the first node)."""
    if not analysis or isinstance(analysis, Divergence):
        return []
    if isinstance(analysis, (str, Path)):
        analysis = read_analysis(Path(analysis))
    if not isinstance(analysis, dict):
        return []
    out = []
    for rank_key, nodes in analysis.items():
        if not isinstance(nodes, list):
            continue
        nodes = [n for n in nodes if isinstance(n, dict) and n.get("op_name")]
        if not nodes:
            continue
        node = next((n for n in nodes if n.get("role") == "cause"), nodes[0])
        why = node.get("reason") or node.get("why") or "first diff node found by -da"
        if not isinstance(why, str):
            why = json.dumps(why)
        out.append(AnalysisQuery(str(rank_key), str(node["op_name"]), tuple(_evidence_rows(node)), why,
                                 node.get("role", "cause") == "cause"))
    return out


def analysis_choice(queries: Sequence[AnalysisQuery],
                    found: Sequence[tuple[str, Sequence[tuple[int, int, str] | None]]]) -> Divergence | None:
    """The answer of ``-da`` from where its rows are: ``found`` holds, per result in order, its label and
    per query what :class:`RowSearch` found there (``None``: the query's node is not in that result).

    Per query the row is taken from the result of the same label first, then from the others
    in order; across ranks a cause beats a propagated divergence, then the earliest step and
    position win. A node that is in none of the results (a stale analysis file) is ignored.
    """
    best: tuple[tuple[int, int, int], Divergence] | None = None
    for q, query in enumerate(queries):
        rank_key = query.rank_key
        label = rank_key.replace("_", "") if rank_key.startswith("rank_") else rank_key
        ordered = [f for f in found if f[0] == label] + [f for f in found if f[0] != label]
        hit = next(((lab, hits[q]) for lab, hits in ordered if hits[q] is not None), None)
        if hit is None:  # a stale or foreign analysis file: its node is not in these results
            continue
        lab, (_, pos, row) = hit
        cand = Divergence(query.op, row, lab, pos, query.why, source="diff_analyze")
        key = (0 if query.cause else 1, _step_of(lab), pos)
        if best is None or key < best[0]:
            best = (key, cand)
    return best[1] if best else None


def _analysis_divergence(views: Sequence[ResultView], analysis: Any) -> Divergence | None:
    """The answer of ``-da`` (its ``diff_analyze_*.json``, as a path or a parsed document), when it has one.

    Per rank the first node whose ``role`` is ``cause`` is taken (else the first node);
    across ranks a cause beats a propagated divergence, then the earliest step and
    position win. The row named is the one the node's evidence is about (its ``row``).
    Nodes that are not in ``views`` (a stale file) are ignored.
    """
    if isinstance(analysis, Divergence):
        return analysis
    queries = analysis_queries(analysis)
    if not queries:
        return None
    found = []
    for view in views:
        search = RowSearch(queries)
        search.feed(view)
        found.append((view.label, search.best))
    return analysis_choice(queries, found)


def read_analysis(path: Path) -> Any:
    """The parsed ``diff_analyze_*.json`` (``None`` when it cannot be read: the summary then does without)."""
    from msprobe_core.plugin import MsprobeError, read_json_file

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
    if chosen is None:
        first_names = {v.label: first_row_name(v) for v in views}
        chosen = choose_divergence(per_view, first_names, is_mixed_layout(views))
    return chosen, per_view


def choose_divergence(per_view: Sequence[Divergence], first_names: Mapping[str, str | None],
                      mixed: bool) -> Divergence | None:
    """The run's first divergence among the results' own (the rule of :func:`first_divergence`, without ``-da``).

    ``first_names``: per result label, its first row in execution order (``None``: no row), which
    tells a divergence carried into a part of a mixed dump (``mixed``) from one that arose in it.
    """
    if not per_view:
        return None

    def carried(d: Divergence) -> int:
        return int(mixed and d.label in first_names and carried_into(first_names[d.label], d) is not None)

    return min(per_view, key=lambda d: (d.source == "verdict", _step_of(d.label), carried(d), d.index))


def first_row_name(view: ResultView) -> str | None:
    """The name of the first row of ``view`` in execution order (``None`` when it has no row)."""
    return view.names[view.order()[0]] if len(view) else None


#: Labels of the parts of a mixed graph/pynative dump (``graph/step0/rank0``): the parts of one
#: step run one after the other, so a part can receive a divergence that arose in another.
_MIXED_PART = re.compile(r"^(?:graph|pynative)/")


def is_mixed_layout(views: Sequence[ResultView]) -> bool:
    """Whether ``views`` are the graph and pynative parts of a mixed dump."""
    return mixed_labels([v.label for v in views])


def mixed_labels(labels: Sequence[str]) -> bool:
    """Whether results labelled ``labels`` are the graph and pynative parts of a mixed dump."""
    return len(labels) > 1 and all(_MIXED_PART.match(label) for label in labels)


def carried_in(view: ResultView, d: Divergence) -> str | None:
    """Why the first divergence ``d`` of ``view`` was carried into that part from outside it, or ``None``.

    A divergence at a call's parameters was there before the call ran (weights loaded or
    updated differently, e.g. by an earlier step); one at an input of the part's very
    first call was handed over by code outside the part. Neither arises in the part.
    """
    return carried_into(first_row_name(view), d)


def carried_into(first_name: str | None, d: Divergence) -> str | None:
    """:func:`carried_in` for a part whose first row in execution order is ``first_name`` (``None``: no row)."""
    rest = d.row[len(d.node):] if d.row.startswith(d.node) else ""
    if rest.startswith(".parameters.") and "parameters_grad" not in d.node:
        return "its parameters already differ when the call starts (set before this part ran, e.g. by an earlier step)"
    if rest.startswith(".input.") and first_name is not None:
        if node_of(first_name)[0] == d.node:
            return "an input of the part's first call already differs (handed over from outside the part)"
    return None
