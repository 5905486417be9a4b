"""PyTorch twin (golden): ``python gen_pt.py mlp|conv statistics|tensor L0|L1|mix DUMP_PATH``.

Needs torch (2.13 CPU was used) and mindstudio-probe (26.2.0); not a dependency of this project.
"""

from __future__ import annotations

import sys

import numpy as np
import torch
import torch.nn.functional as F
from common import CLASSES, DIM, HIDDEN, VOCAB, batch, weights, write_config
from torch import nn


class LayerNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(DIM))
        self.beta = nn.Parameter(torch.zeros(DIM))

    def forward(self, x):
        mu = torch.mean(x, -1, True)
        xc = torch.sub(x, mu)
        var = torch.mean(torch.mul(xc, xc), -1, True)
        return torch.add(torch.mul(torch.mul(xc, torch.rsqrt(torch.add(var, 1e-5))), self.gamma), self.beta)


class Tanh(nn.Module):
    def forward(self, x):
        return torch.tanh(x)


class ReLU(nn.Module):
    def forward(self, x):
        return F.relu(x)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = LayerNorm()
        self.fc1 = nn.Linear(DIM, HIDDEN)
        self.act = Tanh()
        self.fc2 = nn.Linear(HIDDEN, DIM)

    def forward(self, x):
        return torch.add(x, self.fc2(self.act(self.fc1(self.norm(x)))))


class MlpNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.norm_f = LayerNorm()
        self.head = nn.Linear(DIM, CLASSES)

    def forward(self, ids):
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm_f(x))


class Conv2d(nn.Module):
    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(n_out, n_in, 3, 3))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, 1, 1)


class GlobalPool(nn.Module):
    def forward(self, x):
        return torch.mean(x, (2, 3))


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = Conv2d(3, 8)
        self.act1 = ReLU()
        self.conv2 = Conv2d(8, 12)
        self.act2 = ReLU()
        self.pool = GlobalPool()
        self.fc = nn.Linear(12, CLASSES)

    def forward(self, x):
        return self.fc(self.pool(self.act2(self.conv2(self.act1(self.conv1(x))))))


def main(model: str, task: str, level: str, dump_path: str) -> None:
    net = MlpNet() if model == "mlp" else ConvNet()
    net.load_state_dict({k: torch.from_numpy(v) for k, v in weights(model).items()}, strict=True)
    x, y = batch(model)
    x = torch.from_numpy(x.astype(np.int64)) if model == "mlp" else torch.from_numpy(x)
    y = torch.from_numpy(y.astype(np.int64))
    from msprobe.pytorch import PrecisionDebugger

    debugger = PrecisionDebugger(config_path=write_config(dump_path, task, level))
    debugger.start(net)
    loss = F.cross_entropy(net(x).reshape(-1, CLASSES), y)
    loss.backward()
    debugger.stop()
    debugger.step()
    print("loss", loss.item())


if __name__ == "__main__":
    main(*sys.argv[1:5])
