"""Optimizer updates paired by the parameter they update, in dumps with no module tree (L1, ``--auto-map``).

An API-only dump (``construct.json`` is ``{}``) neither marks the optimizer's calls nor records a parameter as
such. It still holds both: the optimizer step is the run of calls after the backward pass (calls with no
``backward`` key of their own, after the last call that has one), and each parameter appears as an input of
the forward calls that use it (``Functional.linear.N.forward.input.1``, the weight), a tensor that no dumped
call produced. The update of a parameter takes that same tensor, so within one dump its statistics before the
update equal those of the forward input: that ties each update to its *uses*. Across the dumps the uses are
tied by the forward pairs already made (the same input slot of two paired calls), so an update pairs with the
golden update of the parameter its uses' partners take. A parameter used by a call in a 1→N relation (a fused
``qkv`` weight against ``q``, ``k``, ``v``) makes its update a 1→N relation too, named, never paired.

Statistics only *identify* a tensor within one dump here; they never compare the two dumps, so a wrong weight
(the fault) still pairs with its counterpart and shows as a difference.
"""

from __future__ import annotations

from collections.abc import Hashable

from msprobe_core.default_plugins.fuzzy import seqalign

from .automap_align import Pairing, Relation
from .automap_calls import INPUT, OUTPUT, CallTree

#: confidence of an update paired through the forward uses of its parameter
CONF_UPDATE_USE = 0.9
UNPAIRED_USE = ("an optimizer update of a parameter whose forward uses pair with no golden parameter's (the "
                "calls using it are unpaired, or they use several golden parameters)")

#: confidence of an update paired by its place among the updates whose parameter no forward use pairs
CONF_UPDATE_ORDER = 0.6
ORDER_HOW = ("optimizer update paired by its place among the updates whose parameter no paired forward call "
             "takes (a parameter used only inside an op the dumper does not record)")

Use = tuple[int, str]  # (forward call index, row suffix after the call key)


def _stat_key(tree: CallTree, row: int) -> Hashable | None:
    t = tree.table
    shape = t.shape[row]
    if not shape or not shape.startswith("[") or shape == "[]":
        return None  # a scalar argument or no tensor: nothing a parameter is
    stats = (t.max[row], t.min[row], t.mean[row], t.norm[row])
    if all(v is None or v == "" for v in stats):
        md5 = t.md5[row] if row < len(t.md5) else None
        # an md5 dump identifies a tensor by its checksum; a bare one not at all (every tensor of a shape alike)
        return None if md5 in (None, "") else (shape, "md5", repr(md5))
    return (shape, *map(repr, stats))


def _suffix(tree: CallTree, call: int, row: int) -> str:
    return tree.table.name[row][len(tree.calls[call].key):]


def optimizer_start(tree: CallTree) -> int | None:
    """Index of the first call after the backward pass (the optimizer step), ``None`` when the dump has no
    backward pass or nothing after it."""
    with_backward = set()
    for api in tree.table.apis:
        parts = api.key.split(".")
        if len(parts) >= 3 and parts[-1] == "backward" and parts[-2].isdigit():
            with_backward.add((".".join(parts[:-2]), parts[-2]))
    last = max((c.index for c in tree.calls if (c.prefix, c.number) in with_backward), default=None)
    if last is None or last + 1 >= len(tree.calls):
        return None
    return last + 1


def parameter_uses(tree: CallTree, start: int) -> dict[Hashable, list[Use]]:
    """Tensors the forward pass reads but no dumped call wrote (parameters, and the batch), by statistics →
    their uses. Tensors of equal statistics share one entry: within one dump they are not told apart."""
    produced: set[Hashable] = set()
    for call in tree.calls[:start]:
        for r in call.rows:
            if _suffix(tree, call.index, r).startswith("." + OUTPUT + "."):
                produced.add(_stat_key(tree, r))
    uses: dict[Hashable, list[Use]] = {}
    for call in tree.calls[:start]:
        if call.is_module:
            continue
        for r in call.rows:
            suffix = _suffix(tree, call.index, r)
            key = _stat_key(tree, r)
            if key is not None and key not in produced and suffix.startswith("." + INPUT + "."):
                uses.setdefault(key, []).append((call.index, suffix))
    return uses


def _tensor_shapes(call_inputs: tuple[tuple[str | None, str], ...]) -> list[str]:
    return [s for s, _ in call_inputs if s and s.startswith("[") and s != "[]"]


def updates_by_use(tree: CallTree) -> tuple[dict[Hashable, list[int]], dict[Hashable, list[Use]]]:
    """The optimizer's calls grouped by the parameter (its statistics) whose tensor they take, in order, and
    the parameters' forward uses. A call taking no parameter a forward call was seen to use joins the run of
    the last one identified when it reads a tensor of its shape (``exp_avg_sq.sqrt()``), the next run when it
    reads scalars only (``step += 1``), else it starts a run of its own, keyed ``("unseen", index)``: the update
    of a parameter no dumped forward call takes (a norm's weight applied inside an op the dumper does not hook)."""
    start = optimizer_start(tree)
    if start is None:
        return {}, {}
    uses = parameter_uses(tree, start)
    out: dict[Hashable, list[int]] = {}
    current: Hashable | None = None
    shape: str | None = None
    pending: list[int] = []
    for call in tree.calls[start:]:
        if call.is_module:
            continue
        found = next((k for r in call.rows if _suffix(tree, call.index, r).startswith("." + INPUT + ".")
                      and (k := _stat_key(tree, r)) in uses), None)
        shapes = _tensor_shapes(call.inputs)
        if found is None and current is not None and shape in shapes:
            out[current].append(call.index)  # of the parameter's shape: the same run
            continue
        if found is None and not shapes:
            pending.append(call.index)  # scalars only: belongs to the next parameter's run
            continue
        key: Hashable = found if found is not None else ("unseen", call.index)
        if key != current:
            current, shape = key, (found[0] if found is not None else shapes[0])  # type: ignore[index]
            out.setdefault(current, []).extend(pending)
            pending = []
        out[current].append(call.index)
    return out, uses


