"""Two dump roots holding ``step<N>`` directories: every step both runs have is compared, as its step directory
would be, and the summary, console and ``-da`` say what happened in each step.

The dumps are the repository's two-step MindSpore cell dump (``examples/mindspore_cell``, corpus case
``ms_l0_stat_bug_2steps``: a softmax-scale fault in block 1, two SGD steps), so these tests need no shared folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .conftest import agree

REPO = Path(__file__).resolve().parents[1]
CELL = REPO / "examples" / "mindspore_cell"
ORACLE = REPO / "tests" / "data" / "corpus" / "mindspore" / "ms_l0_stat_bug_2steps" / "oracle"


def _roots(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the two-step pair (each test may add or remove steps)."""
    target, golden = tmp_path / "target", tmp_path / "golden"
    shutil.copytree(CELL / "target", target)
    shutil.copytree(CELL / "golden", golden)
    return target, golden


def _summary(run_cli, target: Path, golden: Path, out: Path, *extra: str) -> tuple[dict, str, str]:
    summary = out / "summary.json"
    proc = run_cli("compare", "-tp", target, "-gp", golden, "-o", out, "--json-summary", summary, *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(summary.read_text()), proc.stdout, proc.stderr


def _one_step(run_cli, target: Path, golden: Path, out: Path, *extra: str) -> dict:
    """The summary of a compare of one step directory pair, as before step roots were understood."""
    return _summary(run_cli, target, golden, out, *extra)[0]


def test_every_step_is_compared_into_its_own_folder_as_its_step_directory_would_be(run_cli, tmp_path, oracle_diff):
    target, golden = _roots(tmp_path)
    out = tmp_path / "out"
    summary, stdout, _ = _summary(run_cli, target, golden, out)
    assert [s["step"] for s in summary["steps"]] == ["step0", "step1"]
    for entry in summary["steps"]:
        step = entry["step"]
        (result,) = sorted((out / step).glob("compare_result_*.csv"))
        rc, report = agree(oracle_diff, result, ORACLE / step / "compare_result.csv")
        assert rc == 0, report  # msprobe's own table of that step, cell for cell
        alone = _one_step(run_cli, target / step, golden / step, tmp_path / f"alone_{step}")
        assert entry["verdicts"] == alone["verdicts"] and entry["rows"] == alone["rows"]
        assert entry["first_divergence"]["node"] == alone["first_divergence"]["node"]
        assert entry["first_divergence"]["row"] == alone["first_divergence"]["row"]
        assert [r["rank"] for r in entry["ranks"]] == ["proc13856"]  # the step directory's one process
        line = next(x for x in stdout.splitlines() if x.strip().startswith(step + " "))
        v = alone["verdicts"]
        assert f"pass {v['pass']}, warning {v['warning']}, error {v['error']}" in line
        assert alone["first_divergence"]["node"] in line
    # the run's first divergence is the earliest step's
    assert summary["first_divergence"]["rank"].startswith("step0/")
    assert sum(s["rows"] for s in summary["steps"]) == summary["rows"]


def test_a_later_step_whose_first_divergence_is_at_parameters_says_the_previous_step_set_them(run_cli, tmp_path):
    target, golden = _roots(tmp_path)
    summary, stdout, _ = _summary(run_cli, target, golden, tmp_path / "out")
    step0, step1 = summary["steps"]
    # step 1's weights were updated by step 0's backward, which the fault made differ
    assert ".parameters." in step1["first_divergence"]["row"]
    note = "parameters already differ at first use in step1: the previous step updated them differently"
    assert step1["first_divergence"]["carried"] == note
    assert step1["ranks"][0]["first_divergence"]["carried"] == note
    assert "carried" not in step0["first_divergence"]  # in the first step nothing came before
    assert f"({note})" in next(x for x in stdout.splitlines() if x.strip().startswith("step1 "))


def test_a_step_one_run_lacks_is_named_in_a_warning_and_the_summary(run_cli, tmp_path):
    target, golden = _roots(tmp_path)
    shutil.copytree(target / "step1", target / "step2")
    summary, stdout, _ = _summary(run_cli, target, golden, tmp_path / "out")
    warning = next(x for x in stdout.splitlines() if "[WARNING]" in x and "step2" in x)
    assert "step2 exists only in the target dump" in warning and str(target / "step2") in warning
    absent = summary["steps"][-1]
    assert absent["step"] == "step2" and absent["absent"] and absent["only_in"] == "target"
    assert absent["verdicts"] is None
    assert "step2  only in the target dump, not compared" in stdout
    assert not (tmp_path / "out" / "step2").exists()
    assert [s["step"] for s in summary["steps"] if not s.get("absent")] == ["step0", "step1"]


def test_step_selects_steps_of_step_roots(run_cli, tmp_path):
    target, golden = _roots(tmp_path)
    out = tmp_path / "out"
    summary, _, _ = _summary(run_cli, target, golden, out, "--step", "1")
    assert [s["step"] for s in summary["steps"]] == ["step1"]
    assert not (out / "step0").exists() and list((out / "step1").glob("compare_result_*.csv"))
    assert summary["rows"] == summary["steps"][0]["rows"]
    # a step neither run has: named; only such steps: a one-line error naming what each run has
    proc = run_cli("compare", "-tp", target, "-gp", golden, "-o", tmp_path / "o2", "--step", "1,7")
    assert proc.returncode == 0 and "[WARNING] --step 7: neither dump has step7" in proc.stdout
    proc = run_cli("compare", "-tp", target, "-gp", golden, "-o", tmp_path / "o3", "--step", "7")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "no step is present in both dumps for --step 7 (target: step0, step1; golden: step0, step1)" in proc.stderr
    assert "neither dump has step7" not in proc.stdout + proc.stderr  # the fact once: as the error, no warning first
    proc = run_cli("compare", "-tp", target, "-gp", golden, "-o", tmp_path / "o4", "--step", "x")
    assert proc.returncode == 2 and "--step" in proc.stderr and "non-negative integers" in proc.stderr


@pytest.mark.parametrize("form", ["dirs", "files"])
def test_step_is_refused_where_there_is_one_step(run_cli, tmp_path, form):
    target, golden = CELL / "target" / "step0", CELL / "golden" / "step0"
    if form == "files":
        target, golden = next(target.glob("*/dump.json")), next(golden.glob("*/dump.json"))
    proc = run_cli("compare", "-tp", target, "-gp", golden, "-o", tmp_path / "out", "--step", "0")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--step selects the step<N> directories of two dump roots" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_roots_with_steps_on_one_side_only_are_refused_in_one_line(run_cli, tmp_path):
    proc = run_cli("compare", "-tp", CELL / "target", "-gp", CELL / "golden" / "step0", "-o", tmp_path / "out")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "holds step directories (step0, step1) but -gp" in proc.stderr


def test_diff_analyze_runs_per_step(run_cli, tmp_path):
    target, golden = _roots(tmp_path)
    out = tmp_path / "out"
    summary, stdout, _ = _summary(run_cli, target, golden, out, "-da")
    answers = {}
    for step in ("step0", "step1"):
        (found,) = sorted((out / step).glob("diff_analyze_*.json"))
        alone = tmp_path / f"alone_{step}"
        _one_step(run_cli, target / step, golden / step, alone, "-da")
        (ref,) = sorted(alone.glob("diff_analyze_*.json"))
        ours, theirs = json.loads(found.read_text()), json.loads(ref.read_text())
        assert [n["op_name"] for n in ours["rank_0"]] == [n["op_name"] for n in theirs["rank_0"]]
        answers[step] = ours["rank_0"][0]["op_name"]
    assert not list(out.glob("diff_analyze_*.json"))  # one analysis per step, in its folder
    assert summary["first_divergence"]["source"] == "diff_analyze"
    assert summary["first_divergence"]["node"] == answers["step0"]
    assert summary["first_divergence"]["rank"].startswith("step0/")
    # each step's own first divergence is its analysis' answer
    for entry in summary["steps"]:
        assert entry["first_divergence"]["source"] == "diff_analyze"
        assert entry["first_divergence"]["node"] == answers[entry["step"]]
        line = next(x for x in stdout.splitlines() if x.strip().startswith(entry["step"] + " "))
        assert f"first divergence {answers[entry['step']]}" in line


def test_a_reason_says_how_far_inputs_moved_below_the_threshold(run_cli, tmp_path):
    """The two-step pair's step-0 cause is a cell whose input is identical; nudge that input's mean by 0.0025 %
    of its range (below -da's 0.01 % threshold): the reason must say it moved, and by how much."""
    target, golden = _roots(tmp_path)
    node = "Cell.blocks.1.attn.Attention.forward.0"
    out = tmp_path / "plain"
    _one_step(run_cli, target / "step0", golden / "step0", out, "-da")
    (plain,) = sorted(out.glob("diff_analyze_*.json"))
    cause = json.loads(plain.read_text())["rank_0"][0]
    assert cause["op_name"] == node and "its inputs match (identical as dumped)" in cause["reason"]
    dump = next((target / "step0").glob("*/dump.json"))
    doc = json.loads(dump.read_text())
    arg = doc["data"][node]["input_args"][0]
    scale = max(abs(arg["Max"]), abs(arg["Min"]))
    arg["Mean"] += 2.5e-5 * scale
    dump.write_text(json.dumps(doc))
    out = tmp_path / "nudged"
    _one_step(run_cli, target / "step0", golden / "step0", out, "-da")
    (nudged,) = sorted(out.glob("diff_analyze_*.json"))
    cause = json.loads(nudged.read_text())["rank_0"][0]
    assert cause["op_name"] == node
    reason = cause["reason"]
    assert "match" not in reason.split("but its output differs")[0]
    assert f"its inputs moved, each below the threshold ({node}.input.0 mean 0.0025% of the range max|x|; " \
           "threshold 0.01%)" in reason


def test_msprobe_report_on_the_output_folder_shows_the_same_steps(run_cli, tmp_path):
    target, golden = _roots(tmp_path)
    out = tmp_path / "out"
    summary, _, _ = _summary(run_cli, target, golden, out)
    again = tmp_path / "again.json"
    proc = run_cli("report", out, "-o", tmp_path / "report.html", "--json-summary", again, "-q")
    assert proc.returncode == 0, proc.stderr
    read_back = json.loads(again.read_text())
    keys = ("step", "rows", "verdicts", "worst_verdict")
    assert [{k: s[k] for k in keys} for s in read_back["steps"]] == [{k: s[k] for k in keys} for s in summary["steps"]]
    assert [s["first_divergence"]["row"] for s in read_back["steps"]] == [
        s["first_divergence"]["row"] for s in summary["steps"]]


@pytest.mark.parametrize("odd", ["step1\n", "step01", "step1 "])
def test_a_directory_named_almost_like_a_step_is_named_escaped_and_hides_no_step(run_cli, tmp_path, odd):
    # ``step1\n`` (a regex ``$`` matches before a final newline) or ``step01`` would be step 1 too and replace the
    # real step1 without a word; it holds step0's dump here, so a compare of it would show other verdicts
    target, golden = _roots(tmp_path)
    shutil.copytree(target / "step0", target / odd)
    summary, stdout, stderr = _summary(run_cli, target, golden, tmp_path / "out")
    assert [s["step"] for s in summary["steps"]] == ["step0", "step1"]
    alone = _one_step(run_cli, target / "step1", golden / "step1", tmp_path / "alone")
    step1 = summary["steps"][1]
    assert step1["verdicts"] == alone["verdicts"] and step1["rows"] == alone["rows"]
    warning = next(x for x in stdout.splitlines() if "[WARNING]" in x and "not a step directory" in x)
    assert ascii(odd) in warning and str(target) in warning  # named, escaped: the line stays one line
    if "\n" in odd:
        assert "step1\n" not in stdout + stderr  # the raw newline never reaches the console
    assert not (tmp_path / "out" / odd).exists()


def test_a_directory_named_almost_like_a_rank_is_named_escaped_and_hides_no_rank(run_cli, tmp_path):
    # ``rank0\n`` matched the rank pattern's ``$`` too: a third "rank" beside rank0 and rank1 of the same number
    multirank = REPO / "examples" / "pytorch_multirank"
    target, golden = tmp_path / "target", tmp_path / "golden"
    shutil.copytree(multirank / "target" / "step0", target)
    shutil.copytree(multirank / "golden" / "step0", golden)
    shutil.copytree(target / "rank1", target / "rank0\n")
    summary, stdout, stderr = _summary(run_cli, target, golden, tmp_path / "out")
    assert [r["rank"] for r in summary["ranks"]] == ["rank0", "rank1"]
    warning = next(x for x in stdout.splitlines() if "[WARNING]" in x and "not a rank directory" in x)
    assert ascii("rank0\n") in warning and str(target) in warning
    assert "rank0\n" not in stdout + stderr
