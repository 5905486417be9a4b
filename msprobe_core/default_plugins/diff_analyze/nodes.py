"""The calls of one rank, in execution order, with their evidence and communication role.

A :class:`RankView` is built from one compared pair (the two tables and the
result table the engine produced for them, whatever mapper paired the rows).
Each call of the target dump becomes a :class:`Node`; its rows are split into
inputs (arguments, keyword arguments, parameters) and outputs (outputs and
parameter gradients). The dump's ``construct.json`` (next to ``dump.json``),
when present, says which module/cell call encloses which call.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from msprobe_core.default_plugins.msprobe_verdicts import forms
from msprobe_core.plugin import (
    MODE_MD5,
    NA,
    STATE_OUTPUT,
    STATE_PARAMETERS_GRAD,
    CommOpSpec,
    DumpTable,
    FrameworkSpec,
    ResultTable,
    split_api_key,
)
from msprobe_core.plugin import result_columns as C

from .comm import comm_kind, parse_peer, parse_ranks
from .config import DiffAnalyzeConfig
from .evidence import Columns, Evidence, RowCheck, check_row, number

log = logging.getLogger("msprobe")


@dataclass
class Node:
    """One call of the target dump."""

    index: int
    api: int
    key: str
    prefix: str
    direction: str
    rows: list[int]  # positions in the result table
    evidence: list[Evidence] = field(default_factory=list)
    comm: str | None = None  # "collective" / "send" / "recv"
    group: tuple[int, ...] | None = None
    peer: int | None = None
    skip: str | None = None  # why the search ignores this call's own data
    checks: list[tuple[str, str, RowCheck]] = field(default_factory=list)  # (side, state, check) per matched row
    #: differences of form the search set aside, as "row: what" (operands in the other order, a reshape)
    forms: list[str] = field(default_factory=list)

    @property
    def op(self) -> str:
        """The op name: the last part of the prefix (``all_reduce``, ``linear``, a module class…)."""
        return self.prefix.rsplit(".", 1)[-1]

    @property
    def input_evidence(self) -> list[Evidence]:
        return [e for e in self.evidence if e.side == "input"]

    @property
    def output_evidence(self) -> list[Evidence]:
        return [e for e in self.evidence if e.side == "output"]

    @property
    def tensor_input_evidence(self) -> list[Evidence]:
        return [e for e in self.evidence if e.side == "input" and e.on_tensor]

    @property
    def divergent(self) -> bool:
        return bool(self.evidence) and self.skip is None


@dataclass
class RankView:
    """Everything the search needs about one rank."""

    rank: int
    label: str
    target: DumpTable
    golden: DumpTable
    table: ResultTable
    nodes: list[Node]
    parents: dict[str, str | None]
    cross_framework: bool
    stem: str = "compare_result"
    p2p: dict[str, tuple[str, str]] = field(default_factory=dict)  # row → (op, peer) of P2POp records
    by_call_number: bool = False  # rows paired by the built-in exact mapper: call numbers pair calls
    by_key: dict[str, Node] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_key = {n.key: n for n in self.nodes}

    def parent_of(self, node: Node) -> Node | None:
        """The dumped call enclosing ``node`` (``construct.json``, else the module path), if any."""
        key = self.parents.get(node.key)
        if key is not None:
            return self.by_key.get(key)
        return self._parent_by_name(node)

    def _parent_by_name(self, node: Node) -> Node | None:
        path = _module_path(node)
        if path is None:
            return None
        best: Node | None = None
        best_len = -1
        for other in self.nodes[node.index + 1:]:
            other_path = _module_path(other)
            if other_path is None or other.direction != node.direction or other_path == path:
                continue
            if path.startswith(other_path + ".") and len(other_path) > best_len:
                best, best_len = other, len(other_path)
        return best


def _module_path(node: Node) -> str | None:
    """``blocks.1.attn`` for a module call ``Module.blocks.1.attn.Attention.forward.0`` (``None`` for APIs)."""
    parts = node.key.split(".")
    if len(parts) < 4 or not parts[-1].isdigit() or parts[-2] not in ("forward", "backward"):
        return None
    return ".".join(parts[1:-3])


def build_nodes(
    target: DumpTable,
    table: ResultTable,
    frameworks: tuple[FrameworkSpec, FrameworkSpec],
    comm_specs: list[CommOpSpec] | tuple[CommOpSpec, ...],
    config: DiffAnalyzeConfig,
    cross_framework: bool,
) -> list[Node]:
    """The target's calls in dump order, with evidence for every matched row."""
    data = table.data
    pairs = table.pairs
    assert pairs is not None
    md5_mode = table.mode == MODE_MD5
    cols = Columns(data)
    nodes: list[Node] = []
    current: Node | None = None
    for k, i in enumerate(pairs.target):
        a = target.row_api[i]
        if current is None or current.api != a:
            api = target.apis[a]
            split = split_api_key(api.key, debug=False)
            prefix = split[0] if split else api.prefix
            current = Node(len(nodes), a, api.key, prefix, api.direction, [])
            current.comm = comm_kind(prefix, comm_specs)
            if current.op in config.ignored_ops:
                current.skip = "ignored op (its dumped data is not what it computed)"
            elif cross_framework and api.direction in ("backward", STATE_PARAMETERS_GRAD) and not (
                config.cross_framework_backward
            ):
                current.skip = "backward of a cross-framework compare (frameworks dump backward at different points)"
            nodes.append(current)
        current.rows.append(k)
        state = target.state[i]
        side = "output" if state in (STATE_OUTPUT, STATE_PARAMETERS_GRAD) else "input"
        if current.comm is not None and side == "input":
            _comm_args(current, target.name[i], data[C.NPU_MAX][k], data[C.NPU_MD5][k])
        if pairs.golden[k] < 0:
            continue
        check = check_row(cols, k, side, md5_mode, frameworks, config)
        for evidence in check.evidence:
            evidence.state = state
            current.evidence.append(evidence)
        current.checks.append((side, state, check))
    commutative = forms.commutative_calls(frameworks)
    for node in nodes:
        _form_rule(node, cols, pairs.golden, commutative, md5_mode)
        if not md5_mode:
            _inside_rule(node, nodes, cols)
        _exact_input_rule(node, config)
    return nodes


