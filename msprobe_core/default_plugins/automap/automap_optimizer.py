"""Optimizer updates paired by the parameter they update (``--auto-map``).

msprobe's dumpers record an optimizer's step as API calls whose ``construct.json`` parent is ``optimizer``
(``Tensor.add_``, ``Tensor.lerp_``, ``Tensor.addcdiv_`` …), one run of calls per parameter, in the order the
optimizer holds its parameters. Two implementations hold them in other orders (one library's first parameter
is the embedding, another's the output head), so pairing these calls by order pairs updates of different
parameters. Here each update is tied to its parameter on its own side, by the one thing both share: a tensor
the update reads is the parameter itself (its forward ``parameters`` row) or its gradient (its
``parameters_grad`` row), with the same shape and statistics, as the same dumper wrote them. Updates of two
parameters that the module pairs and the parameter names (or places) make partners are then paired in order.

Statistics only *identify* a tensor within one dump here; they never compare the two dumps.
"""

from __future__ import annotations

from collections.abc import Hashable

from msprobe_core.default_plugins.fuzzy import seqalign

from .automap_align import Pairing
from .automap_calls import INPUT, PARAM, CallTree

#: the ``construct.json`` parent msprobe's dumpers give the calls of an optimizer step
OPTIMIZER = "optimizer"
#: confidence of an update paired by its parameter
CONF_UPDATE = 0.9
UNPAIRED_UPDATE = ("an optimizer update of a parameter with no counterpart (its module is unpaired or one of a 1→N "
                   "relation), or with no update of the same op at its place")

Param = tuple[str, str]  # (module prefix, parameter name)


def _stat_key(tree: CallTree, row: int) -> Hashable:
    t = tree.table
    return (t.shape[row], repr(t.max[row]), repr(t.min[row]), repr(t.mean[row]), repr(t.norm[row]))


def _parameter_index(tree: CallTree) -> tuple[dict[Hashable, set[Param]], dict[str, list[str]]]:
    """Statistics of every parameter and parameter gradient → the parameters they may be; each module's
    parameter names in order."""
    index: dict[Hashable, set[Param]] = {}
    names: dict[str, list[str]] = {}
    table = tree.table
    for call in tree.calls:
        if not (call.is_module and call.params):
            continue
        for r in call.rows:
            suffix = table.name[r][len(call.key) + 1:]
            if suffix.startswith(PARAM + "."):
                name = suffix[len(PARAM) + 1:]
                index.setdefault(_stat_key(tree, r), set()).add((call.prefix, name))
                if name not in names.setdefault(call.prefix, []):
                    names[call.prefix].append(name)
    for api in table.apis:
        parts = api.key.split(".")  # ``Module.a.Linear.parameters_grad`` (older dumpers) or ``….parameters_grad.0``
        if "parameters_grad" not in parts[-2:]:
            continue
        prefix = ".".join(parts[: parts.index("parameters_grad", len(parts) - 2)])
        for r in range(api.first_row, api.first_row + api.n_rows):
            name = table.name[r][len(api.key) + 1:]
            index.setdefault(_stat_key(tree, r), set()).add((prefix, name))
    return index, names


def updates_by_parameter(tree: CallTree, index: dict[Hashable, set[Param]] | None = None) -> dict[Param, list[int]]:
    """The optimizer's calls grouped by the parameter they update, in order. A call that reads neither the
    parameter nor its gradient reads the parameter's shape (``exp_avg_sq.sqrt()``: the run of the last one
    identified) or not (``step += 1``: the run of the next one). ``index``: :func:`_parameter_index`'s first
    part, when the caller has it."""
    if not any(c.outer == OPTIMIZER and c.parent is None and not c.is_module for c in tree.calls):
        return {}
    if index is None:
        index, _ = _parameter_index(tree)
    table = tree.table
    out: dict[Param, list[int]] = {}
    current: Param | None = None
    shape: str | None = None
    pending: list[int] = []
    for call in tree.calls:
        if call.is_module or call.outer != OPTIMIZER or call.parent is not None:
            continue
        candidates: set[Param] | None = None
        for r in call.rows:
            if not table.name[r][len(call.key) + 1:].startswith(INPUT + "."):
                continue
            hit = index.get(_stat_key(tree, r))
            if hit:
                candidates = set(hit) if candidates is None else (candidates & hit or candidates)
        if candidates is not None and len(candidates) == 1:
            found = next(iter(candidates))
            if found != current:
                current, shape = found, next((table.shape[r] for r in call.rows
                                              if index.get(_stat_key(tree, r)) == {found}), None)
                out.setdefault(current, []).extend(pending)  # the calls before it that read no parameter's shape
                pending = []
            out[current].append(call.index)
        elif current is not None and shape in {s for s, _ in call.inputs}:
            out[current].append(call.index)  # ``exp_avg_sq.sqrt()``: of the parameter's shape, the same run
        else:
            pending.append(call.index)  # ``step += 1``: belongs to the next parameter's run
    return out


def _partner_param(param: Param, module_pairs: dict[str, str], t_names: dict[str, list[str]],
                   g_names: dict[str, list[str]]) -> Param | None:
    prefix, name = param
    g_prefix = module_pairs.get(prefix)
    if g_prefix is None:
        return None
    g_list = g_names.get(g_prefix, [])
    if name in g_list:
        return g_prefix, name
    t_list = t_names.get(prefix, [])
    if name in t_list and len(t_list) == len(g_list):
        return g_prefix, g_list[t_list.index(name)]
    return None


def pair_optimizer_updates(target: CallTree, golden: CallTree, pairing: Pairing) -> None:
    """Re-pair the optimizer's calls by the parameter they update (they were aligned by order with the rest)."""
    if not any(c.outer == OPTIMIZER for c in target.calls) or not any(c.outer == OPTIMIZER for c in golden.calls):
        return
    t_index, t_names = _parameter_index(target)
    g_index, g_names = _parameter_index(golden)
    t_updates, g_updates = updates_by_parameter(target, t_index), updates_by_parameter(golden, g_index)
    if not t_updates or not g_updates:
        return
    module_pairs = {target.calls[t].prefix: golden.calls[g].prefix for t, (g, _, _) in pairing.pairs.items()
                    if target.calls[t].is_module and golden.calls[g].is_module}
    t_calls = {i for calls in t_updates.values() for i in calls}
    g_calls = {j for calls in g_updates.values() for j in calls}
    for t in list(pairing.pairs):
        if t in t_calls or pairing.pairs[t][0] in g_calls:
            del pairing.pairs[t]
    for param, calls in t_updates.items():
        partner = _partner_param(param, module_pairs, t_names, g_names)
        g_list = g_updates.get(partner, []) if partner else []
        ops_t = [target.calls[i].token(2) for i in calls]
        ops_g = [golden.calls[j].token(2) for j in g_list]
        matched = seqalign.align(ops_t, ops_g) if partner else []
        for i, j in matched:
            how = f"optimizer update of {param[0]}.{param[1]} (golden {partner[0]}.{partner[1]})"  # type: ignore[index]
            pairing.pairs[calls[i]] = (g_list[j], CONF_UPDATE, how)
            pairing.unpaired.pop(calls[i], None)
            pairing.golden_unpaired.pop(g_list[j], None)
        for k in set(range(len(calls))) - {i for i, _ in matched}:
            pairing.unpaired[calls[k]] = UNPAIRED_UPDATE
    paired_g = {g for g, _, _ in pairing.pairs.values()}
    for j in g_calls - paired_g:
        pairing.golden_unpaired[j] = "no target counterpart"
