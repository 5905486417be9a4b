"""The true target→golden row pairs of the auto-map corpus (tests/data/automap), known by construction.

Module pairs come from the tables the generators converted the weights with (``gen/renames.py``); API calls
pair by occurrence, the k-th call of an op with the k-th call of the same op (or its other framework's
spelling) on the golden side, both runs making the same calls in the same order, less the calls a fused
layer makes differently (the golden q/k/v ``linear`` calls and the target's ``query_key_value`` one).
Backward and ``parameters_grad`` rows follow their forward call, as msprobe numbers them.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from msprobe_core.load.dumpjson import load_dump_file
from msprobe_core.model import DumpTable

DATA = Path(__file__).parent / "data" / "automap"
DUMPS = DATA / "dumps"
#: the PyTorch twin's wrong weight lives in this module
WRONG_MODULE = "Module.transformer.layers.1.mlp.dense_4h_to_h.Linear.forward.0"

#: the MindSpore twin's spelling of the golden's ops (only where they differ)
MS_OPS = {"gather": "embedding"}


def _renames():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("automap_renames", DATA / "gen" / "renames.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _table(name: str) -> DumpTable:
    return load_dump_file(DUMPS / name / "dump.json", "dump")


def _call_rows(table: DumpTable) -> dict[str, dict[str, str | None]]:
    """Every data key's rows (as the loader names them) with their shapes."""
    return {api.key: {table.name[r]: table.shape[r] for r in range(api.first_row, api.first_row + api.n_rows)}
            for api in table.apis}


def _module_path(key: str) -> tuple[str, str] | None:
    """(module path, class) of a module forward key ``Module.a.b.Cls.forward.0``."""
    parts = key.split(".")
    if len(parts) >= 5 and parts[-2] == "forward" and parts[0] in ("Module", "Cell"):
        return ".".join(parts[1:-3]), parts[-3]
    return None


def _api_op(key: str) -> str | None:
    parts = key.split(".")
    if parts[-1] != "forward" or parts[0] in ("Module", "Cell"):
        return None
    op = (parts[-4] if parts[0] == "Primitive" else parts[-3]).replace("_", "").lower()
    return MS_OPS.get(op, op)


def _fused_away(variant: str, side: str, op: str, k: int) -> bool:
    """Whether the k-th ``op`` call of a side is one of the calls a fused layer makes differently."""
    if variant != "fused" or op != "linear":
        return False
    if side == "golden":  # six linear calls per layer, q, k, v first; the head's last
        return k < 12 and k % 6 < 3
    return k < 8 and k % 4 == 0  # four per layer, query_key_value first


def truth(variant: str, level: str) -> dict[str, str]:
    """``{target row: golden row}`` of one pair of the corpus (variant ``renamed``, ``wrong``, ``fused``, ``extra``, ``ms``)."""
    target, golden = _call_rows(_table(f"{variant}_{level}")), _call_rows(_table(f"golden_{level}"))
    renames = _renames()
    golden_modules = {}
    for key in golden:
        split = _module_path(key)
        if split:
            golden_modules[split[0]] = key
    call_pairs: dict[str, str] = {}
    by_path = {}
    for key in target:
        split = _module_path(key)
        if split:
            by_path[split[0]] = key
    for path, g_key in golden_modules.items():
        t_path = renames.target_path(variant, path)
        if t_path is not None and t_path in by_path:
            call_pairs[by_path[t_path]] = g_key
    seen: dict[tuple[str, str], int] = {}
    golden_calls: dict[tuple[str, int], str] = {}
    for key in golden:
        op = _api_op(key)
        if op:
            k = seen[("golden", op)] = seen.get(("golden", op), -1) + 1
            if not _fused_away(variant, "golden", op, k):
                golden_calls[(op, sum(1 for o, _ in golden_calls if o == op))] = key
    counter: dict[str, int] = {}
    for key in target:
        op = _api_op(key)
        if op:
            k = seen[("target", op)] = seen.get(("target", op), -1) + 1
            if _fused_away(variant, "target", op, k):
                continue
            n = counter[op] = counter.get(op, -1) + 1
            if (op, n) in golden_calls:
                call_pairs[key] = golden_calls[(op, n)]
    return _rows_of(call_pairs, target, golden)


def _derived(key: str) -> list[str]:
    if key.endswith(".forward"):  # API
        return [key[: -len("forward")] + "backward"]
    head = key.rsplit(".forward.", 1)[0]
    return [f"{head}.backward.{key.rsplit('.', 1)[1]}", f"{head}.parameters_grad"]


def _rows_of(call_pairs: dict[str, str], target: dict, golden: dict) -> dict[str, str]:
    out: dict[str, str] = {}
    for t_key, g_key in call_pairs.items():
        for t_call, g_call in [(t_key, g_key), *zip(_derived(t_key), _derived(g_key))]:
            for t_full in [k for k in target if k == t_call or k.startswith(t_call + ".")]:
                g_full = g_call + t_full[len(t_call):]
                g_rows = golden.get(g_full, {})
                for name, shape in target[t_full].items():
                    partner = g_full + name[len(t_full):]
                    if partner in g_rows and g_rows[partner] == shape:
                        out[name] = partner
    return out


def score(proposed: dict[str, str], true: dict[str, str]) -> tuple[float, float]:
    """(precision, recall) of proposed target→golden row pairs against the true ones."""
    hits = sum(1 for t, g in proposed.items() if true.get(t) == g)
    return (hits / len(proposed) if proposed else 0.0), (hits / len(true) if true else 0.0)
