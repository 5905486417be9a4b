"""Tiny synthetic dump pairs of each dump mode, for plugin authors' tests (no torch, no mindspore needed).

A pair is a target and a golden run of the same small network (a linear layer, a ReLU, a masked fill,
a sum; forward and backward calls), written as the dumper writes it: ``TARGET/step0/rank0/dump.json``
with ``stack.json`` beside it and, in tensor mode, one tensor file per tensor under
``dump_tensor_data/``. The values are computed from seeded arrays, so statistics, md5 checksums and
tensor files agree with each other. The target's linear layer is slightly off (``diverge=True``), so a
compare finds a divergence there and after it.

What the files spell the framework's way (dtype names, tensor file suffix and content) comes from the
framework's :class:`~msprobe_core.plugin.FrameworkSpec` in the plugin host: the writer knows no
framework of its own.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from msprobe_core.plugin import FrameworkSpec, PluginHost, UsageError

#: the dump modes a pair can be written in (the value of ``dump_pair(mode=...)``)
PAIR_MODES = ("statistics", "tensor", "md5")


@dataclass(frozen=True)
class DumpPair:
    """The two runs of a synthetic pair: ``target`` and ``golden`` are step directories (``…/step0``)."""

    mode: str
    framework: str
    target: Path
    golden: Path
    ranks: int = 1

    def dump(self, side: str = "target", rank: int = 0) -> Path:
        """The ``dump.json`` of one side (``"target"`` or ``"golden"``) and rank."""
        return (self.target if side == "target" else self.golden) / f"rank{rank}" / "dump.json"

    @property
    def args(self) -> tuple[str, ...]:
        """``("-tp", TARGET, "-gp", GOLDEN)``, to splice into ``run_cli("compare", *pair.args, "-o", out)``."""
        return ("-tp", str(self.target), "-gp", str(self.golden))


def write_dump_pair(root: Path, host: PluginHost, mode: str = "statistics", *, framework: str | None = None,
                    diverge: bool = True, ranks: int = 1, nonfinite: bool = False) -> DumpPair:
    """Write a synthetic pair under ``root`` (``root/target/step0``, ``root/golden/step0``) and describe it.

    ``framework``: the dump's ``framework`` (default: the host's default framework, PyTorch when its
    plugin is installed). ``ranks``: how many ``rank<N>`` directories each side has (rank 0
    holds the divergence). ``nonfinite``: the masked fill writes ``-inf`` on both sides, as masked
    attention scores are (metrics then meet ``inf - inf``).
    """
    if mode not in PAIR_MODES:
        raise UsageError(f"dump_pair: mode must be one of {', '.join(PAIR_MODES)}, not {mode!r}")
    spec = host.framework(framework)
    if spec is None:
        known = ", ".join(n for f in host.frameworks for n in f.names()) or "none"
        raise UsageError(f"dump_pair: no plugin of this host handles framework {framework or '(the default)'} "
                         f"(frameworks: {known}); name its distribution in installed=")
    if mode == "tensor" and spec.write_tensor is None:
        raise UsageError(f"dump_pair: framework {spec.name} declares no write_tensor: no tensor-mode pair")
    pair = DumpPair(mode, spec.name, root / "target" / "step0", root / "golden" / "step0", ranks)
    for side in ("target", "golden"):
        for rank in range(ranks):
            calls = _network(seed=rank, off=diverge and side == "target" and rank == 0, nonfinite=nonfinite)
            _write_rank(pair.dump(side, rank).parent, calls, mode, spec)
    return pair


def _network(seed: int, off: bool, nonfinite: bool) -> dict[str, dict[str, list[Any]]]:
    """The calls of one rank: dump key -> {"input_args"/"input"/"output": [array or (type, value)]}."""
    import numpy as np

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    y = x @ w.T + b
    if off:  # what a wrong kernel gives (a row of the wrong sign, a bias): every later call sees it
        y = y * np.array([[-1.0], [1.0]], dtype=np.float32) + np.float32(0.25)
    r = np.maximum(y, 0)
    mask = np.array([[False, True, False], [True, False, False]])
    filled = np.where(mask, np.float32(-np.inf if nonfinite else -1e4), r).astype(np.float32)
    total = filled.sum(axis=1, dtype=np.float32) if not nonfinite else r.sum(axis=1, dtype=np.float32)
    grad = np.ones_like(r)
    return {
        "Functional.linear.0.forward": {"input_args": [x, w, b], "output": [y]},
        "Functional.relu.0.forward": {"input_args": [y], "output": [r]},
        "Tensor.masked_fill.0.forward": {"input_args": [r, mask, ("float", -np.inf if nonfinite else -1e4)],
                                         "output": [filled]},
        "Tensor.sum.0.forward": {"input_args": [r], "input_kwargs": {"dim": ("int", 1)}, "output": [total]},
        "Functional.relu.0.backward": {"input": [grad], "output": [(grad * (y > 0)).astype(np.float32)]},
    }


def _write_rank(directory: Path, calls: dict[str, dict[str, Any]], mode: str, spec: FrameworkSpec) -> None:
    tensor_dir = directory / "dump_tensor_data"
    directory.mkdir(parents=True, exist_ok=True)
    if mode == "tensor":
        tensor_dir.mkdir(exist_ok=True)
    data: dict[str, Any] = {}
    for key, members in calls.items():
        entry: dict[str, Any] = {}
        for member, values in members.items():
            state = {"input_args": "input", "input_kwargs": "input"}.get(member, member)
            if member == "input_kwargs":
                entry[member] = {name: _leaf(v, f"{key}.{state}.{name}", mode, spec, tensor_dir)
                                 for name, v in values.items()}
                continue
            entry[member] = [_leaf(v, f"{key}.{state}.{i}", mode, spec, tensor_dir) for i, v in enumerate(values)]
        if "input_args" in entry:
            entry.setdefault("input_kwargs", {})
        data[key] = entry
    doc = {"task": "tensor" if mode == "tensor" else "statistics", "level": "L1", "framework": spec.name,
           "dump_data_dir": str(tensor_dir) if mode == "tensor" else None, "data": data}
    (directory / "dump.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    stack = {"0": [list(calls), ["File synthetic_model.py, line 12, in forward, \n return self.net(x)"]]}
    (directory / "stack.json").write_text(json.dumps(stack, indent=1), encoding="utf-8")


def _leaf(value: Any, name: str, mode: str, spec: FrameworkSpec, tensor_dir: Path) -> dict[str, Any]:
    """One argument as the dumper writes it: a tensor's statistics (and md5 or tensor file), or a plain value."""
    import numpy as np

    if isinstance(value, tuple):
        kind, plain = value
        return {"type": kind, "value": float(plain) if kind == "float" else plain}
    array = np.asarray(value)
    if array.dtype != np.bool_:  # the pair's tensors are float32; numpy's name for a dtype is its canonical name
        array = array.astype(np.float32)
    dtype = _spelling(spec, array.dtype.name)
    numeric = array.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # -inf in a masked tensor: its mean is -inf, as dumped
        stats = {"Max": float(numeric.max()), "Min": float(numeric.min()), "Mean": float(numeric.mean()),
                 "Norm": float(np.sqrt(np.sum(numeric * numeric)))}
    if array.dtype == np.bool_:
        stats.update(Max=bool(array.max()), Min=bool(array.min()), Mean=None, Norm=None)
    # a framework's dtype names read ``torch.float32``: its tensors are ``torch.Tensor``
    kind = f"{dtype.rsplit('.', 1)[0]}.Tensor" if "." in dtype else f"{spec.name}.Tensor"
    leaf: dict[str, Any] = {"type": kind, "dtype": dtype, "shape": list(array.shape), **stats,
                            "requires_grad": array.dtype != np.bool_}
    if mode == "md5":
        leaf["md5"] = format(zlib.crc32(np.ascontiguousarray(array).tobytes()), "08x")
    elif mode == "tensor":
        file_name = name + spec.tensor_suffix
        write: Callable[[Path, Any], None] = spec.write_tensor  # type: ignore[assignment]  (checked by the caller)
        write(tensor_dir / file_name, array)
        leaf["data_name"] = file_name
    return leaf


def _spelling(spec: FrameworkSpec, canonical: str) -> str:
    """How the framework's dumps spell the dtype ``canonical`` (its spec's first name for it)."""
    for name, info in spec.dtypes.items():
        if info.canonical == canonical:
            return name
    return canonical
