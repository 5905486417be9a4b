"""Dump two tiny implementations of one Llama-style block that differ only in *form*, with msprobe's own dumper.

Usage (inside the throwaway venv of bash tests/dumper_corpus/make_venv.sh 26.2.0):

    /work/venvs/msp-26.2.0/bin/python tests/dumper_corpus/forms_pair.py OUT_DIR

writes OUT_DIR/{golden,target,fault,golden_tensor,permuted_tensor,misordered_tensor}/ (each ``dump.json``, ``construct.json``, ``stack.json``; level mix,
statistics). ``golden`` is written the way Hugging Face writes Llama, ``target`` the way litgpt does, with the
same weights and input:

* the residual sum's operands in the other order (``residual + h`` against ``h + residual``), and RMSNorm's
  ``weight * x`` against ``x * weight``;
* the block's input passed by keyword (``block(hidden_states=x)``) against positionally (``block(x)``);
* the gate projection's SiLU inside the layer (the target's ``gate_proj`` applies it) against after it;
* the down projection run on a ``[16, 48]`` view of the ``[2, 8, 48]`` activations.

``golden_tensor`` and ``permuted_tensor`` (tensor mode) are the golden block, the second with its MLP's hidden
units reordered as a weight converter may reorder rows (gate and up rows, down columns: the same function);
``misordered_tensor`` reorders the gate rows only (a converter's fault: gate and up no longer pair).

``fault`` is ``target`` with a real fault: RMSNorm's eps 0.1 instead of 1e-6 (its output about 5 % off,
its input unchanged). The tests pin that ``golden`` vs ``target`` has no first divergence and ``golden`` vs
``fault`` names the RMSNorm's sum with eps (tests/test_forms.py).
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import typing

import torch

if not hasattr(torch, "Any"):
    torch.Any = typing.Any
import torch._dynamo  # noqa: E402,F401
from torch import nn  # noqa: E402

D, HIDDEN = 32, 48


class RMSNormHF(nn.Module):
    def __init__(self, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(D) + 0.1 * torch.arange(D) / D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x


class RMSNormLit(RMSNormHF):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x * self.weight


class LinearSiLU(nn.Linear):
    """A linear layer with its activation inside (as mindformers' ``w1``); named ``Linear`` in the dump."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.silu(super().forward(x))


LinearSiLU.__name__ = "Linear"


class Block(nn.Module):
    def __init__(self, style: str) -> None:
        super().__init__()
        self.style = style
        self.norm = RMSNormHF() if style == "golden" else RMSNormLit(0.1 if style == "fault" else 1e-6)
        self.gate_proj = nn.Linear(D, HIDDEN, bias=False) if style == "golden" else LinearSiLU(D, HIDDEN, bias=False)
        self.up_proj = nn.Linear(D, HIDDEN, bias=False)
        self.down_proj = nn.Linear(HIDDEN, D, bias=False)
        self.act = nn.SiLU()

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        residual = hidden_states
        h = self.norm(hidden_states)
        if self.style == "golden":
            g = self.act(self.gate_proj(h))
            h = self.down_proj(g * self.up_proj(h))
            return residual + h
        g = self.gate_proj(h)
        m = (g * self.up_proj(h)).reshape(-1, HIDDEN)
        h = self.down_proj(m).reshape(residual.shape)
        return h + residual


class Model(nn.Module):
    def __init__(self, style: str) -> None:
        super().__init__()
        self.block = Block(style)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.block.style == "golden":
            return self.block(hidden_states=x)
        return self.block(x)


# the two RMSNorm classes dump under one name
RMSNormHF.__name__ = RMSNormLit.__name__ = "RMSNorm"


def permute_hidden_units(model: Model) -> None:
    """What a weight converter may do: reorder the MLP's hidden units (rows of gate and up, columns of down).
    The block computes the same function; each hidden tensor holds the same values in another order."""
    perm = torch.randperm(HIDDEN, generator=torch.Generator().manual_seed(2))
    block = model.block
    with torch.no_grad():
        block.gate_proj.weight.copy_(block.gate_proj.weight[perm])
        block.up_proj.weight.copy_(block.up_proj.weight[perm])
        block.down_proj.weight.copy_(block.down_proj.weight[:, perm])


def dump(style: str, out: str) -> None:
    from msprobe.pytorch import PrecisionDebugger

    tensor = style.endswith("_tensor")  # golden_tensor, permuted_tensor: tensor mode
    model = Model("golden" if tensor else style)
    torch.manual_seed(0)
    golden = Model("golden")
    model.load_state_dict(golden.state_dict())  # the same weights on every side
    if style == "permuted_tensor":
        permute_hidden_units(model)
    elif style == "misordered_tensor":  # a converter's fault: gate rows reordered, up and down left as they were
        perm = torch.randperm(HIDDEN, generator=torch.Generator().manual_seed(2))
        with torch.no_grad():
            model.block.gate_proj.weight.copy_(model.block.gate_proj.weight[perm])
    x = torch.randn(2, 8, D, generator=torch.Generator().manual_seed(1))
    work = tempfile.mkdtemp()
    task = "tensor" if tensor else "statistics"
    config = {"task": task, "dump_path": work, "rank": [], "step": [], "level": "mix",
              "async_dump": False, task: {"scope": [], "list": [], "data_mode": ["all"]}}
    path = os.path.join(work, "config.json")
    with open(path, "w") as fh:
        json.dump(config, fh)
    debugger = PrecisionDebugger(config_path=path)
    debugger.start(model=model)
    model(x).sum()
    debugger.stop()
    debugger.step()
    rank = os.path.join(work, "step0", "rank")
    if not os.path.isdir(rank):
        rank = os.path.join(work, "step0", sorted(os.listdir(os.path.join(work, "step0")))[0])
    os.makedirs(os.path.join(out, style), exist_ok=True)
    for name in ("dump.json", "construct.json", "stack.json"):
        src = os.path.join(rank, name)
        if os.path.exists(src):
            shutil.copy(src, os.path.join(out, style, name))
    if tensor:
        shutil.copytree(os.path.join(rank, "dump_tensor_data"), os.path.join(out, style, "dump_tensor_data"))
    shutil.rmtree(work)


if __name__ == "__main__":
    if len(sys.argv) == 3:
        dump(sys.argv[2], sys.argv[1])
    else:
        import subprocess

        for side in ("golden", "target", "fault", "golden_tensor", "permuted_tensor", "misordered_tensor"):  # one process per side: the dumper hooks a process once
            subprocess.run([sys.executable, __file__, sys.argv[1], side], check=True)
