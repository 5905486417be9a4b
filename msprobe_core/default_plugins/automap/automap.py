"""``--auto-map``: propose the target→golden pairing from the two dumps, write it as a ``-dm`` file, compare with it.

The forward pass is paired by structure (:mod:`msprobe_core.match.automap_align` on the trees of
:mod:`msprobe_core.match.automap_calls`); backward and ``parameters_grad`` calls follow their forward call's
pair. The pairs become a data mapping (target row name → golden row name, as ``-dm`` takes it), written beside
the result as ``auto_mapping_<timestamp>.yaml`` with a confidence per pair and the reasons for what stayed
unpaired, and the rows are joined exactly as the ``data-mapping`` mapper joins a ``-dm`` file: given that file
back with ``-dm``, the compare is the same, byte for byte.

Target rows the proposal leaves unpaired whose own names exist on the golden side map to :data:`UNPAIRED`
(a name no dump has), so that ``-dm``'s "else the row's own name" does not pair them behind the proposal's back.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from msprobe_core.plugin import (
    TWO_PROGRAMS_COMMENT,
    DumpTable,
    MappingError,
    MatchContext,
    MatchResult,
    UsageError,
    join_on_keys,
    mapped_golden_keys,
)

from . import yaml_names
from .automap_align import Pairing
from .automap_calls import INPUT, OUTPUT, PARAM, CallTree, call_tree, split_forward
from .automap_decomposed import relate_decomposed
from .automap_optimizer import OPTIMIZER, pair_optimizer_updates
from .automap_owned import pair_forward
from .automap_sums import PARTIAL_SUM, pair_sums, restrict_operand_rows
from .automap_updates_api import pair_updates_by_use

log = logging.getLogger("msprobe")

#: the attachment's name (``{timestamp}``: the result's timestamp; ``{job}``: ``_rank0`` … when a run has ranks)
AUTO_MAPPING_NAME = "auto_mapping{job}_{timestamp}.yaml"
#: the golden name given to a target row the proposal leaves unpaired (no dump has a row of that name)
UNPAIRED = "(unpaired by auto-map)"
#: the least share of each side's leaf calls that must pair (or be named 1→N) for a proposal
MIN_PAIRABLE = 0.5
#: relative difference under which a statistic counts as equal, for confirming a pair
STAT_TOLERANCE = 1e-4


@dataclass
class Proposal:
    """The proposed mapping and what the file and the log say about it."""

    mapping: dict[str, str]
    comments: dict[str, str] = field(default_factory=dict)  # first target row of a call → its comment
    header: list[str] = field(default_factory=list)
    summary: str = ""


def _derived_key(key: str) -> tuple[str, str, str] | None:
    """(kind, prefix, number) of a backward or ``parameters_grad`` key: what ties it to its forward call."""
    parts = key.split(".")
    if len(parts) >= 3 and parts[-2] == "backward" and parts[-1].isdigit():
        return "backward", ".".join(parts[:-2]), parts[-1]
    if len(parts) >= 3 and parts[-1] == "backward" and parts[-2].isdigit():
        return "backward", ".".join(parts[:-2]), parts[-2]
    if "parameters_grad" in parts[-2:]:
        k = parts.index("parameters_grad", len(parts) - 2)
        return "parameters_grad", ".".join(parts[:k]), ".".join(parts[k + 1:])
    return None


def _rows_of_pair(target: CallTree, golden: CallTree, t_key: str, g_key: str, out: dict[str, str]) -> str | None:
    """Map every target row of call ``t_key`` onto the golden row of ``g_key`` with the same suffix and shape.

    The shape condition only bites on pairs found on loosened signatures (the same op called with its
    arguments in another order): a row is never paired with a row of another shape.
    """
    g_rows = golden.rows_by_suffix(g_key)
    first = None
    left: dict[str, list[str]] = {}
    used: set[str] = set()
    derived = _derived_key(t_key)
    grads = derived is not None and derived[0] == "parameters_grad"
    module = t_key in target.by_key and target.calls[target.by_key[t_key]].is_module
    for suffix, name in target.rows_by_suffix(t_key).items():
        partner = g_rows.get(suffix)
        if partner is not None and target.shape_of(name) == golden.shape_of(partner):
            out[name] = partner
            used.add(partner)
            first = first or name
        elif grads:
            left.setdefault("", []).append(name)
        elif suffix.startswith("." + PARAM + "."):
            left.setdefault("." + PARAM + ".", []).append(name)
        elif suffix.startswith("." + INPUT + ".") and module:
            left.setdefault("." + INPUT + ".", []).append(name)
        elif suffix.startswith("." + OUTPUT + ".") and module:
            # a module's output as a plain tensor on one side and inside a structure on the other (``output.0``
            # against ``output.0.last_hidden_state``)
            left.setdefault("." + OUTPUT + ".", []).append(name)
    for kind, names in left.items():
        first = _by_correspondence(target, golden, names, kind, g_rows, used, out) or first
    if not module and not grads:
        first = _swapped_operands(target, golden, t_key, g_rows, out) or first
    return first


def _swapped_operands(target: CallTree, golden: CallTree, t_key: str, g_rows: dict[str, str],
                      out: dict[str, str]) -> str | None:
    """An op's two operands in the other order (``mul(x, weight)`` against ``weight * x``), and in its backward
    their gradients: two rows of a kind on each side, unpaired, whose shapes are each other's crosswise."""
    first = None
    kind = "." + (OUTPUT if _derived_key(t_key) is not None else INPUT) + "."
    t_two = [n for s, n in target.rows_by_suffix(t_key).items() if s.startswith(kind) and s.count(".") == 2]
    g_two = [n for s, n in g_rows.items() if s.startswith(kind) and s.count(".") == 2]
    if len(t_two) != 2 or len(g_two) != 2 or any(n in out for n in t_two):
        return None
    t_shapes = [target.shape_of(n) for n in t_two]
    g_shapes = [golden.shape_of(n) for n in g_two]
    if t_shapes[0] != t_shapes[1] and t_shapes == g_shapes[::-1]:
        out[t_two[0]], out[t_two[1]] = g_two[1], g_two[0]
        first = t_two[0]
    return first


