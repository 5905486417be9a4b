"""Locating the first divergence across ranks.

On every rank the calls are taken in dump order (execution order). The first
call with evidence is that rank's *first visible divergence*. Whether it is a
cause or a consequence depends on the other ranks:

* Data crosses ranks only through communication ops. A rank is *dirty* at one
  of its communication calls when a call before it already diverged (or the
  call's own inputs differ); a dirty rank taints every other participant of a
  collective at that event, and the receiver of a send.
* A rank whose first visible divergence comes before any taint reaches it
  introduced the divergence itself: that call (or the module enclosing it,
  below) is a **cause**. A rank whose first divergence comes at or after the
  taint shows a **propagated** divergence, and the report names the
  communication call it came through and the causes on the sending ranks.

Within a rank, a cause call whose tensor inputs already differ got them from
code outside the dump (a parameter loaded differently, an op the dump level
does not record). When a dumped module/cell call encloses it with matching
inputs and differing outputs, that enclosing call is reported (the divergence
arises inside it); the call where it first showed stays in ``first_visible``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from msprobe_core.plugin import STATE_PARAMETERS

from .evidence import Evidence
from .moved import inputs_phrase
from .nodes import Node, RankView

INF = math.inf


@dataclass
class Finding:
    """One reported node: a cause, or where a propagated divergence first shows on a rank."""

    rank: int
    node: Node
    role: str  # "cause" or "propagated"
    reason: str
    evidence: list[Evidence]
    first_visible: Node | None = None
    via: Node | None = None
    sources: list[tuple[int, str]] = field(default_factory=list)  # (rank, op_name) of the causes upstream
    hints: list[str] = field(default_factory=list)
    #: the row of ``node`` whose evidence the reason cites first (the row a summary names)
    row: str = ""
    #: the cause's difference came from outside the dumped calls: its parameters, or an input no earlier dumped
    #: call's output explains (in a later step: what the previous step's update left)
    carried_in: bool = False

    def __post_init__(self) -> None:
        if not self.row:
            best = _best(self.evidence)
            self.row = best.row if best is not None else ""


@dataclass
class _Event:
    key: Any
    members: list[tuple[int, Node, bool, bool]] = field(default_factory=list)  # rank, node, sends, receives


def _first(view: RankView) -> Node | None:
    for node in view.nodes:
        if node.divergent:
            return node
    return None


def _events(views: list[RankView]) -> list[_Event]:
    events: dict[Any, _Event] = {}
    sends: dict[tuple[int, int], int] = {}
    recvs: dict[tuple[int, int], int] = {}
    for view in views:
        for node in view.nodes:
            if node.comm == "collective":
                key = ("collective", node.key, node.group)
                events.setdefault(key, _Event(key)).members.append((view.rank, node, True, True))
            elif node.comm == "send" and node.peer is not None:
                n = sends.get((view.rank, node.peer), 0)
                sends[(view.rank, node.peer)] = n + 1
                key = ("p2p", view.rank, node.peer, n)
                events.setdefault(key, _Event(key)).members.append((view.rank, node, True, False))
            elif node.comm == "recv" and node.peer is not None:
                n = recvs.get((node.peer, view.rank), 0)
                recvs[(node.peer, view.rank)] = n + 1
                key = ("p2p", node.peer, view.rank, n)
                events.setdefault(key, _Event(key)).members.append((view.rank, node, False, True))
    return [e for e in events.values() if len(e.members) > 1]


def locate(views: list[RankView]) -> list[Finding]:
    """Causes and propagated first divergences of every rank, in rank order."""
    first = {v.rank: _first(v) for v in views}
    events = _events(views)
    taint: dict[int, float] = {v.rank: INF for v in views}
    taint_via: dict[int, tuple[Node, list[int]]] = {}

    def dirty(rank: int, node: Node) -> bool:
        f = first[rank]
        if f is not None and (f.index < node.index or (f.index == node.index and f.tensor_input_evidence)):
            return True
        return taint[rank] < node.index

    changed = True
    while changed:
        changed = False
        for event in events:
            senders = [r for r, node, sends, _ in event.members if sends and dirty(r, node)]
            if not senders:
                continue
            for r, node, _, receives in event.members:
                others = [s for s in senders if s != r]
                if receives and others and node.index < taint[r]:
                    taint[r] = node.index
                    taint_via[r] = (node, others)
                    changed = True

    findings: list[Finding] = []
    causes: dict[int, Finding] = {}
    for view in sorted(views, key=lambda v: v.rank):
        f = first[view.rank]
        if f is None:
            continue
        local = f.index < taint[view.rank] or (f.index == taint[view.rank] and f.tensor_input_evidence)
        if local:
            finding = _cause(view, f)
            causes[view.rank] = finding
            findings.append(finding)
    for view in sorted(views, key=lambda v: v.rank):
        f = first[view.rank]
        if f is None or view.rank in causes:
            continue
        via, senders = taint_via[view.rank]
        sources = _upstream(senders, causes, taint_via)
        reason = (
            f"rank {view.rank} receives the divergence through {via.key} from rank(s) "
            f"{', '.join(map(str, senders))}"
            + (f" (cause: {', '.join(f'rank {r} {op}' for r, op in sources)})" if sources else "")
            + f"; it first shows at {f.key}: {_top(f.evidence)}"
        )
        findings.append(Finding(view.rank, f, "propagated", reason, f.evidence, via=via, sources=sources))
    findings.sort(key=lambda x: (x.rank, 0 if x.role == "cause" else 1))
    return findings


def _upstream(senders: list[int], causes: dict[int, Finding], taint_via: dict[int, tuple[Node, list[int]]]
              ) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    seen: set[int] = set()
    stack = list(senders)
    while stack:
        r = stack.pop(0)
        if r in seen:
            continue
        seen.add(r)
        if r in causes:
            out.append((r, causes[r].node.key))
        elif r in taint_via:
            stack.extend(taint_via[r][1])
    return sorted(out)


def _cause(view: RankView, f: Node) -> Finding:
    """The cause finding for a rank whose first visible divergence ``f`` is its own."""
    tensor_inputs = f.tensor_input_evidence
    if not tensor_inputs:
        reason, cited = _introduced_reason(f)
        return Finding(view.rank, f, "cause", reason, f.evidence, row=cited)
    parent = view.parent_of(f)
    seen = {f.key}  # construct.json is checked for cycles when read; a table built another way may still have one
    while parent is not None and parent.key not in seen:
        seen.add(parent.key)
        own = [e for e in parent.tensor_input_evidence if e.state == STATE_PARAMETERS]
        if own:  # the module calling it holds different weights: they explain the input, no code beyond them
            reason = (
                f"{f.key} is the first dumped call that differs: its input {tensor_inputs[0].row} already differs, "
                f"as the parameters of {parent.key}, the module calling it, do (weights loaded or updated "
                f"differently, e.g. by an earlier step). {_top(own)}"
            )
            return Finding(view.rank, f, "cause", reason, f.evidence, row=_row(tensor_inputs), carried_in=True)
        if parent.evidence and not parent.tensor_input_evidence and parent.output_evidence:
            reason = (
                f"{parent.key}: {inputs_phrase(parent)} but its output differs; inside it the first value to differ "
                f"is {tensor_inputs[0].row} (an input of {f.key}), so the divergence arises in code of "
                f"{parent.key} that the dump does not record. {_top(parent.output_evidence)}"
            )
            return Finding(view.rank, parent, "cause", reason, parent.evidence, first_visible=f,
                           row=_row(parent.output_evidence))
        parent = view.parent_of(parent)
    if f.comm is not None:
        reason = f"{f.key} is the first call that differs and its own input already differs: {_top(tensor_inputs)}"
    elif all(e.state == STATE_PARAMETERS for e in tensor_inputs):
        reason = (
            f"{f.key} is the first dumped call that differs: its parameters already differ (weights loaded or "
            f"updated differently, e.g. by an earlier step). {_top(tensor_inputs)}"
        )
    else:
        reason = (
            f"{f.key} is the first dumped call that differs; its input already differs although no earlier "
            f"dumped call's output does, so it comes from code outside the dump (a parameter, an op the dump "
            f"level does not record). {_top(tensor_inputs)}"
        )
    return Finding(view.rank, f, "cause", reason, f.evidence, row=_row(tensor_inputs), carried_in=f.comm is None)


def _introduced_reason(f: Node) -> tuple[str, str]:
    """Why ``f`` is a cause although its tensor inputs match, and the row that reason cites first."""
    args = [e for e in f.input_evidence if e.kind == "argument"]
    outs = f.output_evidence
    if f.comm is not None and outs and not args:
        return (
            f"{f.key}: its output differs; on this rank {inputs_phrase(f)}, and no rank it communicates with "
            f"diverged before this point. {_top(outs)}"
        ), _row(outs)
    if args:
        text = f"{f.key} is called with a different argument: {args[0].summary()}"
        return text + (f"; its output differs: {_top(outs)}" if outs else ""), args[0].row
    return f"{f.key}: {inputs_phrase(f)} but the output differs. {_top(outs)}", _row(outs or f.evidence)


#: Evidence kinds, most telling first (for equal kinds the one furthest past its threshold).
_KIND_ORDER = {"nan_inf": 0, "dtype": 1, "shape": 2, "md5": 3, "argument": 4, "statistics": 5}


def _best(evidence: list[Evidence]) -> Evidence | None:
    """The most telling evidence: NaN/Inf, dtype, shape, md5, argument, then the largest statistic."""
    if not evidence:
        return None
    return min(evidence, key=lambda e: (_KIND_ORDER.get(e.kind, 9), -e.severity))


def _row(evidence: list[Evidence]) -> str:
    """The row of the evidence :func:`_top` cites."""
    best = _best(evidence)
    return best.row if best is not None else ""


def _top(evidence: list[Evidence]) -> str:
    """The most telling evidence (:func:`_best`) in words, and how many more there are."""
    best = _best(evidence)
    if best is None:
        return ""
    more = len(evidence) - 1
    return best.summary() + (f" (+{more} more)" if more else "")
