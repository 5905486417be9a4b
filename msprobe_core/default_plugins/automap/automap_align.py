"""Pairing the forward calls of two dumps by structure (``--auto-map``), from their signatures alone.

1. **Leaves** (calls with no call inside: leaf modules at L0, API calls at mix and L1) are aligned in forward
   order. *Anchors* are the full signatures that occur exactly once on each side, kept where their positions
   increase together; between two anchors an order-preserving alignment with insertions and deletions
   (:func:`msprobe_core.default_plugins.fuzzy.seqalign.align`) runs on the full signature, then in what is left on
   shapes without dtypes, then on shapes without the op name.
2. **1→N**: before aligning, a run of 2–8 consecutive leaves on one side whose signatures, put side by side
   (same first input, outputs and parameters concatenated on their split dimension), are the signature of one
   leaf the other side has and this side has not (a fused ``query_key_value`` against ``q``, ``k``, ``v``) is
   collapsed into one unit. Aligned with that leaf it becomes a *relation*, reported, never a pair.
3. **Modules** (calls with calls inside) are paired from their leaves (:func:`pair_modules`): the lowest
   golden module holding the partners of a target module's leaves, or a wrapper around it holding the same
   calls, when the input/output shapes agree and half of both sides' calls pair. A module whose leaves spread
   over several golden modules (an extra container) stays unpaired. Equal candidates break their tie on the
   name (the longest common tail of the module paths), never otherwise.
4. **What modules own** (independent implementations call other ops inside the same modules and pass inputs
   by keyword or positionally): modules owning parameters still unpaired are aligned on their parameter shapes
   (:func:`pair_by_parameters`), then containers still unpaired pair with the golden module whose parameter
   owners are exactly their owners' partners (:func:`pair_containers_by_owned`).
5. **Inside every matched parent** the children left between paired siblings are aligned on their own
   signatures (:func:`pair_within_parents`), where the pairs already made inside the two stay inside them.

A root module pairs only with a root, so an extra container is never the other side's whole model.

No statistic takes part in the forward pairing: values cannot move a pair, so a wrong weight stays on the row where it is.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from msprobe_core.default_plugins.fuzzy import seqalign

from .automap_calls import Call, CallTree, folded_shape

#: the longest run of split leaves one fused leaf may stand for
MAX_FUSED = 8
#: confidence of a leaf pair by how it was found
CONF_ANCHOR, CONF_LEVEL = 1.0, {1: 0.95, 2: 0.8, 3: 0.6, 4: 0.5}
#: the alignment levels, finest first (:meth:`msprobe_core.match.automap_calls.Call.token`)
LEVELS = (1, 2, 3, 4)


@dataclass
class Relation:
    """A 1→N structural relation: one call of one side stands for several of the other."""

    target: list[int]
    golden: list[int]


@dataclass
class Pairing:
    """What the forward pass pairs: target call → (golden call, confidence, how), relations, unpaired reasons."""

    pairs: dict[int, tuple[int, float, str]] = field(default_factory=dict)
    relations: list[Relation] = field(default_factory=list)
    unpaired: dict[int, str] = field(default_factory=dict)
    golden_unpaired: dict[int, str] = field(default_factory=dict)


@dataclass
class _Unit:
    """One element of an aligned leaf sequence: a leaf, or a run of leaves collapsed as a fused candidate."""

    leaves: tuple[int, ...]
    tokens: tuple[Hashable, ...]


def _concat_shape(shapes: Sequence[str | None], dim: int) -> str | None:
    """Shapes ``[a, b]`` joined on ``dim`` (sizes added there, equal elsewhere), ``None`` when they do not join."""
    parsed = []
    for s in shapes:
        if not s or not s.startswith("["):
            return None
        try:
            parsed.append([int(x) for x in s.strip("[]").split(",") if x.strip()])
        except ValueError:
            return None
    if not parsed or not parsed[0] or any(len(p) != len(parsed[0]) for p in parsed):
        return None
    d = dim % len(parsed[0])
    if any(p[:d] + p[d + 1:] != parsed[0][:d] + parsed[0][d + 1:] for p in parsed):
        return None
    joined = list(parsed[0])
    joined[d] = sum(p[d] for p in parsed)
    return "[" + ", ".join(map(str, joined)) + "]"


def fused_tokens(calls: Sequence[Call]) -> list[Hashable]:
    """The level-1 tokens one call doing the work of ``calls`` side by side may have (weights stored
    ``[out, in]`` join on their first dimension, ``[in, out]`` ones, as a GPT-2 ``Conv1D``'s, on their last)."""
    first = calls[0]
    if any(c.is_module != first.is_module or c.op != first.op or c.inputs[:1] != first.inputs[:1]
           or len(c.inputs) != len(first.inputs) or len(c.outputs) != len(first.outputs)
           or len(c.params) != len(first.params) for c in calls):
        return []
    outs = []
    for k in range(len(first.outputs)):
        shape = _concat_shape([c.outputs[k][0] for c in calls], -1)
        if shape is None:
            return []
        outs.append((shape, first.outputs[k][1]))
    out: list[Hashable] = []
    for dim in (0, -1):
        ins = list(first.inputs[:1])
        joined = True
        for k in range(1, len(first.inputs)):  # weights passed as inputs (an API linear)
            parts = [c.inputs[k][0] for c in calls]
            if all(not (s or "").startswith("[") and s == parts[0] for s in parts):
                ins.append(first.inputs[k])  # the same non-tensor argument on every part (``bias=None``)
                continue
            shape = _concat_shape(parts, dim if "," in (first.inputs[k][0] or "") else 0)
            joined = joined and shape is not None
            ins.append((shape, first.inputs[k][1]))
        params = [_concat_shape([c.params[k] for c in calls], dim if "," in (first.params[k] or "") else 0)
                  for k in range(len(first.params))]
        if joined and all(p is not None for p in params):
            out.append((first.is_module, first.op, tuple(ins), tuple(outs), tuple(params)))
    return out


def _units(tree: CallTree, other_only: set[Hashable]) -> list[_Unit]:
    """The leaves of ``tree`` as units, runs that fuse into a token only the other side has collapsed."""
    leaves = tree.leaves
    calls = tree.calls
    units: list[_Unit] = []
    i = 0
    while i < len(leaves):
        taken = 0
        # the parts of a fused call may have calls with no numeric effect between them (``q_proj(x).view(…)
        # .transpose(…)``, then ``k_proj``…): the run skips them, and they follow it as units of their own
        span = [] if calls[leaves[i]].inert else _span_skipping_inert(calls, leaves, i)
        for n in range(min(MAX_FUSED, len(span)), 1, -1):
            run = [calls[leaves[k]] for k in span[:n]]
            token = next((t for t in fused_tokens(run) if t in other_only), None)
            if token is not None:
                units.append(_Unit(tuple(leaves[k] for k in span[:n]), tuple(_loosen(token, v) for v in LEVELS)))
                skipped = [leaves[k] for k in range(i, span[n - 1]) if k not in span[:n]]
                for j in skipped:
                    c = calls[j]
                    units.append(_Unit((j,), tuple(c.token(v) for v in LEVELS)))
                taken = span[n - 1] + 1 - i
                break
        if not taken:
            c = calls[leaves[i]]
            units.append(_Unit((c.index,), tuple(c.token(v) for v in LEVELS)))
            taken = 1
        i += taken
    return units


def _span_skipping_inert(calls: list[Call], leaves: list[int], start: int) -> list[int]:
    """Positions in ``leaves`` from ``start`` of up to :data:`MAX_FUSED` calls with a numeric effect, the calls
    without one between them skipped (they are not part of a fused run)."""
    out: list[int] = []
    k = start
    while k < len(leaves) and len(out) < MAX_FUSED:
        if not calls[leaves[k]].inert:
            out.append(k)
        k += 1
    return out


def _loosen(token: Hashable, level: int) -> Hashable:
    if level == 1:
        return token
    is_module, op, ins, outs, params = token  # type: ignore[misc]
    shapes_in, shapes_out = tuple(s for s, _ in ins), tuple(s for s, _ in outs)
    if level == 4:
        return (is_module, tuple(sorted(map(folded_shape, shapes_in))), tuple(map(folded_shape, shapes_out)),
                params, False)
    if level == 2:
        return (is_module, op, shapes_in, shapes_out, params)
    return (is_module, shapes_in, shapes_out, params, False)  # a fused run is never without numeric effect


def _anchors(a: list[Hashable], b: list[Hashable]) -> list[tuple[int, int]]:
    """Positions of the tokens seen once on each side, where they increase together (forward order)."""
    count: dict[Hashable, list[int]] = {}
    for i, t in enumerate(a):
        count.setdefault(t, [0, 0, i, -1])[0] += 1
    for j, t in enumerate(b):
        entry = count.get(t)
        if entry is not None:
            entry[1] += 1
            entry[3] = j
    cands = sorted((e[2], e[3]) for e in count.values() if e[0] == 1 and e[1] == 1)
    return seqalign.longest_increasing(cands)


def align_units(t_units: list[_Unit], g_units: list[_Unit]) -> dict[int, tuple[int, float, str]]:
    """Target unit → (golden unit, confidence, how): anchors first, then three passes inside the gaps."""
    out: dict[int, tuple[int, float, str]] = {}
    anchors = _anchors([u.tokens[0] for u in t_units], [u.tokens[0] for u in g_units])
    for i, j in anchors:
        out[i] = (j, CONF_ANCHOR, "anchor: signature unique on both sides")
    gaps: list[tuple[int, int, int, int]] = []
    pa = pb = 0
    for i, j in anchors + [(len(t_units), len(g_units))]:
        if i > pa and j > pb:
            gaps.append((pa, i, pb, j))
        pa, pb = i + 1, j + 1
    how = {1: "aligned on the signature", 2: "aligned on shapes (dtypes differ)", 3: "aligned on shapes (op differs)",
           4: "aligned on shapes up to a reshape (op differs)"}
    found = seqalign.align_in_gaps(gaps, LEVELS, lambda k, level: t_units[k].tokens[level - 1],
                                   lambda k, level: g_units[k].tokens[level - 1])
    for i, (j, level) in found.items():
        out[i] = (j, CONF_LEVEL[level], how[level])
    return out


def pair_leaves(target: CallTree, golden: CallTree, result: Pairing) -> None:
    """Leaf pairs and 1→N relations into ``result``."""
    t_tokens = {target.calls[i].token(1) for i in target.leaves}
    g_tokens = {golden.calls[j].token(1) for j in golden.leaves}
    t_units = _units(target, g_tokens - t_tokens)
    g_units = _units(golden, t_tokens - g_tokens)
    for ui, (uj, conf, how) in align_units(t_units, g_units).items():
        tu, gu = t_units[ui], g_units[uj]
        if len(tu.leaves) == 1 and len(gu.leaves) == 1:
            result.pairs[tu.leaves[0]] = (gu.leaves[0], conf, how)
        else:
            result.relations.append(Relation(list(tu.leaves), list(gu.leaves)))


def _name_affinity(a: str, b: str) -> int:
    """How many trailing parts two module paths share (``layers.0.mlp`` vs ``transformer.layers.0.mlp``: 3).

    Found on the common tail of the two strings (a binary search of slices), not by splitting whole paths: a
    path is as long as the module is deep.
    """
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid:] == b[len(b) - mid:]:
            lo = mid
        else:
            hi = mid - 1
    tail = a[len(a) - lo:]
    whole_a = lo == len(a) or a[len(a) - lo - 1] == "."
    whole_b = lo == len(b) or b[len(b) - lo - 1] == "."
    return tail.count(".") + (1 if whole_a and whole_b else 0)


