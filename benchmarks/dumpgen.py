"""Synthetic msprobe dump pairs shaped like real training dumps, for the benchmarks.

The dumps follow what msprobe 26.2.0's PyTorch dumper writes (see the corpora
``pytorch/c01``/``c02``): ``dump.json`` with ``task``/``level``/``framework``/
``dump_data_dir``/``data`` written with ``indent=1``, one entry per API call of a
transformer training step (``Functional.layer_norm``, ``Functional.linear``,
``Torch.matmul``, ``Tensor.masked_fill``… forward entries with ``input_args``/
``input_kwargs``/``output``, backward entries with ``input``/``output``, the
optimizer's ``Tensor.add_`` with an ``alpha`` kwarg, ``Distributed.*`` entries
for multi-rank dumps), non-tensor arguments (``int``/``float``/``bool``/``str``
leaves, ``null``, nested lists), ``NaN``/``Infinity`` tokens in the statistics,
``stack.json`` and ``construct.json`` beside it, and in tensor mode one ``.pt``
file per tensor (written without torch by ``msprobe_pytorch.pt_writer``).

The target runs under bf16 autocast (linear/matmul/attention/MLP tensors in
``torch.bfloat16``), the golden in fp32, and the values differ slightly, as in
the corpora's c01/c02 pair.

Three scenarios (``generate(kind, root, …)``):

* ``tensor``: one rank, tensor mode, about ``gb`` GB of ``.pt`` files on both
  sides together, sizes from a few bytes (scalars, biases) to tens of MB;
* ``statistics``: one rank, statistics mode, ``entries`` API entries per side;
* ``ranks``: ``ranks`` ranks of statistics-mode dumps, ``entries`` entries each.

From the command line (``python benchmarks/dumpgen.py --help``)::

    python benchmarks/dumpgen.py statistics out/pair --entries 1000
    msprobe compare -tp out/pair/target/step0 -gp out/pair/golden/step0 -o out/result
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import struct
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

BF16, FP32, I64, BOOL = "torch.bfloat16", "torch.float32", "torch.int64", "torch.bool"


# --------------------------------------------------------------------------- model of a step
@dataclass
class T:
    """One tensor argument: shape, dtypes on each side, and what kind of values it holds."""

    shape: tuple[int, ...]
    kind: str = "act"  # act | weight | ones | zeros | index | mask | masked | grad | loss
    autocast: bool = False  # bf16 on the target side
    requires_grad: bool = True

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def dtype(self, side: str) -> str:
        if self.kind == "index":
            return I64
        if self.kind == "mask":
            return BOOL
        return BF16 if (self.autocast and side == "target") else FP32


@dataclass
class Call:
    """One API call: its dump.json key and its arguments (``T``, plain values, ``None`` or lists)."""

    key: str
    inputs: list[Any]
    kwargs: dict[str, Any] = field(default_factory=dict)
    outputs: list[Any] = field(default_factory=list)
    backward: bool = False
    #: what the entry looks like apart from its key and statistics (calls of one form are spelled from
    #: one frame); ``None``: spelled in full
    form: Any = None


@dataclass
class Value:
    """A non-tensor argument: ``{"type": kind, "value": value}``."""

    kind: str
    value: Any


@dataclass(frozen=True)
class Dims:
    """Model sizes: batch, sequence, hidden, heads, vocabulary."""

    B: int
    S: int
    D: int
    H: int
    V: int


class Step:
    """The API calls of one training step of a GPT-like model, in dump order, made as they are written.

    The model is an embedding, ``layers`` identical transformer layers and a head (``blocks``: 0 is the
    embedding, 1..layers the layers, layers+1 the head). A step is never held whole: a 10M-entry dump
    has some 250,000 layers, and holding their calls took ~7 GB. ``calls()`` makes each block's calls
    when it reaches it (again, in reverse, for the backward pass), from the API counters it would
    have reached there; ``param(k)`` is the ``k``-th parameter, read off the block that owns it.
    """

    def __init__(self, dims: Dims, layers: int = 1, ranks: int = 1, adam: int = 0) -> None:
        self.d = dims
        self.layers = layers
        self.ranks = ranks
        self.adam = adam  # AdamW-style in-place optimizer calls appended at the end (pads a dump to a size)
        self.counters: dict[str, int] = {}
        self.made: list[Call] = []  # calls of the block being made
        self.made_params: list[T] = []
        emb_calls, self.emb_params, self.after_emb = self._make(self.embedding, {})
        layer_calls, self.layer_params, after_layer = self._make(self.layer, self.after_emb)
        self.per_layer = {api: n - self.after_emb.get(api, 0) for api, n in after_layer.items()}
        head_calls, self.head_params, _ = self._make(self.head, self._counters_before(layers + 1))
        self.n_params = len(self.emb_params) + layers * len(self.layer_params) + len(self.head_params)
        self._block_facts = [self._facts(c, p) for c, p in ((emb_calls, self.emb_params),
                                                             (layer_calls, self.layer_params),
                                                             (head_calls, self.head_params))]

    # ----------------------------------------------------------------- making blocks
    def _make(self, block: Any, counters: dict[str, int]) -> tuple[list[Call], list[T], dict[str, int]]:
        self.counters, self.made, self.made_params = dict(counters), [], []
        block()
        return self.made, self.made_params, self.counters

    def _counters_before(self, b: int) -> dict[str, int]:
        if b == 0:
            return {}
        done = b - 1  # layers made before block b
        return {api: self.after_emb.get(api, 0) + done * self.per_layer.get(api, 0)
                for api in self.after_emb.keys() | self.per_layer.keys()}

    def block(self, b: int) -> tuple[list[Call], list[T]]:
        """The calls and parameters of block ``b`` (0: embedding, 1..layers: a layer, layers+1: the head)."""
        make = self.embedding if b == 0 else self.head if b == self.layers + 1 else self.layer
        calls, params, _ = self._make(make, self._counters_before(b))
        for i, c in enumerate(calls):  # every layer's i-th call looks the same
            c.form = (make.__name__, i)
        return calls, params

    def param(self, k: int) -> T:
        """The ``k``-th parameter of the model, in the order the blocks create them."""
        if k < len(self.emb_params):
            return self.emb_params[k]
        k -= len(self.emb_params)
        in_layers = self.layers * len(self.layer_params)
        if k < in_layers:
            return self.layer_params[k % len(self.layer_params)]
        return self.head_params[k - in_layers]

    def params(self) -> Iterator[T]:
        """Every parameter, in order."""
        for k in range(self.n_params):
            yield self.param(k)

    @staticmethod
    def _facts(calls: list[Call], params: list[T]) -> tuple[int, int, int]:
        backward = sum(1 for c in calls if _backward_of(c) is not None)
        reduced = sum(1 for p in params if p.numel >= 1024)
        return len(calls), backward, reduced

    def count(self) -> int:
        """How many calls ``calls()`` yields (without making them)."""
        (e_calls, e_back, e_red), (l_calls, l_back, l_red), (h_calls, h_back, h_red) = self._block_facts
        n = e_calls + e_back + h_calls + h_back + self.layers * (l_calls + l_back)
        if self.ranks > 1:
            n += e_red + h_red + self.layers * l_red + 1
        return n + self.n_params + self.adam

    # ----------------------------------------------------------------- the model
    def _key(self, api: str) -> str:
        n = self.counters.get(api, 0)
        self.counters[api] = n + 1
        return f"{api}.{n}.forward"

    def call(self, api: str, inputs: list[Any], outputs: list[Any], **kwargs: Any) -> None:
        self.made.append(Call(self._key(api), inputs, kwargs, outputs))

    def new_param(self, shape: tuple[int, ...], kind: str = "weight") -> T:
        p = T(shape, kind)
        self.made_params.append(p)
        return p

    def embedding(self) -> None:
        d = self.d
        self.call("Functional.embedding", [T((d.B, d.S), "index", requires_grad=False), self.new_param((d.V, d.D)),
                                           None, None, Value("float", 2.0), Value("bool", False), Value("bool", False)],
                  [T((d.B, d.S, d.D))])

    def layer(self) -> None:
        d = self.d
        x, hd = (d.B, d.S, d.D), d.D // d.H
        heads, scores = (d.B, d.H, d.S, hd), (d.B, d.H, d.S, d.S)
        self.call("Functional.layer_norm", [T(x), [Value("int", d.D)], self.new_param((d.D,), "ones"),
                                            self.new_param((d.D,), "zeros"), Value("float", 1e-05)], [T(x)])
        self.call("Functional.linear", [T(x, autocast=True), self.new_param((3 * d.D, d.D)),
                                        self.new_param((3 * d.D,))], [T((d.B, d.S, 3 * d.D), autocast=True)])
        self.call("Torch.matmul", [T(heads, autocast=True), T((d.B, d.H, hd, d.S), autocast=True)],
                  [T(scores, autocast=True)])
        self.call("Tensor.__mul__", [T(scores, autocast=True), Value("float", 1 / math.sqrt(hd))],
                  [T(scores, autocast=True)])
        self.call("Tensor.masked_fill", [T(scores, autocast=True), T((d.S, d.S), "mask", requires_grad=False),
                                         Value("float", -math.inf)], [T(scores, "masked", autocast=True)])
        self.call("Functional.softmax", [T(scores, "masked", autocast=True)], [T(scores, autocast=True)],
                  dim=Value("int", -1))
        self.call("Torch.matmul", [T(scores, autocast=True), T(heads, autocast=True)], [T(heads, autocast=True)])
        self.call("Functional.linear", [T(x, autocast=True), self.new_param((d.D, d.D)), self.new_param((d.D,))],
                  [T(x, autocast=True)])
        self.call("Tensor.__add__", [T(x), T(x, autocast=True)], [T(x)])
        self.call("Functional.layer_norm", [T(x), [Value("int", d.D)], self.new_param((d.D,), "ones"),
                                            self.new_param((d.D,), "zeros"), Value("float", 1e-05)], [T(x)])
        self.call("Functional.linear", [T(x, autocast=True), self.new_param((4 * d.D, d.D)),
                                        self.new_param((4 * d.D,))], [T((d.B, d.S, 4 * d.D), autocast=True)])
        self.call("Functional.gelu", [T((d.B, d.S, 4 * d.D), autocast=True)], [T((d.B, d.S, 4 * d.D), autocast=True)],
                  approximate=Value("str", "none"))
        self.call("Functional.linear", [T((d.B, d.S, 4 * d.D), autocast=True), self.new_param((d.D, 4 * d.D)),
                                        self.new_param((d.D,))], [T(x, autocast=True)])
        self.call("Tensor.__add__", [T(x), T(x, autocast=True)], [T(x)])

    def head(self) -> None:
        d = self.d
        n = d.B * d.S
        self.call("Functional.linear", [T((d.B, d.S, d.D), autocast=True), self.new_param((d.V, d.D))],
                  [T((d.B, d.S, d.V), autocast=True)])
        self.call("Functional.cross_entropy", [T((n, d.V)), T((n,), "index", requires_grad=False)],
                  [T((), "loss")])

    # ----------------------------------------------------------------- the step, in dump order
    def calls(self) -> Iterator[Call]:
        """Forward calls, then backward calls in reverse order, then communication and optimizer calls."""
        blocks = range(self.layers + 2)
        for b in blocks:
            yield from self.block(b)[0]
        for b in reversed(blocks):
            for c in reversed(self.block(b)[0]):
                back = _backward_of(c)
                if back is not None:
                    yield back
        if self.ranks > 1:
            n = 0
            for p in self.params():
                if p.numel >= 1024:
                    yield Call(f"Distributed.all_reduce.{n}.forward", [_grad(p)], {}, [_grad(p)],
                               form=("all_reduce", _form(p)))
                    n += 1
            gathered = T((self.d.B, self.d.D), requires_grad=False)
            yield Call("Distributed.all_gather.0.forward", [None, gathered], {},
                       [[gathered] * min(self.ranks, 4), gathered])
        for k, p in enumerate(self.params()):
            yield Call(f"Tensor.add_.{k}.forward", [p, _grad(p)], {"alpha": Value("float", -0.01)}, [p],
                       form=("add_", _form(p)))
        yield from self.adam_calls()

    def adam_calls(self) -> Iterator[Call]:
        """``adam`` AdamW-style in-place optimizer calls on the parameters, cycling over them."""
        ops = [
            ("Tensor.mul_", lambda p: ([p, Value("float", 0.9)], {})),
            ("Tensor.add_", lambda p: ([p, _grad(p)], {"alpha": Value("float", 0.1)})),
            ("Tensor.mul_", lambda p: ([p, Value("float", 0.999)], {})),
            ("Tensor.addcmul_", lambda p: ([p, _grad(p), _grad(p)], {"value": Value("float", 0.001)})),
            ("Tensor.sqrt", lambda p: ([p], {})),
            ("Tensor.addcdiv_", lambda p: ([p, p, p], {"value": Value("float", -1e-4)})),
        ]
        counts = {name: self.n_params if name == "Tensor.add_" else 0 for name, _ in ops}
        for k in range(self.adam):
            name, make = ops[k % len(ops)]
            p = self.param((k // len(ops)) % self.n_params)
            args, kwargs = make(p)
            yield Call(f"{name}.{counts[name]}.forward", args, kwargs, [p], form=("adam", k % len(ops), _form(p)))
            counts[name] += 1


def _backward_of(c: Call) -> Call | None:
    """The backward entry of forward call ``c`` (``None`` where it has no gradient on either side)."""
    grads_in = [_grad(o) for o in c.outputs if isinstance(o, T)]
    grads_out = [_grad(a) for a in c.inputs if isinstance(a, T) and a.requires_grad]
    if not grads_in or not grads_out:
        return None
    return Call(c.key[: -len("forward")] + "backward", grads_in, {}, grads_out, backward=True,
                form=None if c.form is None else (c.form, "backward"))


def _form(t: T) -> tuple[Any, ...]:
    return t.shape, t.kind, t.autocast, t.requires_grad


def _grad(t: T) -> T:
    return T(t.shape, "grad", t.autocast, requires_grad=False)


# --------------------------------------------------------------------------- values
class Values:
    """Deterministic pseudo-random tensor values, fast: slices of one pre-drawn pool."""

    POOL = 1 << 22

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.pool = self.rng.standard_normal(self.POOL, dtype=np.float32)
        self.noise = self.rng.standard_normal(self.POOL, dtype=np.float32)
        self.uniform = _Uniform(self.rng)

    def _take(self, pool: np.ndarray, n: int) -> np.ndarray:
        start = int(self.rng.integers(0, self.POOL))
        if n <= self.POOL - start:
            return pool[start : start + n]
        return np.resize(np.roll(pool, -start), n)

    def pair(self, t: T) -> tuple[np.ndarray, np.ndarray]:
        """(target, golden) arrays of ``t`` (target before any bf16 rounding)."""
        shape, n = t.shape, t.numel
        if t.kind == "index":
            g = self.rng.integers(0, 1000, size=shape, dtype=np.int64)
            return g, g
        if t.kind == "mask":
            g = np.triu(np.ones(shape, dtype=bool), 1) if len(shape) == 2 else np.zeros(shape, bool)
            return g, g
        if t.kind == "ones":
            g = np.ones(shape, np.float32)
            return g, g
        if t.kind == "zeros":
            g = np.zeros(shape, np.float32)
            return g, g
        scale = {"grad": 1e-3, "weight": 0.02, "loss": 1.0}.get(t.kind, 1.0)
        g = (self._take(self.pool, n) * np.float32(scale)).reshape(shape)
        if t.kind == "loss":
            g = np.abs(g) + np.float32(4.0)
        rel = 4e-3 if t.autocast else 1e-6
        tgt = g * (np.float32(1) + np.float32(rel) * self._take(self.noise, n).reshape(shape))
        if t.kind == "masked" and len(shape) >= 2:
            mask = np.triu(np.ones(shape[-2:], dtype=bool), 1)
            g = np.where(mask, np.float32(-np.inf), g)
            tgt = np.where(mask, np.float32(-np.inf), tgt)
        return tgt.astype(np.float32, copy=False), np.ascontiguousarray(g, dtype=np.float32)

    def stats(self, t: T, side: str) -> tuple[Any, Any, Any, Any]:
        """Max, Min, Mean and Norm of ``t`` without materialising it (statistics mode)."""
        n = t.numel
        if t.kind == "index":
            return 999, 0, None, None
        if t.kind == "mask":
            return True, False, None, None
        if t.kind == "ones":
            return 1.0, 1.0, 1.0, math.sqrt(n)
        if t.kind == "zeros":
            return 0.0, 0.0, 0.0, 0.0
        scale = {"grad": 1e-3, "weight": 0.02, "loss": 1.0}.get(t.kind, 1.0)
        draw = self.uniform.draw
        r = (draw(), draw(), draw(), draw())
        mx = scale * (3.0 + r[0] * 2)
        mn = -scale * (3.0 + r[1] * 2)
        mean = scale * (r[2] - 0.5) / math.sqrt(n)
        norm = scale * math.sqrt(n) * (0.9 + 0.2 * r[3])
        if t.kind == "loss":
            mx = mn = mean = norm = 4.0 + r[0]
        if side == "target":
            rel = 4e-3 if t.autocast else 1e-6
            mx *= 1 + rel * (draw() - 0.5)
            mn *= 1 + rel * (draw() - 0.5)
            mean *= 1 + rel * (draw() - 0.5)
            norm *= 1 + rel * (draw() - 0.5)
            if t.autocast:  # what bf16 keeps (a C float cast, as numpy's: finite values well within range)
                mx, mn, mean, norm = _FLOAT32.unpack(_FLOAT32.pack(mx, mn, mean, norm))
            if draw() < 0.001:  # a rare overflow on the target side
                mean, norm = math.nan, math.inf
        if t.kind == "masked":
            mn, mean, norm = -math.inf, -math.inf, math.inf
        return mx, mn, mean, norm


_FLOAT32 = struct.Struct("4f")


class _Uniform:
    """``rng.random()`` one number at a time, served from blocks of draws.

    The same numbers in the same order as single draws (each double takes one 64-bit output of the
    generator, whether drawn alone or in a block), at a fraction of a numpy call per number.
    Only the statistics draw from it, so the tensor mode's draws are untouched.
    """

    BLOCK = 1 << 14

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.block: list[float] = []
        self.next = 0

    def draw(self) -> float:
        if self.next == len(self.block):
            self.block = self.rng.random(self.BLOCK).tolist()
            self.next = 0
        self.next += 1
        return self.block[self.next - 1]


def array_stats(a: np.ndarray) -> dict[str, Any]:
    """Max/Min/Mean/Norm as msprobe writes them for a real tensor (Mean/Norm null for ints and bools)."""
    if a.dtype == np.bool_:
        return {"Max": bool(a.max()), "Min": bool(a.min()), "Mean": None, "Norm": None}
    if a.dtype.kind in "iu":
        return {"Max": int(a.max()), "Min": int(a.min()), "Mean": None, "Norm": None}
    flat = a.reshape(-1)
    with np.errstate(invalid="ignore", over="ignore"):
        return {"Max": float(flat.max()), "Min": float(flat.min()), "Mean": float(flat.mean(dtype=np.float64)),
                "Norm": float(np.linalg.norm(flat))}


def bf16_round(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (as the target stores them)."""
    from msprobe_pytorch.pt_writer import float32_to_bfloat16_bits

    bits = float32_to_bfloat16_bits(a).astype(np.uint32) << 16
    return bits.view(np.float32).reshape(a.shape)