def _by_correspondence(target: CallTree, golden: CallTree, left: list[str], kind: str, g_rows: dict[str, str],
                       used: set[str], out: dict[str, str]) -> str | None:
    """Rows of a pair the suffixes did not pair, paired in order with the other side's unpaired rows of the same
    kind (``kind``: the suffix they start with) and shape, each once: a module's inputs passed by keyword on one
    side and positionally on the other (``input.0`` against ``input.hidden_states``), parameters and their
    gradients named otherwise (torchtune's RMSNorm ``scale`` against Hugging Face's ``weight``)."""
    free = [g for suffix, g in g_rows.items() if suffix.startswith(kind) and g not in used]
    first = None
    for name in left:
        shape = target.shape_of(name)
        partner = next((g for g in free if golden.shape_of(g) == shape), None)
        if partner is None or shape is None:
            continue
        free.remove(partner)
        out[name] = partner
        first = first or name
    return first


def _stat_equal(a: object, b: object) -> bool:
    try:
        x, y = float(a), float(b)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return a == b
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return abs(x - y) <= STAT_TOLERANCE * max(abs(x), abs(y), 1e-12)


def _confirmed_by_statistics(target: CallTree, golden: CallTree, pairing: Pairing) -> set[int]:
    """Leaf pairs whose statistics agree, in forward order, up to the first pair that disagrees (not beyond).

    A statistic may only confirm a pair upstream of the first divergence: past it the values differ
    because of the fault, and nothing downstream may be paired (or unpaired) by them.
    """
    t, g = target.table, golden.table
    out: set[int] = set()
    for leaf in target.leaves:
        hit = pairing.pairs.get(leaf)
        if hit is None:
            continue
        rows_t, rows_g = target.calls[leaf].rows, golden.calls[hit[0]].rows
        if len(rows_t) != len(rows_g):
            break
        if not all(_stat_equal(col_t[a], col_g[b]) for col_t, col_g in
                   ((t.max, g.max), (t.min, g.min), (t.mean, g.mean), (t.norm, g.norm)) for a, b in zip(rows_t, rows_g)):
            break
        out.add(leaf)
    return out


