"""``msprobe report OLD NEW``: two compares of the same model before and after (real compares of the bundled
example: the fault in block 1's attention scaling, then the fixed run)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parent.parent / "examples" / "pytorch_tensor"
MULTIRANK = Path(__file__).parent.parent / "examples" / "pytorch_multirank"


@pytest.fixture(scope="module")
def before_after(tmp_path_factory) -> tuple[Path, Path]:
    """``old``: the faulty target against golden; ``new``: the fixed run (golden against itself)."""
    import subprocess
    import sys

    root = tmp_path_factory.mktemp("versus")
    for name, target in (("old", EXAMPLE / "target/step0"), ("new", EXAMPLE / "golden/step0")):
        subprocess.run([sys.executable, "-m", "msprobe_core", "compare", "-tp", str(target), "-gp",
                        str(EXAMPLE / "golden/step0"), "-o", str(root / name), "-q"], check=True)
    return root / "old", root / "new"


def _result(folder: Path) -> Path:
    (found,) = folder.glob("compare_result_*.csv")
    return found


def test_a_fix_shows_as_better_rows_and_the_first_divergence_gone(before_after, run_cli, tmp_path):
    old, new = before_after
    summary_file = tmp_path / "v.json"
    proc = run_cli("report", old, new, "--json-summary", summary_file)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(summary_file.read_text())
    assert summary["schema"] == "msprobe-core/versus/1"
    assert summary["first_divergence"]["change"] == "gone"
    assert summary["first_divergence"]["before"]["node"] == "Tensor.__mul__.1.forward"
    assert summary["first_divergence"]["after"] is None
    better = {e["name"]: e for e in summary["better"]}
    assert better["Tensor.__mul__.1.forward.input.1"]["before"]["result"] == "error"
    assert better["Tensor.__mul__.1.forward.input.1"]["after"]["result"] == "pass"
    assert summary["worse"] == [] and summary["appeared"] == [] and summary["disappeared"] == []
    assert summary["counts"]["better"] == len(summary["better"]) > 2
    assert summary["before"]["verdicts"]["error"] == 2 and summary["after"]["verdicts"]["error"] == 0
    page = new / "compare_versus.html"  # beside NEW without -o
    assert page.is_file() and "Tensor.__mul__.1.forward.input.1" in page.read_text()
    assert "first divergence: gone" in proc.stdout and f"before: {old.resolve()}" in proc.stdout


def test_the_same_pair_the_other_way_is_worse_and_the_divergence_new(before_after, run_cli, tmp_path):
    old, new = before_after
    summary_file = tmp_path / "v.json"
    proc = run_cli("report", new, old, "-o", tmp_path / "v.html", "--json-summary", summary_file, "-q")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(summary_file.read_text())
    assert summary["first_divergence"]["change"] == "new" and summary["better"] == []
    assert summary["worse"][0]["after"]["result"] == "error"  # verdict jumps first
    assert proc.stdout == ""


def test_two_result_files_of_the_same_rank_and_rows_that_appear_or_disappear(before_after, run_cli, tmp_path):
    old, _ = before_after
    with _result(old).open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    cut = tmp_path / "later" / _result(old).name
    cut.parent.mkdir()
    with cut.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows[:-5])  # the last 5 rows gone
    summary_file = tmp_path / "v.json"
    proc = run_cli("report", _result(old), cut, "--json-summary", summary_file, "-q")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(summary_file.read_text())
    assert [e["name"] for e in summary["disappeared"]] == [r[0] for r in rows[-5:]]
    assert summary["better"] == summary["worse"] == summary["appeared"] == []
    assert summary["first_divergence"]["change"] == "same"
    assert (cut.parent / "compare_versus.html").is_file()


def test_results_of_different_ranks_are_still_one_report_and_together_forces_it(tmp_path, run_cli):
    out = tmp_path / "mr"
    proc = run_cli("compare", "-tp", MULTIRANK / "target/step0", "-gp", MULTIRANK / "golden/step0", "-o", out, "-q")
    assert proc.returncode == 0, proc.stderr
    ranks = sorted(out.glob("compare_result_rank*.csv"))
    summary_file = tmp_path / "s.json"
    proc = run_cli("report", *ranks, "-o", tmp_path / "r.html", "--json-summary", summary_file, "-q")
    assert proc.returncode == 0, proc.stderr
    assert [r["rank"] for r in json.loads(summary_file.read_text())["ranks"]] == ["rank0", "rank1"]
    twin = tmp_path / "twin"
    twin.mkdir()
    shutil.copy(ranks[0], twin / ranks[0].name)
    proc = run_cli("report", ranks[0], twin / ranks[0].name, "--together", "-o", tmp_path / "t.html",
                   "--json-summary", summary_file, "-q")
    assert proc.returncode == 0, proc.stderr
    assert "ranks" in json.loads(summary_file.read_text())  # one report, not before and after
    proc = run_cli("report", ranks[0], "--versus", "-o", tmp_path / "x.html")
    assert proc.returncode == 2 and "--versus compares two results" in proc.stderr


def test_row_names_are_escaped_on_the_page(before_after, run_cli, tmp_path):
    old, _ = before_after
    with _result(old).open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    rows[1][0] = '<script>alert(1)</script>'
    hostile = tmp_path / "h" / _result(old).name
    hostile.parent.mkdir()
    with hostile.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    proc = run_cli("report", _result(old), hostile, "-o", tmp_path / "v.html", "-q")
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "v.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
