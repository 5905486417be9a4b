"""A tiny training step dumped by msprobe's real dumper (run by tests/test_next_dump.py in a venv that has torch and
mindstudio-probe; never imported by the suite itself).

usage: python next_dump_model.py CONFIG_JSON clean|fault

``fault`` scales block 1's output projection weight by 1.5, so its first use is where the two runs part.
"""

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from msprobe.pytorch import PrecisionDebugger, seed_all


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc_in = nn.Linear(width, 2 * width)
        self.fc_out = nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.fc_out(F.gelu(self.fc_in(self.norm(x))))


class TinyNet(nn.Module):
    def __init__(self, vocab: int = 32, width: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.blocks = nn.ModuleList([Block(width) for _ in range(2)])
        self.head = nn.Linear(width, vocab)

    def forward(self, ids):
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def main(config: str, variant: str) -> None:
    seed_all(seed=7)
    debugger = PrecisionDebugger(config_path=config)
    model = TinyNet()
    if variant == "fault":
        with torch.no_grad():
            model.blocks[1].fc_out.weight.mul_(1.5)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ids = torch.randint(0, 32, (2, 6), generator=torch.Generator().manual_seed(3))
    debugger.start(model=model)
    loss = F.cross_entropy(model(ids).reshape(-1, 32), ids.reshape(-1))
    loss.backward()
    opt.step()
    debugger.stop()
    debugger.step()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
