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


# ------------------------------------------------------------------------- the independent implementations
#: ``impl_lit_*`` module path → ``impl_hf_*`` module path (gen/gen_impl.py; ``embedding`` has none)
IMPL_LAYERS = 2
#: litgpt-style parameter owners in the order the optimizer holds them, with their HF-style partners (``None``:
#: the fused ``qkv``, one of a 1→N relation)
IMPL_LIT_PARAMS: list[tuple[str, str | None]] = [("lm_head", "lm_head"), ("embedding.wte", "model.embed_tokens")]
for _n in range(IMPL_LAYERS):
    IMPL_LIT_PARAMS += [(f"h.{_n}.norm_1", f"model.layers.{_n}.input_layernorm"), (f"h.{_n}.attn.qkv", None),
                        (f"h.{_n}.attn.proj", f"model.layers.{_n}.self_attn.o_proj"),
                        (f"h.{_n}.norm_2", f"model.layers.{_n}.post_attention_layernorm"),
                        (f"h.{_n}.mlp.fc_1", f"model.layers.{_n}.mlp.gate_proj"),
                        (f"h.{_n}.mlp.fc_2", f"model.layers.{_n}.mlp.up_proj"),
                        (f"h.{_n}.mlp.proj", f"model.layers.{_n}.mlp.down_proj")]
IMPL_LIT_PARAMS.append(("ln_f", "model.norm"))
#: the HF-style parameter owners in the optimizer's order
IMPL_HF_PARAMS = ["model.embed_tokens"] + [
    f"model.layers.{n}.{m}" for n in range(IMPL_LAYERS) for m in (
        "input_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
        "post_attention_layernorm", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")] + ["model.norm", "lm_head"]
IMPL_MODULES = dict(IMPL_LIT_PARAMS) | {"ln_f": "model.norm"} | {
    f"h.{n}{a}": f"model.layers.{n}{b}" for n in range(IMPL_LAYERS)
    for a, b in (("", ""), (".attn", ".self_attn"), (".mlp", ".mlp"))}
#: a Block and its attention take by keyword on the HF side what litgpt passes positionally
IMPL_INPUTS = {".input.0": ".input.hidden_states", ".input.1": ".input.position_embeddings.0",
               ".input.2": ".input.position_embeddings.1"}
#: one Adam step (``foreach=False``) per parameter: the ops and their call number's offset (one ``__truediv__``
#: of the forward's rotary embedding comes first)
ADAM_OPS = (("Tensor.__iadd__", 0), ("Tensor.lerp_", 0), ("Tensor.mul_", 0), ("Tensor.addcmul_", 0),
            ("Tensor.sqrt", 0), ("Tensor.__truediv__", 1), ("Tensor.add_", 0), ("Tensor.addcdiv_", 0))


def impl_truth(variant: str, level: str) -> dict[str, str]:
    """``{target row: golden row}`` of ``impl_{variant}_{level}`` against ``impl_hf_{level}``: the module rows
    (the blocks' and attentions' inputs by correspondence) and, at mix, the optimizer's calls by parameter.
    API calls inside the modules are left out: this truth judges the module and optimizer pairing only."""
    target, golden = _call_rows(_table(f"impl_{variant}_{level}")), _call_rows(_table(f"impl_hf_{level}"))
    g_by_path = {split[0]: key for key in golden if (split := _module_path(key))}
    call_pairs = {key: g_by_path[IMPL_MODULES[split[0]]] for key in target
                  if (split := _module_path(key)) and IMPL_MODULES.get(split[0]) in g_by_path}
    hf_order = {path: k for k, path in enumerate(IMPL_HF_PARAMS)}
    for k, (_lit, hf) in enumerate(IMPL_LIT_PARAMS):
        if hf is None:
            continue
        for op, offset in ADAM_OPS:
            t_key, g_key = f"{op}.{k + offset}.forward", f"{op}.{hf_order[hf] + offset}.forward"
            if t_key in target and g_key in golden:
                call_pairs[t_key] = g_key
    out = _rows_of(call_pairs, target, golden)
    for t_key, g_key in call_pairs.items():
        for t_suffix, g_suffix in IMPL_INPUTS.items():
            if t_key + t_suffix in target.get(t_key, {}) and g_key + g_suffix in golden.get(g_key, {}):
                out[t_key + t_suffix] = g_key + g_suffix
    return out


def impl_judged(proposed: dict[str, str], variant: str, level: str) -> dict[str, str]:
    """The proposed rows :func:`impl_truth` judges: those of module calls and of the optimizer's calls (the
    calls ``construct.json`` gives the parent ``optimizer``)."""
    import json

    construct = json.loads((DUMPS / f"impl_{variant}_{level}" / "construct.json").read_text(encoding="utf-8"))
    updates = tuple(k[: -len("forward")] for k, parent in construct.items() if parent == "optimizer")
    return {t: g for t, g in proposed.items() if t.startswith("Module.") or t.startswith(updates)}
