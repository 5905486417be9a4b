"""The benchmark's synthetic dumps are valid msprobe dumps and the runner works end to end (tiny sizes, no timing)."""

from __future__ import annotations

import json
import math
import shlex
import sys
from pathlib import Path

import pytest

from msprobe_core.cli.main import main

from .conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import bench_compare  # noqa: E402
import dumpgen  # noqa: E402

pytest.importorskip("msprobe_pytorch.pt_writer")


def _csv_rows(out: Path) -> int:
    return sum(max(0, len(p.read_text().splitlines()) - 1) for p in out.glob("*.csv"))


@pytest.mark.parametrize("kind,params", [
    ("tensor", {"gb": 0.002}),
    ("statistics", {"entries": 300}),
    ("ranks", {"entries": 120, "ranks": 3}),
])
def test_generated_dumps_compare(tmp_path, kind, params):
    root = tmp_path / kind
    info = dumpgen.generate(kind, root, **params)
    assert info["bytes_both_sides"] == dumpgen.dir_bytes(root / "target") + dumpgen.dir_bytes(root / "golden")
    ranks = sorted(p.name for p in (root / "target" / "step0").iterdir())
    assert len(ranks) == info["ranks"]
    doc = json.loads((root / "target" / "step0" / "rank0" / "dump.json").read_text())
    assert doc["framework"] == "pytorch" and doc["level"] == "L1"
    keys = list(doc["data"])
    assert any(k.endswith(".backward") for k in keys)
    assert any(k.startswith("Tensor.add_.") for k in keys)
    backward = next(v for k, v in doc["data"].items() if k.endswith(".backward"))
    assert set(backward) == {"input", "output"}
    if kind == "statistics":
        assert len(keys) == params["entries"]
    text = (root / "target" / "step0" / "rank0" / "dump.json").read_text()
    assert "Infinity" in text  # masked_fill statistics, as msprobe writes them
    out = tmp_path / "out"
    rc = main(["compare", "-tp", str(root / "target" / "step0"), "-gp", str(root / "golden" / "step0"),
               "-o", str(out), "-q"])
    assert rc == 0
    assert len(list(out.glob("*.csv"))) == info["ranks"]
    assert _csv_rows(out) >= info["tensor_rows_per_side"]


@pytest.mark.parametrize("kind,params", [("statistics", {"entries": 301}), ("ranks", {"entries": 40, "ranks": 2})])
def test_streamed_files_are_what_json_dump_writes(tmp_path, kind, params):
    # the generator writes entry by entry (a 10M-entry dump never sits in memory): the bytes must still be
    # json.dump(doc, indent=1)'s, NaN/Infinity tokens and float spellings included
    root = tmp_path / kind
    dumpgen.generate(kind, root, **params)
    files = sorted(root.glob("*/step0/rank*/*.json"))
    assert {p.name for p in files} == {"dump.json", "stack.json", "construct.json"}
    for path in files:
        text = path.read_text()
        assert text == json.dumps(json.loads(text), indent=1), path
    doc = json.loads((root / "golden" / "step0" / "rank0" / "dump.json").read_text())
    assert list(doc) == ["task", "level", "framework", "dump_data_dir", "data"]
    stack = json.loads((root / "golden" / "step0" / "rank0" / "stack.json").read_text())
    keys = list(doc["data"])
    assert [v[0] for v in stack.values()] == [keys[k : k + 2] for k in range(0, len(keys), 2)]


def test_indent1_spells_like_json(tmp_path):
    import numpy as np

    value = {"a": [1, -2.5, float("nan"), float("inf"), -float("inf"), True, False, None, "x\"y\u00e9\n"],
             "b": {}, "c": [], "d": {"e": [[], {}, [np.float64(0.1)]]}, "f": 10**20, "g": 1e-300}
    assert dumpgen.indent1(value) == json.dumps(value, indent=1)
    with pytest.raises(TypeError):
        dumpgen.indent1({"x": object()})


def test_tensor_values_follow_the_dtypes(tmp_path):
    from msprobe_pytorch.pt_reader import read_pt

    root = tmp_path / "t"
    dumpgen.generate("tensor", root, gb=0.001)
    data = json.loads((root / "target" / "step0" / "rank0" / "dump.json").read_text())["data"]
    leaf = data["Functional.linear.0.forward"]["output"][0]
    assert leaf["dtype"] == "torch.bfloat16"
    arr = read_pt(root / "target" / "step0" / "rank0" / "dump_tensor_data" / leaf["data_name"])
    assert list(arr.shape) == leaf["shape"]
    assert math.isclose(float(arr.max()), leaf["Max"], rel_tol=1e-6)


