"""How each twin names the golden model's modules: the truth the auto-map test scores against (no torch here).

The generators convert weights with these tables (``models.convert``, ``gen_ms.twin_name``), so a module pair
is true by construction: ``target_path(variant, golden_path)`` is the target module that does the golden
module's work, ``None`` where the target has none (q/k/v of the fused variant).
"""

from __future__ import annotations

#: golden layer-relative module path → PyTorch twin's (Megatron-style names)
PT_LAYER = {"ln1": "input_layernorm", "attn": "self_attention", "attn.q_proj": "self_attention.query",
            "attn.k_proj": "self_attention.key", "attn.v_proj": "self_attention.value",
            "attn.o_proj": "self_attention.dense", "ln2": "post_attention_layernorm", "mlp": "mlp",
            "mlp.up": "mlp.dense_h_to_4h", "mlp.act": "mlp.activation", "mlp.down": "mlp.dense_4h_to_h"}
PT_TOP = {"embed": "word_embeddings", "norm": "transformer.final_layernorm", "head": "output_layer"}
PT_LAYERS = "transformer.layers"

#: the same for the MindSpore twin
MS_LAYER = {"ln1": "norm_a", "attn": "mixer", "attn.q_proj": "mixer.wq", "attn.k_proj": "mixer.wk",
            "attn.v_proj": "mixer.wv", "attn.o_proj": "mixer.wo", "ln2": "norm_b", "mlp": "ffn",
            "mlp.up": "ffn.w_in", "mlp.act": "ffn.act", "mlp.down": "ffn.w_out"}
MS_TOP = {"embed": "tok_emb", "norm": "norm_out", "head": "proj"}
MS_LAYERS = "blocks"

FUSED_AWAY = ("attn.q_proj", "attn.k_proj", "attn.v_proj")


def target_path(variant: str, golden_path: str) -> str | None:
    """The target module path standing for golden module ``golden_path`` (``layers.0.attn.q_proj``)."""
    layer, top, layers = (MS_LAYER, MS_TOP, MS_LAYERS) if variant == "ms" else (PT_LAYER, PT_TOP, PT_LAYERS)
    if golden_path in top:
        return top[golden_path]
    parts = golden_path.split(".", 2)
    if parts[0] != "layers" or len(parts) < 2:
        return None
    if len(parts) == 2:
        return f"{layers}.{parts[1]}"
    if variant == "fused" and parts[2] in FUSED_AWAY:
        return None
    path = layer[parts[2]]
    if variant == "wrapped" and parts[2].startswith("mlp."):  # the wrapped MLP's modules sit in mlp.block
        path = path.replace("mlp.", "mlp.block.", 1)
    return f"{layers}.{parts[1]}.{path}"
