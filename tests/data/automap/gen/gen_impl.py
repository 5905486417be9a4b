"""Two independent spellings of one tiny Llama, dumped by the real msprobe dumper (``impl_*`` dumps).

``python gen_impl.py hf|lit|litwrong|tt L0|mix OUT``. ``hf`` is written the way Hugging Face writes a Llama
(``model.embed_tokens``, ``model.layers.N.{input_layernorm, self_attn.{q,k,v,o}_proj, post_attention_layernorm,
mlp.{gate,up,down}_proj}``, ``model.norm``, ``lm_head``; a hand-written RMSNorm of six recorded calls; layers
called with keyword arguments, ``position_embeddings=(cos, sin)`` and ``attention_mask=None``; ``q_proj(x).view(…).transpose(…)``).
``lit`` the way litgpt writes one (``embedding.wte`` inside an extra ``embedding`` container that ``hf`` does
not have, ``h.N.{norm_1, attn.{qkv, proj}, norm_2, mlp.{fc_1, fc_2, proj}}``, ``ln_f``, ``lm_head``; q/k/v
fused in one Linear; RMSNorm by ``F.rms_norm``, one call the dumper does not record; blocks called
positionally with ``cos, sin``; the ``lm_head`` registered first, so the optimizer holds its parameters in
another order). Weights are converted from ``hf``'s (q/k/v concatenated); ``litwrong`` converts
``h.1.mlp.proj.weight`` transposed (square, so no shape tells it); ``tt`` is ``lit`` with torchtune's RMSNorm, whose parameter is ``scale``.
One training step with ``torch.optim.Adam``
(``foreach=False``), the optimizer's calls inside the dump.
"""

from __future__ import annotations

import json
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, DIM, HEADS, HIDDEN, BATCH, SEQ, EPS = 40, 16, 2, 16, 2, 5, 1e-6
#: decoder layers (2 in the corpus; more for a timing run, ``IMPL_LAYERS=48``)
LAYERS = int(os.environ.get("IMPL_LAYERS", "2"))
HEAD_DIM = DIM // HEADS
#: the parameter ``litwrong`` converts transposed (square: DIM x HIDDEN with HIDDEN == DIM)
WRONG_WEIGHT = "h.1.mlp.proj.weight"


def rope(seq: int) -> tuple[torch.Tensor, torch.Tensor]:
    inv = 1.0 / (10000 ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
    freqs = torch.outer(torch.arange(seq).float(), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


# --------------------------------------------------------------------------------------------- the HF way
class LlamaRMSNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(DIM))

    def forward(self, hidden_states):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + EPS)
        return self.weight * hidden_states


class LlamaAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q_proj = nn.Linear(DIM, DIM, bias=False)
        self.k_proj = nn.Linear(DIM, DIM, bias=False)
        self.v_proj = nn.Linear(DIM, DIM, bias=False)
        self.o_proj = nn.Linear(DIM, DIM, bias=False)

    def forward(self, hidden_states, position_embeddings=None, attention_mask=None):
        b, t, _ = hidden_states.shape
        shape = (b, t, HEADS, HEAD_DIM)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        cos, sin = position_embeddings
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, DIM))


class LlamaMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(DIM, HIDDEN, bias=False)
        self.up_proj = nn.Linear(DIM, HIDDEN, bias=False)
        self.down_proj = nn.Linear(HIDDEN, DIM, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.input_layernorm = LlamaRMSNorm()
        self.self_attn = LlamaAttention()
        self.post_attention_layernorm = LlamaRMSNorm()
        self.mlp = LlamaMLP()

    def forward(self, hidden_states, position_embeddings=None, attention_mask=None):
        residual = hidden_states
        hidden_states = self.self_attn(hidden_states=self.input_layernorm(hidden_states),
                                       position_embeddings=position_embeddings, attention_mask=attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        return residual + self.mlp(self.post_attention_layernorm(hidden_states))


class LlamaModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList([LlamaDecoderLayer() for _ in range(LAYERS)])
        self.norm = LlamaRMSNorm()

    def forward(self, input_ids):
        h = self.embed_tokens(input_ids)
        pos = rope(input_ids.shape[1])
        for layer in self.layers:
            h = layer(hidden_states=h, position_embeddings=pos, attention_mask=None)  # causal: no mask, as HF
        return self.norm(h)


class LlamaForCausalLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.model = LlamaModel()
        self.lm_head = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, input_ids):
        return self.lm_head(self.model(input_ids=input_ids))


# ------------------------------------------------------------------------------------------ the litgpt way
#: ``tt``: the litgpt layout with torchtune's RMSNorm, whose parameter is called ``scale``
NORM_PARAM = "weight"


class RMSNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        setattr(self, NORM_PARAM, nn.Parameter(torch.ones(DIM)))

    def forward(self, x):
        return F.rms_norm(x, (DIM,), getattr(self, NORM_PARAM), EPS)


class CausalSelfAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM, bias=False)
        self.proj = nn.Linear(DIM, DIM, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).split(DIM, dim=-1)
        q, k, v = (y.reshape(b, t, HEADS, HEAD_DIM).permute(0, 2, 1, 3) for y in (q, k, v))
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, DIM))


class LLaMAMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc_1 = nn.Linear(DIM, HIDDEN, bias=False)
        self.fc_2 = nn.Linear(DIM, HIDDEN, bias=False)
        self.proj = nn.Linear(HIDDEN, DIM, bias=False)

    def forward(self, x):
        return self.proj(F.silu(self.fc_1(x)) * self.fc_2(x))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm_1 = RMSNorm()
        self.attn = CausalSelfAttention()
        self.norm_2 = RMSNorm()
        self.mlp = LLaMAMLP()

    def forward(self, x, cos, sin):
        x = self.attn(self.norm_1(x), cos, sin) + x
        return self.mlp(self.norm_2(x)) + x


class TokenEmbedding(nn.Module):
    """The extra container: ``hf`` has no module around its token embedding."""

    def __init__(self) -> None:
        super().__init__()
        self.wte = nn.Embedding(VOCAB, DIM)

    def forward(self, idx):
        return self.wte(idx)


class GPT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lm_head = nn.Linear(DIM, VOCAB, bias=False)  # first, as litgpt registers it
        self.embedding = TokenEmbedding()
        self.h = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = RMSNorm()

    def forward(self, idx):
        x = self.embedding(idx)
        cos, sin = rope(idx.shape[1])
        for block in self.h:
            x = block(x, cos, sin)
        return self.lm_head(self.ln_f(x))


def hf_weights() -> dict[str, torch.Tensor]:
    torch.manual_seed(1234)
    net = LlamaForCausalLM()
    with torch.no_grad():
        for name, p in net.named_parameters():
            if name.endswith("layernorm.weight") or name == "model.norm.weight":
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
    return {k: v.detach().clone() for k, v in net.state_dict().items()}


def to_lit(hf: dict[str, torch.Tensor], wrong: bool) -> dict[str, torch.Tensor]:
    out = {"embedding.wte.weight": hf["model.embed_tokens.weight"], "ln_f.weight": hf["model.norm.weight"],
           "lm_head.weight": hf["lm_head.weight"]}
    for n in range(LAYERS):
        a, b = f"model.layers.{n}.", f"h.{n}."
        out[b + "norm_1.weight"] = hf[a + "input_layernorm.weight"]
        out[b + "norm_2.weight"] = hf[a + "post_attention_layernorm.weight"]
        out[b + "attn.qkv.weight"] = torch.cat([hf[a + f"self_attn.{x}_proj.weight"] for x in "qkv"], dim=0)
        out[b + "attn.proj.weight"] = hf[a + "self_attn.o_proj.weight"]
        out[b + "mlp.fc_1.weight"] = hf[a + "mlp.gate_proj.weight"]
        out[b + "mlp.fc_2.weight"] = hf[a + "mlp.up_proj.weight"]
        out[b + "mlp.proj.weight"] = hf[a + "mlp.down_proj.weight"]
    if wrong:
        out[WRONG_WEIGHT] = out[WRONG_WEIGHT].t().contiguous()
    return out


def write_config(out: str, level: str) -> str:
    cfg = {"task": "statistics", "dump_path": out, "rank": [], "step": [], "level": level, "async_dump": False,
           "statistics": {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": "statistics"}}
    path = out + ".json"
    with open(path, "w") as fh:
        json.dump(cfg, fh)
    return path


def main(variant: str, level: str, out: str) -> None:
    hf = hf_weights()
    if variant == "hf":
        net: nn.Module = LlamaForCausalLM()
        net.load_state_dict(hf)
    else:
        global NORM_PARAM
        state = to_lit(hf, variant == "litwrong")
        if variant == "tt":
            NORM_PARAM = "scale"
            state = {k[: -len("weight")] + "scale" if "norm" in k or k.startswith("ln_f") else k: v
                     for k, v in state.items()}
        net = GPT()
        net.load_state_dict(state)
    g = torch.Generator().manual_seed(7)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    labels = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2, foreach=False)
    from msprobe.pytorch import PrecisionDebugger

    debugger = PrecisionDebugger(config_path=write_config(out, level))
    debugger.start(net)
    logits = net(ids)
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1))
    loss.backward()
    opt.step()
    debugger.stop()
    debugger.step()
    print(variant, level, "loss", loss.item())


if __name__ == "__main__":
    main(*sys.argv[1:4])
