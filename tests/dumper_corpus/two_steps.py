"""Dump two training steps of TinyNet at L1 (statistics) for one side, the target's step-0 update nudged.

Usage (in a venv with mindstudio-probe and torch, e.g. /work/venvs/msp-26.2.0):
    python two_steps.py OUT_DIR target|golden

Both sides build the same weights and run the same data. The target's SGD step 0 uses lr 0.1 * (1 + 1e-3)
instead of 0.1, so step 0 differs only in the optimizer's update and every weight enters step 1 slightly moved:
step 1's first difference is a weight passed as an input to the first call that uses it (an L1 dump has no
``parameters`` rows). ``tests/data/steps_l1_drift`` was made with this script (see its README).
"""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from tiny_model import BATCH, D_OUT, build  # noqa: E402
from torch.nn import functional as F  # noqa: E402


def main() -> None:
    out, side = sys.argv[1], sys.argv[2]
    from msprobe.pytorch import PrecisionDebugger

    os.makedirs(out, exist_ok=True)
    config = os.path.join(out, f"config_{side}.json")
    with open(config, "w") as fh:
        json.dump({"task": "statistics", "dump_path": os.path.join(out, side), "rank": [], "step": [0, 1],
                   "level": "L1", "statistics": {"scope": [], "list": [], "data_mode": ["all"]}}, fh)
    model = build(fault=False)
    debugger = PrecisionDebugger(config_path=config)
    tokens = torch.tensor([1, 3, 5, 7], dtype=torch.int64)
    target = torch.linspace(-1.0, 1.0, BATCH * D_OUT).reshape(BATCH, D_OUT)
    for step in range(2):
        lr = 0.1 * 3 if side == "target" and step == 0 else 0.1
        opt = torch.optim.SGD(model.parameters(), lr=lr, foreach=False)
        debugger.start(model=model)
        opt.zero_grad()
        loss = F.mse_loss(input=model(tokens), target=target)
        loss.backward()
        opt.step()
        debugger.stop()
        debugger.step()
        print(f"step {step} loss={float(loss.detach()):.8f}")


if __name__ == "__main__":
    main()
