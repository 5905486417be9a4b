"""Which target module is which golden module, read off the converted weights themselves.

A target parameter is the golden parameter whose values it holds (compared as sorted values, so that the
converters' transposes and q/k/v reorderings do not hide it), or the golden parameters it is stacked from
(a fused ``qkv`` made of ``q_proj``, ``k_proj``, ``v_proj``: that target module then has no single partner). Two modules pair when the golden parameters
behind all the target module's parameters (its own and its children's) are exactly the golden module's;
modules without parameters (activations, dropouts, rotary tables) are paired by hand in each pair's script.
"""

from __future__ import annotations

import json
import sys

import torch


def _fingerprint(t: torch.Tensor) -> tuple:
    return tuple(t.detach().flatten().sort().values.tolist())


def _pieces(t: torch.Tensor, golden: dict[str, torch.Tensor]) -> list[str]:
    """The golden parameters a fused target parameter is made of (stacked along its first dimension)."""
    hits, rows = [], 0
    for name, g in golden.items():
        if g.dim() != t.dim() or g.shape[1:] != t.shape[1:] or g.shape[0] >= t.shape[0]:
            continue
        n = g.shape[0]
        if any(torch.equal(t[k:k + n], g) for k in range(0, t.shape[0] - n + 1)):
            hits.append(name)
            rows += n
    return hits if rows == t.shape[0] else []


def param_pairs(target: torch.nn.Module, golden: torch.nn.Module) -> dict[str, tuple[str, ...]]:
    """``{target parameter: golden parameters}`` by value: the one holding the same values (up to order), or
    the several a fused target parameter (a converter's q/k/v concatenation) is stacked from."""
    by_value: dict[tuple, list[str]] = {}
    g_params = dict(golden.named_parameters(remove_duplicate=False))
    for name, p in g_params.items():
        by_value.setdefault(_fingerprint(p), []).append(name)
    out: dict[str, tuple[str, ...]] = {}
    with torch.no_grad():
        for name, p in target.named_parameters(remove_duplicate=False):
            hits = by_value.get(_fingerprint(p), [])
            if len(hits) == 1:
                out[name] = (hits[0],)
            elif not hits and (pieces := _pieces(p, g_params)):
                out[name] = tuple(pieces)
    return out


def _owned(model: torch.nn.Module, mapping: dict[str, tuple[str, ...]] | None) -> dict[str, frozenset[str]]:
    out = {}
    for path, module in model.named_modules():
        if not path:
            continue
        names = [f"{path}.{n}" for n, _ in module.named_parameters(remove_duplicate=False)]
        if mapping is not None:
            names = [g for n in names for g in mapping.get(n, ("?" + n,))]
        if names:
            out[path] = frozenset(names)
    return out


def module_pairs(target: torch.nn.Module, golden: torch.nn.Module, by_hand: dict[str, str]) -> dict[str, str]:
    """``{target module path: golden module path}``: by parameters, then the pairs given by hand."""
    mapping = param_pairs(target, golden)
    golden_sets: dict[frozenset[str], list[str]] = {}
    for path, names in _owned(golden, None).items():
        golden_sets.setdefault(names, []).append(path)
    target_sets: dict[frozenset[str], list[str]] = {}
    for path, names in _owned(target, mapping).items():
        target_sets.setdefault(names, []).append(path)
    out = {}
    for names, t_paths in target_sets.items():
        g_paths = golden_sets.get(names, [])
        if len(g_paths) == len(t_paths):  # nested modules owning the same weights pair outer with outer
            out.update(zip(sorted(t_paths, key=len), sorted(g_paths, key=len)))
    out.update(by_hand)
    return out


def write(pair: str, target: torch.nn.Module, golden: torch.nn.Module, by_hand: dict[str, str],
          fault_module: str) -> None:
    """Print the pair's module facts as JSON (``make_truth.py`` reads them)."""
    pairs = module_pairs(target, golden, by_hand)
    unpaired = [p for p, _ in target.named_modules() if p and p not in pairs]
    json.dump({"pair": pair, "modules": pairs, "unpaired_modules": unpaired, "fault_module": fault_module},
              sys.stdout, indent=1)