def _golden_uses(uses: list[Use], pairing: Pairing) -> tuple[list[Use], int]:
    """The golden uses the target uses pair with through the forward pairs, and how a use stands in a 1→N
    relation: 0 in none, 1 its call is one target call against several golden ones (a fused ``qkv`` against
    ``q``, ``k``, ``v``), -1 it is one of several target calls against golden ones (the other way round)."""
    kind = 0
    out: list[Use] = []
    for call, suffix in uses:
        hit = pairing.pairs.get(call)
        if hit is not None:
            out.append((hit[0], suffix))
            continue
        for rel in pairing.relations:
            if call in rel.target:
                out.extend((g, suffix) for g in rel.golden)
                kind = -1 if len(rel.target) > 1 else (1 if len(rel.golden) > 1 else kind)
    return out, kind


def _relate(target_calls: list[int], golden_calls: list[int], pairing: Pairing) -> None:
    pairing.relations.append(Relation(list(target_calls), list(golden_calls)))
    for i in target_calls:
        pairing.unpaired.pop(i, None)
    for j in golden_calls:
        pairing.golden_unpaired.pop(j, None)


def _pair_runs(target: CallTree, golden: CallTree, calls: list[int], g_list: list[int], conf: float, how: str,
               pairing: Pairing) -> None:
    """Pair two runs of update calls in order, on their ops and shapes; what does not align stays unpaired."""
    matched = seqalign.align([target.calls[i].token(2) for i in calls], [golden.calls[j].token(2) for j in g_list])
    for i, j in matched:
        pairing.pairs[calls[i]] = (g_list[j], conf, how)
        pairing.unpaired.pop(calls[i], None)
        pairing.golden_unpaired.pop(g_list[j], None)
    for k in set(range(len(calls))) - {i for i, _ in matched}:
        pairing.unpaired[calls[k]] = "an optimizer update with no golden update of the same op and shape to pair"


def pair_updates_by_use(target: CallTree, golden: CallTree, pairing: Pairing) -> bool:
    """Re-pair the optimizer's calls of two API-only dumps by the parameter they update (they were aligned by
    order with the rest). Returns whether it found updates on both sides to pair."""
    t_updates, t_uses = updates_by_use(target)
    g_updates, g_uses = updates_by_use(golden)
    if not t_updates or not g_updates:
        return False
    g_param_of_use = {use: key for key, uses in g_uses.items() for use in uses if key in g_updates}
    t_calls = {i for calls in t_updates.values() for i in calls}
    g_calls = {j for calls in g_updates.values() for j in calls}
    for t in list(pairing.pairs):
        if t in t_calls or pairing.pairs[t][0] in g_calls:
            del pairing.pairs[t]
    taken: set[Hashable] = set()
    leftover: list[int] = []
    merged: dict[Hashable, list[int]] = {}  # golden parameter → the updates of the target parts fused there
    for key, calls in t_updates.items():
        mapped, kind = _golden_uses(t_uses.get(key, []), pairing)
        partners = list(dict.fromkeys(g_param_of_use[u] for u in mapped if u in g_param_of_use))
        if kind == 1 and len(partners) > 1 and not taken & set(partners):
            _relate(calls, [j for p in partners for j in g_updates[p]], pairing)
            taken.update(partners)
            continue
        if kind == -1 and len(partners) == 1:
            merged.setdefault(partners[0], []).extend(calls)
            continue
        if not partners:
            leftover.extend(calls)  # no forward use pairs: left for the order among what is left
            continue
        if len(partners) > 1 or partners[0] in taken:
            for i in calls:
                pairing.unpaired[i] = UNPAIRED_USE
            continue
        taken.add(partners[0])
        use_t, use_g = t_uses[key][0], g_uses[partners[0]][0]
        how = (f"optimizer update of the parameter {target.calls[use_t[0]].key}{use_t[1]} "
               f"(golden {golden.calls[use_g[0]].key}{use_g[1]})")
        _pair_runs(target, golden, calls, g_updates[partners[0]], CONF_UPDATE_USE, how, pairing)
    for partner, calls in merged.items():
        if partner in taken:
            for i in calls:
                pairing.unpaired[i] = UNPAIRED_USE
            continue
        taken.add(partner)
        _relate(sorted(calls), g_updates[partner], pairing)
    g_left = [j for key, calls in g_updates.items() if key not in taken for j in calls]
    _pair_runs(target, golden, sorted(leftover), sorted(g_left), CONF_UPDATE_ORDER, ORDER_HOW, pairing)
    paired_g = {g for g, _, _ in pairing.pairs.values()} | {g for rel in pairing.relations for g in rel.golden}
    for j in g_calls - paired_g:
        pairing.golden_unpaired[j] = "no target counterpart"
    return True
