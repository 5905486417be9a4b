"""The steps of a run, one entry each: verdict counts, first divergence, each rank's part.

A compare of two dump roots holding ``step<N>`` directories runs one result per (step, rank), labelled
``step1/rank0`` (the default plugin ``steps``, :mod:`msprobe_core.default_plugins.steps`). The summary's ``steps`` list is made from those results'
partials alone (no row is read again): per step its verdict counts, its first divergence by the run's rule
(:func:`~msprobe_core.default_plugins.summary.divergence.choose_divergence`) and, per rank, its worst verdict and first divergent
node, which the report draws as a steps × ranks map. A step only one run has is listed too, as ``absent``.

In a step after the first, a first divergence at a call's parameters was set before the step ran: the previous
step updated the weights differently. Its entry says so (``carried``), and so does the console. An L1 dump has no
``parameters`` rows: there, when the first row of a step's result whose values differ at all is an input of a
forward call (:mod:`msprobe_core.default_plugins.summary.drift`: nothing the step computed before it differs) and comes no later
than the first row past a threshold, that call is the step's first divergence, carried from the previous step's
update (``carried``, ``carried_from``, and ``past_threshold``: the row the thresholds alone would name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from msprobe_core.plugin import STEP_DIR

from .divergence import Divergence, analysis_queries, carried_into, choose_divergence
from .drift import carried_input
from .views import VERDICT_LEVEL, VERDICTS


def step_label(label: str) -> str | None:
    """The step a result label starts with (``step1/rank0`` → ``step1``), else ``None``."""
    head = label.split("/", 1)[0]
    return head if STEP_DIR.fullmatch(head) else None


def _number(step: str) -> int:
    return int(step[4:])


def carried_note(d: Divergence | Mapping[str, Any], step: str, later: bool) -> str | None:
    """``parameters already differ at first use in step1: …`` when the divergence ``d`` of ``step`` is at a
    call's parameters and ``step`` comes after the first (``later``), else ``None``."""
    if not later:
        return None
    div = d if isinstance(d, Divergence) else Divergence(d["node"], d["row"], d["rank"], d["index"], d["reason"])
    if carried_into(None, div) is None:  # with no first row given, only a parameters row is carried in
        return None
    return f"parameters already differ at first use in {step}: the previous step updated them differently"


def _worst(verdicts: Mapping[str, int]) -> str | None:
    present = [k for k in VERDICTS if verdicts.get(k)]
    return max(present, key=VERDICT_LEVEL.__getitem__) if present else None


def step_answer(analysis: Any, step: str, labels: Sequence[str]) -> Divergence | None:
    """The first divergence ``-da`` found in ``step`` (its ``diff_analyze_*.json``): a cause before a propagated
    divergence, then the lowest rank; ``labels``: the step's result labels in rank order, to name the result.
    Its ``index`` is ``-1``: the position is known only where the run's summary searched for the row."""
    from msprobe_core.plugin import rank_number

    queries = sorted(analysis_queries(analysis), key=lambda q: (not q.cause, q.rank_key))
    if not queries:
        return None
    q = queries[0]
    number = rank_number(q.rank_key.replace("_", ""), 0)
    label = next((lab for k, lab in enumerate(labels) if rank_number(lab.split("/", 1)[-1], k) == number),
                 labels[0] if labels else step)
    return Divergence(q.op, q.wanted[0] if q.wanted else q.op, label, -1, q.why, source="diff_analyze")


