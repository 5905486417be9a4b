"""The model tree of the HTML report: each call's verdict counts and worst row, placed in its modules.

While a result streams by, :class:`NodeStats` keeps per call node (``Functional.linear.0.forward``, a
module call, a kernel) its first position, its rows' verdict counts and its worst row by the mode's
main metric (:func:`~msprobe_core.default_plugins.summary.views.main_metric`); it rides in the summary partial's
typed field ``ViewPartial.node_stats``, so a rank's worker sends it back with its partial. At most
:data:`MAX_NODES` calls are kept one by one; the calls beyond are counted per op (``Functional.linear``)
and the tree says so. :func:`build_tree` then places every call under its ancestors (the run's
:class:`~msprobe_core.default_plugins.summary.hierarchy.RunHierarchy`), sums each module's subtree (worst verdict, counts,
worst row), marks the first divergence's path and every rank's first divergence, and, when the tree
would pass :data:`TREE_NODES` nodes, folds calls into their modules (then modules into theirs) so that
the page stays small whatever the row count.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .calls import CallNumbers
from .tree_nodes import CALL_NUMBER, TreeNode, fold, merge_stats
from .views import ResultView, main_metric

#: :data:`CALL_NUMBER` in calls joined by NULs (one substitution for many calls)
_CALL_NUMBERS = re.compile(r"\.\d+(?=[.\x00]|$)")

#: calls kept one by one per result (the rest are counted per op): a few MB at most per result, only while
#: an HTML report is made
MAX_NODES = 20_000
#: most nodes the page's tree holds (the rest folded into their modules)
TREE_NODES = 3_000
#: the key of :func:`build_tree`'s answer that maps folded nodes to where they are shown (dropped from the page)
ALIAS_KEY = "_alias"
_VERDICT_CODE = {"pass": 0, "warning": 1, "error": 2}
_FORWARD, _BACKWARD = ".forward", ".backward"
#: the default plugin hierarchy's source of code frames, which finds a backward call by its forward twin
_STACK_JSON = ("hierarchy", "stack.json")
#: Said where the hierarchy is calling code (an API-level dump's stack.json), on the page and the console.
FRAMES_NOTE = ("the dump records API calls only: the tree's nodes are its calling code's frames (a frame entered "
               "again is numbered, #2); a mix-level dump (config.json \"level\": \"mix\") gives module names")


class NodeStats:
    """Per call node of one result: ``[first position, pass, warning, error, badness, worst row, worst text]``.

    ``badness`` orders rows by the main metric (larger is worse; ``-inf`` when the row has no number).
    Picklable; :meth:`absorb` takes the stats of the rows right after those fed here.
    """

    __slots__ = ("nodes", "overflow", "metric", "_calls")

    def __init__(self) -> None:
        self.nodes: dict[str, list[Any]] = {}
        self.overflow: dict[str, list[Any]] = {}
        self.metric = ""
        self._calls = CallNumbers()

    def __getstate__(self) -> tuple[Any, ...]:
        return self.nodes, self.overflow, self.metric

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.nodes, self.overflow, self.metric = state
        self._calls = CallNumbers()

    def feed(self, chunk: ResultView, start: int = 0) -> None:
        """Count the rows of ``chunk`` (positions ``start`` onwards in execution order).

        The rows are cut into calls (runs of one node, :class:`~msprobe_core.default_plugins.summary.calls.CallNumbers`,
        which parses a name only where a call may start) and each call's counts and worst row are found
        with numpy; only the calls, not the rows, pass through Python, and only the metric cells an entry shows
        are spelled."""
        n = len(chunk)
        if not n:
            return
        order = np.asarray(chunk.order(), dtype=np.int64)
        names = chunk.names
        identity = bool(n and order[0] == 0 and order[-1] == n - 1 and np.all(np.diff(order) == 1))
        ordered = names if identity else [names[i] for i in order]
        before = self._calls.node
        calls, starts = self._calls.feed(ordered)
        bounds = np.flatnonzero(np.diff(calls)) + 1
        bounds = np.r_[0, bounds].astype(np.int64)
        run_nodes = [s[2] for s in starts]
        if not starts or starts[0][0] != 0:
            run_nodes.insert(0, before if before is not None else starts[0][2])
        codes = _verdict_codes(chunk.verdicts())[order]
        counts = [np.add.reduceat((codes == k).astype(np.int64), bounds).tolist() for k in range(3)]
        metric = main_metric(chunk.mode)
        values = chunk.numbers(metric[0]) if metric and metric[0] in chunk.cells else None
        ranked = False  # whether the calls' worst rows are known (the mode has a main metric in this table)
        if values is not None and metric is not None:
            self.metric = metric[0]
            sign = 1.0 if metric[1] else -1.0
            raw, known = _known_numbers(values)
            raw, known = raw[order], known[order]
            bad = np.where(np.isnan(raw), math.inf, sign * raw)
            bad[~known] = -math.inf
            # per run, its worst row (the earliest among equals): where a run's maximum is first reached
            top = np.repeat(np.maximum.reduceat(bad, bounds), np.diff(np.r_[bounds, n]))
            hits = np.flatnonzero(bad == top)
            firsts = hits[np.searchsorted(hits, bounds)]
            ranked = True
            worst_bad = bad[firsts].tolist()
            worst_row = order[firsts].tolist()
        # from here on, one step per call (not per row), on Python numbers
        firsts_at = (bounds + start).tolist()
        passes, warnings, errors = counts
        nodes, overflow = self.nodes, self.overflow
        shown: dict[int, tuple[list[Any], int]] = {}  # entry -> the row whose metric cell it shows (spelled below)
        for r, node in enumerate(run_nodes):
            entry = nodes.get(node)
            if entry is None:
                if len(nodes) < MAX_NODES:
                    entry = nodes[node] = [firsts_at[r], 0, 0, 0, -math.inf, "", ""]
                else:
                    op = CALL_NUMBER.sub("", node)
                    entry = overflow.get(op)
                    if entry is None:
                        entry = overflow[op] = [firsts_at[r], 0, 0, 0, -math.inf, "", ""]
            entry[1] += passes[r]
            entry[2] += warnings[r]
            entry[3] += errors[r]
            if ranked:
                b = worst_bad[r]
                if b > entry[4]:
                    i = worst_row[r]
                    entry[4], entry[5] = b, names[i]
                    shown[id(entry)] = entry, i
        if shown and metric is not None:
            _spell_worst(chunk, metric[0], list(shown.values()))

    def absorb(self, later: NodeStats) -> None:
        """Take the stats of the rows right after those fed here (each new call kept while there is room, the rest
        counted per op, in their order: as feeding them here would)."""
        self.metric = self.metric or later.metric
        nodes, theirs, overflow = self.nodes, later.nodes, self.overflow
        both = theirs.keys() & nodes.keys()
        for node in both:
            merge_stats(nodes[node], theirs[node])
        new = [node for node in theirs if node not in both]
        room = max(0, MAX_NODES - len(nodes))
        nodes.update([(node, list(theirs[node])) for node in new[:room]])
        for node, op in zip(new[room:], _ops(new[room:])):
            entry = theirs[node]
            own = overflow.get(op)
            if own is None:
                own = overflow[op] = [entry[0], 0, 0, 0, -math.inf, "", ""]
            if entry[0] < own[0]:  # merge_stats, inlined: a big model's calls past the first MAX_NODES are many
                own[0] = entry[0]
            own[1] += entry[1]
            own[2] += entry[2]
            own[3] += entry[3]
            if entry[4] > own[4]:
                own[4], own[5], own[6] = entry[4], entry[5], entry[6]
        for op, entry in later.overflow.items():
            own = overflow.get(op)
            if own is None:
                overflow[op] = list(entry)
            else:
                merge_stats(own, entry)


def _ops(nodes: list[str]) -> list[str]:
    """Each call's op (its call numbers taken out, :data:`CALL_NUMBER`), by one substitution over them all."""
    text = "\x00".join(nodes)
    if "\n" in text or text.count("\x00") != max(0, len(nodes) - 1):  # ($ matches before a last newline)
        return [CALL_NUMBER.sub("", node) for node in nodes]
    return _CALL_NUMBERS.sub("", text).split("\x00") if nodes else []