#: How many calls before and after a call the search looks at for a call applied inside it on one side only.
_INSIDE_NODES = 12


def _inside_rule(node: Node, nodes: list[Node], cols: Columns) -> None:
    """Set aside output evidence that only says one program applies a unary call (an activation) inside this
    call and the other after it (:func:`..msprobe_verdicts.forms.applied_inside`)."""
    outputs = [e for e in node.evidence if e.side == "output" and e.kind == "statistics"]
    if not outputs or node.tensor_input_evidence:
        return
    near = nodes[max(0, node.index - _INSIDE_NODES): node.index + _INSIDE_NODES + 1]
    rtol = forms.tolerance(*(check.eps for _, _, check in node.checks))
    for e in outputs:
        k = next((k for k in node.rows if cols.name[k] == e.row), None)
        where = forms.any_call_and_slot(e.row)
        if k is None or where is None:
            continue
        own, other = _values(cols, k, True, False), _values(cols, k, False, False)
        for inner in near:
            if inner is node:
                continue
            slots = {}
            for j in inner.rows:
                w = forms.any_call_and_slot(cols.name[j])
                if w is not None:
                    slots.setdefault((w[1], w[2]), j)
            if ("input", 1) in slots or ("input", 0) not in slots or ("output", 0) not in slots:
                continue
            i_in, i_out = slots[("input", 0)], slots[("output", 0)]
            if any(forms.applied_inside(a, b, _values(cols, i_in, npu, False), _values(cols, i_out, npu, False),
                                        rtol)
                   for npu, a, b in ((True, own, other), (False, other, own))):
                node.evidence = [x for x in node.evidence if x is not e]
                for _, _, check in node.checks:
                    check.evidence = [x for x in check.evidence if x is not e]
                node.forms.append(f"{e.row}: {forms.FORM_INSIDE} ({inner.key})")
                break


