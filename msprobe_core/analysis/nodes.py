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
import re
from dataclasses import dataclass, field
from typing import Any

from .. import result_columns as C
from ..host.specs import FrameworkSpec
from ..load.construct import find_cycle, load_construct  # noqa: F401 - -da's reader, here since -da came first
from ..load.document import split_api_key
from ..model import MODE_MD5, NA, STATE_OUTPUT, STATE_PARAMETERS_GRAD, DumpTable
from ..result import ResultTable
from .comm import CommOpSpec, comm_kind, parse_peer, parse_ranks
from .config import DiffAnalyzeConfig
from .evidence import Columns, Evidence, RowCheck, check_row

log = logging.getLogger("msprobe")
_RANK_IN_LABEL = re.compile(r"rank(\d+)")


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


def rank_number(label: str, default: int) -> int:
    """The rank a job label names (``rank3`` → 3), else ``default``."""
    m = _RANK_IN_LABEL.search(label)
    return int(m.group(1)) if m else default


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
    for node in nodes:
        _exact_input_rule(node, config)
    return nodes


def _exact_input_rule(node: Node, config: DiffAnalyzeConfig) -> None:
    """Outputs of a call whose tensor inputs are all bit-identical are held to the smaller tolerance."""
    inputs = [c for side, _, c in node.checks if side == "input" and c.tensor]
    if not inputs or any(c.error != 0.0 or c.evidence for c in inputs) or node.output_evidence:
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
