"""MindSpore twin (target): ``python gen_ms.py mlp|conv statistics|tensor L0|L1|mix DUMP_PATH``.

Needs MindSpore (2.7.1 CPU was used) and mindstudio-probe (26.2.0); not a dependency of this project.
MindSpore's CPU build lacks the norm kernel msprobe uses, so the Norm statistic is computed with numpy.
"""

from __future__ import annotations

import sys

import mindspore as ms
import numpy as np
from common import CLASSES, DIM, HIDDEN, VOCAB, batch, weights, write_config
from mindspore import Parameter, Tensor, mint, nn, ops

ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")


def _param(shape: tuple[int, ...], name: str) -> Parameter:
    return Parameter(Tensor(np.zeros(shape, np.float32)), name=name)


class Embedding(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.weight = _param((VOCAB, DIM), "weight")

    def construct(self, ids):
        return ops.gather(self.weight, ids, 0)


class LayerNorm(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.gamma = _param((DIM,), "gamma")
        self.beta = _param((DIM,), "beta")

    def construct(self, x):
        mu = mint.mean(x, -1, True)
        xc = mint.sub(x, mu)
        var = mint.mean(mint.mul(xc, xc), -1, True)
        return mint.add(mint.mul(mint.mul(xc, mint.rsqrt(mint.add(var, 1e-5))), self.gamma), self.beta)


class Dense(nn.Cell):
    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.weight = _param((n_out, n_in), "weight")
        self.bias = _param((n_out,), "bias")

    def construct(self, x):
        return mint.nn.functional.linear(x, self.weight, self.bias)


class Tanh(nn.Cell):
    def construct(self, x):
        return mint.tanh(x)


class ReLU(nn.Cell):
    def construct(self, x):
        return mint.nn.functional.relu(x)


class Block(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.norm = LayerNorm()
        self.fc1 = Dense(DIM, HIDDEN)
        self.act = Tanh()
        self.fc2 = Dense(HIDDEN, DIM)

    def construct(self, x):
        return mint.add(x, self.fc2(self.act(self.fc1(self.norm(x)))))


class MlpNet(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.embed = Embedding()
        self.blocks = nn.CellList([Block(), Block()])
        self.norm_f = LayerNorm()
        self.head = Dense(DIM, CLASSES)

    def construct(self, ids):
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm_f(x))


class Conv2d(nn.Cell):
    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.weight = _param((n_out, n_in, 3, 3), "weight")
        self.bias = _param((n_out,), "bias")

    def construct(self, x):
        return ops.conv2d(x, self.weight, self.bias, 1, "pad", 1)


class GlobalPool(nn.Cell):
    def construct(self, x):
        return mint.mean(x, (2, 3))


class ConvNet(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = Conv2d(3, 8)
        self.act1 = ReLU()
        self.conv2 = Conv2d(8, 12)
        self.act2 = ReLU()
        self.pool = GlobalPool()
        self.fc = Dense(12, CLASSES)

    def construct(self, x):
        return self.fc(self.pool(self.act2(self.conv2(self.act1(self.conv1(x))))))


def main(model: str, task: str, level: str, dump_path: str) -> None:
    net = MlpNet() if model == "mlp" else ConvNet()
    params = dict(net.parameters_and_names())
    for name, value in weights(model).items():
        params[name].set_data(Tensor(value))
    x, y = batch(model)
    x = Tensor(x.astype(np.int32)) if model == "mlp" else Tensor(x)
    y = Tensor(y.astype(np.int32))

    def forward(x, y):
        return ops.cross_entropy(net(x).reshape(-1, CLASSES), y)

    grad_fn = ms.value_and_grad(forward, None, net.trainable_params())
    mint.norm = lambda d, *a, **k: Tensor(np.array(np.linalg.norm(d.asnumpy().astype(np.float32).ravel()), np.float32))
    from msprobe.mindspore import PrecisionDebugger

    debugger = PrecisionDebugger(config_path=write_config(dump_path, task, level))
    debugger.start(net)
    loss, _ = grad_fn(x, y)
    debugger.stop()
    debugger.step()
    print("loss", float(loss.asnumpy()))


if __name__ == "__main__":
    main(*sys.argv[1:5])