def _values(cols: Columns, k: int, npu: bool, md5_mode: bool) -> forms.Stats | str:
    if md5_mode:
        md5 = cols.npu_md5 if npu else cols.bench_md5
        return str(md5[k]) if md5 is not None else ""
    stats = cols.npu_stats if npu else cols.bench_stats
    return [number(c[k]) for c in stats]


def _form_rule(node: Node, cols: Columns, golden: Any, commutative: frozenset[str], md5_mode: bool) -> None:
    """Set aside the evidence that only says the two programs wrote the same math in another form.

    A shape that holds as many elements as the golden one is a reshape (whether the values moved, the
    row's statistics or md5 evidence says); the operands of a commutative call that agree once their
    slots are exchanged were passed in the other order (:mod:`..msprobe_verdicts.forms`).
    """
    if not node.evidence:
        return
    dropped: set[int] = set()
    rtol = forms.tolerance(*(check.eps for _, _, check in node.checks))
    for e in node.evidence:
        if e.kind == "shape" and forms.same_elements_other_shape(str(e.detail["npu"]), str(e.detail["bench"])):
            dropped.add(id(e))
            node.forms.append(f"{e.row}: {forms.FORM_RESHAPED}")
    if node.prefix in commutative and node.input_evidence:
        slots = {}
        for k in node.rows:
            where = forms.call_and_slot(cols.name[k])
            if where is not None and where[1] == "input" and golden[k] >= 0:
                slots[where[2]] = k
        if sorted(slots)[:2] == [0, 1] and len(slots) == 2:
            target = [_values(cols, slots[s], True, md5_mode) for s in (0, 1)]
            bench = [_values(cols, slots[s], False, md5_mode) for s in (0, 1)]
            if forms.operands_swapped(target, bench, rtol):
                rows = {cols.name[slots[0]], cols.name[slots[1]]}
                for e in node.evidence:
                    if e.row in rows and e.side == "input":
                        dropped.add(id(e))
                node.forms.extend(f"{row}: {forms.FORM_SWAPPED}" for row in sorted(rows))
    if dropped:
        node.evidence = [e for e in node.evidence if id(e) not in dropped]
        for _, _, check in node.checks:
            check.evidence = [e for e in check.evidence if id(e) not in dropped]


def _exact_input_rule(node: Node, config: DiffAnalyzeConfig) -> None:
    """Outputs of a call whose tensor inputs are all bit-identical are held to the smaller tolerance."""
    inputs = [c for side, _, c in node.checks if side == "input" and c.tensor]
    if not inputs or any(c.error != 0.0 or c.evidence for c in inputs) or node.output_evidence or node.forms:
        return
    for side, state, check in node.checks:
        if side != "output" or check.worst is None or check.evidence:
            continue
        tol = config.exact_input_tol(check.eps)
        if check.worst[0] > tol:
            evidence = check.statistics_evidence(tol)
            assert evidence is not None
            evidence.detail["inputs_exact"] = True
            evidence.state = state
            check.evidence.append(evidence)
            node.evidence.append(evidence)


def _comm_args(node: Node, name: str, value: Any, md5: Any) -> None:
    last = name.rsplit(".", 1)[-1]
    if last == "group" or last.endswith("group"):
        ranks = parse_ranks(value if value not in (None, NA) else md5)
        if ranks is not None:
            node.group = ranks
    elif (node.comm == "send" and last in ("dst", "group_dst")) or (node.comm == "recv" and last in ("src", "group_src")):
        node.peer = parse_peer(value if value not in (None, NA) else md5)