def _spell_worst(chunk: ResultView, metric: str, shown: list[tuple[list[Any], int]]) -> None:
    """Each entry's worst cell of ``metric``, as the CSV spells it: only the cells shown are spelled (a call's
    worst row among every row of the chunk)."""
    rows = sorted({i for _, i in shown})
    texts_at = getattr(chunk.cells, "texts_at", None)  # SpelledColumns, CellWindow: without spelling every row
    cells = texts_at(metric, rows) if texts_at is not None else [chunk.cells[metric][i] for i in rows]
    text = dict(zip(rows, cells))
    for entry, i in shown:
        entry[6] = text[i]


def _verdict_codes(verdicts: Sequence[str]) -> np.ndarray:
    """Each verdict's code (0 pass, 1 warning, 2 error; anything else 0), looked up once per distinct verdict."""
    memo = {v: _VERDICT_CODE.get(v, 0) for v in set(verdicts)}
    return np.array(list(map(memo.__getitem__, verdicts)), dtype=np.int8)


def _known_numbers(values: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray]:
    """``values`` as float64 (``None`` as NaN) and whether each is a number (a NaN given as a float is one)."""
    raw = np.array(values, dtype=np.float64)  # numpy reads None as NaN
    known = ~np.isnan(raw)
    for i in np.flatnonzero(~known).tolist():  # only the NaNs: was the value None, or a float NaN?
        known[i] = values[i] is not None
    return raw, known


