"""The benchmark's synthetic dumps are valid msprobe dumps and the runner works end to end (tiny sizes, no timing)."""

from __future__ import annotations

import json
import math
import re
import shlex
import subprocess
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


def _dumpgen(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "benchmarks" / "dumpgen.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=600)


def test_dumpgen_has_a_command_line(tmp_path):
    """``dumpgen.py --help`` describes it; ``dumpgen.py KIND OUT`` writes a pair that msprobe compares."""
    helped = _dumpgen("--help")
    assert helped.returncode == 0
    for word in ("statistics", "tensor", "ranks", "--entries", "--ranks", "--gb", "--seed", "--link-stack"):
        assert word in helped.stdout
    out = tmp_path / "pair"
    made = _dumpgen("ranks", out, "--entries", 60, "--ranks", 2, "--seed", 3)
    assert made.returncode == 0, made.stderr
    assert "msprobe compare -tp" in made.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["ranks"] == 2 and manifest["seed"] == 3 and manifest["entries_per_side"] == 120
    assert sorted(p.name for p in (out / "golden" / "step0").iterdir()) == ["rank0", "rank1"]
    assert main(["compare", "-tp", str(out / "target" / "step0"), "-gp", str(out / "golden" / "step0"),
                 "-o", str(tmp_path / "result"), "-q"]) == 0
    assert len(list((tmp_path / "result").glob("compare_result_rank*.csv"))) == 2


@pytest.mark.parametrize("args,fragment", [
    (["ranks", "{out}"], "exists and is not an empty folder"),
    (["statistics", "{fresh}", "--entries", "0"], "argument --entries: must be a positive number"),
    (["gaussian", "{fresh}"], "argument kind: invalid choice"),
    ([], "the following arguments are required"),
])
def test_dumpgen_bad_command_lines_are_one_line(tmp_path, args, fragment):
    out = tmp_path / "taken"
    out.mkdir()
    (out / "x").write_text("")
    proc = _dumpgen(*(a.format(out=out, fresh=tmp_path / "fresh") for a in args))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "fresh").exists() and [p.name for p in out.iterdir()] == ["x"]


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

    from msprobe_core.default_plugins.summary import finish
    from msprobe_core.pipeline import job as engine
    from msprobe_core.pipeline import whole
    from msprobe_core.run import jobs

    root = tmp_path / "stats"
    dumpgen.generate("statistics", root, entries=200)
    originals = (engine.load_pair, whole.write_result, jobs.job_partial, finish.add_outcomes)
    result = stage_profile.profile(root, tmp_path / "out", [], sizes=True)
    assert (engine.load_pair, whole.write_result, jobs.job_partial, finish.add_outcomes) == originals  # unwrapped
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


# --------------------------------------------------------------------------- the lazy generator (issue 15)
#: sha256 of every file the generator wrote (paths relative to the pair, the pair's own path replaced by ROOT),
#: as the generator of 135f689 wrote them (it held the whole step's calls: ~7 GB at 10M entries). Making the
#: step lazy and the spelling framed must not change a byte. numpy's PCG64 and its float32 normals feed these:
#: a numpy that changed its streams would change them too.
GENERATOR_DIGESTS = {
    ("statistics", (("entries", 30),)): "6fef1e1d78acb342293d20bd585293da99e8cada4e2efe98a4b1f85f82cc6f71",
    ("statistics", (("entries", 301),)): "fed97483453f8dd0bd2dd0857443d74ac6eface38e15ddc39f51ed230b39260f",
    ("statistics", (("entries", 2000), ("seed", 3))): "33e5520bec1283cead7b47f097e2aa62efe456182dd8a219a8025bbe0b318e82",
    ("ranks", (("entries", 120), ("ranks", 3))): "1a27be7b6205491e370ac183052da7f7ad7a63405bd741c29131cfbdcd9a171f",
    ("ranks", (("entries", 40), ("ranks", 2))): "871608a968bd6de76cab1db7e35957b65a36036a3fed10c64738aa52fd90d95a",
    # Norm values masked (_BLAS_NORM): the masked digest of what the generator of 3e77704 writes
    ("tensor", (("gb", 0.002),)): "362c42afe7d9d376368eb838b30cc7185b0f2357b7a3d555abae5cc247025e3e",
}


