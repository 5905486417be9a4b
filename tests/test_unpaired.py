"""A compare that paired few rows is never green: the summary says so first, ``--fail-on`` fails under ``--min-matched``.

Real dumps: the renamed twins of ``tests/data/automap/dumps`` (a renamed model compared without ``--auto-map``
pairs none of its rows) and ``examples/cross_framework/api`` (MindSpore vs PyTorch without ``-am``: 15 of 566 rows).
The summary names both inputs (``target``/``golden``) too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from msprobe_core.default_plugins.summary.unpaired import MIN_MATCHED, parse_share, row_kind

from .dumps import api, only_result, tensor, write_dump

REPO = Path(__file__).resolve().parents[1]
TWINS = REPO / "tests" / "data" / "automap" / "dumps"
CROSS = REPO / "examples" / "cross_framework" / "api"


def _compare(run_cli, tmp_path: Path, target: Path, golden: Path, *extra: str):
    summary_file = tmp_path / "summary.json"
    proc = run_cli("compare", "-tp", target, "-gp", golden, "-o", tmp_path / "out", "--json-summary", summary_file,
                   *extra)
    summary = json.loads(summary_file.read_text()) if summary_file.is_file() else None
    return proc, summary


def _block(stdout: str) -> list[str]:
    return stdout[stdout.index("Compare summary"):].splitlines()


@pytest.mark.parametrize(("level", "share"), [("L0", None), ("mix", "60%")])
def test_a_renamed_model_without_auto_map_is_not_green(tmp_path, run_cli, level, share):
    """L0: no row pairs. mix: the API rows pair, the module rows (46 %) do not: under a share of 60 %."""
    target, golden = TWINS / f"renamed_{level}" / "dump.json", TWINS / f"golden_{level}" / "dump.json"
    extra = ("--min-matched", share) if share else ()
    proc, summary = _compare(run_cli, tmp_path, target, golden, "--fail-on", "warning", *extra)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    u = summary["unpaired"]
    least = parse_share(share) if share else MIN_MATCHED
    assert u["min_matched"] == least
    assert u["target"]["rows"] == summary["rows"] and u["target"]["matched"] == summary["matched"]
    assert u["target"]["matched_share"] < least and u["golden"]["matched_share"] < least
    assert u["golden"]["rows"] > 0 and u["golden"]["unmatched"] > 0  # the golden side is counted too
    assert "target" in u["below"] and "golden" in u["below"]
    assert sum(u["kinds"].values()) == summary["unmatched"] and "api" not in u["kinds"]
    assert "module names differ" in u["cause"]
    assert any(c.endswith("--auto-map") and str(target.resolve()) in c for c in u["try"])
    # the console says so before anything else, with the cause and the command to try
    block = _block(proc.stdout)
    assert block[1].startswith("  NOT COMPARED: ") and f"{summary['unmatched']} of {summary['rows']} target" in block[1]
    assert any("likely cause: the module names differ" in ln for ln in block[2:5])
    assert any(ln.strip().startswith("try: msprobe compare -tp") and ln.endswith("--auto-map") for ln in block)
    assert f"none found among the {summary['matched']} matched rows" in proc.stdout
    # the gate names the share, the CSV is still msprobe's and still written
    assert f"--min-matched {least * 100:g}%" in proc.stderr and proc.stderr.count("\n") == 1
    assert only_result(tmp_path / "out").is_file()


def test_auto_map_pairs_them_and_the_gate_passes(tmp_path, run_cli):
    target, golden = TWINS / "renamed_L0" / "dump.json", TWINS / "golden_L0" / "dump.json"
    proc, summary = _compare(run_cli, tmp_path, target, golden, "--auto-map", "--fail-on", "error")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert summary["unpaired"]["below"] == [] and summary["unpaired"]["cause"] is None
    assert "NOT COMPARED" not in proc.stdout


def test_min_matched_sets_the_share(tmp_path, run_cli):
    target, golden = TWINS / "renamed_L0" / "dump.json", TWINS / "golden_L0" / "dump.json"
    proc, summary = _compare(run_cli, tmp_path, target, golden, "--fail-on", "warning", "--min-matched", "0")
    assert proc.returncode == 0, proc.stdout + proc.stderr  # every row passes; nothing asked to be compared
    assert summary["unpaired"]["min_matched"] == 0 and summary["unpaired"]["below"] == []
    bad = run_cli("compare", "-tp", target, "-gp", golden, "-o", tmp_path / "bad", "--min-matched", "half")
    assert bad.returncode == 2 and "--min-matched" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "bad").exists() or not list((tmp_path / "bad").iterdir())


@pytest.mark.exercises_hooks("msprobe_mapping_options")  # the MindSpore plugin names -am and -cm
def test_a_cross_framework_pair_without_a_mapping_suggests_one(tmp_path, run_cli):
    target, golden = CROSS / "target" / "step0", CROSS / "golden" / "step0"
    proc, summary = _compare(run_cli, tmp_path, target, golden, "--fail-on", "error")
    assert proc.returncode == 3, proc.stdout + proc.stderr  # every compared row passes, yet 15 of 566 is no pass
    u = summary["unpaired"]
    assert (u["target"]["matched"], u["target"]["rows"]) == (15, 566)
    assert u["golden"]["rows"] == 400 and u["golden"]["matched"] == 15
    assert "different frameworks (mindspore vs pytorch)" in u["cause"]
    assert u["try"][0].endswith(" -am") and u["try"][-1].endswith(" --auto-map")
    assert set(u["kinds"]) == {"api", "backward"}


def test_the_summary_names_both_inputs(tmp_path, run_cli):
    target, golden = CROSS / "target" / "step0", CROSS / "golden" / "step0"
    proc, summary = _compare(run_cli, tmp_path, target, golden, "-am")
    assert proc.returncode == 0, proc.stderr
    assert summary["target"] == str(target.resolve()) and summary["golden"] == str(golden.resolve())
    block = _block(proc.stdout)
    assert f"  target: {target.resolve()}" in block and f"  golden: {golden.resolve()}" in block
    assert summary["unpaired"]["below"] == []  # -am pairs most rows


def test_report_of_result_files_counts_the_target_side(tmp_path, run_cli):
    target, golden = TWINS / "renamed_L0" / "dump.json", TWINS / "golden_L0" / "dump.json"
    proc, _ = _compare(run_cli, tmp_path, target, golden)
    assert proc.returncode == 0, proc.stderr  # without --fail-on: the note, exit 0
    summary_file = tmp_path / "report.json"
    rep = run_cli("report", tmp_path / "out", "-o", tmp_path / "r.html", "--json-summary", summary_file,
                  "--fail-on", "error")
    assert rep.returncode == 3, rep.stdout + rep.stderr
    u = json.loads(summary_file.read_text())["unpaired"]
    assert u["below"] == ["target"] and u["golden"] is None  # a result table lists the target's rows only
    assert json.loads(summary_file.read_text())["target"] is None


def test_half_matched_passes_and_less_fails(tmp_path, run_cli):
    gold = {"Torch.a.0.forward": api([tensor()], [tensor()])}
    targ = {**gold, "Torch.b.0.forward": api([tensor()], [tensor()])}
    t, g = write_dump(tmp_path / "t", targ), write_dump(tmp_path / "g", gold)
    proc, summary = _compare(run_cli, tmp_path / "a", t, g, "--fail-on", "error")
    assert summary["unpaired"]["target"]["matched_share"] == 0.5 and proc.returncode == 0, proc.stderr
    proc, _ = _compare(run_cli, tmp_path / "b", t, g, "--fail-on", "error", "--min-matched", "51%")
    assert proc.returncode == 3 and "only 2 of 4 target rows (50%)" in proc.stderr


@pytest.mark.parametrize(("name", "kind"), [
    ("Module.blocks.0.attn.Attention.forward.0.input.0", "module"),
    ("Cell.embed.Embedding.forward.0.parameters.weight", "module"),
    ("Functional.linear.0.forward.input.0", "api"),
    ("Mint.add.11.backward.output.0", "backward"),
    ("Module.blocks.0.ln2.LayerNorm.backward.0.output.0", "backward"),
    ("Module.fc.Linear.parameters_grad.weight", "backward"),
    ("Distributed.all_reduce.0.forward.input.0", "api"),
    ("rank_0/net/0/0/Add.Default_Add-op1.1.1.0.output.0.npy", "other"),
])
def test_row_kind(name, kind):
    assert row_kind(name) == kind


@pytest.mark.parametrize(("text", "share"), [("0.5", 0.5), ("50%", 0.5), ("50", 0.5), ("0", 0.0), ("100%", 1.0)])
def test_parse_share(text, share):
    assert parse_share(text) == share


@pytest.mark.parametrize("text", ["half", "-1", "150%", "nan"])
def test_parse_share_refuses(text):
    with pytest.raises(ValueError):
        parse_share(text)
