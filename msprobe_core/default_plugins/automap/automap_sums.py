"""Sums that two implementations group otherwise, paired by what they add up (``--auto-map``).

A parallel residual ``x + attn(ln1(x)) + mlp(ln2(x))`` is one sum of three tensors; one library computes
``(mlp + attn) + x``, another ``mlp + (attn + x)``. Both record two add calls of the same shapes, so the
alignment pairs them by place: the whole sum with the whole sum only by chance, and the partial sums
``mlp + attn`` and ``attn + x``, which are no two values of one computation, with each other (a false
difference, in a clean run, at the first residual).

Here the calls of an associative op (:data:`ASSOCIATIVE_OPS`) taking two tensors are read as trees: an operand
that is the output of another call of the same op, used by nothing else, is that call's own operands (a partial
sum); any other operand is a *leaf*, known by the calls that put it out. Within one dump a tensor is known by
its statistics (as :mod:`msprobe_core.match.automap_updates_api` knows a parameter): statistics never compare the
two dumps here, so a fault upstream changes no pair. A target leaf stands for a golden leaf through the pairs of
the calls that put them out. Then:

* a target sum pairs with the golden sum of the same op that adds up the same leaves, however grouped or ordered;
* its operand rows pair only where an operand is the same partial sum on both sides; the others (``x`` against
  ``mlp + attn``) are left out of the mapping: not comparable, never a difference;
* a partial sum inside such a pair that the other side does not compute is left unpaired, with
  :data:`PARTIAL_SUM` as its reason (either side).

A sum whose leaves do not all resolve (a leaf no paired call puts out) keeps the pair the alignment gave it.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from .automap_align import Pairing
from .automap_calls import INPUT, OUTPUT, CallTree

#: ops (as :func:`msprobe_core.match.automap_calls.op_name` spells them) whose operands may be grouped in any
#: order and any way with the same result up to rounding: a sum, a product, a running maximum
ASSOCIATIVE_OPS = frozenset({"add", "mul", "maximum", "minimum", "logicaland", "logicalor", "logicalxor"})
#: the most terms a sum is read as (past them it keeps the pair the alignment gave it)
MAX_TERMS = 64
#: confidence and how of a sum paired by its leaves
CONF_SUM = 0.9
HOW_SUM = "the sum of the same operands, grouped otherwise (a re-associated sum)"
#: the reason a partial sum of a re-associated sum is left unpaired
PARTIAL_SUM = ("a partial sum the other implementation does not compute (it groups the same sum otherwise: "
               "(a + b) + c against a + (b + c)); not comparable, the whole sum is compared")

Key = Hashable
Leaves = tuple[Key, ...]


def _identity(shape: str | None, stats: tuple[object, ...], md5: object) -> Key | None:
    """What knows a tensor within one dump: its shape and statistics (or its checksum); ``None`` for a number."""
    if not shape or not shape.startswith("[") or shape == "[]":
        return None
    if all(v is None or v == "" for v in stats):
        return None if md5 in (None, "") else (shape, "md5", repr(md5))
    return (shape, *stats)


@dataclass
class _Side:
    """One dump's two-operand calls of associative ops, and who puts out and who takes each tensor."""

    tree: CallTree
    #: call → (op, operand identities in slot order, output identity)
    sums: dict[int, tuple[str, tuple[Key, Key], Key]] = field(default_factory=dict)
    #: tensor identity → (call, output suffix) of every forward call putting it out, in dump order
    producers: dict[Key, list[tuple[int, str]]] = field(default_factory=dict)
    #: tensor identity → how many forward input rows take it
    uses: dict[Key, int] = field(default_factory=dict)
    #: (call, output suffix) → the identity of that output
    outputs: dict[tuple[int, str], Key] = field(default_factory=dict)