# --------------------------------------------------------------------------- writing
_ENC_STR = json.encoder.encode_basestring_ascii


def _float_text(v: float) -> str:
    if v != v:
        return "NaN"
    if v == math.inf:
        return "Infinity"
    if v == -math.inf:
        return "-Infinity"
    return float.__repr__(v)


#: how ``json.dump`` spells a scalar, by exact type (numpy floats, bool before int: as json does)
_SCALARS: dict[type, Any] = {
    str: _ENC_STR, float: _float_text, np.float64: _float_text, np.float32: _float_text, int: int.__repr__,
    bool: lambda v: "true" if v else "false", type(None): lambda v: "null",
}


def indent1(value: Any, depth: int = 0) -> str:
    """``json.dumps(value, indent=1)`` as text nested ``depth`` levels deep, byte for byte.

    The generator writes dumps of millions of entries one entry at a time (a dump is never held
    whole); json's own encoder with ``indent`` is pure Python and generator-based, ~3x slower.
    """
    spell = _SCALARS.get(type(value))
    if spell is not None:
        return spell(value)
    if type(value) is StatLeaf:
        return value.text(depth)
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = "\n" + " " * (depth + 1)
        parts = []
        for k, v in value.items():
            spell = _SCALARS.get(type(v))
            parts.append(_ENC_STR(k) + ": " + (spell(v) if spell is not None else indent1(v, depth + 1)))
        return "{" + inner + ("," + inner).join(parts) + "\n" + " " * depth + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        inner = "\n" + " " * (depth + 1)
        parts = []
        for v in value:
            spell = _SCALARS.get(type(v))
            parts.append(spell(v) if spell is not None else indent1(v, depth + 1))
        return "[" + inner + ("," + inner).join(parts) + "\n" + " " * depth + "]"
    raise TypeError(f"cannot write {type(value).__name__} values")