def test_runner_end_to_end(tmp_path, capsys):
    ours = f"{shlex.quote(sys.executable)} -m msprobe_core"
    out_json = tmp_path / "bench.json"
    rc = bench_compare.main([
        "--workdir", str(tmp_path / "bench"), "--scenario", "statistics", "--entries", "200",
        "--repeat", "1", "--reference-cmd", ours, "--json", str(out_json),
    ])
    assert rc == 0
    report = json.loads(out_json.read_text())
    assert [r["tool"] for r in report["runs"]] == ["ours", "reference"]
    summary = report["summary"]["statistics-200"]
    assert summary["ours"]["rows"] == summary["reference"]["rows"] > 0
    assert summary["agreement"].startswith("agree") or summary["agreement"].startswith("not checked")
    assert "GB/s" in capsys.readouterr().out


def test_tensor_floor_reads_every_pair(tmp_path, capsys):
    import tensor_floor

    root = tmp_path / "tensor"
    dumpgen.generate("tensor", root, gb=0.002)
    names = {p.name for p in (root / "target").rglob("*.pt")} & {p.name for p in (root / "golden").rglob("*.pt")}
    assert tensor_floor.main([str(root), "--repeat", "1", "--processes", "2"]) == 0
    out = capsys.readouterr().out
    assert f"({len(names)} pairs," in out and "GB/s" in out


def test_growth_scenario_prints_the_curve(tmp_path, capsys):
    out_json = tmp_path / "growth.json"
    work = tmp_path / "bench"
    rc = bench_compare.main(["--workdir", str(work), "--scenario", "growth", "--entries", "150,3e2",
                             "--repeat", "1", "--json", str(out_json)])
    assert rc == 0
    growth = json.loads(out_json.read_text())["growth"]
    assert [g["entries"] for g in growth] == [150, 300]
    assert growth[0]["time_ratio"] == 1.0 and growth[1]["entries_ratio"] == 2.0
    assert growth[1]["growth"] == pytest.approx(growth[1]["time_ratio"] / 2.0)
    assert all(g["rows"] > g["entries"] and g["max_rss_mib"] > 0 for g in growth)
    printed = capsys.readouterr().out
    assert "== growth" in printed and "     300 " in printed
    assert not list((work / "out").glob("*/")), "a growth size's outputs were left behind"


def test_entry_counts_are_parsed_or_refused():
    assert bench_compare.entry_counts("100000, 1e6,3_000_000") == [100_000, 1_000_000, 3_000_000]
    for bad in ("", "0", "ten", "-5"):
        with pytest.raises(Exception, match="entry counts"):
            bench_compare.entry_counts(bad)


def test_stage_profile_times_every_stage(tmp_path, capsys):
    import stage_profile

    from msprobe_core.pipeline import job as engine
    from msprobe_core.report import finish
    from msprobe_core.run import jobs

    root = tmp_path / "stats"
    dumpgen.generate("statistics", root, entries=200)
    originals = (engine.load_pair, engine.write_result, jobs.job_partial, finish.add_outcomes)
    result = stage_profile.profile(root, tmp_path / "out", [], sizes=True)
    assert (engine.load_pair, engine.write_result, jobs.job_partial, finish.add_outcomes) == originals  # unwrapped
    assert result["rc"] == 0 and result["rows"] > 200
    for stage in ("load", "match", "build", "write", "summary", "merge"):
        rec = result["stages"][stage]
        assert rec["calls"] == 1 and rec["cpu_s"] >= 0 and rec["peak_rss_mib"] > 0, stage
    assert result["total"]["wall_s"] >= sum(r["wall_s"] for r in result["stages"].values()) * 0.99
    sizes = result["sizes_mib"]
    assert sizes["target.name"] > 0 and sizes["match.target"] > 0
    assert "result[NPU Name] (shares the dump table's list)" in sizes  # the result reuses the table's names
    stage_profile.print_profile("stats", result)
    printed = capsys.readouterr().out
    assert "load" in printed and "memory per structure" in printed