#: in a chain of more wrappers than this on either side of a module's place, a target module is proposed only
#: the golden wrappers this near its own place in its chain (keeps a deep chain of wrappers linear)
MAX_WRAPPER_REACH = 8


@dataclass
class _Held:
    """What the leaves under one target call pair with (summed up the tree, children before parents)."""

    paired: int = 0  # leaves paired one to one
    related: int = 0  # leaves in a 1→N relation
    relations: frozenset[int] = frozenset()  # those relations (indices into Pairing.relations)
    lowest: int | None = -1  # the lowest golden call holding every partner; -1: no partner yet; None: none holds them


def _held_by_target_calls(target: CallTree, golden: CallTree, result: Pairing) -> list[_Held]:
    """For every target call, what its leaves pair with, in one pass up the tree (each call from its children)."""
    relation_of: dict[int, int] = {}
    for r, rel in enumerate(result.relations):
        for t in rel.target:
            relation_of[t] = r
    relation_lowest: dict[int, int | None] = {}
    held = [_Held() for _ in target.calls]
    for i in target.bottom_up():
        kids = target.calls[i].children
        here = held[i]
        if not kids:
            if i in result.pairs:
                here.paired, here.lowest = 1, result.pairs[i][0]
            elif i in relation_of:
                r = relation_of[i]
                if r not in relation_lowest:
                    gs = result.relations[r].golden
                    low: int | None = gs[0]
                    for g in gs[1:]:
                        low = golden.lowest_common(low, g)
                    relation_lowest[r] = low
                here.related, here.relations, here.lowest = 1, frozenset((r,)), relation_lowest[r]
            continue
        relations: frozenset[int] = frozenset()
        for k in kids:
            child = held[k]
            if child.lowest == -1:
                continue
            here.paired += child.paired
            here.related += child.related
            relations = relations | child.relations if relations else child.relations
            here.lowest = child.lowest if here.lowest == -1 else golden.lowest_common(here.lowest, child.lowest)
        here.relations = relations
    return held


