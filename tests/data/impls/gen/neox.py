"""GPT-NeoX twice: Hugging Face ``GPTNeoXForCausalLM`` (golden) and litgpt ``GPT`` (target), the weights
converted by litgpt's own ``copy_weights_gpt_neox``.

``python neox.py hf|litgpt|litgpt_fault LEVEL`` writes ``dumps/neox_<side>_<LEVEL>``. The fault: layer 1's
``norm_2`` (the MLP's LayerNorm) runs with eps 0.1 instead of 1e-5.
"""

from __future__ import annotations

import sys

import torch
from common import dump_one_step, hf_checkpoint, randomize

VOCAB, DIM, HEADS, LAYERS, FFN = 64, 32, 4, 2, 64
#: the fault pair's target module (its own name) and what changes in it
FAULT_MODULE = "transformer.h.1.norm_2"
FAULT_EPS = 0.1


def hf_model() -> torch.nn.Module:
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    torch.manual_seed(0)
    cfg = GPTNeoXConfig(vocab_size=VOCAB, hidden_size=DIM, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                        intermediate_size=FFN, hidden_act="gelu", rotary_pct=0.25, rotary_emb_base=10000,
                        max_position_embeddings=64, use_parallel_residual=True, tie_word_embeddings=False,
                        attention_dropout=0.0, hidden_dropout=0.0, layer_norm_eps=1e-5, initializer_range=0.2)
    cfg._attn_implementation = "sdpa"
    return randomize(GPTNeoXForCausalLM(cfg)).eval()


def litgpt_model(hf: torch.nn.Module) -> torch.nn.Module:
    from litgpt import GPT, Config
    from litgpt.scripts.convert_hf_checkpoint import copy_weights_gpt_neox

    cfg = Config.from_name("pythia-14m", block_size=64, vocab_size=VOCAB, padded_vocab_size=VOCAB,
                           n_layer=LAYERS, n_embd=DIM, n_head=HEADS, intermediate_size=FFN)
    state: dict[str, torch.Tensor] = {}
    copy_weights_gpt_neox(cfg, state, hf_checkpoint(hf))
    model = GPT(cfg)
    model.load_state_dict(state, strict=True)
    return model.eval()


def main(side: str, level: str) -> None:
    hf = hf_model()
    if side == "hf":
        dump_one_step(hf, lambda ids: hf(input_ids=ids).logits, VOCAB, level, f"neox_hf_{level}")
        return
    lit = litgpt_model(hf)
    if side == "litgpt_fault":
        lit.get_submodule(FAULT_MODULE).eps = FAULT_EPS
    dump_one_step(lit, lit, VOCAB, level, f"neox_{side}_{level}")


def check() -> None:
    """The conversion is exact: both models give the same logits."""
    hf = hf_model()
    lit = litgpt_model(hf)
    ids = torch.randint(0, VOCAB, (2, 8))
    with torch.no_grad():
        print("max |logits diff|", (hf(input_ids=ids).logits - lit(ids)).abs().max().item())


#: modules without parameters, paired by what they compute
BY_HAND: dict[str, str] = {}  # litgpt has no module without parameters that HF has too


def modules() -> None:
    """Print the module pairs (``pairing.py``)."""
    from pairing import write

    hf = hf_model()
    write("neox", litgpt_model(hf), hf, BY_HAND, FAULT_MODULE)


if __name__ == "__main__":
    {"check": check, "modules": modules}.get(sys.argv[1], lambda: main(*sys.argv[1:3]))()