def _parting_point(target: CallTree, golden: CallTree, pairing: Pairing) -> str:
    """Where the two structures part: the first unpaired target leaf and the pair before it."""
    related = {t for rel in pairing.relations for t in rel.target}
    last = None
    for leaf in target.leaves:
        if leaf in pairing.pairs or leaf in related:
            last = leaf
            continue
        here = f"target call '{target.calls[leaf].key}' has no counterpart"
        if last is not None and last in pairing.pairs:
            g = golden.calls[pairing.pairs[last][0]].key
            return f"{here}, after the pair '{target.calls[last].key}' = '{g}'"
        return f"{here}, before any pair"
    return "every target call pairs, but most golden calls do not"


def _counted(tree: CallTree) -> list[int]:
    """The leaves a pairing is judged on: every leaf but the calls with no numeric effect."""
    return [i for i in tree.leaves if not tree.calls[i].inert]


def _modules_pair(target: CallTree, golden: CallTree, pairing: Pairing) -> tuple[int, int, int]:
    """(paired, target owners, golden owners): how many modules owning parameters pair, of each side's."""
    t_own = [c.index for c in target.calls if c.is_module and c.params]
    g_own = {c.index for c in golden.calls if c.is_module and c.params}
    paired = sum(1 for t in t_own if t in pairing.pairs and pairing.pairs[t][0] in g_own)
    return paired, len(t_own), len(g_own)


def _check_pairable(target: CallTree, golden: CallTree, pairing: Pairing) -> str:
    """Refuse a proposal where under half of either side's leaf calls pair (or stand in a 1→N relation), calls
    with no numeric effect not counted, unless the modules owning parameters pair (half of each side's):
    then the proposal is partial, and the returned note says so."""
    related_t = {t for rel in pairing.relations for t in rel.target}
    related_g = {g for rel in pairing.relations for g in rel.golden}
    paired_g = {g for g, _, _ in pairing.pairs.values()}
    counted_t, counted_g = _counted(target), _counted(golden)
    nt, ng = len(counted_t), len(counted_g)
    pt = sum(1 for i in counted_t if i in pairing.pairs or i in related_t)
    pg = sum(1 for j in counted_g if j in paired_g or j in related_g)
    if nt and ng and pt >= MIN_PAIRABLE * nt and pg >= MIN_PAIRABLE * ng:
        return ""
    modules, t_own, g_own = _modules_pair(target, golden, pairing)
    if modules and modules >= MIN_PAIRABLE * t_own and modules >= MIN_PAIRABLE * g_own:
        return (f"a partial proposal: {pt} of {nt} target calls and {pg} of {ng} golden calls pair, but {modules} "
                f"of {t_own} target and {g_own} golden modules owning parameters do; the calls inside modules "
                "that differ stay unpaired with their reasons and the module boundaries are compared")
    raise MappingError(
        f"--auto-map: the dumps are too different to pair: {pt} of {nt} target calls and {pg} of {ng} golden "
        f"calls ({golden.table.source}) have a structural counterpart (under half; calls with no numeric effect "
        f"not counted), and {modules} of {t_own} target modules owning parameters pair; "
        f"{_parting_point(target, golden, pairing)}",
        path=target.table.source)