def _candidates(chain: list[int], golden: CallTree, rank_t: int) -> list[int]:
    """The golden calls of ``chain`` (nearest first) a target module of wrapper rank ``rank_t`` is proposed:
    all of them, or in a long chain the ``2 * MAX_WRAPPER_REACH + 1`` nearest its own place."""
    width = 2 * MAX_WRAPPER_REACH + 1
    if len(chain) <= width:
        return chain
    second = golden.wrapper_rank(chain[1])  # from the second call of a chain on, the ranks rise by one a step
    at = rank_t - second + 1 if rank_t >= second else 0
    start = min(max(at - MAX_WRAPPER_REACH, 0), len(chain) - width)
    return chain[start:start + width]


def pair_modules(target: CallTree, golden: CallTree, result: Pairing) -> None:
    """Module pairs from the leaf pairs and relations already in ``result``.

    Every target module proposes the golden modules holding the partners of its leaves: the lowest one and
    the wrappers around it that hold exactly the same calls, with its input/output shapes. The proposals are
    granted best first (the share of both sides' calls that pair, then the name, then the same place in a
    chain of wrappers), each golden module once; a module that loses keeps the reason.

    What a module's leaves pair with is summed up the tree once (:func:`_held_by_target_calls`), and every
    golden module of a chain holds all the partners, so that a proposal costs the same at any depth.
    """
    taken = {g for g, _, _ in result.pairs.values()}
    held = _held_by_target_calls(target, golden, result)
    relation_sizes = [len(set(rel.golden)) for rel in result.relations]
    paths: dict[tuple[int, int], str] = {}
    covering: dict[frozenset[int], list[int]] = {}

    def path(side: int, tree: CallTree, index: int) -> str:
        key = (side, index)
        if key not in paths:
            paths[key] = _module_path(tree.calls[index].prefix)
        return paths[key]

    edges: list[tuple[tuple[float, int, int], int, int, float]] = []
    for t in (c for c in target.calls if c.children):
        mine = held[t.index]
        if mine.lowest == -1:
            result.unpaired[t.index] = "no call inside it pairs with a golden call"
            continue
        if not mine.paired:  # a module of fused calls only: named 1→N with the golden modules they stand for
            if mine.relations not in covering:  # the same for every module of a chain around them
                partners = {g for r in mine.relations for g in result.relations[r].golden}
                covering[mine.relations] = _covering_modules(golden, partners)
            result.relations.append(Relation([t.index], list(covering[mine.relations])))
            continue
        lowest = mine.lowest
        if lowest is None:
            result.unpaired[t.index] = "container with no counterpart: the calls inside it pair across golden modules"
            continue
        # every module of the chain holds all the partners: the share of paired calls is the same for each
        n_partners = mine.paired + sum(relation_sizes[r] for r in mine.relations)
        dice = (mine.paired + mine.related + n_partners) / (target.leaf_count(t.index) + golden.leaf_count(lowest))
        rank_t = target.wrapper_rank(t.index)
        proposed = len(edges)
        if dice >= 0.5:
            for g in _candidates(golden.wrapper_chain(lowest), golden, rank_t):
                if g in taken or not golden.calls[g].children or golden.calls[g].io != t.io \
                        or not _root_compatible(target, golden, t.index, g):
                    continue
                key = (dice, _name_affinity(path(0, target, t.index), path(1, golden, g)),
                       -abs(rank_t - golden.wrapper_rank(g)))
                edges.append((key, t.index, g, dice))
        if len(edges) == proposed:
            result.unpaired[t.index] = "no golden module around its partners has its input/output shapes"
    edges.sort(key=lambda e: (e[0], -e[1]), reverse=True)
    for _key, t, g, dice in edges:
        if t in result.pairs or g in taken:
            continue
        result.pairs[t] = (g, round(dice, 2), "module: the calls inside it pair")
        taken.add(g)
    for _key, t, g, _dice in edges:
        if t not in result.pairs:
            result.unpaired[t] = (f"a wrapper: its golden counterpart {golden.calls[g].key} is paired with another "
                                  "target module holding the same calls")