class StatLeaf:
    """A statistics-mode tensor leaf, spelled as ``indent1`` spells its dict, from a cached frame.

    Every leaf of one dtype, shape and ``requires_grad`` at one depth has the same text but for its
    four statistics: the frame is made once (by ``indent1`` itself, so the bytes cannot drift) and
    only the numbers are spelled per leaf.
    """

    __slots__ = ("key", "stats")
    _frames: dict[tuple[Any, int], tuple[str, ...]] = {}
    _MARKS = ("@@max@@", "@@min@@", "@@mean@@", "@@norm@@")

    def __init__(self, dtype: str, shape: tuple[int, ...], requires_grad: bool,
                 stats: tuple[Any, Any, Any, Any]) -> None:
        self.key = (dtype, shape, requires_grad)
        self.stats = stats

    def as_dict(self) -> dict[str, Any]:
        dtype, shape, requires_grad = self.key
        return {"type": "torch.Tensor", "dtype": dtype, "shape": list(shape),
                **dict(zip(("Max", "Min", "Mean", "Norm"), self.stats)), "requires_grad": requires_grad}

    def text(self, depth: int) -> str:
        frame = self._frames.get((self.key, depth))
        if frame is None:
            frame = self._frames[(self.key, depth)] = self._frame(depth)
        mx, mn, mean, norm = self.stats
        return (frame[0] + _SCALARS[type(mx)](mx) + frame[1] + _SCALARS[type(mn)](mn) + frame[2]
                + _SCALARS[type(mean)](mean) + frame[3] + _SCALARS[type(norm)](norm) + frame[4])

    def _frame(self, depth: int) -> tuple[str, ...]:
        text = indent1(StatLeaf(*self.key, self._MARKS).as_dict(), depth)
        parts = []
        for mark in self._MARKS:
            head, sep, text = text.partition(_ENC_STR(mark))
            assert sep, mark
            parts.append(head)
        return (*parts, text)


