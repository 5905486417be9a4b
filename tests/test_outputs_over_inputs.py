"""An output path that is one of the run's inputs, or a user's other file, is refused before any work.

``msprobe report R.csv -o R.csv`` (or ``report DIR -o DIR/<result>.csv``, or ``--json-summary`` naming a result)
would read the results and then replace one with the page or the summary; ``compare ... --json-summary
<an existing result>`` would replace a result. Each is refused with exit status 2, naming the path, and leaves
every file as it was. An earlier JSON summary or HTML report under the same name is still replaced (that is
what a re-run is for), and an HTML report a compare names by its results' timestamp never replaces a file of
that name from before the run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
API = REPO / "examples" / "mindspore_api"
TARGET = next((API / "target").glob("*/*/dump.json"))
GOLDEN = next((API / "golden").glob("*/*/dump.json"))


@pytest.fixture()
def results(run_cli, tmp_path) -> Path:
    """A folder holding one compare's result."""
    out = tmp_path / "results"
    proc = run_cli("compare", "-tp", TARGET, "-gp", GOLDEN, "-o", out, "-q")
    assert proc.returncode == 0, proc.stderr
    return out


def _result(folder: Path) -> Path:
    (found,) = sorted(folder.glob("compare_result_*.csv"))
    return found


def _refused(proc, path: Path) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert str(path) in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("how", ["file -o itself", "folder -o a result in it", "folder --json-summary a result"])
def test_report_never_writes_over_a_result_it_reads(run_cli, results, tmp_path, how):
    result = _result(results)
    before = result.read_bytes()
    if how == "file -o itself":
        args = [result, "-o", result]
    elif how == "folder -o a result in it":
        args = [results, "-o", result]
    else:
        args = [results, "-o", tmp_path / "page.html", "--json-summary", result]
    proc = run_cli("report", *args)
    _refused(proc, result)
    assert "is one of this run's inputs" in proc.stderr
    assert result.read_bytes() == before
    assert not (tmp_path / "page.html").exists()


def test_report_outputs_that_name_one_file_or_a_users_file_are_refused(run_cli, results, tmp_path):
    same = tmp_path / "both.html"
    proc = run_cli("report", results, "-o", same, "--json-summary", same)
    _refused(proc, same)
    assert not same.exists()
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    proc = run_cli("report", results, "-o", notes)
    _refused(proc, notes)
    assert "is not an HTML report" in proc.stderr and notes.read_text() == "my notes\n"


def test_report_replaces_its_own_earlier_page_and_summary(run_cli, results, tmp_path):
    page, summary = tmp_path / "page.html", tmp_path / "summary.json"
    for _ in range(2):
        proc = run_cli("report", results, "-o", page, "--json-summary", summary, "-q")
        assert proc.returncode == 0, proc.stderr
    assert json.loads(summary.read_text())["rows"] > 0 and page.read_text().lstrip().startswith("<!DOCTYPE html>")


def test_compare_json_summary_over_an_existing_result_is_refused_before_any_work(run_cli, results, tmp_path):
    result = _result(results)
    before = result.read_bytes()
    out = tmp_path / "again"
    proc = run_cli("compare", "-tp", TARGET, "-gp", GOLDEN, "-o", out, "--json-summary", result)
    _refused(proc, result)
    assert "is not a JSON summary" in proc.stderr and "--force" in proc.stderr
    assert result.read_bytes() == before
    assert not out.exists()  # before any work: no result, not even the output folder


@pytest.mark.exercises_hooks("msprobe_check_run")
def test_compare_json_summary_over_an_input_is_refused(run_cli, tmp_path):
    target = tmp_path / "dump.json"
    target.write_bytes(TARGET.read_bytes())
    (tmp_path / "dump_tensor_data").mkdir()
    before = target.read_bytes()
    proc = run_cli("compare", "-tp", target, "-gp", GOLDEN, "-o", tmp_path / "out", "--json-summary", target)
    _refused(proc, target)
    assert "is one of this run's inputs" in proc.stderr and target.read_bytes() == before


def test_compare_replaces_an_earlier_json_summary(run_cli, tmp_path):
    summary = tmp_path / "summary.json"
    for n in range(2):
        proc = run_cli("compare", "-tp", TARGET, "-gp", GOLDEN, "-o", tmp_path / f"out{n}", "--json-summary", summary,
                       "-q")
        assert proc.returncode == 0, proc.stderr
    assert json.loads(summary.read_text())["rows"] > 0


def test_a_compare_report_named_like_an_earlier_file_keeps_that_file(tmp_path):
    from msprobe_core.default_plugins.report.run_page import _report_path

    stamp = "20260101120000"
    earlier = tmp_path / f"compare_report_{stamp}.html"
    earlier.write_text("a report of an earlier run\n")
    chosen = _report_path(tmp_path, [tmp_path / f"compare_result_{stamp}.csv"])
    assert chosen != earlier and not chosen.exists() and chosen.name.startswith("compare_report_")
    assert _report_path(tmp_path, [tmp_path / f"compare_result_{stamp}.csv"], force=True) == earlier