def propose(target_table: DumpTable, golden_table: DumpTable) -> Proposal:
    """The proposal for two tables: forward pairs, derived backward/``parameters_grad`` pairs, file comments."""
    target, golden = call_tree(target_table), call_tree(golden_table)
    pairing = pair_forward(target, golden)
    if any(c.outer == OPTIMIZER for tree in (target, golden) for c in tree.calls):
        pair_optimizer_updates(target, golden, pairing)
    else:  # no module tree marks the optimizer's calls (L1): tie them to the forward uses of their parameters
        pair_updates_by_use(target, golden, pairing)
    relate_decomposed(target, golden, pairing)
    sums = pair_sums(target, golden, pairing)
    partial = _check_pairable(target, golden, pairing)
    confirmed = _confirmed_by_statistics(target, golden, pairing)
    proposal = Proposal({})
    mapping = proposal.mapping
    forward_pairs: dict[tuple[str, str], tuple[str, str]] = {}
    for ti in sorted(pairing.pairs):
        gi, conf, how = pairing.pairs[ti]
        t, g = target.calls[ti], golden.calls[gi]
        first = _rows_of_pair(target, golden, t.key, g.key, mapping)
        if first is not None:
            note = " (statistics agree)" if ti in confirmed else ""
            proposal.comments[first] = f"{conf:.2f} {how}: golden {g.key}{note}"
        forward_pairs[(t.prefix, t.number)] = (g.prefix, g.number)
    derived = _derive(target, golden, forward_pairs, mapping, proposal)
    restrict_operand_rows(target, golden, pairing, sums, mapping, proposal.comments)
    _guard_unpaired_names(target_table, golden_table, mapping)
    proposal.summary = _summary(target, golden, pairing, derived)
    if partial:
        proposal.summary += f"; {partial}"
    proposal.header = _header(target, golden, pairing, proposal.summary)
    return proposal


def _derive(target: CallTree, golden: CallTree, forward_pairs: dict[tuple[str, str], tuple[str, str]],
            mapping: dict[str, str], proposal: Proposal) -> int:
    """Backward and ``parameters_grad`` pairs from the forward pairs; returns how many calls were paired."""
    module_pairs = {tp: gp for (tp, _), (gp, _) in forward_pairs.items()}
    golden_keys = {_derived_key(a.key): a.key for a in golden.table.apis if _derived_key(a.key) is not None}
    n = 0
    for api in target.table.apis:
        split = _derived_key(api.key)
        if split is None:
            continue
        kind, prefix, number = split
        if kind == "backward":
            partner = forward_pairs.get((prefix, number))
            g_key = golden_keys.get((kind, partner[0], partner[1])) if partner else None
        else:
            g_prefix = module_pairs.get(prefix)
            g_key = golden_keys.get((kind, g_prefix, number)) if g_prefix else None
        if g_key is None:
            continue
        first = _rows_of_pair(target, golden, api.key, g_key, mapping)
        if first is not None:
            proposal.comments[first] = f"{kind}: follows its forward pair"
            n += 1
    return n


def _guard_unpaired_names(target_table: DumpTable, golden_table: DumpTable, mapping: dict[str, str]) -> None:
    """Map target rows of calls the proposal judged but left out, whose own names the golden has, to
    :data:`UNPAIRED` (not to their namesakes). Rows of other keys (neither a forward call nor one that
    follows a forward call) keep the join on their own names: the structure says nothing about them."""
    golden_names = set(golden_table.name)
    for api in target_table.apis:
        if split_forward(api.key) is None and _derived_key(api.key) is None:
            continue
        for row in range(api.first_row, api.first_row + api.n_rows):
            name = target_table.name[row]
            if name not in mapping and name in golden_names:
                mapping[name] = UNPAIRED


def _count(reasons: Iterable[str]) -> str:
    counts: dict[str, int] = {}
    for r in reasons:
        counts[r] = counts.get(r, 0) + 1
    return "; ".join(f"{n} {r}" for r, n in counts.items())


def _summary(target: CallTree, golden: CallTree, pairing: Pairing, derived: int) -> str:
    fused = sum(len(rel.target) for rel in pairing.relations)
    text = (f"auto-map: {len(pairing.pairs)} of {len(target.calls)} target forward calls paired automatically, "
            f"{derived} backward/parameters_grad calls derived from them; {len(pairing.unpaired)} left unpaired")
    if pairing.unpaired:
        text += f" ({_count(pairing.unpaired.values())})"
    if fused:
        text += f", {fused} named 1→N and not paired ({len(pairing.relations)} relations)"
    return text


