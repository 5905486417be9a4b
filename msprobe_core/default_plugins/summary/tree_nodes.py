"""The model tree's nodes (:class:`TreeNode`, their stats merged by :func:`merge_stats`), and a big tree folded to the
page's budget of nodes: the innermost level into its parents, level after level, and the calls of a flat dump grouped
by op (:func:`fold`, for :func:`.tree.build_tree`)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

#: a call number inside a name (``.3`` of ``Torch.add.3.forward``)
CALL_NUMBER = re.compile(r"\.\d+(?=\.|$)")


#: the children of a call (a leaf: read-only, shared); a call that turns out to enclose others gets a dict of its own
NO_CHILDREN: Mapping[str, Any] = MappingProxyType({})


class TreeNode:
    """A node of the model tree: a module or a call, its children by name and its stats (see :class:`.tree.NodeStats`).

    A tree has tens of thousands of calls: a call's children are :data:`NO_CHILDREN` (``stats`` given, not made), and
    ``marks`` and ``absorbed`` are made when first read."""

    __slots__ = ("name", "kind", "children", "stats", "parent", "_marks", "folded", "_absorbed")

    def __init__(self, name: str, kind: str, parent: TreeNode | None, stats: list[Any] | None = None) -> None:
        self.name, self.kind, self.parent = name, kind, parent
        self.children: Any = NO_CHILDREN if kind == "c" else {}
        self.stats: list[Any] = [math.inf, 0, 0, 0, -math.inf, "", ""] if stats is None else stats
        self._marks: list[dict[str, str]] | None = None
        self.folded = 0  # calls folded into this node
        self._absorbed: list[str] | None = None

    @property
    def marks(self) -> list[dict[str, str]]:
        """The marks of this node (first divergence, a rank's, the -da spread's way)."""
        if self._marks is None:
            self._marks = []
        return self._marks

    @property
    def absorbed(self) -> list[str]:
        """The names of the nodes folded into this one."""
        if self._absorbed is None:
            self._absorbed = []
        return self._absorbed

    def enclose(self) -> None:
        """Make this node a module (a call that encloses others is a module call), with children of its own."""
        self.kind = "m"
        if self.children is NO_CHILDREN:
            self.children = {}


def merge_stats(into: list[Any], entry: Sequence[Any]) -> None:
    """Add ``entry``'s counts to ``into``'s (first position, rows, warnings, errors) and keep the worse worst row."""
    into[0] = min(into[0], entry[0])
    for k in (1, 2, 3):
        into[k] += entry[k]
    if entry[4] > into[4]:
        into[4], into[5], into[6] = entry[4], entry[5], entry[6]


def count(root: TreeNode) -> int:
    n, stack = 0, [root]
    while stack:
        x = stack.pop()
        n += 1
        stack.extend(x.children.values())
    return n


def fold(root: TreeNode, budget: int) -> str:
    """Fold the innermost level (nodes whose children are all leaves) into their parents, level after level,
    until the tree has at most ``budget`` nodes; a flat rest is grouped by op."""
    total = count(root)
    if total <= budget:
        return ""
    folded_calls = modules = 0
    while total > budget:
        # the nodes whose children are all leaves: fold the leaves into them, deepest first
        leaves_parents = []
        stack = [(root, 0)]
        while stack:
            x, depth = stack.pop()
            if x.children and all(not c.children for c in x.children.values()) and x is not root:
                leaves_parents.append((depth, x))
            stack.extend((c, depth + 1) for c in x.children.values())
        if not leaves_parents:  # a flat dump: group the top-level calls by op
            _group_by_op(root)
            total = count(root)
            if total <= budget:
                break
            return f"{folded_calls:,} calls are shown as their modules' totals; top-level calls grouped by op"
        leaves_parents.sort(key=lambda t: -t[0])
        for _, x in leaves_parents:
            n = len(x.children)
            for c in x.children.values():
                x.folded += 1 + c.folded
                x.absorbed.append(c.name)
                x.absorbed.extend(c.absorbed)
            folded_calls += n
            modules += 1
            x.children = {}
            total -= n  # a whole level at once: every module of that depth is shown the same way
    return (f"{folded_calls:,} nodes are folded into {modules:,} modules (each shows its subtree's counts and "
            f"worst row) to keep the page under {budget:,} tree nodes")


def _group_by_op(root: TreeNode) -> None:
    groups: dict[str, TreeNode] = {}
    for name, child in list(root.children.items()):
        if child.children:
            continue
        op = CALL_NUMBER.sub("", name)
        g = groups.get(op)
        if g is None:
            g = groups[op] = TreeNode(f"{op} (calls)", "a", root)
        merge_stats(g.stats, child.stats)
        g.folded += 1
        g.absorbed.append(name)
        del root.children[name]
    for g in groups.values():
        root.children[g.name] = g