#: a tensor pair's ``Norm`` statistics are ``np.linalg.norm`` of its float32 tensors, a BLAS sum whose last bits depend
#: on the CPU's kernels (AVX2 against AVX-512), as the dumper's own do: masked in the tensor kind's digest (the tensor
#: files, every other statistic and the layout stay exact)
_BLAS_NORM = re.compile(rb'"Norm": -?[0-9][0-9.e+-]*')


def _pair_digest(root: Path, mask_norms: bool = False) -> str:
    import hashlib

    h = hashlib.sha256()
    for p in sorted(q for q in root.rglob("*") if q.is_file() and q.name != "manifest.json"):
        data = p.read_bytes().replace(str(root).encode(), b"ROOT")
        if mask_norms and p.name == "dump.json":
            data = _BLAS_NORM.sub(b'"Norm": BLAS', data)
        h.update(str(p.relative_to(root)).encode() + b"\0" + data + b"\0")
    return h.hexdigest()


@pytest.mark.parametrize("kind,params", list(GENERATOR_DIGESTS), ids=[f"{k}-{dict(p)}" for k, p in GENERATOR_DIGESTS])
def test_generator_writes_the_bytes_it_always_wrote(tmp_path, kind, params):
    root = tmp_path / kind
    dumpgen.generate(kind, root, **dict(params))
    assert _pair_digest(root, mask_norms=kind == "tensor") == GENERATOR_DIGESTS[(kind, params)]


@pytest.mark.parametrize("layers,ranks,adam", [(1, 1, 0), (2, 1, 5), (7, 1, 13), (3, 4, 0), (5, 2, 31)])
def test_step_counts_its_calls_without_making_them(layers, ranks, adam):
    dims = dumpgen.Dims(B=1, S=64, D=64, H=4, V=512)
    step = dumpgen.Step(dims, layers, ranks, adam)
    calls = list(step.calls())
    assert step.count() == len(calls)
    assert len({c.key for c in calls}) == len(calls)  # keys are unique: the counters carry over between blocks
    assert sum(1 for c in calls if c.key.startswith("Functional.layer_norm.") and c.key.endswith(".forward")) \
        == 2 * layers
    assert [p.shape for p in step.params()] == [step.param(k).shape for k in range(step.n_params)]


def test_a_step_is_never_held_whole():
    # a 10M-entry dump's step (250,000 layers) is made at once; walking a step's calls across the turn
    # from the forward to the backward pass (which starts again at the last layer) needs a few MB
    import itertools
    import tracemalloc

    dims = dumpgen.Dims(B=1, S=4096, D=4096, H=32, V=151936)
    tracemalloc.start()
    try:
        huge = dumpgen.Step(dims, 250_000)
        assert huge.count() > 10_000_000
        first = list(itertools.islice(huge.calls(), 5))
        step = dumpgen.Step(dims, 5_000)  # ~200,000 entries: its calls held whole would take ~150 MB
        forward = 1 + 14 * 5_000 + 2
        walked = itertools.islice(step.calls(), forward - 10_000, forward + 10_000)
        assert sum(1 for c in walked if c.backward) == 10_000
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert first[0].key == "Functional.embedding.0.forward"
    assert peak < 20 * 2**20, f"{peak / 2**20:.0f} MiB"


