"""Make the kernel_eps pair: MindSpore GRAPH_MODE kernel dumps (MindSpore's own e2e dump) on CPU.

Not imported by the test suite. Run it in a throwaway environment outside the repository::

    python3 -m venv /tmp/msvenv && /tmp/msvenv/bin/pip install 'mindspore==2.10.0' 'numpy<2'
    /tmp/msvenv/bin/python tests/data/kernel_eps/make_pair.py tests/data/kernel_eps

Each side is a fresh process (the dump config is read once per process): ``golden`` with the
norm epsilon 1e-6, ``target`` with ``TARGET_EPS`` in layer 0 only (the fault); every other
input, weight and op is the same.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

TARGET_EPS = 0.1  # layer 0's wrong epsilon: the Add of variance and eps moves by 0.1 (about 30 % of the smallest variance)
GOLDEN_EPS = 1e-6
LAYERS, D, ROWS = 3, 16, 8


def side(eps0: float, out: Path) -> None:
    """One run: configure the dump, build the net, run one forward pass in GRAPH_MODE."""
    config = {
        "common_dump_settings": {
            "dump_mode": 0, "path": str(out.resolve()), "net_name": "Net", "iteration": "all",
            "saved_data": "tensor", "input_output": 2, "kernels": [], "support_device": [0, 1, 2, 3, 4, 5, 6, 7],
            "op_debug_mode": 0, "file_format": "npy",
        },
        "e2e_dump_settings": {"enable": True, "trans_flag": True},
    }
    cfg = out.parent / f"{out.name}_ms_dump_config.json"
    cfg.write_text(json.dumps(config, indent=2))
    os.environ["MINDSPORE_DUMP_CONFIG"] = str(cfg)

    import mindspore as ms
    import numpy as np
    from mindspore import Parameter, Tensor, mint, nn

    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_device("CPU")
    rng = np.random.default_rng(0)
    # rows with mean squares between about 0.3 and 1 (so the wrong eps is a 10-30 % change of the variance)
    x = rng.standard_normal((ROWS, D)).astype(np.float32)
    x *= np.linspace(0.56, 1.0, ROWS, dtype=np.float32)[:, None] / np.sqrt((x * x).mean(-1, keepdims=True))
    weights = [rng.standard_normal((D, D)).astype(np.float32) for _ in range(LAYERS)]

    class RMSNorm(nn.Cell):
        def __init__(self, eps: float) -> None:
            super().__init__()
            self.eps = eps
            self.gamma = Parameter(Tensor(np.ones(D, np.float32)), name="gamma")

        def construct(self, h):
            variance = mint.mean(mint.mul(h, h), dim=-1, keepdim=True)
            return mint.mul(mint.mul(h, mint.rsqrt(mint.add(variance, self.eps))), self.gamma)

    class Layer(nn.Cell):
        def __init__(self, eps: float, w) -> None:
            super().__init__()
            self.norm = RMSNorm(eps)
            self.w = Parameter(Tensor(w), name="w")

        def construct(self, h):
            return mint.add(h, mint.matmul(self.norm(h), self.w))

    class Net(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.CellList([Layer(eps0 if i == 0 else GOLDEN_EPS, w) for i, w in enumerate(weights)])

        def construct(self, h):
            for layer in self.layers:
                h = layer(h)
            return mint.sum(h)

    print(Net()(Tensor(x)))


def main() -> None:
    root = Path(sys.argv[1])
    if len(sys.argv) > 2:  # child: one side
        side(float(sys.argv[3]), root / sys.argv[2])
        return
    for name, eps in (("golden", GOLDEN_EPS), ("target", TARGET_EPS)):
        shutil.rmtree(root / name, ignore_errors=True)
        subprocess.run([sys.executable, __file__, str(root), name, repr(eps)], check=True)


if __name__ == "__main__":
    main()