def _header(target: CallTree, golden: CallTree, pairing: Pairing, summary: str) -> list[str]:
    lines = ["auto_mapping: proposed by --auto-map from the two dumps' structure; give it back with -dm to reuse.",
             f"target: {target.table.source}", f"golden: {golden.table.source}", summary,
             "Each call's first row carries its confidence (1.00 anchor, 0.95 aligned on the full signature,",
             "0.80 shapes only, 0.60 shapes without the op, modules: the share of their calls that pair).",
             TWO_PROGRAMS_COMMENT]
    for rel in pairing.relations:
        lines.append("1→N, not paired: target " + " + ".join(target.calls[t].key for t in rel.target)
                     + " ≙ golden " + " + ".join(golden.calls[g].key for g in rel.golden))
    for t, reason in pairing.unpaired.items():
        lines.append(f"unpaired: target {target.calls[t].key}: {reason}")
    for g, reason in pairing.golden_unpaired.items():
        if reason.startswith("inside ") or reason == PARTIAL_SUM:  # golden calls a reason explains
            lines.append(f"unpaired: golden {golden.calls[g].key}: {reason}")
    lines.extend(_class_rules(target, golden, pairing))
    return lines


def _class_rules(target: CallTree, golden: CallTree, pairing: Pairing) -> list[str]:
    """Module class renames every module pair agrees on: the same pairs in one rule per class (comments only)."""
    seen: dict[str, set[str]] = {}
    for ti, (gi, _, _) in pairing.pairs.items():
        t, g = target.calls[ti], golden.calls[gi]
        if t.is_module and g.is_module:
            seen.setdefault(t.prefix.rsplit(".", 1)[-1], set()).add(g.prefix.rsplit(".", 1)[-1])
    rules = [f"  {a}: {next(iter(b))}" for a, b in sorted(seen.items()) if len(b) == 1 and a != next(iter(b))]
    if not rules:
        return []
    return ["class renames every module pair agrees on (target class: golden class):", *rules]


def yaml_text(proposal: Proposal) -> str:
    """The proposal as a ``-dm`` YAML file: comments first, then one ``target: golden`` entry per row.

    Every name reads back exactly as the dumps spell it, whatever it holds (:mod:`.yaml_names`):
    the file given back with ``-dm`` pairs the rows as this run did.
    """
    lines = [yaml_names.yaml_comment(line) for line in proposal.header]
    for name, partner in proposal.mapping.items():
        note = proposal.comments.get(name)
        if note:
            lines.append(yaml_names.yaml_comment(note))
        lines.append(yaml_names.yaml_mapping_entry(name, partner))
    return "\n".join(lines) + "\n"


def run_auto_map(ctx: MatchContext) -> MatchResult:
    """The ``--auto-map`` mapper: propose, attach the file, join as ``-dm`` joins (left join, no dtype gate)."""
    if getattr(ctx.options, "data_mapping", None):
        raise UsageError("--auto-map proposes a data mapping itself: give either --auto-map or -dm, not both")
    if getattr(ctx.options, "fuzzy_match", False):
        raise UsageError("--auto-map aligns the calls itself: -fm would do nothing with it; leave -fm out")
    proposal = propose(ctx.target, ctx.golden)
    log.info("%s", proposal.summary)
    keys = [proposal.mapping.get(name, name) for name in ctx.target.name]
    match = join_on_keys(keys, mapped_golden_keys(ctx))
    match.dtype_gate = False
    match.notes.two_programs = True  # the two sides may be two libraries' programs of the same math
    match.notes.attachments.append((AUTO_MAPPING_NAME, yaml_text(proposal)))
    match.notes.summary_notes.append(proposal.summary)
    return match
