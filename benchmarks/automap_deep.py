"""``--auto-map`` on deep module chains: how the pairing's time grows with the depth.

Writes a pair of L0 dumps of one model spelled twice (``Module.block<k>.Wrap`` against ``Module.layer<k>.Other``)
whose ``construct.json`` nests ``depth`` single-child modules around one ``Linear``, then times the proposal
(``msprobe_core.default_plugins.automap.automap.propose``, the dumps already loaded) at each depth and prints the times and their
ratios; then the same around one fused Linear against three (every module of the chain a 1→N relation). The pairing is near-linear when four times the depth takes under eight times as long.

    python benchmarks/automap_deep.py                 # depths 250, 1000, 2000
    python benchmarks/automap_deep.py 100 400 1600
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

SHAPE = [2, 8]


def _stat(value: float, shape: list[int] | None = None) -> dict:
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": shape or SHAPE, "Max": value, "Min": -value,
            "Mean": value / 10, "Norm": value * 3, "requires_grad": True}


def write_chain(directory: Path, depth: int, module: str, cls: str, leaves: tuple[int, ...] = (8,)) -> Path:
    """An L0 dump of ``depth`` nested single-child modules ``Module.<module><k>.<cls>`` (k = 0 outermost) around
    one ``Linear`` per item of ``leaves`` (its output size); returns its ``dump.json``. The innermost calls come
    first, as a forward pass ends them."""
    directory.mkdir(parents=True, exist_ok=True)
    keys = [f"Module.{module}{k}.{cls}.forward.0" for k in range(depth)]
    data: dict[str, dict] = {}
    construct: dict[str, str | None] = {}
    for n, size in enumerate(leaves):
        leaf = f"Module.{module}_proj{n}.Linear.forward.0"
        data[leaf] = {"input_args": [_stat(1.0)], "input_kwargs": {}, "output": [_stat(2.0, [2, size])],
                      "parameters": {"weight": _stat(0.5, [size, 8])}}
        construct[leaf] = keys[-1] if keys else None
    for k in reversed(range(depth)):
        data[keys[k]] = {"input_args": [_stat(1.0)], "input_kwargs": {}, "output": [_stat(2.0)]}
        construct[keys[k]] = keys[k - 1] if k else None
    doc = {"task": "statistics", "level": "L0", "framework": "pytorch", "dump_data_dir": None, "data": data}
    (directory / "dump.json").write_text(json.dumps(doc), encoding="utf-8")
    (directory / "construct.json").write_text(json.dumps(construct), encoding="utf-8")
    return directory / "dump.json"


def write_pair(root: Path, depth: int, fused: bool = False) -> tuple[Path, Path]:
    """(target, golden) ``dump.json`` of the two spellings at ``depth``; ``fused``: the target's one Linear does
    the work of the golden's three (q, k, v), a 1→N relation around which every module of the chain is named."""
    return (write_chain(root / "target", depth, "layer", "Other", (24,) if fused else (8,)),
            write_chain(root / "golden", depth, "block", "Wrap", (8, 8, 8) if fused else (8,)))


def time_proposal(depth: int, fused: bool = False) -> float:
    """Seconds the proposal takes for the pair at ``depth`` (the dumps loaded before the clock starts)."""
    from msprobe_core.default_plugins.automap.automap import propose
    from msprobe_core.load.dumpjson import load_dump_file

    with tempfile.TemporaryDirectory() as tmp:
        target, golden = write_pair(Path(tmp), depth, fused)
        t, g = load_dump_file(target), load_dump_file(golden)
        start = time.perf_counter()
        proposal = propose(t, g)
        took = time.perf_counter() - start
    assert fused or len(proposal.mapping) >= 2 * depth, "the chain did not pair"
    return took


def main(argv: list[str]) -> None:
    depths = [int(a) for a in argv] or [250, 1000, 2000]
    for fused in (False, True):
        print("chain around one fused Linear (1→N)" if fused else "chain around one Linear")
        times = []
        for depth in depths:
            took = time_proposal(depth, fused)
            times.append(took)
            print(f"  depth {depth:>6}: {took:8.3f} s", flush=True)
        for (d0, t0), (d1, t1) in zip(zip(depths, times), zip(depths[1:], times[1:])):
            print(f"  depth x{d1 / d0:g}: time x{t1 / max(t0, 1e-9):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
