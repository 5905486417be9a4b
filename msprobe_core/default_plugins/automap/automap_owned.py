"""``--auto-map``'s passes for what modules own (independent implementations call other ops inside the same
modules and pass inputs by keyword or positionally), and the whole forward pairing in order
(:func:`pair_forward`); the structural passes are :mod:`msprobe_core.match.automap_align`'s."""

from __future__ import annotations

from collections.abc import Hashable

from msprobe_core.default_plugins.fuzzy import seqalign

from .automap_align import (
    Pairing,
    _paired_ancestor,
    _root_compatible,
    pair_leaves,
    pair_modules,
)
from .automap_calls import Call, CallTree
from .automap_parents import pair_within_parents

#: why a call with no numeric effect is left unpaired


INERT_REASON = "no numeric effect (a cast to its own dtype, a reshape, a shape query): not counted"


#: confidence of a module pair found by the parameters it owns, and of a container by the owners inside it
CONF_PARAMS, CONF_OWNED = 0.85, 0.8


def _owners(tree: CallTree) -> list[int]:
    """The module calls that own parameters (``parameters`` rows), in dump order."""
    return [c.index for c in tree.calls if c.is_module and c.params]


def _param_token(call: Call, level: int) -> Hashable:
    if level == 1:
        return (call.params, tuple(s for s, _ in call.outputs))
    if level == 2:
        return call.params
    return tuple(sorted(p or "" for p in call.params))


def pair_by_parameters(target: CallTree, golden: CallTree, result: Pairing) -> None:
    """Modules that own parameters, left unpaired by their calls, paired by what they own: the modules owning
    parameters of each side in forward order, aligned between the pairs already made on their parameter
    shapes (with their output shapes, then without, then in any order).

    This pairs a module whose inside one side does not record (a fused norm against six API calls) and a
    module whose inputs come by keyword on one side and positionally on the other. Values take no part: a
    wrong weight has the shape of the right one, and stays on the pair where it belongs.
    """
    related_t = {t for rel in result.relations for t in rel.target}
    taken = {g for g, _, _ in result.pairs.values()} | {g for rel in result.relations for g in rel.golden}
    t_own, g_own = _owners(target), _owners(golden)
    g_pos = {g: k for k, g in enumerate(g_own)}
    anchors = seqalign.longest_increasing(sorted((i, g_pos[result.pairs[t][0]]) for i, t in enumerate(t_own)
                               if t in result.pairs and result.pairs[t][0] in g_pos))
    gaps: list[tuple[int, int, int, int]] = []
    pa = pb = 0
    for i, j in anchors + [(len(t_own), len(g_own))]:
        if i > pa and j > pb:
            gaps.append((pa, i, pb, j))
        pa, pb = i + 1, j + 1

    def token_t(k: int, level: int) -> Hashable:
        t = t_own[k]
        return ("taken", "t", k) if t in result.pairs or t in related_t else _param_token(target.calls[t], level)

    def token_g(k: int, level: int) -> Hashable:
        g = g_own[k]
        return ("taken", "g", k) if g in taken else _param_token(golden.calls[g], level)

    for i, (j, _level) in seqalign.align_in_gaps(gaps, (1, 2, 3), token_t, token_g).items():
        t, g = t_own[i], g_own[j]
        if not _root_compatible(target, golden, t, g):
            continue
        result.pairs[t] = (g, CONF_PARAMS, "module: owns parameters of the same shapes")
        result.unpaired.pop(t, None)
        taken.add(g)


#: how many wrappers around the lowest candidate a container may climb to (bounds the work on deep chains)


MAX_WRAPPERS = 8


def _owners_below(tree: CallTree) -> list[int]:
    """How many modules owning parameters each call holds (itself included), in one walk."""
    count = [0] * len(tree.calls)
    for i in tree.bottom_up():
        call = tree.calls[i]
        count[i] = int(call.is_module and bool(call.params)) + sum(count[k] for k in call.children)
    return count


