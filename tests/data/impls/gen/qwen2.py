"""Qwen2 twice: Hugging Face ``Qwen2ForCausalLM`` (golden) and torchtune's ``qwen2`` ``TransformerDecoder``
(target), the weights converted by torchtune's own ``qwen2_hf_to_tune``.

``python qwen2.py tt|tt_fault LEVEL`` (and ``hf``) writes ``dumps/qwen2_<side>_<LEVEL>``. The fault: layer 1's
MLP down projection (``layers.1.mlp.w2``) converted × 1.5.
"""

from __future__ import annotations

import sys

import torch
from common import dump_one_step, hf_checkpoint, randomize

VOCAB, DIM, HEADS, KV_HEADS, LAYERS, FFN, MAX_SEQ = 64, 32, 4, 2, 2, 64, 64
FAULT_MODULE = "layers.1.mlp.w2"
FAULT_SCALE = 1.5


def hf_model() -> torch.nn.Module:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=VOCAB, hidden_size=DIM, intermediate_size=FFN, num_hidden_layers=LAYERS,
                      num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=MAX_SEQ,
                      rms_norm_eps=1e-6, rope_theta=1_000_000.0, tie_word_embeddings=False, attention_dropout=0.0,
                      use_sliding_window=False)
    cfg._attn_implementation = "sdpa"
    return randomize(Qwen2ForCausalLM(cfg)).eval()


def tt_model(hf: torch.nn.Module, fault: bool = False) -> torch.nn.Module:
    from torchtune.models.qwen2 import qwen2
    from torchtune.models.qwen2._convert_weights import qwen2_hf_to_tune

    state = qwen2_hf_to_tune(hf_checkpoint(hf), num_heads=HEADS, num_kv_heads=KV_HEADS, dim=DIM)
    if fault:
        state[FAULT_MODULE + ".weight"] = state[FAULT_MODULE + ".weight"] * FAULT_SCALE
    model = qwen2(vocab_size=VOCAB, num_layers=LAYERS, num_heads=HEADS, num_kv_heads=KV_HEADS, embed_dim=DIM,
                  intermediate_dim=FFN, max_seq_len=MAX_SEQ, norm_eps=1e-6, rope_base=1_000_000.0)
    model.load_state_dict(state, strict=True)
    return model.eval()


def main(side: str, level: str) -> None:
    hf = hf_model()
    if side == "hf":
        dump_one_step(hf, lambda ids: hf(input_ids=ids).logits, VOCAB, level, f"qwen2_hf_{level}")
        return
    tt = tt_model(hf, fault=side == "tt_fault")
    dump_one_step(tt, tt, VOCAB, level, f"qwen2_{side}_{level}")


def check() -> None:
    """The conversion is exact: both models give the same logits."""
    hf = hf_model()
    tt = tt_model(hf)
    ids = torch.randint(0, VOCAB, (2, 8))
    with torch.no_grad():
        print("max |logits diff|", (hf(input_ids=ids).logits - tt(ids)).abs().max().item())


#: modules without parameters, paired by what they compute
BY_HAND = {f"layers.{i}.mlp.activation": f"model.layers.{i}.mlp.act_fn" for i in range(LAYERS)}


def modules() -> None:
    """Print the module pairs (``pairing.py``)."""
    from pairing import write

    hf = hf_model()
    write("qwen2", tt_model(hf), hf, BY_HAND, FAULT_MODULE)


if __name__ == "__main__":
    {"check": check, "modules": modules}.get(sys.argv[1], lambda: main(*sys.argv[1:3]))()