def _child(parent: TreeNode, name: str, kind: str) -> TreeNode:
    node = parent.children.get(name)
    if node is None:
        node = parent.children[name] = TreeNode(name, kind, parent)
    elif kind == "m":
        node.enclose()
    return node


def _sum(node: TreeNode) -> list[Any]:
    """Fill every module's stats with its own rows' and its subtree's (iterative: deep models)."""
    order: list[TreeNode] = []
    stack = [node]
    while stack:  # only the nodes that enclose others (most nodes are calls, which enclose nothing)
        n = stack.pop()
        order.append(n)
        stack.extend([c for c in n.children.values() if c.children])
    for n in reversed(order):
        if n.children:
            stats = n.stats  # merge_stats of every child, inlined: a big model has tens of thousands
            first, passed, warned, failed, worst = stats[0], stats[1], stats[2], stats[3], stats[4]
            for c in n.children.values():
                e = c.stats
                if e[0] < first:
                    first = e[0]
                passed += e[1]
                warned += e[2]
                failed += e[3]
                if e[4] > worst:
                    worst, stats[5], stats[6] = e[4], e[5], e[6]
            stats[0], stats[1], stats[2], stats[3], stats[4] = first, passed, warned, failed, worst
    return node.stats


class _Visits:
    """Each visit of a code frame, told apart: where a hierarchy is calling code (an API-level dump's stack.json),
    block 0's and block 1's calls have the same frames, so a frame entered again after the calls left it is
    another call of that code (``forward (common.py:94) #2``); the first visit keeps the frame's own name."""

    def __init__(self) -> None:
        self._prev: list[str] = []
        self._ids: list[str] = []
        self._count: dict[tuple[str, str], int] = {}
        self._forward: dict[str, list[str]] = {}  # a forward call (name without its direction) -> its frames

    def of_forward(self, node: str) -> list[str] | None:
        """The frames :meth:`number` gives a backward call whose forward call was numbered (``None`` for another call,
        or where the name's forward twin, as ``stack.json`` lookups make it, may be another call)."""
        if node.endswith(_BACKWARD) and ".backward" not in node[: -len(_BACKWARD)]:
            return self._forward.get(node[: -len(_BACKWARD)])
        return None

    def number(self, chain: Sequence[str], node: str) -> list[str]:
        """``chain`` (outermost first; calls fed in execution order, forward before backward) with each frame
        named by its visit; a backward call takes its forward call's frames (it runs in reverse order, and the
        dumper gives it the forward call's stack)."""
        if node.endswith(_BACKWARD):
            forward = self._forward.get(node[: -len(_BACKWARD)])
            if forward is not None:
                return forward
        if chain == self._prev:  # the frames of the call before: every frame is in the same visit
            ids = self._ids
            if node.endswith(_FORWARD):
                self._forward[node[: -len(_FORWARD)]] = ids
            return ids
        ids: list[str] = []
        for d, frame in enumerate(chain):
            parent = ids[d - 1] if d else ""
            if d < len(self._prev) and self._prev[d] == frame and (d == 0 or self._ids[d - 1] == parent):
                ids.append(self._ids[d])  # still in the same visit
                continue
            n = self._count[(parent, frame)] = self._count.get((parent, frame), 0) + 1
            ids.append(frame if n == 1 else f"{frame} #{n}")
        self._prev, self._ids = list(chain), ids
        if node.endswith(_FORWARD):
            self._forward[node[: -len(_FORWARD)]] = ids
        return ids