def _module_path(prefix: str) -> str:
    """A module's path without its class (``Module.a.b.Cls`` → ``a.b``); an API's name as it is."""
    if prefix.count(".") < 2:
        return prefix
    return prefix[prefix.index(".") + 1:prefix.rindex(".")]


def _covering_modules(tree: CallTree, leaves: set[int]) -> list[int]:
    """The highest calls whose leaves all lie in ``leaves`` (the modules a relation stands for)."""
    out: list[int] = []
    for leaf in sorted(leaves):
        top = leaf
        anc = tree.calls[leaf].parent
        while anc is not None:
            n = tree.leaf_count(anc)
            # a wrapper holds the leaves of the call it wraps: no need to gather them again (deep chains)
            if n == tree.leaf_count(top) or (n <= len(leaves) and set(tree.descendants_leaves(anc)) <= leaves):
                top = anc
                anc = tree.calls[anc].parent
            else:
                break
        if top not in out:
            out.append(top)
    return out


def is_root(tree: CallTree, index: int) -> bool:
    """Whether call ``index`` is the model's root: a top-level module holding every other module call."""
    return index in tree.roots()


def _root_compatible(target: CallTree, golden: CallTree, t: int, g: int) -> bool:
    """A root pairs only with a root: an extra container of one side is never the other side's whole model."""
    return is_root(target, t) == is_root(golden, g)


def _paired_ancestor(tree: CallTree, index: int, pairs: dict[int, tuple[int, float, str]]) -> int | None:
    """The nearest parent of ``index`` that is paired (walked up one call at a time, to stop early)."""
    a = tree.calls[index].parent
    while a is not None and a not in pairs:
        a = tree.calls[a].parent
    return a
