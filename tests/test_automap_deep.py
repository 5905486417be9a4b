"""``--auto-map`` on deep chains of single-child modules: each level pairs with its counterpart, and the work
the pairing does grows with the number of modules, not with its cube (issue 32: 1,000 levels took 35 s).

The work is counted, never timed: the Python and built-in function calls the pairing makes
(``sys.setprofile``), the same on any machine. Timings: ``benchmarks/automap_deep.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import msprobe_core
from msprobe_core.default_plugins.automap.automap_align import _name_affinity
from msprobe_core.default_plugins.automap.automap_calls import call_tree
from msprobe_core.default_plugins.automap.automap_owned import pair_forward
from msprobe_core.load.dumpjson import load_dump_file
from msprobe_core.match.data_mapping import load_data_mapping

from .conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import automap_deep  # noqa: E402


def test_a_deep_chain_pairs_every_level_with_its_counterpart(tmp_path):
    depth = 300
    target, golden = automap_deep.write_pair(tmp_path / "dumps", depth)
    result = msprobe_core.compare(target, golden, output_dir=tmp_path / "out", auto_map=True, quiet=True)
    (path,) = (tmp_path / "out").glob("auto_mapping_*.yaml")
    mapping = load_data_mapping(path)
    for k in range(depth):
        for row in ("input.0", "output.0"):
            assert mapping[f"Module.layer{k}.Other.forward.0.{row}"] == f"Module.block{k}.Wrap.forward.0.{row}"
    assert mapping["Module.layer_proj0.Linear.forward.0.parameters.weight"] == \
        "Module.block_proj0.Linear.forward.0.parameters.weight"
    assert result.summary["matched"] == 2 * depth + 3


def _calls_made(root: Path, depth: int, fused: bool) -> int:
    """Function calls (Python and built-in) the forward pairing of the chain pair at ``depth`` makes."""
    target, golden = automap_deep.write_pair(root, depth, fused)
    t, g = call_tree(load_dump_file(target)), call_tree(load_dump_file(golden))
    count = 0

    def profile(_frame, event, _arg):
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        pairing = pair_forward(t, g)
    finally:
        sys.setprofile(None)
    if fused:  # every module of the chain stands for the golden one around q, k and v
        assert not pairing.pairs and len(pairing.relations) == depth + 1
    else:
        assert len(pairing.pairs) == depth + 1
    return count


@pytest.mark.parametrize("fused", [False, True], ids=["chain", "fused-chain"])
def test_the_pairing_work_grows_linearly_with_the_depth(fused, tmp_path):
    small, large = _calls_made(tmp_path / "small", 60, fused), _calls_made(tmp_path / "large", 240, fused)
    assert large < 8 * small, (small, large)  # 4 times the modules: under 8 times the work (cubic: 64)


def test_name_affinity_counts_the_trailing_parts_two_paths_share():
    def by_parts(a: str, b: str) -> int:
        n = 0
        for x, y in zip(a.split(".")[::-1], b.split(".")[::-1]):
            if x != y:
                break
            n += 1
        return n

    cases = ["", ".", "a", "b", "a.b", "x.a.b", "xa.b", "a.b.", ".a.b", "layers.0.mlp", "transformer.layers.0.mlp",
             "0.mlp", "s.0.mlp", "a..b", "..b", "b"]
    for a in cases:
        for b in cases:
            assert _name_affinity(a, b) == by_parts(a, b), (a, b)
