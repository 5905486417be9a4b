"""`msprobe report DIR` on a directory that holds several compare runs: the latest by default, said so, --run picks."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from msprobe_core.cli.main import main
from msprobe_core.default_plugins.report.command import collect_result_files, run_stamp

REPO = Path(__file__).resolve().parents[1]
MULTI = REPO / "examples" / "pytorch_multirank"
OLD, NEW = "20260101120000", "20260102120000"
KEEP_NEW = 40  # rows kept per rank in the newer run, so a summary tells the runs apart


@pytest.fixture(scope="module")
def multirank_results(tmp_path_factory) -> dict[str, Path]:
    """The two per-rank result CSVs of one real compare of the multi-rank example."""
    out = tmp_path_factory.mktemp("multirank")
    assert main(["compare", "-tp", str(MULTI / "target/step0"), "-gp", str(MULTI / "golden/step0"), "-o", str(out),
                 "-q"]) == 0
    found = {f.name.split("_")[2]: f for f in out.glob("compare_result_rank*_*.csv")}
    assert sorted(found) == ["rank0", "rank1"]
    return found


def _two_runs(root: Path, results: dict[str, Path]) -> Path:
    """``root`` holding the results as run OLD (64 rows per rank) and as run NEW (KEEP_NEW rows per rank)."""
    root.mkdir(parents=True, exist_ok=True)
    for rank, src in results.items():
        shutil.copy(src, root / f"compare_result_{rank}_{OLD}.csv")
        lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
        (root / f"compare_result_{rank}_{NEW}.csv").write_text("".join(lines[: KEEP_NEW + 1]), encoding="utf-8")
    return root


def _report(capsys, *args: str) -> tuple[int, dict, str]:
    summary_file = Path(args[0]).parent / "summary.json" if Path(args[0]).is_file() else Path(args[0]) / "summary.json"
    rc = main(["report", *args, "--json-summary", str(summary_file)])
    out = capsys.readouterr().out
    return rc, json.loads(summary_file.read_text()) if summary_file.exists() else {}, out


def test_a_folder_with_two_runs_reports_the_latest_and_says_so(tmp_path, multirank_results, capsys):
    root = _two_runs(tmp_path / "out", multirank_results)
    rc, summary, out = _report(capsys, str(root), "-o", str(root / "r.html"))
    assert rc == 0
    # one result per rank, of the newer run only (not two "rank0"s with doubled counts)
    assert [r["rank"] for r in summary["ranks"]] == ["rank0", "rank1"]
    assert summary["rows"] == 2 * KEEP_NEW
    assert all(NEW in f for r in summary["ranks"] for f in r["files"])
    assert summary["run"] == {"runs": [OLD, NEW], "shown": [NEW], "choice": "latest"}
    line = next(ln for ln in out.splitlines() if "compare runs" in ln)
    assert f"{root} holds 2 compare runs ({OLD}, {NEW}); reporting the latest, {NEW}" in line
    assert "--run" in line


def test_run_option_picks_a_run_or_all(tmp_path, multirank_results, capsys):
    root = _two_runs(tmp_path / "out", multirank_results)
    rc, summary, out = _report(capsys, str(root), "-o", str(root / "r.html"), "--run", OLD[:8] + "1")
    assert rc == 0
    assert summary["rows"] == 128 and summary["run"]["shown"] == [OLD]
    assert f"reporting {OLD}." in out
    rc, summary, _ = _report(capsys, str(root), "-o", str(root / "r.html"), "--run", "all")
    assert rc == 0
    assert [r["rank"] for r in summary["ranks"]] == [f"{OLD}/rank0", f"{OLD}/rank1", f"{NEW}/rank0", f"{NEW}/rank1"]
    assert summary["rows"] == 128 + 2 * KEEP_NEW
    assert summary["run"]["shown"] == [OLD, NEW]


def test_run_option_errors(tmp_path, multirank_results, run_cli):
    root = _two_runs(tmp_path / "out", multirank_results)
    proc = run_cli("report", root, "-o", tmp_path / "r.html", "--run", "2025")
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"msprobe: error: --run 2025: no result file of that run (runs found: {OLD}, {NEW})"
    proc = run_cli("report", root, "-o", tmp_path / "r.html", "--run", "2026")
    assert proc.returncode == 2 and "names 2 runs" in proc.stderr and "give more digits" in proc.stderr
    assert not (tmp_path / "r.html").exists()


def test_one_run_and_single_files_say_nothing_about_runs(tmp_path, multirank_results, capsys):
    root = tmp_path / "one"
    root.mkdir()
    for rank, src in multirank_results.items():
        shutil.copy(src, root / f"compare_result_{rank}_{OLD}.csv")
    rc, summary, out = _report(capsys, str(root), "-o", str(root / "r.html"))
    assert rc == 0 and "compare runs" not in out
    assert summary["rows"] == 128 and summary["run"] == {"runs": [OLD], "shown": [OLD], "choice": "latest"}
    rc, summary, out = _report(capsys, str(root / f"compare_result_rank1_{OLD}.csv"), "-o", str(root / "r1.html"))
    assert rc == 0 and "compare runs" not in out
    assert [r["rank"] for r in summary["ranks"]] == [""] and summary["rows"] == 64


def test_files_named_from_two_runs_are_all_taken_and_labelled_by_run(tmp_path, multirank_results, capsys):
    root = _two_runs(tmp_path / "out", multirank_results)
    files = [str(root / f"compare_result_rank0_{OLD}.csv"), str(root / f"compare_result_rank0_{NEW}.csv")]
    summary_file = tmp_path / "s.json"
    assert main(["report", *files, "--together", "-o", str(tmp_path / "r.html"), "--json-summary",
                 str(summary_file)]) == 0
    out = capsys.readouterr().out
    summary = json.loads(summary_file.read_text())
    assert [r["rank"] for r in summary["ranks"]] == [f"{OLD}/rank0", f"{NEW}/rank0"]
    assert f"come from 2 compare runs ({OLD}, {NEW})" in out


def test_grouping_keeps_parts_and_orders_runs(tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    names = [f"compare_result_rank0_{NEW}_part_2.csv", f"compare_result_rank0_{NEW}_part_1.csv",
             f"compare_result_rank0_{OLD}.csv", "compare_result_rank0.csv"]
    for n in names:
        (root / n).write_text("NPU Name\n")
    groups, choice = collect_result_files((root,))
    assert [[f.name for f in g] for g in groups] == [[names[1], names[0]]]
    assert choice.found[root] == ["", OLD, NEW]
    groups, choice = collect_result_files((root,), "all")
    assert [run_stamp(g[0]) for g in groups] == ["", OLD, NEW]
    groups, _ = collect_result_files((root, root / names[2]), OLD)  # a file and its folder: taken once
    assert [[f.name for f in g] for g in groups] == [[names[2]]]


def test_analysis_file_of_the_run_shown(tmp_path, multirank_results, capsys):
    """A diff_analyze_*.json written during the older run names the first divergence only for that run."""
    root = _two_runs(tmp_path / "out", multirank_results)
    during_old = int((time.mktime(time.strptime(OLD, "%Y%m%d%H%M%S")) + 5) * 1e9)
    doc = {"rank_1": [{"op_name": "Functional.gelu.0.forward", "role": "cause", "reason": "told by -da"}]}
    (root / f"diff_analyze_{during_old}.json").write_text(json.dumps(doc))
    _, summary, _ = _report(capsys, str(root), "-o", str(root / "r.html"), "--run", OLD)
    assert summary["first_divergence"]["source"] == "diff_analyze"
    assert summary["first_divergence"]["node"] == "Functional.gelu.0.forward"
    _, summary, _ = _report(capsys, str(root), "-o", str(root / "r.html"))
    assert summary["first_divergence"]["source"] != "diff_analyze"