def test_golden_stack_json_can_be_a_hard_link(tmp_path):
    plain, linked = tmp_path / "plain", tmp_path / "linked"
    dumpgen.generate("ranks", plain, entries=60, ranks=2)
    info = dumpgen.generate("ranks", linked, entries=60, ranks=2, link_stack=True)
    assert _pair_digest(plain) == _pair_digest(linked)
    for rank in ("rank0", "rank1"):
        t, g = (linked / side / "step0" / rank / "stack.json" for side in ("target", "golden"))
        assert t.stat().st_ino == g.stat().st_ino
    assert info["bytes_both_sides"] == json.loads((plain / "manifest.json").read_text())["bytes_both_sides"]
    assert "hard link" in info["golden_stack_json"]


# --------------------------------------------------------------------------- budgets, sinks, figures
def test_a_run_over_its_memory_or_time_budget_is_stopped_and_reported(tmp_path):
    import procwatch

    # the runs that must be stopped would last far longer than any wait here; the time budgets of the runs that
    # must end by themselves are far beyond their time on a busy machine
    grow = [sys.executable, "-c", "import time; b = bytearray(400 * 2**20); b[::4096] = b'x' * len(b[::4096]); "
            "time.sleep(3600)"]
    m = procwatch.measure(grow, tmp_path / "grow.log", timeout=1800, mem_budget=150 * 2**20)
    assert m.status.startswith("over memory budget") and m.rc == -9
    assert m.tree_pss > 150 * 2**20
    m = procwatch.measure([sys.executable, "-c", "import time; time.sleep(3600)"], tmp_path / "sleep.log", timeout=0.5)
    assert m.status.startswith("over time budget") and m.rc == -9
    m = procwatch.measure([sys.executable, "-c", "import sys; sys.exit(3)"], tmp_path / "exit.log", timeout=600)
    assert (m.status, m.rc) == ("exit 3", 3)
    m = procwatch.measure([sys.executable, "-c", "pass"], tmp_path / "ok.log", timeout=600,
                          min_free_disk=(tmp_path, 1))
    assert m.status == "ok" and m.cpu_s > 0


def test_growth_reports_a_size_over_budget_and_goes_on(tmp_path, capsys):
    # the 300-entry size "runs" longer than the time budget: a row with its status, no crash, exit 0
    # (the others end at once: the budget is far beyond a python start on a busy machine)
    slow_at_300 = f"{shlex.quote(sys.executable)} -c 'import sys, time; time.sleep(3600 if \"statistics-300-\" in str(sys.argv) else 0)'"
    out_json = tmp_path / "g.json"
    rc = bench_compare.main(["--workdir", str(tmp_path / "w"), "--scenario", "growth", "--entries", "150,300,600",
                             "--repeat", "1", "--timeout", "20", "--ours-cmd", slow_at_300, "--json", str(out_json)])
    assert rc == 0
    growth = json.loads(out_json.read_text())["growth"]
    assert [(g["entries"], g["status"]) for g in growth] == [
        (150, "ok"), (300, "over time budget (20 s)"), (600, "ok")]
    assert growth[1]["wall_s_at_stop"] >= 20 and "time_ratio" not in growth[1]
    assert growth[2]["entries_ratio"] == 4
    assert "over time budget" in capsys.readouterr().out


def test_a_pair_without_room_on_disk_is_skipped_and_reported(tmp_path):
    out_json = tmp_path / "g.json"
    rc = bench_compare.main(["--workdir", str(tmp_path / "w"), "--scenario", "growth", "--entries", "150",
                             "--repeat", "1", "--keep-free-gb", "1e9", "--json", str(out_json)])
    assert rc == 0
    report = json.loads(out_json.read_text())
    assert report["growth"][0]["status"].startswith("skipped: generating statistics-150 needs")
    assert not (tmp_path / "w" / "statistics-150-s0").exists()