class _ObjectFile:
    """A JSON object written member by member as ``json.dump(obj, fh, indent=1)`` writes it, at ``depth``."""

    def __init__(self, fh: Any, depth: int) -> None:
        self.fh = fh
        self.depth = depth
        self.n = 0

    def add(self, key: str, value: Any) -> None:
        self.add_text(key, indent1(value, self.depth + 1))

    def add_text(self, key: str, text: str) -> None:
        """Add a member whose value is already spelled (as ``indent1(value, depth + 1)``)."""
        self.fh.write(("{" if not self.n else ",") + "\n" + " " * (self.depth + 1) + _ENC_STR(key) + ": " + text)
        self.n += 1

    def close(self) -> None:
        self.fh.write("\n" + " " * self.depth + "}" if self.n else "{}")


_MARK = re.compile(r'"@@(\d+)@@"')
_STACK_MARK = re.compile(r'"@@k@@"|@@n@@')


def _fill(parts: list[str], values: list[Any]) -> str:
    """``parts`` joined with ``values`` spelled between them."""
    out = [parts[0]]
    for v, part in zip(values, parts[1:]):
        out.append(_SCALARS[type(v)](v))
        out.append(part)
    return "".join(out)


def _stack_record(keys: list[str], n: Any) -> list[Any]:
    """One stack.json record: the keys it covers and a made-up call stack (``n`` picks the line numbers)."""
    lines = (1700 + n % 97, 100 + n % 400, 40 + n % 9) if isinstance(n, int) else (n, n, n)
    return [keys, [
        f"File /opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py, line {lines[0]}, "
        "in _call_impl, \n return forward_call(*args, **kwargs)",
        f"File /home/user/train/model.py, line {lines[1]}, in forward, \n x = self.block(x)",
        f"File /home/user/train/train.py, line {lines[2]}, in train_step, \n loss = model(batch)",
    ]]