def _side(tree: CallTree) -> _Side:
    side = _Side(tree)
    t = tree.table
    names, shapes, md5 = t.name, t.shape, t.md5
    candidates = [c for c in tree.calls if not c.is_module and c.op in ASSOCIATIVE_OPS and len(c.rows) == 3]
    wanted = {shapes[row] for c in candidates for row in c.rows}  # only tensors of these shapes can take part
    if not candidates:
        return side
    # each column as a list once (the loader's columns spell a cell at a time otherwise)
    stats = list(zip(*(col.tolist() if hasattr(col, "tolist") else list(col) for col in (t.max, t.min, t.mean,
                                                                                          t.norm))))
    for call in tree.calls:
        cut = len(call.key)
        slots: dict[str, Key | None] = {}
        for row in call.rows:
            suffix = names[row][cut:]
            if shapes[row] not in wanted:
                slots[suffix] = None
                continue
            key = _identity(shapes[row], stats[row], md5[row] if row < len(md5) else None)
            slots[suffix] = key
            if key is None:
                continue
            if suffix.startswith("." + OUTPUT + "."):
                side.producers.setdefault(key, []).append((call.index, suffix))
                side.outputs[(call.index, suffix)] = key
            elif suffix.startswith("." + INPUT + "."):
                side.uses[key] = side.uses.get(key, 0) + 1
        a, b, out = slots.get(".input.0"), slots.get(".input.1"), slots.get(".output.0")
        if (not call.is_module and call.op in ASSOCIATIVE_OPS and len(slots) == 3 and a is not None
                and b is not None and out is not None):
            side.sums[call.index] = (call.op, (a, b), out)
    return side


def _producing_sum(side: _Side, key: Key, op: str, before: int) -> int | None:
    """The call of ``op`` before ``before`` whose output is ``key`` and which nothing else takes: a partial sum."""
    if side.uses.get(key, 0) != 1:
        return None
    return next((c for c, s in reversed(side.producers.get(key, ())) if c < before and s == ".output.0"
                 and c in side.sums and side.sums[c][0] == op), None)


def _expand(side: _Side, call: int, leaf: dict[Key, Key | None], inner: list[int]) -> list[Key | None] | None:
    """The leaves (each through ``leaf``) a sum adds up, its partial sums appended to ``inner``; ``None`` past
    :data:`MAX_TERMS` leaves (a running sum over a loop is no grouping two libraries differ by)."""
    op, operands, _ = side.sums[call]
    out: list[Key | None] = []
    stack = [(key, call) for key in reversed(operands)]
    while stack:
        key, at = stack.pop()
        partial = _producing_sum(side, key, op, at)
        if partial is None:
            out.append(leaf.get(key, key))
        else:
            inner.append(partial)
            stack.extend((k, partial) for k in reversed(side.sums[partial][1]))
        if len(out) + len(stack) > MAX_TERMS:
            return None
    return out


def _target_leaf(target: _Side, golden: _Side, pairing: Pairing, key: Key, before: int) -> Key | None:
    """The golden tensor a target leaf stands for: the partners of the calls putting it out agree on one."""
    found: set[Key] = set()
    for call, suffix in target.producers.get(key, ()):
        if call >= before or call not in pairing.pairs:
            continue
        g_key = golden.outputs.get((pairing.pairs[call][0], suffix))
        if g_key is not None:
            found.add(g_key)
    return found.pop() if len(found) == 1 else None


def _slots(side: _Side, call: int, leaf: dict[Key, Key | None]) -> list[tuple[Key | None, ...]]:
    """The sorted leaves of each operand of a sum (a partial sum's own leaves, or the operand itself)."""
    op, operands, _ = side.sums[call]
    out = []
    for key in operands:
        partial = _producing_sum(side, key, op, call)
        leaves = [leaf.get(key, key)] if partial is None else _expand(side, partial, leaf, []) or []
        out.append(tuple(sorted(leaves, key=repr)))
    return out


@dataclass
class SumPairs:
    """What :func:`pair_sums` decided: per target call it re-paired, the golden operand slot each target operand
    slot is (``None``: not comparable)."""

    slots: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)