def _forward_first(nodes: Mapping[str, list[Any]]) -> list[tuple[str, list[Any]]]:
    """The calls in execution order, every backward call after the forward ones (see :class:`_Visits`)."""
    return sorted(nodes.items(), key=lambda item: (item[0].endswith(_BACKWARD), item[1][0]))


def assemble(parts: Sequence[tuple[str, NodeStats | None]], hierarchy: Any
             ) -> tuple[TreeNode, str, list[str], int, bool] | None:
    """Every result's calls placed under their ancestors, each module's stats summed over its subtree:
    ``(root, metric, hierarchy sources, calls counted per op, whether a source named modules rather than code
    frames)``; ``None`` when no result has stats."""
    root = TreeNode("", "r", None)
    metric = ""
    sources: list[str] = []
    overflow_calls = 0
    named_modules = False
    for label, stats in parts:
        if stats is None:
            continue
        metric = metric or stats.metric
        side = hierarchy.target(label)
        visits = _Visits()
        # the module a chain ends at, once its chain was walked (every node on it is then a module: walking it
        # again finds the same nodes and changes none); consecutive calls mostly share their chain
        ends: dict[tuple[str, ...], TreeNode] = {}
        seen_spec = None
        ancestors, number, known_end = side.ancestors, visits.number, ends.get
        chain_before: list[str] | None = None  # the chain of the call before, and the module it ends at
        parent = root
        # this plugin's stack.json the only source: a backward call whose forward call was numbered takes its frames
        # (as number() gives them; the source finds the forward twin's frames: the same source) without a lookup
        frames_only = len(side.lookups) == 1 and (side.lookups[0][0].plugin, side.lookups[0][0].name) == _STACK_JSON
        for node, entry in _forward_first(stats.nodes):
            twin = visits.of_forward(node) if frames_only else None
            if twin is not None:
                chain = twin
            else:
                chain, spec = ancestors(node)
                if spec is not None:
                    if spec is not seen_spec:
                        seen_spec = spec
                        if (spec.source or spec.name) not in sources:
                            sources.append(spec.source or spec.name)
                    if spec.modules:
                        named_modules = True
                    else:
                        chain = number(chain, node)  # the same list as the call before's while in the same visit
            if chain is not chain_before:
                chain_before = chain
                key = tuple(chain)
                parent = known_end(key)
                if parent is None:
                    parent = root
                    for ancestor in chain:
                        parent = _child(parent, ancestor, "m")
                    ends[key] = parent
            children = parent.children
            call = children.get(node)
            if call is None:  # a call seen first (as most are): its stats are its entry's
                children[node] = TreeNode(node, "c", parent,
                                          list(entry) if entry[4] > -math.inf else [*entry[:4], -math.inf, "", ""])
            else:
                merge_stats(call.stats, entry)
        for op, entry in stats.overflow.items():
            agg = _child(root, f"{op} (further calls)", "a")
            merge_stats(agg.stats, entry)
            agg.folded += entry[1] + entry[2] + entry[3]
            overflow_calls += 1
    if not root.children:
        return None
    _sum(root)
    return root, metric, sources, overflow_calls, named_modules


def build_tree(parts: Sequence[tuple[str, NodeStats | None]], hierarchy: Any, summary: Mapping[str, Any],
               spread: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any] | None:
    """The page's ``tree``: every result's calls under their modules (results of one model merged).

    ``parts``: (label, stats) per result; ``hierarchy``: the run's
    :class:`~msprobe_core.default_plugins.summary.hierarchy.RunHierarchy`; ``summary``: its first divergences (with their
    ``path``); ``spread``: the ``-da`` entries (:func:`~msprobe_core.default_plugins.report.explain.divergence_spread`).
    ``None`` when no result has stats.
    """
    assembled = assemble(parts, hierarchy)
    if assembled is None:
        return None
    root, metric, sources, overflow_calls, named_modules = assembled
    notes = []
    if sources and not named_modules:
        notes.append(FRAMES_NOTE)
    if overflow_calls:
        notes.append(f"calls past the first {MAX_NODES:,} of a result are counted per op ({overflow_calls} ops)")
    folded = fold(root, TREE_NODES)
    if folded:
        notes.append(folded)
    path_nodes = _mark(root, summary, spread)
    return _flatten(root, metric, sources, notes, path_nodes)


def find_call(root: TreeNode, node: str) -> list[TreeNode]:
    """The tree nodes from the outermost down to the call ``node`` (empty when the tree has no such call)."""
    stack = [root]
    while stack:
        x = stack.pop()
        if x.name == node and x.kind == "c":
            out = []
            while x is not None and x is not root:
                out.append(x)
                x = x.parent
            return out[::-1]
        stack.extend(x.children.values())
    return []


