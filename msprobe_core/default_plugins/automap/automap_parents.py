"""``--auto-map``: inside every matched parent, the children left between paired siblings aligned on their own
signatures (:func:`pair_within_parents`), the pairs already made inside two modules kept inside them."""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable

from msprobe_core.default_plugins.fuzzy import seqalign

from .automap_align import Pairing, _root_compatible
from .automap_calls import Call, CallTree

#: confidence of a pair found inside its matched parent, by token level (4: the op name alone, 5: the output
#: shapes alone, for one call against one in a gap between two pairs: an op the other framework spells otherwise)
CONF_CHILD = {1: 0.9, 2: 0.75, 3: 0.55, 4: 0.5, 5: 0.4}


def _children(tree: CallTree, parent: int | None) -> list[int]:
    if parent is None:
        return [c.index for c in tree.calls if c.parent is None]
    return tree.calls[parent].children


def pair_within_parents(target: CallTree, golden: CallTree, result: Pairing) -> None:
    """Top-down: inside every matched parent (and at the top), align the children left unpaired between
    their paired siblings, on their own signatures; what pairs there opens its own children in turn.

    This pairs a module whose inside differs (a hand-written norm against a fused kernel, an embedding
    by gather against one by lookup) when it sits where its counterpart sits, and never crosses a pair.
    """
    related_t = {t for rel in result.relations for t in rel.target}
    related_g = {g for rel in result.relations for g in rel.golden}
    taken = {g for g, _, _ in result.pairs.values()} | related_g
    reverse = {g: t for t, (g, _, _) in result.pairs.items()}
    queue: deque[tuple[int | None, int | None]] = deque([(None, None)])
    queue.extend((t, g) for t, (g, _, _) in sorted(result.pairs.items()) if target.calls[t].children)
    seen: set[tuple[int | None, int | None]] = set()
    while queue:
        tp, gp = queue.popleft()
        if (tp, gp) in seen:
            continue
        seen.add((tp, gp))
        t_kids, g_kids = _children(target, tp), _children(golden, gp)
        g_pos = {g: k for k, g in enumerate(g_kids)}
        anchors = [(i, g_pos[result.pairs[t][0]]) for i, t in enumerate(t_kids)
                   if t in result.pairs and result.pairs[t][0] in g_pos]
        anchors = seqalign.longest_increasing(sorted(anchors))
        pa = pb = 0
        for i, j in anchors + [(len(t_kids), len(g_kids))]:
            a = [t for t in t_kids[pa:i] if t not in result.pairs and t not in related_t]
            b = [g for g in g_kids[pb:j] if g not in taken]
            for t, g, level in _align_gap(target, golden, a, b):
                if not _root_compatible(target, golden, t, g) or \
                        not _inside_agrees(target, golden, t, g, result, reverse):
                    continue
                result.pairs[t] = (g, CONF_CHILD[level], "aligned inside its matched parent")
                reverse[g] = t
                taken.add(g)
                result.unpaired.pop(t, None)
                if target.calls[t].children and golden.calls[g].children:
                    queue.append((t, g))
            pa, pb = i + 1, j + 1


def _align_gap(target: CallTree, golden: CallTree, a: list[int], b: list[int]) -> list[tuple[int, int, int]]:
    """(target, golden, level) pairs of two unpaired runs of siblings: signatures, then loosened, then the op."""
    out: list[tuple[int, int, int]] = []
    gaps = [(a, b)]
    for level in (1, 2, 3, 4, 5):
        next_gaps: list[tuple[list[int], list[int]]] = []
        for xa, xb in gaps:
            if not xa or not xb or (level == 5 and (len(xa), len(xb)) != (1, 1)):
                continue
            ta = [_child_token(target.calls[t], level) for t in xa]
            tb = [_child_token(golden.calls[g], level) for g in xb]
            pa = pb = 0
            for i, j in seqalign.align(ta, tb):
                out.append((xa[i], xb[j], level))
                next_gaps.append((xa[pa:i], xb[pb:j]))
                pa, pb = i + 1, j + 1
            next_gaps.append((xa[pa:], xb[pb:]))
        gaps = next_gaps
    return out


def _child_token(call: Call, level: int) -> Hashable:
    if level < 4:
        return call.token(level)
    if level == 4:
        return (call.is_module, call.op) if not call.is_module else (True, call.io)
    if call.is_module:
        return (True, tuple(s for s, _ in call.outputs))
    # an API call spelled otherwise still takes as many tensors: a residual ``add`` of two tensors is no
    # ``dropout`` of one that happens to sit between the same two pairs
    tensors_in = sum(1 for _, d in call.inputs if d and not d.startswith("<"))
    return (False, tensors_in, tuple(s for s, _ in call.outputs))


def _subtree(tree: CallTree, index: int) -> list[int]:
    """``index`` and every call under it."""
    out, stack = [], [index]
    while stack:
        i = stack.pop()
        out.append(i)
        stack.extend(tree.calls[i].children)
    return out


def _inside_agrees(target: CallTree, golden: CallTree, t: int, g: int, result: Pairing,
                   reverse: dict[int, int]) -> bool:
    """Whether the pairs already made inside two modules stay inside them: a call under ``t`` paired with one
    outside ``g`` (or the other way) means the two are not counterparts, whatever their shapes (an extra
    ``embedding`` container holding the token embedding against the golden model holding the embedding and
    every layer). ``reverse``: golden call → its target partner."""
    if not target.calls[t].children or not golden.calls[g].children:
        return True
    under_t, under_g = set(_subtree(target, t)), set(_subtree(golden, g))
    if any(i in result.pairs and result.pairs[i][0] not in under_g for i in under_t):
        return False
    return all(reverse[j] in under_t for j in under_g if j in reverse)
