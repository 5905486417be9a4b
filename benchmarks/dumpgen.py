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
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
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
        return int(np.prod(self.shape)) if self.shape else 1

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
    """The API calls of one training step of a GPT-like model, in dump order."""

    def __init__(self, dims: Dims, ranks: int = 1) -> None:
        self.d = dims
        self.ranks = ranks
        self.counters: dict[str, int] = {}
        self.forward: list[Call] = []
        self.params: list[T] = []
        self.extra: list[Call] = []

    def _key(self, api: str) -> str:
        n = self.counters.get(api, 0)
        self.counters[api] = n + 1
        return f"{api}.{n}.forward"

    def call(self, api: str, inputs: list[Any], outputs: list[Any], **kwargs: Any) -> None:
        self.forward.append(Call(self._key(api), inputs, kwargs, outputs))

    def param(self, shape: tuple[int, ...], kind: str = "weight") -> T:
        p = T(shape, kind)
        self.params.append(p)
        return p

    def embedding(self) -> None:
        d = self.d
        self.call("Functional.embedding", [T((d.B, d.S), "index", requires_grad=False), self.param((d.V, d.D)),
                                           None, None, Value("float", 2.0), Value("bool", False), Value("bool", False)],
                  [T((d.B, d.S, d.D))])

    def layer(self) -> None:
        d = self.d
        x, hd = (d.B, d.S, d.D), d.D // d.H
        heads, scores = (d.B, d.H, d.S, hd), (d.B, d.H, d.S, d.S)
        self.call("Functional.layer_norm", [T(x), [Value("int", d.D)], self.param((d.D,), "ones"),
                                            self.param((d.D,), "zeros"), Value("float", 1e-05)], [T(x)])
        self.call("Functional.linear", [T(x, autocast=True), self.param((3 * d.D, d.D)), self.param((3 * d.D,))],
                  [T((d.B, d.S, 3 * d.D), autocast=True)])
        self.call("Torch.matmul", [T(heads, autocast=True), T((d.B, d.H, hd, d.S), autocast=True)],
                  [T(scores, autocast=True)])
        self.call("Tensor.__mul__", [T(scores, autocast=True), Value("float", 1 / math.sqrt(hd))],
                  [T(scores, autocast=True)])
        self.call("Tensor.masked_fill", [T(scores, autocast=True), T((d.S, d.S), "mask", requires_grad=False),
                                         Value("float", -math.inf)], [T(scores, "masked", autocast=True)])
        self.call("Functional.softmax", [T(scores, "masked", autocast=True)], [T(scores, autocast=True)],
                  dim=Value("int", -1))
        self.call("Torch.matmul", [T(scores, autocast=True), T(heads, autocast=True)], [T(heads, autocast=True)])
        self.call("Functional.linear", [T(x, autocast=True), self.param((d.D, d.D)), self.param((d.D,))],
                  [T(x, autocast=True)])
        self.call("Tensor.__add__", [T(x), T(x, autocast=True)], [T(x)])
        self.call("Functional.layer_norm", [T(x), [Value("int", d.D)], self.param((d.D,), "ones"),
                                            self.param((d.D,), "zeros"), Value("float", 1e-05)], [T(x)])
        self.call("Functional.linear", [T(x, autocast=True), self.param((4 * d.D, d.D)), self.param((4 * d.D,))],
                  [T((d.B, d.S, 4 * d.D), autocast=True)])
        self.call("Functional.gelu", [T((d.B, d.S, 4 * d.D), autocast=True)], [T((d.B, d.S, 4 * d.D), autocast=True)],
                  approximate=Value("str", "none"))
        self.call("Functional.linear", [T((d.B, d.S, 4 * d.D), autocast=True), self.param((d.D, 4 * d.D)),
                                        self.param((d.D,))], [T(x, autocast=True)])
        self.call("Tensor.__add__", [T(x), T(x, autocast=True)], [T(x)])

    def head(self) -> None:
        d = self.d
        n = d.B * d.S
        self.call("Functional.linear", [T((d.B, d.S, d.D), autocast=True), self.param((d.V, d.D))],
                  [T((d.B, d.S, d.V), autocast=True)])
        self.call("Functional.cross_entropy", [T((n, d.V)), T((n,), "index", requires_grad=False)],
                  [T((), "loss")])

    def calls(self) -> Iterator[Call]:
        """Forward calls, then backward calls in reverse order, then communication and optimizer calls."""
        yield from self.forward
        for c in reversed(self.forward):
            grads_in = [_grad(o) for o in c.outputs if isinstance(o, T)]
            grads_out = [_grad(a) for a in c.inputs if isinstance(a, T) and a.requires_grad]
            if not grads_in or not grads_out:
                continue
            yield Call(c.key[: -len("forward")] + "backward", grads_in, {}, grads_out, backward=True)
        if self.ranks > 1:
            n = 0
            for p in self.params:
                if p.numel >= 1024:
                    yield Call(f"Distributed.all_reduce.{n}.forward", [_grad(p)], {}, [_grad(p)])
                    n += 1
            gathered = T((self.d.B, self.d.D), requires_grad=False)
            yield Call("Distributed.all_gather.0.forward", [None, gathered], {},
                       [[gathered] * min(self.ranks, 4), gathered])
        for k, p in enumerate(self.params):
            yield Call(f"Tensor.add_.{k}.forward", [p, _grad(p)], {"alpha": Value("float", -0.01)}, [p])
        yield from self.extra

    def adam_calls(self, n: int) -> None:
        """Append ``n`` AdamW-style in-place optimizer calls on the parameters (pads a dump to a size)."""
        ops = [
            ("Tensor.mul_", lambda p: ([p, Value("float", 0.9)], {})),
            ("Tensor.add_", lambda p: ([p, _grad(p)], {"alpha": Value("float", 0.1)})),
            ("Tensor.mul_", lambda p: ([p, Value("float", 0.999)], {})),
            ("Tensor.addcmul_", lambda p: ([p, _grad(p), _grad(p)], {"value": Value("float", 0.001)})),
            ("Tensor.sqrt", lambda p: ([p], {})),
            ("Tensor.addcdiv_", lambda p: ([p, p, p], {"value": Value("float", -1e-4)})),
        ]
        counts = {name: len(self.params) if name == "Tensor.add_" else 0 for name, _ in ops}
        for k in range(n):
            name, make = ops[k % len(ops)]
            p = self.params[(k // len(ops)) % len(self.params)]
            args, kwargs = make(p)
            self.extra.append(Call(f"{name}.{counts[name]}.forward", args, kwargs, [p]))
            counts[name] += 1


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

    def stats(self, t: T, side: str) -> dict[str, Any]:
        """Statistics of ``t`` without materialising it (statistics mode)."""
        n = t.numel
        if t.kind == "index":
            return {"Max": 999, "Min": 0, "Mean": None, "Norm": None}
        if t.kind == "mask":
            return {"Max": True, "Min": False, "Mean": None, "Norm": None}
        if t.kind == "ones":
            return {"Max": 1.0, "Min": 1.0, "Mean": 1.0, "Norm": math.sqrt(n)}
        if t.kind == "zeros":
            return {"Max": 0.0, "Min": 0.0, "Mean": 0.0, "Norm": 0.0}
        scale = {"grad": 1e-3, "weight": 0.02, "loss": 1.0}.get(t.kind, 1.0)
        r = self.rng.random(4)
        mx = scale * (3.0 + r[0] * 2)
        mn = -scale * (3.0 + r[1] * 2)
        mean = scale * (r[2] - 0.5) / math.sqrt(n)
        norm = scale * math.sqrt(n) * (0.9 + 0.2 * r[3])
        if t.kind == "loss":
            mx = mn = mean = norm = 4.0 + r[0]
        if side == "target":
            rel = 4e-3 if t.autocast else 1e-6
            mx, mn, mean, norm = (v * (1 + rel * (self.rng.random() - 0.5)) for v in (mx, mn, mean, norm))
            if t.autocast:  # what bf16 keeps
                mx, mn, mean, norm = (float(np.float32(v)) for v in (mx, mn, mean, norm))
            if self.rng.random() < 0.001:  # a rare overflow on the target side
                mean, norm = math.nan, math.inf
        if t.kind == "masked":
            mn, mean, norm = -math.inf, -math.inf, math.inf
        return {"Max": mx, "Min": mn, "Mean": mean, "Norm": norm}


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


class _ObjectFile:
    """A JSON object written member by member as ``json.dump(obj, fh, indent=1)`` writes it, at ``depth``."""

    def __init__(self, fh: Any, depth: int) -> None:
        self.fh = fh
        self.depth = depth
        self.n = 0

    def add(self, key: str, value: Any) -> None:
        self.fh.write(("{" if not self.n else ",") + "\n" + " " * (self.depth + 1) + _ENC_STR(key) + ": "
                      + indent1(value, self.depth + 1))
        self.n += 1

    def close(self) -> None:
        self.fh.write("\n" + " " * self.depth + "}" if self.n else "{}")


class Writer:
    """Writes the two sides of one rank: dump.json, stack.json, construct.json[, dump_tensor_data].

    Entries are written as they are added (as ``json.dump(doc, indent=1)`` would write the whole
    document), so a dump of millions of entries never sits in memory.
    """

    def __init__(self, root: Path, rank: int, task: str, seed: int) -> None:
        self.task = task
        self.dirs = {side: root / side / "step0" / f"rank{rank}" for side in ("target", "golden")}
        self.values = Values(seed)
        self.rows = 0
        self.entries = 0
        self.pending_key: str | None = None  # stack.json holds one record per two keys
        self.files: dict[str, Any] = {}
        self.data: dict[str, _ObjectFile] = {}
        self.stacks: dict[str, _ObjectFile] = {}
        for side, d in self.dirs.items():
            (d / "dump_tensor_data" if task == "tensor" else d).mkdir(parents=True, exist_ok=True)
            header = {"task": task, "level": "L1", "framework": "pytorch",
                      "dump_data_dir": str(d / "dump_tensor_data") if task == "tensor" else None}
            dump = open(d / "dump.json", "w", buffering=1 << 20)  # noqa: SIM115 - closed in finish()
            dump.write(indent1(header)[: -len("\n}")] + ",\n \"data\": ")
            stack = open(d / "stack.json", "w", buffering=1 << 20)  # noqa: SIM115
            self.files[side + ".dump"], self.files[side + ".stack"] = dump, stack
            self.data[side], self.stacks[side] = _ObjectFile(dump, 1), _ObjectFile(stack, 0)

    def add(self, call: Call) -> None:
        """Add one API call's entry to both sides (and, in tensor mode, write its tensors)."""
        entry: dict[str, dict[str, Any]] = {"target": {}, "golden": {}}
        for section, args in self._sections(call):
            leaves = self._leaves(call.key, section, args)
            for side in entry:
                entry[side][section] = leaves[side]
        for side in entry:
            self.data[side].add(call.key, entry[side])
        if self.pending_key is None:
            self.pending_key = call.key
        else:
            self._stack([self.pending_key, call.key])
            self.pending_key = None
        self.entries += 1

    def _stack(self, keys: list[str]) -> None:
        n = (self.entries - 1) // 2 if len(keys) == 2 else self.entries // 2
        record = [keys, [
            f"File /opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py, line {1700 + n % 97}, "
            "in _call_impl, \n return forward_call(*args, **kwargs)",
            f"File /home/user/train/model.py, line {100 + n % 400}, in forward, \n x = self.block(x)",
            f"File /home/user/train/train.py, line {40 + n % 9}, in train_step, \n loss = model(batch)",
        ]]
        for stacks in self.stacks.values():
            stacks.add(str(n), record)

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
                out[side] = self._leaf_dict(t, t.dtype(side), self.values.stats(t, side), None)
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
            self.stacks[side].close()
            self.files[side + ".dump"].close()
            self.files[side + ".stack"].close()
            (d / "construct.json").write_text("{}")


# --------------------------------------------------------------------------- scenarios
def _step_bytes(dims: Dims, layers: int) -> int:
    step = _build(dims, layers, 1)
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


def _build(dims: Dims, layers: int, ranks: int) -> Step:
    step = Step(dims, ranks)
    step.embedding()
    for _ in range(layers):
        step.layer()
    step.head()
    return step


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
             seed: int = 0) -> dict[str, Any]:
    """Write one scenario's dump pair under ``root`` (``target/step0``, ``golden/step0``); returns its manifest."""
    root.mkdir(parents=True, exist_ok=True)
    if kind == "tensor":
        dims, layers = tensor_dims(gb)
        steps = [(0, _build(dims, layers, 1))]
        task, limit = "tensor", None
    elif kind in ("statistics", "ranks"):
        dims = Dims(B=1, S=4096, D=4096, H=32, V=151936)
        n_ranks = ranks if kind == "ranks" else 1

        def count(layers: int) -> int:
            return sum(1 for _ in _build(dims, layers, n_ranks).calls())

        per_layer = count(2) - count(1)
        layers = max(1, (entries - (count(1) - per_layer)) // max(1, per_layer))
        while layers > 1 and count(layers) > entries:
            layers -= 1
        steps = []
        for r in range(n_ranks):
            step = _build(dims, layers, n_ranks)
            step.adam_calls(max(0, entries - count(layers)))
            steps.append((r, step))
        task, limit = "statistics", entries
    else:
        raise ValueError(f"unknown scenario kind {kind!r}")
    total_rows = 0
    total_entries = 0
    for rank, step in steps:
        w = Writer(root, rank, task, seed * 1000 + rank)
        for n, call in enumerate(step.calls()):
            if limit is not None and n >= limit:
                break
            w.add(call)
        w.finish()
        total_rows += w.rows
        total_entries += w.entries
    manifest = {
        "kind": kind,
        "task": task,
        "ranks": len(steps),
        "entries_per_side": total_entries,
        "tensor_rows_per_side": total_rows,
        "bytes_both_sides": dir_bytes(root / "target") + dir_bytes(root / "golden"),
        "dims": dims.__dict__,
        "seed": seed,
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def dir_bytes(path: Path) -> int:
    """Bytes of every file under ``path``."""
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(dirpath, f))
    return total
