"""One PyTorch run of a variant, dumped by the real msprobe dumper.

``python gen_pt.py VARIANT LEVEL OUT``: VARIANT is ``golden``, ``renamed``, ``wrong`` (renamed, one converted
weight scaled: ``transformer.layers.1.mlp.dense_4h_to_h.weight``), ``fused`` (q/k/v in one Linear) or
``extra`` (one extra nn.Identity) or
``wrapped`` (the MLP's three modules inside one more ``nn.Sequential``); LEVEL is ``L0``, ``mix`` or ``L1``. Statistics task; the dump lands in
``OUT/step0/proc<PID>/`` (or ``rank``). Needs torch and mindstudio-probe, which this project does not depend on.
"""

from __future__ import annotations

import json
import sys

import torch
from models import GoldenNet, TargetNet, batch, convert, golden_weights, loss_of

#: the parameter the ``wrong`` variant converts badly (the truth the first divergence must name)
WRONG_WEIGHT = "transformer.layers.1.mlp.dense_4h_to_h.weight"


def build(variant: str) -> torch.nn.Module:
    golden = golden_weights()
    if variant == "golden":
        net, state = GoldenNet(), golden
    else:
        fused, extra, wrapped = variant == "fused", variant == "extra", variant == "wrapped"
        net = TargetNet(fused=fused, extra=extra, wrapped=wrapped)
        state = convert(golden, fused, WRONG_WEIGHT if variant == "wrong" else None, wrapped)
    net.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=True)
    return net


def write_config(out: str, level: str) -> str:
    cfg = {"task": "statistics", "dump_path": out, "rank": [], "step": [], "level": level, "async_dump": False,
           "statistics": {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": "statistics"}}
    path = out + ".json"
    with open(path, "w") as fh:
        json.dump(cfg, fh)
    return path


def main(variant: str, level: str, out: str) -> None:
    torch.manual_seed(0)
    net = build(variant)
    ids, labels = batch()
    from msprobe.pytorch import PrecisionDebugger

    debugger = PrecisionDebugger(config_path=write_config(out, level))
    debugger.start(net)
    loss = loss_of(net, ids, labels)
    loss.backward()
    debugger.stop()
    debugger.step()
    print(variant, level, "loss", loss.item())


if __name__ == "__main__":
    main(*sys.argv[1:4])
