"""Phi (phi-2 architecture) twice: Hugging Face ``PhiForCausalLM`` (golden) and litgpt ``GPT`` (target), the
weights converted by litgpt's own ``copy_weights_phi`` (which fuses HF's separate q/k/v into one ``qkv``).

``python phi.py hf|litgpt|litgpt_fault LEVEL`` writes ``dumps/phi_<side>_<LEVEL>``. The fault: layer 1's
attention output projection (``transformer.h.1.attn.proj``) converted × 1.5.
"""

from __future__ import annotations

import sys

import torch
from common import dump_one_step, hf_checkpoint, randomize

VOCAB, DIM, HEADS, LAYERS, FFN = 64, 32, 4, 2, 128
FAULT_MODULE = "transformer.h.1.attn.proj"
FAULT_SCALE = 1.5


def hf_model() -> torch.nn.Module:
    from transformers import PhiConfig, PhiForCausalLM

    torch.manual_seed(0)
    cfg = PhiConfig(vocab_size=VOCAB, hidden_size=DIM, intermediate_size=FFN, num_hidden_layers=LAYERS,
                    num_attention_heads=HEADS, num_key_value_heads=HEADS, hidden_act="gelu_new",
                    max_position_embeddings=64, partial_rotary_factor=0.5, layer_norm_eps=1e-5,
                    resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0, tie_word_embeddings=False,
                    qk_layernorm=False)
    cfg._attn_implementation = "sdpa"
    return randomize(PhiForCausalLM(cfg)).eval()


def litgpt_model(hf: torch.nn.Module, fault: bool = False) -> torch.nn.Module:
    from litgpt import GPT, Config
    from litgpt.scripts.convert_hf_checkpoint import copy_weights_phi

    cfg = Config.from_name("phi-2", block_size=64, vocab_size=VOCAB, padded_vocab_size=VOCAB, n_layer=LAYERS,
                           n_embd=DIM, n_head=HEADS, n_query_groups=HEADS, intermediate_size=FFN,
                           rotary_percentage=0.5)
    state: dict[str, torch.Tensor] = {}
    copy_weights_phi(cfg, {}, state, hf_checkpoint(hf))
    if fault:
        state[FAULT_MODULE + ".weight"] = state[FAULT_MODULE + ".weight"] * FAULT_SCALE
    model = GPT(cfg)
    model.load_state_dict(state, strict=True)
    return model.eval()


def main(side: str, level: str) -> None:
    hf = hf_model()
    if side == "hf":
        dump_one_step(hf, lambda ids: hf(input_ids=ids).logits, VOCAB, level, f"phi_hf_{level}")
        return
    lit = litgpt_model(hf, fault=side == "litgpt_fault")
    dump_one_step(lit, lit, VOCAB, level, f"phi_{side}_{level}")


def check() -> None:
    """The conversion is exact: both models give the same logits."""
    hf = hf_model()
    lit = litgpt_model(hf)
    ids = torch.randint(0, VOCAB, (2, 8))
    with torch.no_grad():
        print("max |logits diff|", (hf(input_ids=ids).logits - lit(ids)).abs().max().item())


#: modules without parameters, paired by what they compute (litgpt's Phi MLP calls gelu as a function)
BY_HAND: dict[str, str] = {}


def modules() -> None:
    """Print the module pairs (``pairing.py``)."""
    from pairing import write

    hf = hf_model()
    write("phi", litgpt_model(hf), hf, BY_HAND, FAULT_MODULE)


if __name__ == "__main__":
    {"check": check, "modules": modules}.get(sys.argv[1], lambda: main(*sys.argv[1:3]))()