def _find(root: TreeNode, path: Sequence[str]) -> list[TreeNode]:
    """The tree nodes along ``path`` (as deep as the tree goes: a folded call ends at its module); a call the tree
    holds is found wherever it is (its frames may carry a visit number the path has not: :class:`_Visits`)."""
    if path:
        found = find_call(root, path[-1])
        if found:
            return found
    out, x = [], root
    for name in path:
        nxt = x.children.get(name)
        if nxt is None:
            break
        out.append(nxt)
        x = nxt
    return out


def _mark(root: TreeNode, summary: Mapping[str, Any], spread: Sequence[Mapping[str, Any]]) -> list[TreeNode]:
    fd = summary.get("first_divergence") or {}
    path_nodes = _find(root, fd.get("path") or [fd.get("node", "")]) if fd else []
    if path_nodes:
        path_nodes[-1].marks.append({"kind": "first", "rank": str(fd.get("rank") or "")})
    for d in summary.get("first_divergence_by_rank") or ():
        hit = _find(root, d.get("path") or [d.get("node", "")])
        if hit and not (d is fd or (d.get("rank") == fd.get("rank") and d.get("node") == fd.get("node"))):
            hit[-1].marks.append({"kind": "rank", "rank": str(d.get("rank") or "")})
    by_name: dict[str, list[TreeNode]] = {}
    for sp in spread:
        via = sp.get("via")
        if sp.get("role") == "propagated" and via:
            if not by_name:
                stack = [root]
                while stack:
                    x = stack.pop()
                    by_name.setdefault(x.name, []).append(x)
                    stack.extend(x.children.values())
            for x in by_name.get(str(via), [])[:1]:
                x.marks.append({"kind": "via", "rank": str(sp.get("rank") or "")})
    return path_nodes


def _flatten(root: TreeNode, metric: str, sources: list[str], notes: list[str],
             path_nodes: list[TreeNode]) -> dict[str, Any]:
    """Preorder arrays: ``n`` names, ``k`` kinds (``m`` module, ``c`` call, ``a`` aggregate), ``d`` depths,
    ``e`` the index after each subtree, ``c`` counts ``[pass, warning, error]``, ``w``/``wr`` worst value
    and row, ``f`` folded calls; ``path`` the first divergence's path, ``marks`` the marked nodes."""
    out: dict[str, list[Any]] = {"n": [], "k": [], "d": [], "e": [], "c": [], "w": [], "wr": [], "f": []}
    index: dict[int, int] = {}
    marks: list[dict[str, Any]] = []
    alias: dict[str, int] = {}  # folded node -> the tree node it is shown in (not on the page)
    stack: list[tuple[TreeNode, int, bool]] = [
        (c, 1, False) for c in reversed(_ordered(root))
    ]
    while stack:
        x, depth, done = stack.pop()
        if done:
            out["e"][index[id(x)]] = len(out["n"])
            continue
        k = index[id(x)] = len(out["n"])
        s = x.stats
        out["n"].append(x.name)
        out["k"].append(x.kind)
        out["d"].append(depth)
        out["e"].append(0)
        out["c"].append([s[1], s[2], s[3]])
        out["w"].append(s[6])
        out["wr"].append(s[5])
        out["f"].append(x.folded)
        marks.extend({"t": k, **m} for m in x.marks)
        for name in x.absorbed:
            alias.setdefault(name, k)
        stack.append((x, depth, True))
        stack.extend((c, depth + 1, False) for c in reversed(_ordered(x)))
    return {**out, "metric": metric, "sources": sources, "notes": notes,
            "path": [index[id(x)] for x in path_nodes], "marks": marks, ALIAS_KEY: alias}


def _ordered(x: TreeNode) -> list[TreeNode]:
    """Children in execution order (their first row)."""
    return sorted(x.children.values(), key=lambda c: c.stats[0])


def row_tree_index(tree: Mapping[str, Any], nodes: Sequence[str]) -> list[int]:
    """For each of the page's call nodes, the tree node its rows belong to (its call, else the module it is
    folded into, else -1), so that a click on a tree node filters the table to that node's subtree."""
    index = {name: k for k, name in enumerate(tree["n"]) if tree["k"][k] != "a"}
    alias = tree.get(ALIAS_KEY) or {}
    return [index[n] if n in index else alias.get(n, -1) for n in nodes]