class Writer:
    """Writes the two sides of one rank: dump.json, stack.json, construct.json[, dump_tensor_data].

    Entries are written as they are added (as ``json.dump(doc, indent=1)`` would write the whole
    document), so a dump of millions of entries never sits in memory.
    """

    def __init__(self, root: Path, rank: int, task: str, seed: int, link_stack: bool = False) -> None:
        self.task = task
        self.link_stack = link_stack  # the golden stack.json: a hard link to the target's (same bytes)
        self.dirs = {side: root / side / "step0" / f"rank{rank}" for side in ("target", "golden")}
        self.values = Values(seed)
        self.rows = 0
        self.entries = 0
        self.pending_key: str | None = None  # stack.json holds one record per two keys
        self.frames: dict[Any, tuple[list[str], list[str], list[T]]] = {}  # by Call.form
        self.recording: list[T] | None = None  # the tensors of the frame being made
        self.stack_frame: list[str] | None = None
        self.files: dict[str, Any] = {}
        self.data: dict[str, _ObjectFile] = {}
        self.stacks: dict[str, _ObjectFile] = {}
        for side, d in self.dirs.items():
            (d / "dump_tensor_data" if task == "tensor" else d).mkdir(parents=True, exist_ok=True)
            header = {"task": task, "level": "L1", "framework": "pytorch",
                      "dump_data_dir": str(d / "dump_tensor_data") if task == "tensor" else None}
            dump = open(d / "dump.json", "w", buffering=1 << 20)  # noqa: SIM115 - closed in finish()
            dump.write(indent1(header)[: -len("\n}")] + ",\n \"data\": ")
            self.files[side + ".dump"], self.data[side] = dump, _ObjectFile(dump, 1)
            if side == "golden" and link_stack:
                continue
            stack = open(d / "stack.json", "w", buffering=1 << 20)  # noqa: SIM115
            self.files[side + ".stack"], self.stacks[side] = stack, _ObjectFile(stack, 0)

    def add(self, call: Call) -> None:
        """Add one API call's entry to both sides (and, in tensor mode, write its tensors)."""
        if self.task == "statistics" and call.form is not None:
            for side, text in zip(("target", "golden"), self._framed(call)):
                self.data[side].add_text(call.key, text)
        else:
            entry = self._entry(call)
            for side in entry:
                self.data[side].add(call.key, entry[side])
        if self.pending_key is None:
            self.pending_key = call.key
        else:
            self._stack([self.pending_key, call.key])
            self.pending_key = None
        self.entries += 1

    def _entry(self, call: Call) -> dict[str, dict[str, Any]]:
        entry: dict[str, dict[str, Any]] = {"target": {}, "golden": {}}
        for section, args in self._sections(call):
            leaves = self._leaves(call.key, section, args)
            for side in entry:
                entry[side][section] = leaves[side]
        return entry

    def _framed(self, call: Call) -> tuple[str, str]:
        """Both sides' entry text of a statistics-mode call, from the frame of its form."""
        frame = self.frames.get(call.form)
        if frame is None:
            frame = self.frames[call.form] = self._frame(call)
        target_parts, golden_parts, tensors = frame
        stats = self.values.stats
        target: list[Any] = []
        golden: list[Any] = []
        for t in tensors:  # target before golden, tensor by tensor: the order of the draws
            target.extend(stats(t, "target"))
            golden.extend(stats(t, "golden"))
        self.rows += len(tensors)
        return _fill(target_parts, target), _fill(golden_parts, golden)

    def _frame(self, call: Call) -> tuple[list[str], list[str], list[T]]:
        """The text of ``call``'s entry on each side cut around its statistics, and its tensors in order."""
        self.recording, rows = [], self.rows
        try:
            entry = self._entry(call)
            tensors = self.recording
        finally:
            self.recording, self.rows = None, rows
        parts = []
        for side in ("target", "golden"):
            pieces = _MARK.split(indent1(entry[side], self.data[side].depth + 1))
            assert [int(i) for i in pieces[1::2]] == list(range(4 * len(tensors))), call.key
            parts.append(pieces[0::2])
        return parts[0], parts[1], tensors

    def _stack(self, keys: list[str]) -> None:
        n = (self.entries - 1) // 2 if len(keys) == 2 else self.entries // 2
        if len(keys) == 2:  # every two-key record is the same text but for its keys and line numbers
            if self.stack_frame is None:
                self.stack_frame = _STACK_MARK.split(indent1(_stack_record(["@@k@@", "@@k@@"], "@@n@@"), 1))
                assert len(self.stack_frame) == 6
            f = self.stack_frame
            text = (f[0] + _ENC_STR(keys[0]) + f[1] + _ENC_STR(keys[1]) + f[2] + str(1700 + n % 97) + f[3]
                    + str(100 + n % 400) + f[4] + str(40 + n % 9) + f[5])
            for stacks in self.stacks.values():
                stacks.add_text(str(n), text)
            return
        for stacks in self.stacks.values():
            stacks.add(str(n), _stack_record(keys, n))

    def _sections(self, call: Call) -> list[tuple[str, Any]]:
        if call.backward:
            return [("input", call.inputs), ("output", call.outputs)]
        return [("input_args", call.inputs), ("input_kwargs", call.kwargs), ("output", call.outputs)]

    def _leaves(self, key: str, section: str, args: Any) -> dict[str, Any]:
        stem = key + "." + ("input" if section.startswith("input") else "output")
        out: dict[str, Any] = {"target": None, "golden": None}
        if isinstance(args, dict):
            parts = {k: self._leaf(f"{stem}.{k}", v) for k, v in args.items()}
            return {side: {k: p[side] for k, p in parts.items()} for side in out}
        items = [self._leaf(f"{stem}.{i}", a) for i, a in enumerate(args)]
        return {side: [it[side] for it in items] for side in out}

    def _leaf(self, name: str, arg: Any) -> dict[str, Any]:
        if arg is None:
            return {"target": None, "golden": None}
        if isinstance(arg, Value):
            leaf = {"type": arg.kind, "value": arg.value}
            return {"target": leaf, "golden": dict(leaf)}
        if isinstance(arg, list):
            items = [self._leaf(f"{name}.{i}", a) for i, a in enumerate(arg)]
            return {side: [it[side] for it in items] for side in ("target", "golden")}
        return self._tensor(name, arg)

    def _tensor(self, name: str, t: T) -> dict[str, Any]:
        self.rows += 1
        out = {}
        if self.recording is not None:  # making a frame: marks where the statistics go
            i = 4 * len(self.recording)
            self.recording.append(t)
            marks = (f"@@{i}@@", f"@@{i + 1}@@", f"@@{i + 2}@@", f"@@{i + 3}@@")
            return {side: StatLeaf(t.dtype(side), t.shape, t.requires_grad, marks) for side in ("target", "golden")}
        if self.task == "tensor":
            from msprobe_pytorch.pt_writer import write_pt

            tgt, gold = self.values.pair(t)
            for side, arr in (("target", tgt), ("golden", gold)):
                dtype = t.dtype(side)
                stored = bf16_round(arr) if dtype == BF16 else arr
                stats = array_stats(stored)
                write_pt(self.dirs[side] / "dump_tensor_data" / f"{name}.pt", arr,
                         dtype="bfloat16" if dtype == BF16 else None)
                out[side] = self._leaf_dict(t, dtype, stats, f"{name}.pt")
        else:
            for side in ("target", "golden"):
                out[side] = StatLeaf(t.dtype(side), t.shape, t.requires_grad, self.values.stats(t, side))
        return out

    @staticmethod
    def _leaf_dict(t: T, dtype: str, stats: dict[str, Any], data_name: str | None) -> dict[str, Any]:
        leaf: dict[str, Any] = {"type": "torch.Tensor", "dtype": dtype, "shape": list(t.shape)}
        leaf.update(stats)
        leaf["requires_grad"] = t.requires_grad
        if data_name:
            leaf["data_name"] = data_name
        return leaf

    def finish(self) -> None:
        """Close both sides' files (and write the empty ``construct.json``)."""
        if self.pending_key is not None:
            self._stack([self.pending_key])
            self.pending_key = None
        for side, d in self.dirs.items():
            self.data[side].close()
            self.files[side + ".dump"].write("\n}")
            self.files[side + ".dump"].close()
            if side in self.stacks:
                self.stacks[side].close()
                self.files[side + ".stack"].close()
            (d / "construct.json").write_text("{}")
        if self.link_stack:
            os.link(self.dirs["target"] / "stack.json", self.dirs["golden"] / "stack.json")