def steps_view(partials: Sequence[Any], absent: Sequence[Mapping[str, str]] = (),
               analyses: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The ``steps`` entries of a run whose results are labelled by step (empty when none is).

    ``partials``: the run's :class:`~msprobe_core.default_plugins.summary.accumulate.ViewPartial`\\ s in result order;
    ``absent``: ``{"step", "side", "path"}`` of each step only one run has (``side``: the run that has it,
    empty when neither has it); ``analyses``: per step its ``-da`` analysis, whose answer is then the step's first
    divergence (else the rule of results without ``-da``).
    """
    by_step: dict[str, list[Any]] = {}
    for p in partials:
        step = step_label(p.label)
        if step is not None:
            by_step.setdefault(step, []).append(p)
    if not by_step:
        return []
    first_step = min(_number(s) for s in [*by_step, *(a["step"] for a in absent)])
    entries: list[dict[str, Any]] = []
    for step, parts in by_step.items():
        counts = dict.fromkeys(VERDICTS, 0)
        for p in parts:
            for k in VERDICTS:
                counts[k] += p.verdicts.get(k, 0)
        later = _number(step) > first_step
        previous = _previous(step, [*by_step, *(a["step"] for a in absent)])
        drifts = {p.label: carried_drift(p, step, previous) for p in parts} if later else {}
        own = [d for d in (drifts.get(p.label, (None,))[0] or p.first_divergence() for p in parts) if d is not None]
        chosen = choose_divergence(own, {p.label: p.first_row for p in parts}, False)
        if analyses and analyses.get(step):
            chosen = step_answer(analyses[step], step, [p.label for p in parts]) or chosen
        fd = chosen.as_dict() if chosen is not None else None
        if fd is not None:
            drifted = drifts.get(chosen.label)
            if drifted and drifted[0] is not None and drifted[0].row == chosen.row:
                fd.update(drifted[1])
            else:
                note = carried_note(chosen, step, later)
                if note:
                    fd["carried"] = note
        by_label = {d.label: d for d in own}
        entries.append({
            "step": step,
            "rows": sum(p.rows for p in parts),
            "verdicts": counts,
            "worst_verdict": _worst(counts),
            "first_divergence": fd,
            "ranks": [{
                "rank": p.label.split("/", 1)[1] if "/" in p.label else p.label,
                "verdicts": dict(p.verdicts),
                "worst_verdict": _worst(p.verdicts),
                "first_divergence": _rank_divergence(by_label.get(p.label), step, later, drifts.get(p.label)),
            } for p in parts],
        })
    for a in absent:
        entries.append({"step": a["step"], "absent": True, "only_in": a["side"] or None, "rows": 0,
                        "verdicts": None, "worst_verdict": None, "first_divergence": None, "ranks": []})
    entries.sort(key=lambda e: _number(e["step"]))
    return entries


def _rank_divergence(d: Divergence | None, step: str, later: bool,
                     drifted: tuple[Divergence | None, dict[str, Any]] | None = None) -> dict[str, Any] | None:
    if d is None:
        return None
    out = {"node": d.node, "row": d.row, "index": d.index, "reason": d.reason}
    if drifted and drifted[0] is not None and drifted[0].row == d.row:
        out.update(drifted[1])
        return out
    note = carried_note(d, step, later)
    if note:
        out["carried"] = note
    return out


def _previous(step: str, steps: Sequence[str]) -> str:
    """The step before ``step`` among ``steps`` (``step<N-1>`` when none is listed)."""
    earlier = [_number(s) for s in steps if _number(s) < _number(step)]
    return f"step{max(earlier) if earlier else _number(step) - 1}"


def carried_drift(partial: Any, step: str, previous: str) -> tuple[Divergence | None, dict[str, Any]]:
    """``(first divergence, what its entry adds)`` of a later step's result whose first differing row is an input of
    a forward call no later than its first row past a threshold (:mod:`msprobe_core.default_plugins.summary.drift`); ``(None, {})``
    otherwise, and where that row is a ``parameters`` row (whose own note, :func:`carried_note`, says it)."""
    d = partial.first_divergence()
    drift = partial.drift.found
    if d is None or drift is None or not carried_input(drift) or drift.index > d.index:
        return None, {}
    if ".parameters." in drift.row or drift.row == d.row and carried_into(None, d) is not None:
        return None, {}
    first = Divergence(drift.node, drift.row, partial.label, drift.index,
                       f"{drift.reason}: the first row of {step} that differs at all, an input no earlier call of "
                       "the step computed", source="drift", golden=drift.golden)
    note = (f"a weight or state already differs at its first use in {step}, before anything the step computed: "
            f"carried from {previous}'s update")
    extra: dict[str, Any] = {"carried": note, "carried_from": previous}
    if d.row != drift.row:
        note += f" (the first row past a threshold is {d.row}: {d.reason})"
        extra["carried"] = note
        extra["past_threshold"] = {"node": d.node, "row": d.row, "index": d.index, "reason": d.reason}
    return first, extra


def steps_lines(steps: Sequence[Mapping[str, Any]]) -> list[str]:
    """The console's per-step lines: counts and first divergence of each step, the absent steps named."""
    lines = ["  steps:"] if steps else []
    width = max((len(s["step"]) for s in steps), default=0)
    for s in steps:
        name = f"{s['step']:<{width}}"
        if s.get("absent"):
            where = f"only in the {s['only_in']} dump" if s.get("only_in") else "in neither dump"
            lines.append(f"    {name}  {where}, not compared")
            continue
        v = s["verdicts"]
        fd = s["first_divergence"]
        first = f"first divergence {fd['node']}" if fd else "no divergence"
        if fd and fd.get("carried"):
            first += f" ({fd['carried']})"
        lines.append(f"    {name}  pass {v['pass']}, warning {v['warning']}, error {v['error']}; {first}")
    return lines


def add_steps(summary: dict[str, Any], partials: Sequence[Any], absent: Sequence[Mapping[str, str]],
              analyses: Mapping[str, Any] | None = None) -> None:
    """Add ``steps`` to a run's summary when its results are labelled by step, and the note of a run's first
    divergence carried into its step by the step before."""
    steps = steps_view(partials, absent, analyses)
    if not steps:
        return
    summary["steps"] = steps
    fd = summary.get("first_divergence")
    step = step_label(fd["rank"]) if fd else None
    if fd and step is not None:
        entry = next((s for s in steps if s["step"] == step), None)
        efd = (entry or {}).get("first_divergence") or {}
        if efd.get("carried_from") and (efd.get("past_threshold") or {}).get("row") == fd["row"]:
            for key in ("node", "row", "index", "reason", "source", "carried", "carried_from", "past_threshold"):
                fd[key] = efd[key]
            fd["golden_row"] = efd.get("golden_row", "")
            fd.pop("verdict", None)  # the thresholds' row's verdict, not the drifted row's
            return
        carried = efd.get("carried")
        same = entry is not None and efd.get("row") == fd["row"]
        if carried and same:
            fd["carried"] = carried
        if same and entry["first_divergence"]["index"] < 0:  # the run's summary found where the row is
            entry["first_divergence"]["index"] = fd["index"]
