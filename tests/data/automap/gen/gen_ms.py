"""The MindSpore twin of the golden model, other submodule names: ``python gen_ms.py LEVEL OUT``.

Reads ``golden_inputs.npz`` (written by ``save_golden.py`` from the PyTorch side: golden weights, ids, labels),
names its cells ``tok_emb``, ``blocks.N.norm_a``, ``blocks.N.mixer.wq`` … and runs one training step under
msprobe's MindSpore dumper (statistics task, LEVEL ``L0``, ``mix`` or ``L1``). Needs MindSpore (2.7.1 CPU) and
mindstudio-probe; not dependencies of this project. MindSpore's CPU build lacks the norm kernel msprobe uses,
so the Norm statistic is computed with numpy (as in tests/data/xfw_clean/gen/gen_ms.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import mindspore as ms
import numpy as np
from mindspore import Parameter, Tensor, mint, nn, ops
from renames import target_path

ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
DIM, HIDDEN, CLASSES, LAYERS = 16, 32, 5, 2


def _param(shape: tuple[int, ...], name: str) -> Parameter:
    return Parameter(Tensor(np.zeros(shape, np.float32)), name=name)


class TokenEmbedding(nn.Cell):
    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.weight = _param((vocab, DIM), "weight")

    def construct(self, ids):
        return ops.gather(self.weight, ids, 0)  # the CPU build has no Embedding kernel


class Norm(nn.Cell):
    """MindSpore's own LayerNorm primitive (the CPU build has no kernel for mint's layer_norm)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = _param((DIM,), "weight")
        self.bias = _param((DIM,), "bias")
        self.layer_norm = ops.LayerNorm(begin_norm_axis=-1, begin_params_axis=-1, epsilon=1e-5)

    def construct(self, x):
        return self.layer_norm(x, self.weight, self.bias)[0]


class Dense(nn.Cell):
    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.weight = _param((n_out, n_in), "weight")
        self.bias = _param((n_out,), "bias")

    def construct(self, x):
        return mint.nn.functional.linear(x, self.weight, self.bias)


class Gelu(nn.Cell):
    def construct(self, x):
        return ops.gelu(x, approximate="none")


class Mixer(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.wq, self.wk, self.wv, self.wo = (Dense(DIM, DIM) for _ in range(4))

    def construct(self, x):
        q, k, v = self.wq(x), self.wk(x), self.wv(x)
        scores = mint.matmul(q, k.swapaxes(-1, -2)) / (DIM ** 0.5)
        return self.wo(mint.matmul(mint.nn.functional.softmax(scores, -1), v))


class Ffn(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.w_in = Dense(DIM, HIDDEN)
        self.act = Gelu()
        self.w_out = Dense(HIDDEN, DIM)

    def construct(self, x):
        return self.w_out(self.act(self.w_in(x)))


class Block(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.norm_a = Norm()
        self.mixer = Mixer()
        self.norm_b = Norm()
        self.ffn = Ffn()

    def construct(self, x):
        x = x + self.mixer(self.norm_a(x))
        return x + self.ffn(self.norm_b(x))


class TwinNet(nn.Cell):
    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.tok_emb = TokenEmbedding(vocab)
        self.blocks = nn.CellList([Block() for _ in range(LAYERS)])
        self.norm_out = Norm()
        self.proj = Dense(DIM, CLASSES)

    def construct(self, ids):
        x = self.tok_emb(ids)
        for block in self.blocks:
            x = block(x)
        return self.proj(self.norm_out(x))


def twin_name(golden: str) -> str:
    """This twin's parameter name for golden parameter ``golden`` (``layers.0.attn.q_proj.weight``)."""
    path, leaf = golden.rsplit(".", 1)
    return f"{target_path('ms', path)}.{leaf}"


def main(level: str, out: str) -> None:
    data = np.load(Path(__file__).with_name("golden_inputs.npz"))
    weights = {k[2:]: data[k] for k in data.files if k.startswith("w:")}
    net = TwinNet(weights["embed.weight"].shape[0])
    params = dict(net.parameters_and_names())
    for name, value in weights.items():
        params[twin_name(name)].set_data(Tensor(value))
    ids, labels = Tensor(data["ids"].astype(np.int64)), Tensor(data["labels"].astype(np.int32))

    def forward(x, y):
        return ops.cross_entropy(net(x).reshape(-1, CLASSES), y)

    grad_fn = ms.value_and_grad(forward, None, net.trainable_params())
    mint.norm = lambda d, *a, **k: Tensor(np.array(np.linalg.norm(d.asnumpy().astype(np.float32).ravel()), np.float32))
    from msprobe.mindspore import PrecisionDebugger

    cfg = {"task": "statistics", "dump_path": out, "rank": [], "step": [], "level": level, "async_dump": False,
           "statistics": {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": "statistics"}}
    with open(out + ".json", "w") as fh:
        json.dump(cfg, fh)
    debugger = PrecisionDebugger(config_path=out + ".json")
    debugger.start(net)
    loss, _ = grad_fn(ids, labels)
    debugger.stop()
    debugger.step()
    print("mindspore", level, "loss", float(loss.asnumpy()))


if __name__ == "__main__":
    main(*sys.argv[1:3])
