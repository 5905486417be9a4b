"""The calls of a result, numbered in execution order as the rows stream by (the report's sampler keeps
each call's worst row).

A call is a run of consecutive rows of one node (:func:`~msprobe_core.default_plugins.summary.views.node_of`); deciding
the node of every row is the cost, so rows whose name is their call's name plus a leaf known to stay in
the call (``input.0``) are taken without asking."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from msprobe_core.plugin import dump_json

from .views import node_of

if TYPE_CHECKING:
    from msprobe_core.plugin import RowNames

_LEAVES = ("input.", "output.", "parameters.")


class CallNumbers:
    """Numbers the calls of a result (runs of consecutive rows of one node, :func:`node_of`) in execution order.

    ``grammar``: the row-name grammar of the result's mode, when its rows are named by their files."""

    def __init__(self, grammar: RowNames | None = None) -> None:
        self.grammar = grammar
        self.node: str | None = None
        self.count = 0
        #: leaves (``input.0``) after which a row surely belongs to a node ending in forward/backward
        #: (its call number), and to one ending in parameters_grad (see :func:`_sure_leaf`)
        self._leaves: tuple[set[str], set[str]] = (set(), set())

    def feed(self, names: Sequence[str]) -> tuple[np.ndarray, list[tuple[int, int, str]]]:
        """Each row's call number, and (row, call, node) where a call starts in these rows."""
        # dump names: the calls found in C where every name is a usual one (see call_node), else row by row here
        runs = _call_runs(names if names.__class__ is list else list(names), self.node) if (
            self.grammar is None and _call_runs is not None) else None
        first = self.count - 1  # the call the rows before ended in
        starts = [(i, first + k, nd) for k, (i, nd) in enumerate(runs, start=1)] if runs is not None else self._cut(names)
        if starts:
            self.node, self.count = starts[-1][2], starts[-1][1] + 1
        bounds = [b[0] for b in starts]
        calls = [b[1] for b in starts]
        if not bounds or bounds[0] != 0:
            bounds.insert(0, 0)
            calls.insert(0, first)
        return np.repeat(np.array(calls, dtype=np.int64), np.diff(np.r_[bounds, len(names)])), starts

    def _cut(self, names: Sequence[str]) -> list[tuple[int, int, str]]:
        """(row, call, node) where a call starts, node by node in Python (names the C scanner does not take)."""
        node, o = self.node, self.count - 1
        starts: list[tuple[int, int, str]] = []
        dot, k, sure = self._sure(node) if node is not None else ("", 0, None)
        fast = self.grammar is None
        for i, name in enumerate(names):
            # the rows of one call share its name as a prefix; node_of is needed only where that may not decide
            if sure is not None and name.startswith(dot) and name[k:] in sure:
                continue
            nd = (fast and call_node(name)) or node_of(name, self.grammar)[0]
            if nd == node:
                if sure is not None and name.startswith(dot) and _sure_leaf(name[k:], sure is self._leaves[1]):
                    sure.add(name[k:])
                continue
            node, o = nd, o + 1
            dot, k, sure = self._sure(nd)
            starts.append((i, o, nd))
        return starts

    def _sure(self, node: str) -> tuple[str, int, set[str] | None]:
        """(node + ".", its length, the leaves known to keep a row in ``node``: ``None`` when no leaf is sure)."""
        if self.grammar is not None:  # a file's call is what its grammar says: no leaf is sure
            return "", 0, None
        tokens = node.rsplit(".", 2)  # the last two tokens are all that decide
        last = tokens[-1]
        if last == "parameters_grad":
            return node + ".", len(node) + 1, self._leaves[1]
        if last in _DIRECTIONS or (last.isdigit() and len(tokens) > 1 and tokens[-2] in _DIRECTIONS):
            return node + ".", len(node) + 1, self._leaves[0]
        return "", 0, None


_DIRECTIONS = ("forward", "backward")
#: the C scanner's reading of call_node over a list of names (msprobe_core.plugin.dump_json): None where not built
_call_runs = getattr(dump_json.dump_scanner(), "call_runs", None)
_LEAF_TOKENS = ("input", "output", "parameters")


def call_node(name: str) -> str | None:
    """:func:`node_of` of a dump's row name (no grammar) where the name is the usual ``<call>.forward.<leaf>`` or
    ``<module>.forward.<n>.<leaf>`` (backward alike), by a few C-level string searches (most rows are taken without
    even this: see :meth:`CallNumbers.feed`); ``None`` for any other name (``node_of`` decides)."""
    at, end = name.rfind(".forward."), 8
    backward = name.rfind(".backward.")
    if backward > at:
        at, end = backward, 9
    if at < 0:
        return None
    leaf = name[at + end + 1:]
    if "forward" in leaf or "backward" in leaf or "parameters_grad" in leaf:  # a later token may decide: node_of
        return None
    first, _, rest = leaf.partition(".")
    if first.isdigit() and rest.partition(".")[0] in _LEAF_TOKENS:  # a module's call number is part of its node
        return name[:at + end + 1 + len(first)]
    return name[:at + end]


def _sure_leaf(leaf: str, after_grad: bool) -> bool:
    """Whether ``node.leaf`` belongs to ``node`` for every ``node`` ending in forward/backward (or one and a call
    number; ``after_grad``: in parameters_grad), as :func:`node_of` decides: ``leaf`` holds no direction token,
    and after forward/backward it starts with input/output/parameters (a call number would be taken in)."""
    if any(t in leaf for t in ("forward", "backward", "parameters_grad")):
        return False
    return after_grad or leaf.startswith(_LEAVES)