def test_result_sink_counts_and_deletes_finished_files_only(tmp_path):
    (tmp_path / "a.csv").write_text("h\n1\n2\n")
    (tmp_path / ".a.csv.part").write_text("h\n1\n")  # still being written
    with bench_compare.ResultSink(tmp_path, delay=0) as sink:
        from .waiting import wait_until

        wait_until(lambda: sink.files > 0, poll=0.1)
    assert (sink.rows, sink.files) == (2, 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".a.csv.part"]


def test_figures_runs_every_piece_and_prints_the_tables(tmp_path, capsys):
    import figures

    ours = f"{shlex.quote(sys.executable)} -m msprobe_core"
    out = tmp_path / "results" / "f.json"
    rc = figures.main(["run", "--json", str(out), "--label", "before", "--workdir", str(tmp_path / "w"),
                       "--entries", "150,300", "--ranks", "2", "--rank-entries", "60", "--big-ranks", "3",
                       "--big-rank-entries", "40", "--reference-cmd", ours, "--lock", str(tmp_path / "lock"),
                       "--reference-entries", "200", "--reference-gb", "0.002"])
    assert rc == 0
    doc = json.loads(out.read_text())
    assert list(doc["pieces"]) == ["growth-150", "growth-300", "ranks8", "ranks1000", "reference"]
    assert [g["entries"] for g in doc["growth"]] == [150, 300] and doc["growth"][1]["entries_ratio"] == 2
    assert doc["pieces"]["reference"]["summary"]["statistics-200"]["agreement"].startswith(("agree", "not checked"))
    assert doc["pieces"]["ranks8"]["summary"]["ranks-2x60"]["agreement"].startswith(("agree", "not checked"))
    printed = capsys.readouterr().out
    assert "| statistics, 300 entries per side |" in printed and "3 ranks × 40 entries" in printed
    capsys.readouterr()
    page = tmp_path / "performance.md"
    page.write_text(f"# P\n\nabove\n{figures.BEGIN}\nold table\n{figures.END}\nbelow\n")
    assert figures.main(["table", str(out), str(out), "--doc", str(page)]) == 0
    table = capsys.readouterr().out
    assert table.count("before (") >= 3  # two columns and one growth curve per file
    text = page.read_text()
    assert text.startswith("# P\n\nabove\n") and text.endswith(f"{figures.END}\nbelow\n")
    assert "old table" not in text and "| statistics, 150 entries per side |" in text


def test_figures_resume_keeps_recorded_pieces_and_measures_the_rest(tmp_path, capsys):
    import figures

    out = tmp_path / "f.json"
    base = ["run", "--json", str(out), "--workdir", str(tmp_path / "w"), "--entries", "150,300",
            "--ranks", "2", "--rank-entries", "60"]
    assert figures.main([*base, "--only", "growth-150,ranks8"]) == 0
    first = json.loads(out.read_text())
    assert list(first["pieces"]) == ["growth-150", "ranks8"]
    first["pieces"]["ranks8"]["runs"][0]["status"] = "exit 1"  # as if the tool had failed there
    out.write_text(json.dumps(first))
    capsys.readouterr()
    assert figures.main([*base, "--only", "growth,ranks8", "--resume"]) == 0
    printed = capsys.readouterr().out
    assert "#### growth-150: kept from" in printed and "#### growth-300: bench_compare.py" in printed
    assert "#### ranks8: bench_compare.py" in printed  # the failed piece is measured again
    doc = json.loads(out.read_text())
    assert doc["pieces"]["growth-150"] == first["pieces"]["growth-150"]
    assert doc["pieces"]["ranks8"]["runs"][0]["status"] == "ok"
    assert [g["entries"] for g in doc["growth"]] == [150, 300] and not list(tmp_path.glob("*.part.json"))
    assert figures.main([*base, "--only", "growth", "--resume", "--redo", "growth-150"]) == 0
    printed = capsys.readouterr().out
    assert "#### growth-150: bench_compare.py" in printed and "#### growth-300: kept from" in printed
    with pytest.raises(SystemExit):
        figures.main([*base, "--only", "growth-999"])


