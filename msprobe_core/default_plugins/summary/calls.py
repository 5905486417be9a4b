"""The calls of a result, numbered in execution order as the rows stream by (the report's sampler keeps
each call's worst row).

A call is a run of consecutive rows of one node (:func:`~msprobe_core.default_plugins.summary.views.node_of`); deciding
the node of every row is the cost, so rows whose name is their call's name plus a leaf known to stay in
the call (``input.0``) are taken without asking."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

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
        node, o = self.node, self.count - 1
        starts: list[tuple[int, int, str]] = []
        dot, k, sure = "", 0, None
        if node is not None:
            dot, k, sure = self._sure(node)
        for i, name in enumerate(names):
            # the rows of one call share its name as a prefix; node_of is needed only where that may not decide
            if sure is not None and name.startswith(dot) and name[k:] in sure:
                continue
            nd = node_of(name, self.grammar)[0]
            if nd == node:
                if sure is not None and name.startswith(dot) and _sure_leaf(name[k:], sure is self._leaves[1]):
                    sure.add(name[k:])
                continue
            node, o = nd, o + 1
            dot, k, sure = self._sure(nd)
            starts.append((i, o, nd))
        first = self.count - 1
        self.node, self.count = node, o + 1
        bounds = [b[0] for b in starts]
        calls = [b[1] for b in starts]
        if not bounds or bounds[0] != 0:
            bounds.insert(0, 0)
            calls.insert(0, first)
        return np.repeat(np.array(calls, dtype=np.int64), np.diff(np.r_[bounds, len(names)])), starts

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


def _sure_leaf(leaf: str, after_grad: bool) -> bool:
    """Whether ``node.leaf`` belongs to ``node`` for every ``node`` ending in forward/backward (or one and a call
    number; ``after_grad``: in parameters_grad), as :func:`node_of` decides: ``leaf`` holds no direction token,
    and after forward/backward it starts with input/output/parameters (a call number would be taken in)."""
    if any(t in leaf for t in ("forward", "backward", "parameters_grad")):
        return False
    return after_grad or leaf.startswith(_LEAVES)
