"""One op against the run of elementwise calls the other implementation writes it as (``--auto-map``).

One library calls ``F.gelu(x, approximate="tanh")``; another writes the same function out,
``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3)))``, eight recorded calls. Aligned on shapes, the one
call pairs with the first of the eight (another op, other values: a false difference) and the other seven stay
unpaired. Here such a pair is undone and named a 1→N relation instead, never paired, where:

* the two calls are API calls of different ops, and the pair was made on shapes, not on the op;
* right after the partner, the other side has a run of unpaired calls up to the partner of the next pair, every
  one of them putting out the single call's output shape (elementwise work on the same tensor);
* so the single call and the run sit between the same two pairs.

Only shapes and order decide; no statistic does.
"""

from __future__ import annotations

from .automap_align import Pairing, Relation
from .automap_calls import CallTree

#: the longest run of calls one op may be written out as
MAX_DECOMPOSED = 16


def _outputs(tree: CallTree, i: int) -> tuple[str | None, ...]:
    return tuple(s for s, _ in tree.calls[i].outputs)


def _run_after(one: CallTree, many: CallTree, a: int, b: int, nxt: int, taken: set[int],
               where: dict[int, int]) -> list[int] | None:
    """The unpaired calls of ``many`` right after ``b`` (the partner of ``one``'s call ``a``) up to ``nxt`` (the
    partner of the pair after ``a``), when each puts out ``a``'s output shape; ``None`` when there is no such run.
    ``where``: each leaf's place in ``many.leaves``."""
    leaves = many.leaves
    k = where[b] + 1
    run: list[int] = []
    while k < len(leaves) and leaves[k] != nxt:
        if leaves[k] in taken or _outputs(many, leaves[k]) != _outputs(one, a) or len(run) >= MAX_DECOMPOSED:
            return None
        run.append(leaves[k])
        k += 1
    if k >= len(leaves):
        return None
    return run or None


def relate_decomposed(target: CallTree, golden: CallTree, pairing: Pairing) -> None:
    """Turn a pair of one op with the first call of its written-out form (either side) into a 1→N relation."""
    related_t = {t for rel in pairing.relations for t in rel.target}
    related_g = {g for rel in pairing.relations for g in rel.golden}
    paired_g = {g for g, _, _ in pairing.pairs.values()}
    reverse = {g: t for t, (g, _, _) in pairing.pairs.items()}
    t_where = {t: k for k, t in enumerate(target.leaves)}
    g_where = {g: k for k, g in enumerate(golden.leaves)}
    t_leaves = [t for t in target.leaves if t in pairing.pairs or t in related_t]
    g_leaves = [g for g in golden.leaves if g in paired_g or g in related_g]
    g_rank = {g: k for k, g in enumerate(g_leaves)}
    g_taken, t_taken = paired_g | related_g, set(pairing.pairs) | related_t
    for k, t in enumerate(t_leaves):
        hit = pairing.pairs.get(t)
        if hit is None:
            continue
        g = hit[0]
        tc, gc = target.calls[t], golden.calls[g]
        if tc.is_module or gc.is_module or tc.op == gc.op or _outputs(target, t) != _outputs(golden, g):
            continue
        nxt_t = t_leaves[k + 1] if k + 1 < len(t_leaves) else None
        nxt_g = pairing.pairs[nxt_t][0] if nxt_t in pairing.pairs else None
        if nxt_g is None:  # the last pair, or one before a relation: no closed gap to read a run off
            continue
        run = _run_after(target, golden, t, g, nxt_g, g_taken, g_where)
        if run is not None:
            del pairing.pairs[t]
            pairing.relations.append(Relation([t], [g, *run]))
            for j in (g, *run):
                pairing.golden_unpaired.pop(j, None)
            continue
        # the other way round: the target writes out what the golden calls once
        pos = g_rank[g]
        nxt_g2 = g_leaves[pos + 1] if pos + 1 < len(g_leaves) else None
        nxt_t2 = reverse.get(nxt_g2) if nxt_g2 is not None else None
        if nxt_t2 is None:
            continue
        run = _run_after(golden, target, g, t, nxt_t2, t_taken, t_where)
        if run is not None:
            del pairing.pairs[t]
            pairing.relations.append(Relation([t, *run], [g]))
            for i in run:
                pairing.unpaired.pop(i, None)
