"""A tiny deterministic PyTorch training step used to produce the dumper-version corpora.

The model is small on purpose (every tensor has at most 160 elements) but touches every kind
of dump entry an msprobe dumper writes: Functional ops (embedding, linear, layer_norm, gelu,
softmax, mse_loss), Tensor methods and dunder ops (transpose, masked_fill, __mul__, __add__),
Torch ops (matmul, triu), int64 and bool tensors, a -inf inside a float tensor, a 0-d loss,
a list of tensors as one argument (``torch.cat``), a tuple output with an int64 part
(``torch.max(dim=...)``), tensors passed as keyword arguments (``F.mse_loss(input=, target=)``),
a backward pass, and an SGD step (the optimizer's in-place ops on parameters).

``fault=True`` gives the "target" variant: the residual branch is scaled by 1.5 instead of 1.0
(``Tensor.__mul__.1``), so every row from there on differs from the clean "golden" run.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

VOCAB = 10
D_IN = 8
D_HID = 16
D_OUT = 4
BATCH = 4


class TinyNet(nn.Module):
    """Embedding -> Linear -> LayerNorm -> GELU -> masked self-attention -> Linear."""

    def __init__(self, fault: bool = False) -> None:
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D_IN)
        self.fc1 = nn.Linear(D_IN, D_HID)
        self.norm = nn.LayerNorm(D_HID)
        self.fc2 = nn.Linear(2 * D_HID, D_OUT)
        self.fault = fault

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = F.gelu(self.norm(self.fc1(self.emb(tokens))))
        scores = torch.matmul(h, h.transpose(0, 1)) * 0.25
        mask = torch.triu(torch.ones(BATCH, BATCH, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(mask, float("-inf"))
        attn = F.softmax(scores, dim=-1)
        mixed = torch.matmul(attn, h)
        # the injected fault: the target scales this branch by 1.5
        mixed = mixed * (1.5 if self.fault else 1.0)
        return self.fc2(torch.cat([mixed + h, h], dim=-1))


def train_step(model: TinyNet) -> float:
    """One forward/backward/SGD step on fixed data; returns the loss."""
    tokens = torch.tensor([1, 3, 5, 7], dtype=torch.int64)
    target = torch.linspace(-1.0, 1.0, BATCH * D_OUT).reshape(BATCH, D_OUT)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=False)
    opt.zero_grad()
    out = model(tokens)
    top = torch.max(out, dim=-1)
    loss = F.mse_loss(input=out, target=target) + top.values.mean() * 0.01
    loss.backward()
    opt.step()
    return float(loss.detach())


def build(fault: bool) -> TinyNet:
    """Same weights for both sides: the seed is fixed before the parameters are created."""
    torch.manual_seed(1234)
    return TinyNet(fault=fault)


def args_step(fault: bool) -> float:
    """A few ops whose arguments are the less common leaf kinds of a dump.

    Indexing with slices and an Ellipsis, a ``torch.dtype`` and a ``torch.device`` argument, a
    ``torch.Size``, a string keyword, a tuple argument, float16 / bfloat16 / float64 tensors, a NaN
    produced inside a tensor, and a backward pass. ``fault=True`` scales one product by 1.5.
    """
    x = torch.linspace(-1.0, 1.0, 12).reshape(3, 4).requires_grad_()
    y = x[1:, ::2]
    z = y.to(torch.float64).reshape(torch.Size([4]))
    w = F.gelu(z, approximate="tanh") * (1.5 if fault else 1.0)
    e = x[..., 0].to(torch.device("cpu"))
    h = torch.full((2, 2), 0.5, dtype=torch.float16) * 2
    b = torch.ones(2, dtype=torch.bfloat16) + 1
    n = torch.sqrt(torch.tensor([-1.0, 4.0]))
    loss = w.sum() + e.sum().to(torch.float64) + h.float().sum() + b.float().sum() + n[1]
    loss.backward()
    return float(loss.detach())
