"""Two spellings of one small transformer, and the weight conversion between them.

``GoldenNet`` names its modules the Hugging Face way (``layers.N.attn.q_proj``); ``TargetNet`` names
the same computation the Megatron way (``transformer.layers.N.self_attention.query``) with other class
names, and optionally fuses q/k/v into one Linear (``fused=True``) or puts one extra ``nn.Identity``
after the embedding (``extra=True``), or wraps the MLP's three modules in one more container
(``wrapped=True``). :func:`convert` turns golden weights into target weights;
``wrong`` names one target parameter whose converted value is deliberately off.
"""

from __future__ import annotations

import os
from collections import OrderedDict

import numpy as np
import torch
import torch.nn.functional as F
from renames import PT_LAYER
from torch import nn

VOCAB, DIM, HIDDEN, CLASSES, BATCH, SEQ = 40, 16, 32, 5, 2, 4
#: decoder layers (2 in the corpus; more for a timing run, ``AUTOMAP_LAYERS=60``)
LAYERS = int(os.environ.get("AUTOMAP_LAYERS", "2"))


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q_proj = nn.Linear(DIM, DIM)
        self.k_proj = nn.Linear(DIM, DIM)
        self.v_proj = nn.Linear(DIM, DIM)
        self.o_proj = nn.Linear(DIM, DIM)

    def forward(self, x):
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        return self.o_proj(_attend(q, k, v))


def _attend(q, k, v):
    scores = torch.matmul(q, k.transpose(-1, -2)) / (DIM ** 0.5)
    return torch.matmul(torch.softmax(scores, dim=-1), v)


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(DIM, HIDDEN)
        self.act = nn.GELU()
        self.down = nn.Linear(HIDDEN, DIM)

    def forward(self, x):
        return self.down(self.act(self.up(x)))


class DecoderLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(DIM)
        self.attn = Attention()
        self.ln2 = nn.LayerNorm(DIM)
        self.mlp = Mlp()

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GoldenNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList([DecoderLayer() for _ in range(LAYERS)])
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, CLASSES)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


class SelfAttention(nn.Module):
    def __init__(self, fused: bool) -> None:
        super().__init__()
        self.fused = fused
        if fused:
            self.query_key_value = nn.Linear(DIM, 3 * DIM)
        else:
            self.query = nn.Linear(DIM, DIM)
            self.key = nn.Linear(DIM, DIM)
            self.value = nn.Linear(DIM, DIM)
        self.dense = nn.Linear(DIM, DIM)

    def forward(self, h):
        if self.fused:
            q, k, v = torch.chunk(self.query_key_value(h), 3, dim=-1)
        else:
            q, k, v = self.query(h), self.key(h), self.value(h)
        return self.dense(_attend(q, k, v))


class ParallelMlp(nn.Module):
    def __init__(self, wrapped: bool = False) -> None:
        super().__init__()
        layers = OrderedDict(dense_h_to_4h=nn.Linear(DIM, HIDDEN), activation=nn.GELU(),
                             dense_4h_to_h=nn.Linear(HIDDEN, DIM))
        if wrapped:  # one more container around the three: ``mlp.block.dense_h_to_4h``
            self.block = nn.Sequential(layers)
        else:
            self.block = None
            for name, module in layers.items():
                setattr(self, name, module)

    def forward(self, h):
        if self.block is not None:
            return self.block(h)
        return self.dense_4h_to_h(self.activation(self.dense_h_to_4h(h)))


class TransformerLayer(nn.Module):
    def __init__(self, fused: bool, wrapped: bool = False) -> None:
        super().__init__()
        self.input_layernorm = nn.LayerNorm(DIM)
        self.self_attention = SelfAttention(fused)
        self.post_attention_layernorm = nn.LayerNorm(DIM)
        self.mlp = ParallelMlp(wrapped)

    def forward(self, h):
        h = h + self.self_attention(self.input_layernorm(h))
        return h + self.mlp(self.post_attention_layernorm(h))


class Transformer(nn.Module):
    def __init__(self, fused: bool, wrapped: bool = False) -> None:
        super().__init__()
        self.layers = nn.ModuleList([TransformerLayer(fused, wrapped) for _ in range(LAYERS)])
        self.final_layernorm = nn.LayerNorm(DIM)

    def forward(self, h):
        for layer in self.layers:
            h = layer(h)
        return self.final_layernorm(h)


class TargetNet(nn.Module):
    def __init__(self, fused: bool = False, extra: bool = False, wrapped: bool = False) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, DIM)
        self.embedding_dropout = nn.Identity() if extra else None
        self.transformer = Transformer(fused, wrapped)
        self.output_layer = nn.Linear(DIM, CLASSES)

    def forward(self, ids):
        h = self.word_embeddings(ids)
        if self.embedding_dropout is not None:
            h = self.embedding_dropout(h)
        return self.output_layer(self.transformer(h))


#: golden module path → target module path, for the modules with parameters (the conversion's rules)
_LAYER_RENAMES = {g: t for g, t in PT_LAYER.items() if g not in ("attn", "mlp", "mlp.act")}


def golden_weights() -> dict[str, np.ndarray]:
    """Deterministic golden parameters (a fresh GoldenNet's shapes, seeded values)."""
    torch.manual_seed(3)
    return {k: v.detach().numpy().copy() for k, v in GoldenNet().state_dict().items()}


def convert(golden: dict[str, np.ndarray], fused: bool, wrong: str | None, wrapped: bool = False
            ) -> dict[str, np.ndarray]:
    """The target's state dict from golden weights (q/k/v concatenated when ``fused``)."""
    out = {"word_embeddings.weight": golden["embed.weight"], "transformer.final_layernorm.weight": golden["norm.weight"],
           "transformer.final_layernorm.bias": golden["norm.bias"], "output_layer.weight": golden["head.weight"],
           "output_layer.bias": golden["head.bias"]}
    for n in range(LAYERS):
        for g, t in _LAYER_RENAMES.items():
            if fused and g.startswith("attn.") and g != "attn.o_proj":
                continue
            for p in ("weight", "bias"):
                out[f"transformer.layers.{n}.{t}.{p}"] = golden[f"layers.{n}.{g}.{p}"]
        if fused:
            for p in ("weight", "bias"):
                out[f"transformer.layers.{n}.self_attention.query_key_value.{p}"] = np.concatenate(
                    [golden[f"layers.{n}.attn.{x}_proj.{p}"] for x in "qkv"], axis=0)
    if wrapped:
        out = {k.replace(".mlp.", ".mlp.block."): v for k, v in out.items()}
    if wrong is not None:
        out[wrong] = out[wrong] * np.float32(1.5)  # a conversion slip: one weight scaled
    return out


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    r = np.random.RandomState(11)
    return (torch.from_numpy(r.randint(0, VOCAB, size=(BATCH, SEQ)).astype(np.int64)),
            torch.from_numpy(r.randint(0, CLASSES, size=(BATCH * SEQ,)).astype(np.int64)))


def loss_of(net: nn.Module, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(net(ids).reshape(-1, CLASSES), labels)