def test_a_stopped_run_reports_how_far_it_got(tmp_path, capsys):
    import figures

    # a stand-in tool: two rank results finished, a third still under its temporary name, then too slow
    script = tmp_path / "partial.py"
    script.write_text("import sys, time\nout = sys.argv[sys.argv.index('-o') + 1]\n"
                      "for r in (0, 1):\n    open(f'{out}/compare_result_rank{r}.csv', 'w').write('h\\n1\\n2\\n3\\n')\n"
                      "open(f'{out}/.compare_result_rank2.csv.part', 'w').write('h\\n1\\n')\ntime.sleep(30)\n")
    out = tmp_path / "f.json"
    rc = figures.main(["run", "--json", str(out), "--workdir", str(tmp_path / "w"), "--only", "ranks1000",
                       "--big-ranks", "3", "--big-rank-entries", "40", "--timeout", "3"])
    assert rc == 0  # a budget stop is a figure, not a failure
    capsys.readouterr()
    doc = json.loads(out.read_text())
    assert doc["pieces"]["ranks1000"]["runs"][0]["status"] == "ok"  # the real tool finishes its 3 ranks
    assert doc["pieces"]["ranks1000"]["runs"][0]["result_files"] == 3
    rc = bench_compare.main(["--workdir", str(tmp_path / "w"), "--scenario", "ranks", "--ranks", "3",
                             "--rank-entries", "40", "--repeat", "1", "--timeout", "3", "--json", str(out),
                             "--ours-cmd", f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"])
    assert rc == 0
    run, = json.loads(out.read_text())["runs"]
    assert run["status"] == "over time budget (3 s)"
    assert (run["result_files"], run["rows"]) == (2, 6)
    piece = {"label": "x", "pieces": {"ranks1000": json.loads(out.read_text())}}
    cell = next(line for line in figures.tables([piece]).splitlines() if line.startswith("| 3 ranks"))
    assert "**over time budget (3 s)**: stopped after" in cell and "s CPU), 2 rank results written" in cell


def test_a_pair_changed_by_hand_is_not_measured_as_generated(tmp_path):
    w = tmp_path / "w"
    argv = ["--workdir", str(w), "--scenario", "growth", "--entries", "150", "--repeat", "1"]
    assert bench_compare.main(argv) == 0
    manifest = w / "statistics-150-s0" / "manifest.json"
    manifest.write_text(json.dumps(json.loads(manifest.read_text()) | {"note": "8 ranks generated, the others hard links"}))
    out_json = tmp_path / "g.json"
    assert bench_compare.main([*argv, "--json", str(out_json)]) == 0
    status = json.loads(out_json.read_text())["growth"][0]["status"]
    assert status.startswith("skipped: ") and "hard links" in status and "--regen" in status


def test_same_outputs_sees_what_differs_and_nothing_else(tmp_path):
    """The refactor check (benchmarks/same_outputs.py) takes two runs' files as the same when only their names'
    timestamps, the output paths and the generation time they name differ, and names a file whose cells differ."""
    import same_outputs

    a, b = tmp_path / "ours", tmp_path / "base"
    for side, stamp, when in ((a, "20260101000000", "2026-01-01 00:00:00"), (b, "20260101000001", "2026-01-01 00:00:01")):
        side.mkdir()
        (side / f"compare_result_{stamp}.csv").write_text("Result\npass\n")
        (side / f"compare_report_{stamp}.html").write_text(f'{{"generated":"{when}","files":["{side}/x_{stamp}.csv"]}}')
    assert same_outputs.differences(a, b, tmp_path / "no_oracle_diff.py") == []
    (b / "compare_result_20260101000001.csv").write_text("Result\nerror\n")
    (b / "advisor.txt").write_text("")
    assert same_outputs.differences(a, b, tmp_path / "no_oracle_diff.py") == [
        "only in one: advisor.txt", "differs: compare_result.csv"]