def pair_sums(target_tree: CallTree, golden_tree: CallTree, pairing: Pairing) -> SumPairs:
    """Pair the target's sums with the golden sums of the same leaves, in forward order; unpair the partial sums
    one side computes and the other does not (:data:`PARTIAL_SUM`)."""
    target, golden = _side(target_tree), _side(golden_tree)
    decided = SumPairs()
    if not target.sums or not golden.sums:
        return decided
    by_leaves: dict[tuple[str, Leaves], list[int]] = {}
    golden_inner: dict[int, list[int]] = {}
    for g, (op, _, _) in golden.sums.items():
        inner: list[int] = []
        expanded = _expand(golden, g, {}, inner)
        if expanded is None:
            continue
        leaves = tuple(sorted(expanded, key=repr))
        by_leaves.setdefault((op, leaves), []).append(g)
        golden_inner[g] = inner
    reverse = {g: t for t, (g, _, _) in pairing.pairs.items()}
    matched: set[int] = set()
    inner_t: set[int] = set()
    inner_g: set[int] = set()
    taken: set[int] = set()
    for t in sorted(target.sums):
        op = target.sums[t][0]
        inner: list[int] = []
        raw = _expand(target, t, {}, inner)
        if raw is None:
            continue
        leaf_map = {key: _target_leaf(target, golden, pairing, key, t) for key in raw}
        if any(leaf_map[k] is None for k in raw):
            continue  # a leaf no paired call puts out: the alignment's pair stands
        leaves = tuple(sorted((leaf_map[k] for k in raw), key=repr))
        g = next((g for g in by_leaves.get((op, leaves), ()) if g not in taken), None)
        if g is None:
            continue
        taken.add(g)
        matched.add(t)
        inner_t.update(inner)
        inner_g.update(golden_inner[g])
        current = pairing.pairs.get(t)
        t_slots, g_slots = _slots(target, t, leaf_map), _slots(golden, g, {})
        if current is not None and current[0] == g and t_slots in (g_slots, g_slots[::-1]):
            continue  # the alignment paired it so already, operand for operand (or swapped: a form it knows)
        previous = reverse.get(g)
        if previous is not None and previous != t:
            del pairing.pairs[previous]
            pairing.unpaired[previous] = (f"its golden partner by place adds up what target "
                                          f"{target_tree.calls[t].key} adds up")
        if current is not None:
            reverse.pop(current[0], None)
        pairing.pairs[t] = (g, CONF_SUM, HOW_SUM)
        reverse[g] = t
        pairing.unpaired.pop(t, None)
        pairing.golden_unpaired.pop(g, None)
        decided.slots[t] = (g_slots.index(t_slots[0]) if t_slots[0] in g_slots else None,
                            g_slots.index(t_slots[1]) if t_slots[1] in g_slots else None)
    for t in sorted(inner_t - matched):
        hit = pairing.pairs.pop(t, None)
        if hit is not None:
            reverse.pop(hit[0], None)
        pairing.unpaired[t] = PARTIAL_SUM
    for g in sorted(inner_g - taken):
        if g not in reverse:
            pairing.golden_unpaired[g] = PARTIAL_SUM
    return decided


def restrict_operand_rows(target: CallTree, golden: CallTree, pairing: Pairing, sums: SumPairs,
                          mapping: dict[str, str], comments: dict[str, str]) -> None:
    """Re-point the operand rows of the sums :func:`pair_sums` paired (forward inputs, and the gradients of those
    operands in the backward call) to the golden operand that is the same partial sum, and leave out of
    ``mapping`` those that have none: they are not comparable. A call's comment moves to a row that stays."""
    for t, slots in sums.slots.items():
        g = pairing.pairs[t][0]
        t_key, g_key = target.calls[t].key, golden.calls[g].key
        t_back, g_back = _backward_key(t_key), _backward_key(g_key)
        moves = {f"{t_key}.{INPUT}.{k}": (f"{g_key}.{INPUT}.{s}" if s is not None else None)
                 for k, s in enumerate(slots)}
        moves.update({f"{t_back}.{OUTPUT}.{k}": (f"{g_back}.{OUTPUT}.{s}" if s is not None else None)
                      for k, s in enumerate(slots)})
        orphans: list[str] = []
        for name, partner in moves.items():
            if name not in mapping:
                continue
            if partner is not None:
                mapping[name] = partner
                continue
            del mapping[name]
            if name in comments:
                orphans.append(comments.pop(name))
        if orphans:
            keep = next((n for n in mapping if n.startswith(t_key + ".")), None)
            if keep is not None:
                comments[keep] = orphans[0] + "; operand rows that are other partial sums: not compared"


def _backward_key(forward_key: str) -> str:
    """``Tensor.__add__.3.forward`` → ``Tensor.__add__.3.backward``."""
    return forward_key[: -len("forward")] + "backward"