def pair_containers_by_owned(target: CallTree, golden: CallTree, result: Pairing) -> None:
    """Containers left unpaired, paired by the parameter owners inside them: a target container whose owners
    all pair, with the golden module (or a wrapper of it) whose owners are exactly their partners.

    The golden module must sit under the partner of the container's nearest paired parent (an extra container
    never climbs to another depth), may be the golden root only when the container is the target root, and
    must put out a tensor of a shape the container puts out. Its inputs may differ (keyword against positional
    arguments, cos/sin as one tuple or two tensors): its boundary rows pair by correspondence.

    One walk of each tree: the owners below every call are counted, and the lowest golden call holding the
    partners of a target call's owners is built from its children's (partners are one to one, so a golden
    module holds exactly those partners when it holds them all and as many owners)."""
    taken = {g for g, _, _ in result.pairs.values()} | {g for rel in result.relations for g in rel.golden}
    related_t = {t for rel in result.relations for t in rel.target}
    # a fused owner (1→N) stands for the golden owners of its relation: q, k and v for one qkv
    fused_partners: dict[int, list[int]] = {}
    for rel in result.relations:
        owners = [g for g in rel.golden if golden.calls[g].is_module and golden.calls[g].params]
        for t in rel.target:
            if target.calls[t].is_module and target.calls[t].params and owners:
                fused_partners[t] = owners
    n_t, n_g = _owners_below(target), _owners_below(golden)
    n_partners = [0] * len(target.calls)
    unpaired_owner = [False] * len(target.calls)
    lowest: list[int | None] = [-1] * len(target.calls)  # -1: no owner below yet; None: no call holds them all
    for i in target.bottom_up():
        call = target.calls[i]
        owns = call.is_module and bool(call.params)
        mine = [result.pairs[i][0]] if owns and i in result.pairs else fused_partners.get(i, []) if owns else []
        unpaired_owner[i] = (owns and not mine) or any(unpaired_owner[k] for k in call.children)
        n_partners[i] = len(mine) + sum(n_partners[k] for k in call.children)
        low: int | None = -1
        for x in [*mine, *(lowest[k] for k in call.children)]:
            if x == -1:
                continue
            low = x if low == -1 else golden.lowest_common(low, x)  # type: ignore[arg-type]
        lowest[i] = low
    for i in target.bottom_up()[::-1]:  # parents first: a pair made here fences the containers inside
        t_call = target.calls[i]
        if not t_call.children or i in result.pairs or i in related_t or not n_t[i] or unpaired_owner[i]:
            continue
        g: int | None = lowest[i]
        if g is None or g == -1:
            continue
        above = _paired_ancestor(target, i, result.pairs)
        fence = result.pairs[above][0] if above is not None else None
        outs_t = {s for s, _ in t_call.outputs}
        for _ in range(MAX_WRAPPERS + 1):
            if g is None or n_g[g] != n_partners[i]:
                break
            if (g not in taken and golden.calls[g].children and _root_compatible(target, golden, i, g)
                    and (fence is None or (fence != g and golden.holds(fence, g)))
                    and outs_t & {s for s, _ in golden.calls[g].outputs}):
                result.pairs[i] = (g, CONF_OWNED, "module: the parameter owners inside it pair")
                result.unpaired.pop(i, None)
                taken.add(g)
                break
            g = golden.calls[g].parent


def _unrecorded_reason(tree: CallTree, other: CallTree, index: int, pairs: dict[int, int]) -> str | None:
    """Why a leaf inside a paired module has no partner when that module's partner records no call inside."""
    a = tree.calls[index].parent
    while a is not None:  # the nearest paired ancestor only (no list of every ancestor: chains run deep)
        partner = pairs.get(a)
        if partner is None:
            a = tree.calls[a].parent
            continue
        if other.calls[partner].children:
            return None
        return ("inside a module paired with one that records no call inside it (one side does not record "
                    "this op): the module boundaries are compared")
    return None


def pair_forward(target: CallTree, golden: CallTree) -> Pairing:
    """The forward pairing of two call trees (leaves, 1→N relations, modules) with the reasons of what is left."""
    result = Pairing()
    pair_leaves(target, golden, result)
    pair_modules(target, golden, result)
    pair_by_parameters(target, golden, result)
    pair_containers_by_owned(target, golden, result)
    pair_within_parents(target, golden, result)
    related_t = {t for rel in result.relations for t in rel.target}
    related_g = {g for rel in result.relations for g in rel.golden}
    t_to_g = {t: g for t, (g, _, _) in result.pairs.items()}
    g_to_t = {g: t for t, g in t_to_g.items()}
    for i in target.leaves:
        if i not in result.pairs and i not in related_t:
            result.unpaired[i] = (_unrecorded_reason(target, golden, i, t_to_g)
                                  or (INERT_REASON if target.calls[i].inert else
                                      "no golden call with its signature at its place (an extra call)"))
    for g in range(len(golden.calls)):
        if g not in g_to_t and g not in related_g:
            inside = None if golden.calls[g].children else _unrecorded_reason(golden, target, g, g_to_t)
            result.golden_unpaired[g] = inside or "no target counterpart"
    return result