# --------------------------------------------------------------------------- scenarios
def _step_bytes(dims: Dims, layers: int) -> int:
    step = Step(dims, layers)
    total = 0
    for call in step.calls():
        for t in _tensors(call):
            item = {I64: 8, BOOL: 1}.get(t.dtype("golden"), 4)
            total += t.numel * (item + (2 if t.dtype("target") == BF16 else item))
    return total


def _tensors(call: Call) -> Iterator[T]:
    stack: list[Any] = [call.inputs, list(call.kwargs.values()), call.outputs]
    while stack:
        x = stack.pop()
        if isinstance(x, T):
            yield x
        elif isinstance(x, list):
            stack.extend(x)


def tensor_dims(gb: float) -> tuple[Dims, int]:
    """Model sizes and layer count whose tensor dump pair is about ``gb`` GB."""
    budget = gb * 1e9
    dims = Dims(B=2, S=256, D=1024, H=16, V=8192)
    while dims.D > 16 and _step_bytes(dims, 1) > budget / 3:
        dims = Dims(dims.B, max(8, dims.S // 2), dims.D // 2, max(2, dims.H // 2), max(64, dims.V // 2))
    one, two = _step_bytes(dims, 1), _step_bytes(dims, 2)
    per_layer = two - one
    layers = max(1, round((budget - (one - per_layer)) / per_layer))
    return dims, layers


def generate(kind: str, root: Path, *, gb: float = 2.0, entries: int = 100_000, ranks: int = 1,
             seed: int = 0, link_stack: bool = False,
             progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Write one scenario's dump pair under ``root`` (``target/step0``, ``golden/step0``); returns its manifest.

    Memory stays small whatever the size (one block of the model and the files' buffers):
    ``progress(rank, entries written)``, when given, is called every 65,536 entries and at each
    rank's end. ``manifest.json`` is written last, so its presence means a complete pair.
    ``link_stack``: each golden ``stack.json`` is a hard link to the target's instead of a copy
    (both sides write the same records; ~10% of a statistics pair's disk).
    """
    root.mkdir(parents=True, exist_ok=True)
    if kind == "tensor":
        dims, layers = tensor_dims(gb)
        n_ranks, adam, task, limit = 1, 0, "tensor", None
    elif kind in ("statistics", "ranks"):
        dims = Dims(B=1, S=4096, D=4096, H=32, V=151936)
        n_ranks = ranks if kind == "ranks" else 1

        def count(layers: int) -> int:
            return Step(dims, layers, n_ranks).count()

        per_layer = count(2) - count(1)
        layers = max(1, (entries - (count(1) - per_layer)) // max(1, per_layer))
        while layers > 1 and count(layers) > entries:
            layers -= 1
        adam, task, limit = max(0, entries - count(layers)), "statistics", entries
    else:
        raise ValueError(f"unknown scenario kind {kind!r}")
    total_rows = 0
    total_entries = 0
    for rank in range(n_ranks):  # one rank's step at a time: a rank is made while it is written
        step = Step(dims, layers, n_ranks, adam)
        w = Writer(root, rank, task, seed * 1000 + rank, link_stack)
        for n, call in enumerate(step.calls()):
            if limit is not None and n >= limit:
                break
            w.add(call)
            if progress is not None and not (w.entries & 0xFFFF):
                progress(rank, w.entries)
        w.finish()
        total_rows += w.rows
        total_entries += w.entries
        if progress is not None:
            progress(rank, w.entries)
    manifest = {
        "kind": kind,
        "task": task,
        "ranks": n_ranks,
        "entries_per_side": total_entries,
        "tensor_rows_per_side": total_rows,
        "bytes_both_sides": dir_bytes(root / "target") + dir_bytes(root / "golden"),
        "dims": dims.__dict__,
        "seed": seed,
    }
    if link_stack:
        manifest["golden_stack_json"] = "a hard link to the target's (the same bytes)"
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def dir_bytes(path: Path) -> int:
    """Bytes of every file under ``path``."""
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(dirpath, f))
    return total


def _positive(kind: type) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not value > 0 or (kind is float and not math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
        return value
    return parse


class _Parser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line (as msprobe's), naming the help to read."""

    def error(self, message: str) -> Any:  # argparse's own prints the whole usage first
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="dumpgen.py",
        description="Write a synthetic msprobe dump pair (target/step0 and golden/step0, msprobe 26.2.0's "
                    "PyTorch dumper layout) into a folder, for benchmarks and trying msprobe compare.",
        epilog="Then: msprobe compare -tp OUTPUT/target/step0 -gp OUTPUT/golden/step0 -o RESULT_DIR",
    )
    p.add_argument("kind", choices=("statistics", "tensor", "ranks"),
                   help="statistics: one rank, statistics mode; tensor: one rank, tensor mode with .pt files; "
                        "ranks: several ranks of statistics-mode dumps")
    p.add_argument("output", type=Path, help="folder to write the pair into (created; must be empty if it exists)")
    p.add_argument("--entries", type=_positive(int), default=100_000,
                   help="API entries per side (per rank for 'ranks'; statistics and ranks; default 100000)")
    p.add_argument("--ranks", type=_positive(int), default=2, help="ranks, for 'ranks' (default 2)")
    p.add_argument("--gb", type=_positive(float), default=2.0,
                   help="GB of .pt files on both sides together, for 'tensor' (default 2.0)")
    p.add_argument("--seed", type=int, default=0, help="seed of the values (default 0)")
    p.add_argument("--link-stack", action="store_true",
                   help="make each golden stack.json a hard link to the target's instead of a copy (saves disk)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Command line of :func:`generate`; returns the exit status (2 for a bad command line or folder)."""
    parser = _parser()
    args = parser.parse_args(argv)
    out: Path = args.output
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        parser.error(f"{out}: exists and is not an empty folder (a pair is written into a new or empty one)")
    params: dict[str, Any] = {"gb": args.gb} if args.kind == "tensor" else {"entries": args.entries}
    if args.kind == "ranks":
        params["ranks"] = args.ranks
    try:
        info = generate(args.kind, out, seed=args.seed, link_stack=args.link_stack, **params)
    except ImportError as exc:  # the tensor writer comes with the msprobe-pytorch plugin
        print(f"dumpgen.py: error: {exc} (pip install -e plugins/pytorch)", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"dumpgen.py: error: {out}: cannot write the pair ({exc.strerror or exc})", file=sys.stderr)
        return 2
    print(f"wrote {info['entries_per_side']} entries per side, {info['ranks']} rank(s), "
          f"{info['bytes_both_sides']:,} bytes into {out}")
    print(f"compare: msprobe compare -tp {out / 'target' / 'step0'} -gp {out / 'golden' / 'step0'} -o RESULT_DIR")
    return 0


if __name__ == "__main__":
    sys.exit(main())
