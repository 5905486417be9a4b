"""Dump one side (target or golden) of one case with the msprobe installed in this interpreter.

Usage: python dump_side.py CONFIG.json target|golden [args]
(``args``: run ``tiny_model.args_step`` instead of the TinyNet training step.)
Run inside a throwaway venv that has one mindstudio-probe version installed (see driver.py).
The workarounds below only make old releases import on torch 2.13; none changes a dump.
"""
from __future__ import annotations

import inspect
import os
import sys
import typing

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

# mindstudio-probe 1.0.1 uses torch.Any, which torch 2.13 no longer exports.
if not hasattr(torch, "Any"):
    torch.Any = typing.Any
# 1.2.x hooks torch._dynamo lazily and fails unless it is imported first.
import torch._dynamo  # noqa: E402,F401
from tiny_model import args_step, build, train_step  # noqa: E402


def main() -> None:
    config_path, side = sys.argv[1], sys.argv[2]
    from msprobe.pytorch import PrecisionDebugger

    model = build(fault=(side == "target"))
    init_params = inspect.signature(PrecisionDebugger.__init__).parameters
    kwargs = {"config_path": config_path}
    if "model" in init_params:
        kwargs["model"] = model
    debugger = PrecisionDebugger(**kwargs)
    start_params = inspect.signature(PrecisionDebugger.start).parameters
    if "model" in start_params:
        debugger.start(model=model)
    else:
        debugger.start()
    loss = args_step(side == "target") if sys.argv[3:] == ["args"] else train_step(model)
    debugger.stop()
    debugger.step()
    print(f"loss={loss:.6f}")


if __name__ == "__main__":
    main()
