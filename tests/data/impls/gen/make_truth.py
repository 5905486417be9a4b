"""Write ``../truth.json``: the true pairing and the first divergence of every pair of the corpus.

Runs with msprobe-core installed (the project's ``.venv``), after the pair scripts wrote their dumps and
their ``../<pair>.modules.json`` (``python <pair>.py modules``). For each pair and level:

* calls: a target module call pairs with the golden call of the module its converted weights came from
  (``pairing.py``), the n-th call with the n-th (a module shared by several layers: the call of the paired
  module's class holding the same values); a target API call pairs with the golden call of the same
  op whose tensors hold the same values (every output row and, as a multiset, every input row, shape and
  statistics alike) when exactly one such call exists; other calls have no judged partner;
* rows: within a call pair (its forward, backward and ``parameters_grad`` entries), a target tensor row
  pairs with the golden row of the same kind (input, output, parameter, gradient) and the same shape and
  statistics, the one of the same name where several match; non-tensor rows are not judged;
* first divergence: the first data key of the fault dump whose statistics differ from the clean target
  dump's (the same program, so every earlier key is bit-identical).

``python make_truth.py`` (from this folder).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from msprobe_core.load.dumpjson import load_dump_file
from msprobe_core.model import DumpTable

HERE = Path(__file__).resolve().parent
DATA = HERE.parent
DUMPS = DATA / "dumps"
#: pair -> (golden side, target side, fault side), levels dumped
PAIRS = {"neox": ("neox_hf", "neox_litgpt", "neox_litgpt_fault"), "qwen2": ("qwen2_hf", "qwen2_tt", "qwen2_tt_fault"),
         "phi": ("phi_hf", "phi_litgpt", "phi_litgpt_fault"),
         "mistral": ("mistral_hf", "mistral_tt", "mistral_tt_fault"),
         "msllama": ("msllama_hf", "msllama_mf", "msllama_mf_fault")}
LEVELS = ("mix", "L1")
STATS = ("max", "min", "mean", "norm")
_MODULE = re.compile(r"^(Module|Cell)\.(.+)\.([^.]+)\.forward\.(\d+)$")


def _load(name: str) -> DumpTable:
    return load_dump_file(DUMPS / name / "dump.json", "dump")


def _rows(table: DumpTable) -> dict[str, list[int]]:
    return {api.key: list(range(api.first_row, api.first_row + api.n_rows)) for api in table.apis}


def _close(a: object, b: object) -> bool:
    if a is None or b is None:
        return a is b
    x, y = float(a), float(b)  # type: ignore[arg-type]
    return math.isclose(x, y, rel_tol=1e-4, abs_tol=1e-6) or (math.isnan(x) and math.isnan(y))


def _dtype(name: object) -> str:
    """A dtype as both frameworks' dumpers write it, alike (``torch.float32`` and ``Float32``); integers of
    any width alike (token ids are int64 in PyTorch, int32 in MindSpore: the same values)."""
    text = str(name).lower().removeprefix("torch.")
    return "int" if text.startswith(("int", "uint")) else text


def _same(t: DumpTable, r: int, g: DumpTable, s: int) -> bool:
    return (t.state[r] == g.state[s] and _dtype(t.dtype[r]) == _dtype(g.dtype[s]) and t.shape[r] == g.shape[s]
            and all(_close(getattr(t, c)[r], getattr(g, c)[s]) for c in STATS))


def _tensor(t: DumpTable, r: int) -> bool:
    return t.max[r] is not None and (str(t.dtype[r]).startswith("torch.") or str(t.dtype[r])[:1].isupper())


def _op(key: str) -> str:
    parts = key.split(".")
    return ".".join(parts[:2])  # Functional.linear, Tensor.__add__, Torch.matmul


def _same_op(t_key: str, g_key: str, cross: bool) -> bool:
    """Two API calls may pair: the same op, or across frameworks any op (their values alone decide: the
    names of MindSpore's primitives and PyTorch's APIs have no common table that is not this tool's own)."""
    return cross or _op(t_key) == _op(g_key)


def _derived(key: str) -> list[str]:
    if key.endswith(".forward"):
        return [key, key[: -len("forward")] + "backward"]
    head, n = key.rsplit(".forward.", 1)
    # msprobe 26 numbers a module's parameters_grad entry like its calls (the first call's is ``.0``)
    return [key, f"{head}.backward.{n}", f"{head}.parameters_grad.{n}"]


def _values_match(t: DumpTable, t_rows: list[int], g: DumpTable, g_rows: list[int]) -> bool:
    t_out = [r for r in t_rows if _tensor(t, r) and t.state[r] == "output"]
    g_out = [s for s in g_rows if _tensor(g, s) and g.state[s] == "output"]
    if not t_out or len(t_out) != len(g_out) or not all(_same(t, r, g, s) for r, s in zip(t_out, g_out)):
        return False
    t_in = [r for r in t_rows if _tensor(t, r) and t.state[r] == "input"]
    g_in = [s for s in g_rows if _tensor(g, s) and g.state[s] == "input"]
    if len(t_in) != len(g_in):
        return False
    left = list(g_in)
    for r in t_in:
        hit = next((s for s in left if _same(t, r, g, s)), None)
        if hit is None:
            return False
        left.remove(hit)
    return True


def call_pairs(t: DumpTable, g: DumpTable, modules: dict[str, str]) -> dict[str, str]:
    """``{target forward key: golden forward key}``."""
    t_rows, g_rows = _rows(t), _rows(g)
    cross = any(k.startswith(("Cell.", "Primitive.")) for k in t_rows) != any(
        k.startswith(("Cell.", "Primitive.")) for k in g_rows)
    golden_modules = {}
    for key in g_rows:
        m = _MODULE.match(key)
        if m:
            golden_modules[(m.group(2), m.group(4))] = key
    out: dict[str, str] = {}
    for key in t_rows:
        m = _MODULE.match(key)
        if m:
            partner = golden_modules.get((modules.get(m.group(2), "\0"), m.group(4)))
            if partner is None and m.group(2) in modules:
                # a module instance shared by several layers (torchtune's one SiLU) is named after the first
                # layer, its n-th call being layer n's: the golden call of that class holding the same values
                g_class = next((k for (p, _), k in golden_modules.items() if p == modules[m.group(2)]), "")
                g_class = _MODULE.match(g_class).group(3) if g_class else "\0"
                hits = [k for k in golden_modules.values() if _MODULE.match(k).group(3) == g_class
                        and _values_match(t, t_rows[key], g, g_rows[k])]
                partner = hits[0] if len(hits) == 1 else None
            if partner:
                out[key] = partner
        elif key.endswith(".forward"):
            hits = [k for k in g_rows if k.endswith(".forward") and _same_op(key, k, cross)
                    and _values_match(t, t_rows[key], g, g_rows[k])]
            if len(hits) == 1:
                out[key] = hits[0]
    return out


def row_pairs(t: DumpTable, g: DumpTable, calls: dict[str, str]) -> dict[str, str]:
    """``{target row: golden row}`` of the tensor rows of every call pair."""
    t_rows, g_rows = _rows(t), _rows(g)
    out = {}
    for t_key, g_key in calls.items():
        for t_call, g_call in zip(_derived(t_key), _derived(g_key)):
            candidates = g_rows.get(g_call, [])
            for r in t_rows.get(t_call, []):
                if not _tensor(t, r):
                    continue
                hits = [s for s in candidates if _tensor(g, s) and _same(t, r, g, s)]
                same_name = [s for s in hits if g.name[s][len(g_call):] == t.name[r][len(t_call):]]
                if len(hits) == 1 or len(same_name) == 1:
                    out[t.name[r]] = g.name[(hits if len(hits) == 1 else same_name)[0]]
    return out


def first_divergence(clean: DumpTable, fault: DumpTable) -> str:
    """The first data key of ``fault`` whose rows differ from ``clean``'s (same program, same keys)."""
    c_rows, f_rows = _rows(clean), _rows(fault)
    assert list(c_rows) == list(f_rows), "the fault run made other calls than the clean one"
    for key, rows in f_rows.items():
        for r, s in zip(c_rows[key], rows):
            if any(getattr(clean, c)[r] != getattr(fault, c)[s] for c in STATS):
                return key
    raise AssertionError("the fault changed nothing")


def main() -> None:
    truth = {}
    for pair, (golden, target, fault) in PAIRS.items():
        facts = json.loads((DATA / f"{pair}.modules.json").read_text())
        entry = {"golden": golden, "target": target, "fault": fault, "modules": facts["modules"],
                 "unpaired_modules": facts["unpaired_modules"], "fault_module": facts["fault_module"],
                 "levels": {}}
        for level in LEVELS:
            g, t, f = _load(f"{golden}_{level}"), _load(f"{target}_{level}"), _load(f"{fault}_{level}")
            calls = call_pairs(t, g, facts["modules"])
            rows = row_pairs(t, g, calls)
            entry["levels"][level] = {"first_divergence": first_divergence(t, f), "calls": calls, "rows": rows,
                                      "target_tensor_rows": sum(1 for r in range(len(t)) if _tensor(t, r))}
            print(pair, level, len(calls), "calls", len(rows), "rows of", entry["levels"][level]["target_tensor_rows"],
                  "first divergence", entry["levels"][level]["first_divergence"])
        truth[pair] = entry
    (DATA / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")


if __name__ == "__main__":
    main()
