"""Mistral twice: Hugging Face ``MistralForCausalLM`` (golden) and torchtune's ``mistral``
``TransformerDecoder`` (target), the weights converted by torchtune's own ``convert_weights.hf_to_tune`` (which
undoes HF's q/k row permutation for torchtune's interleaved rotary embedding).

``python mistral.py hf|tt|tt_fault LEVEL`` writes ``dumps/mistral_<side>_<LEVEL>``. The fault: layer 1's
MLP RMSNorm (``layers.1.mlp_norm``) runs with eps 0.1 instead of 1e-5.
"""

from __future__ import annotations

import sys

import torch
from common import dump_one_step, hf_checkpoint, randomize

VOCAB, DIM, HEADS, KV_HEADS, LAYERS, FFN, MAX_SEQ = 64, 32, 4, 2, 2, 64, 64
FAULT_MODULE = "layers.1.mlp_norm"
FAULT_EPS = 0.1


def hf_model() -> torch.nn.Module:
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(0)
    cfg = MistralConfig(vocab_size=VOCAB, hidden_size=DIM, intermediate_size=FFN, num_hidden_layers=LAYERS,
                        num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=MAX_SEQ,
                        rms_norm_eps=1e-5, rope_theta=10_000.0, sliding_window=None, tie_word_embeddings=False,
                        attention_dropout=0.0, head_dim=DIM // HEADS)
    cfg._attn_implementation = "sdpa"
    return randomize(MistralForCausalLM(cfg)).eval()


def tt_model(hf: torch.nn.Module) -> torch.nn.Module:
    from torchtune.models.convert_weights import hf_to_tune
    from torchtune.models.mistral import mistral

    state = hf_to_tune(hf_checkpoint(hf), num_heads=HEADS, num_kv_heads=KV_HEADS, dim=DIM)
    model = mistral(vocab_size=VOCAB, num_layers=LAYERS, num_heads=HEADS, num_kv_heads=KV_HEADS, embed_dim=DIM,
                    intermediate_dim=FFN, max_seq_len=MAX_SEQ, norm_eps=1e-5, rope_base=10_000)
    model.load_state_dict(state, strict=True)
    return model.eval()


def main(side: str, level: str) -> None:
    hf = hf_model()
    if side == "hf":
        dump_one_step(hf, lambda ids: hf(input_ids=ids).logits, VOCAB, level, f"mistral_hf_{level}")
        return
    tt = tt_model(hf)
    if side == "tt_fault":
        tt.get_submodule(FAULT_MODULE).eps = FAULT_EPS
    dump_one_step(tt, tt, VOCAB, level, f"mistral_{side}_{level}")


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
    write("mistral", tt_model(hf), hf, BY_HAND, FAULT_MODULE)


if __name__ == "__main__":
    {"check": check, "modules": modules}.get(sys.argv[1], lambda: main(*sys.argv[1:3]))()
