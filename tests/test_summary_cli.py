"""Console summary after every compare, --quiet, --json-summary, --fail-on, and `msprobe report`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from msprobe_core.default_plugins.summary.divergence import first_divergence_of
from msprobe_core.default_plugins.summary.modes import row_names
from msprobe_core.default_plugins.summary.result_files import read_result_file
from msprobe_core.default_plugins.summary.summary import summarize
from msprobe_core.default_plugins.summary.views import ResultView, node_of, row_verdicts

from .dumps import api, only_result, tensor, write_dump

# what these tests read of results (columns, modes, summaries) they read as a run does (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("as_in_a_run")

REPO = Path(__file__).resolve().parents[1]
STATS = REPO / "examples" / "pytorch_stats"


def _md5(value: str) -> dict:
    return tensor(md5=value)


def _md5_pair(tmp_path: Path, *, extra_target: bool = False, differ: bool = False) -> tuple[Path, Path]:
    gold = {"Torch.a.0.forward": api([_md5("aaaa0000")], [_md5("bbbb0000")])}
    targ = {"Torch.a.0.forward": api([_md5("aaaa0000")], [_md5("bbbb1111" if differ else "bbbb0000")])}
    if extra_target:
        targ["Torch.b.0.forward"] = api([_md5("cccc0000")], [_md5("dddd0000")])
    return write_dump(tmp_path / "t", targ, task="statistics"), write_dump(tmp_path / "g", gold, task="statistics")


def test_console_summary_on_every_compare(tmp_path, run_cli):
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", STATS / "target/step0", "-gp", STATS / "golden/step0", "-o", out)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "Compare summary" in text
    assert "dump mode: statistics; frameworks (target vs golden): pytorch vs pytorch" in text
    assert "first divergence: Functional.linear.0.forward" in text
    assert "worst rows by NormRelativeErr:" in text
    result = only_result(out)
    assert str(result.resolve()) in text
    view = read_result_file(result)
    counts = {v: row_verdicts(view).count(v) for v in ("pass", "warning", "error")}
    assert f"verdicts: pass {counts['pass']}, warning {counts['warning']}, error {counts['error']}" in text
    # ten ranked rows
    assert "    10. " in text and "    11. " not in text


def test_quiet_prints_nothing_but_errors(tmp_path, run_cli):
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", STATS / "target/step0", "-gp", STATS / "golden/step0", "-o", out, "-q",
                   "--fail-on", "error")
    assert proc.stdout == ""
    assert proc.returncode == 3
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("msprobe: error: --fail-on error:"), proc.stderr


def test_json_summary(tmp_path, run_cli):
    out = tmp_path / "out"
    summary_file = tmp_path / "ci" / "summary.json"
    proc = run_cli("compare", "-tp", STATS / "target/step0", "-gp", STATS / "golden/step0", "-o", out,
                   "--json-summary", summary_file, "--report", "html")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(summary_file.read_text())
    view = read_result_file(only_result(out))
    verdicts = row_verdicts(view)
    assert summary["schema"] == "msprobe-core/summary/2"
    assert summary["modes"] == ["statistics"]
    assert summary["frameworks"] == [{"target": "pytorch", "golden": "pytorch"}]
    assert summary["rows"] == len(view) and summary["matched"] + summary["unmatched"] == len(view)
    assert summary["verdicts"] == {v: verdicts.count(v) for v in ("pass", "warning", "error")}
    fd = summary["first_divergence"]
    assert fd["node"] == "Functional.linear.0.forward"
    assert fd["row"].startswith("Functional.linear.0.forward.") and "bfloat16" in fd["reason"]
    # the fields schema 2 gained (additive: older readers are unaffected): the row's golden counterpart and the path
    assert fd["golden_row"] == fd["row"]  # same framework, same names
    assert fd["path"][-1] == fd["node"] and fd["path_source"] == "stack.json"  # an L1 dump: its calling code
    assert all(d["path"][-1] == d["node"] for d in summary["first_divergence_by_rank"])
    assert len(summary["worst_rows"]) == 10
    rels = [abs(w["value"]) for w in summary["worst_rows"]]  # JSON numbers, in the table's unit (%)
    assert rels == sorted(rels, reverse=True)
    assert {Path(f).name for f in summary["files"]} >= {only_result(out).name, "summary.json"}
    assert any(f.endswith(".html") and Path(f).is_file() for f in summary["files"])
    assert not list(tmp_path.rglob("*.part"))
    # the console block says the same
    assert f"error {summary['verdicts']['error']}" in proc.stdout


@pytest.mark.parametrize(
    ("extra_target", "differ", "fail_on", "code"),
    [
        (False, False, "error", 0),  # all pass
        (False, False, "warning", 0),
        (True, False, "error", 0),  # an unmatched md5 row is a warning only
        (True, False, "warning", 3),  # the gate's own status: not a failed run's 1
        (False, True, "error", 3),  # a differing CRC is an error
        (False, True, "warning", 3),
    ],
)
def test_fail_on_exit_codes(tmp_path, run_cli, extra_target, differ, fail_on, code):
    t, g = _md5_pair(tmp_path, extra_target=extra_target, differ=differ)
    summary_file = tmp_path / "s.json"
    proc = run_cli("compare", "-tp", t, "-gp", g, "-o", tmp_path / "out", "--fail-on", fail_on,
                   "--json-summary", summary_file)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    summary = json.loads(summary_file.read_text())  # written before the gate decides
    assert summary["modes"] == ["md5"]
    if code:
        assert f"msprobe: error: --fail-on {fail_on}:" in proc.stderr
    else:
        assert proc.stderr == ""
    assert only_result(tmp_path / "out").is_file()  # the gate never removes results


def test_fail_on_without_the_flag_is_zero(tmp_path, run_cli):
    t, g = _md5_pair(tmp_path, differ=True)
    proc = run_cli("compare", "-tp", t, "-gp", g, "-o", tmp_path / "out")
    assert proc.returncode == 0
    assert "first divergence: Torch.a.0.forward" in proc.stdout


def test_report_command_on_csv_and_xlsx(tmp_path, run_cli):
    for fmt in ("csv", "xlsx"):
        out = tmp_path / fmt
        args = ["compare", "-tp", STATS / "target/step0", "-gp", STATS / "golden/step0", "-o", out, "-q"]
        proc = run_cli(*args, *(["--xlsx"] if fmt == "xlsx" else []))
        assert proc.returncode == 0, proc.stderr
        result = only_result(out, "." + fmt)
        report = tmp_path / f"{fmt}.html"
        summary_file = tmp_path / f"{fmt}.json"
        proc = run_cli("report", result, "-o", report, "--json-summary", summary_file, "--fail-on", "warning")
        assert proc.returncode == 3, proc.stderr
        assert report.is_file() and "Compare summary" in proc.stdout
        summary = json.loads(summary_file.read_text())
        assert summary["first_divergence"]["node"] == "Functional.linear.0.forward"
    csv_s = json.loads((tmp_path / "csv.json").read_text())
    xlsx_s = json.loads((tmp_path / "xlsx.json").read_text())
    for key in ("rows", "verdicts", "first_divergence", "worst_rows", "modes"):
        assert csv_s[key] == xlsx_s[key], key


def test_report_command_errors(tmp_path, run_cli):
    proc = run_cli("report", tmp_path / "missing.csv", "-o", tmp_path / "r.html")
    assert proc.returncode == 2 and "result path does not exist" in proc.stderr
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    proc = run_cli("report", bad, "-o", tmp_path / "r.html")
    assert proc.returncode == 2 and "not a compare result" in proc.stderr
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(
    ("name", "node", "direction"),
    [
        ("Functional.linear.0.forward.input.1", "Functional.linear.0.forward", "forward"),
        ("Tensor.__mul__.1.backward.output.0", "Tensor.__mul__.1.backward", "backward"),
        ("Module.blocks.0.attn.qkv.Linear.forward.0.output.0", "Module.blocks.0.attn.qkv.Linear.forward.0", "forward"),
        ("Module.fc.Linear.forward.0.parameters.weight", "Module.fc.Linear.forward.0", "forward"),
        ("Module.fc.Linear.parameters_grad.weight", "Module.fc.Linear.parameters_grad", "backward"),
        ("Cell.blocks.1.attn.Attention.backward.0.input.0", "Cell.blocks.1.attn.Attention.backward.0", "backward"),
        ("Distributed.all_gather.0.forward.output.0.1", "Distributed.all_gather.0.forward", "forward"),
        ("Functional.gelu.0.forward.input.approximate", "Functional.gelu.0.forward", "forward"),
        ("blocks.0.attn_out_grad.0.debug", "blocks.0.attn_out_grad.0.debug", "backward"),
        ("/d/rank_0/Net/0/0/Div.Default_net-Attention_Div-op1.0.0.1795984718726053.output.0.DefaultFormat.Float32.npy",
         "Div.Default_net-Attention_Div-op1", "forward"),
    ],
)
def test_node_of(name, node, direction):
    # a kernel row's call comes from the kernel plugin's file-name grammar (MetricSpec.row_names of its mode)
    grammar = row_names("kernel") if name.endswith(".npy") else None
    assert node_of(name, grammar) == (node, direction)


def _view(rows: list[dict[str, str]], mode: str = "tensor") -> ResultView:
    cols = list(rows[0])
    return ResultView("", mode, cols, {c: [r[c] for r in rows] for c in cols})


def test_first_divergence_rules():
    base = {"NPU Name": "A.0.forward.output.0", "Bench Name": "A.0.forward.output.0", "NPU Dtype": "torch.float32",
            "Bench Dtype": "torch.float32", "NPU Tensor Shape": "[2]", "Bench Tensor Shape": "[2]", "Cosine": "1.0",
            "MaxAbsErr": "0.0", "Result": "pass", "Err_message": "[]"}
    ok = dict(base)
    assert first_divergence_of(_view([ok])) is None
    low = dict(base, **{"NPU Name": "B.0.forward.output.0", "Cosine": "0.95", "MaxAbsErr": "0.01"})
    d = first_divergence_of(_view([ok, low]))
    assert (d.node, d.index) == ("B.0.forward", 1) and "Cosine 0.95 < 0.99" in d.reason
    tiny = dict(low, MaxAbsErr="0.0001")  # cosine just under 0.99 with negligible abs error: not a divergence
    tiny["Cosine"] = "0.985"
    assert first_divergence_of(_view([ok, tiny])) is None
    drift = dict(base, **{"NPU Name": "C.0.forward.output.0", "NPU Dtype": "torch.bfloat16"})
    assert "dtype drift" in first_divergence_of(_view([ok, drift])).reason
    cross = dict(base, **{"NPU Dtype": "Float32"})  # the same dtype spelled by another framework
    assert first_divergence_of(_view([cross])) is None
    ints = dict(base, **{"NPU Dtype": "Int32", "Bench Dtype": "torch.int64"})  # integer width: not numerics
    assert first_divergence_of(_view([ints])) is None
    unmatched = dict(base, **{"Bench Name": "N/A", "Cosine": "unsupported", "Result": "error"})
    d = first_divergence_of(_view([unmatched]))  # skipped by the rules, but an error row is never left unnamed
    assert (d.source, d.index) == ("verdict", 0) and "the first error row, unmatched" in d.reason
    d = first_divergence_of(_view([unmatched, low]))  # a row that differs in numbers beats it
    assert (d.source, d.node) == ("threshold", "B.0.forward")
    err = dict(base, Result="error", Err_message='["error: The shape of NPU and Bench are inconsistent."]')
    assert "shape of NPU and Bench" in first_divergence_of(_view([err])).reason
    stats = {"NPU Name": "S.0.forward.output.0", "Bench Name": "S.0.forward.output.0", "NormRelativeErr": "1.5%",
             "Result": "pass"}
    d = first_divergence_of(_view([dict(stats, NormRelativeErr="0.5%"), stats], "statistics"))
    assert d.index == 1 and "NormRelativeErr 1.5% > 1%" in d.reason


def test_summary_of_views_across_ranks_and_steps():
    def stats_view(label: str, bad_at: int) -> ResultView:
        rows = [{"NPU Name": f"Op{i}.0.forward.output.0", "Bench Name": f"Op{i}.0.forward.output.0",
                 "NormRelativeErr": "5%" if i >= bad_at else "0", "Result": "pass"} for i in range(6)]
        v = _view(rows, "statistics")
        v.label = label
        return v

    s = summarize([stats_view("rank0", 4), stats_view("rank1", 2)])
    assert s["first_divergence"]["rank"] == "rank1" and s["first_divergence"]["node"] == "Op2.0.forward"
    assert [d["rank"] for d in s["first_divergence_by_rank"]] == ["rank0", "rank1"]
    s = summarize([stats_view("rank 0 step 0", 5), stats_view("rank 0 step 1", 1)])
    assert s["first_divergence"]["rank"] == "rank 0 step 0"  # an earlier step wins over an earlier row


def test_diff_analyze_answer_is_preferred(tmp_path):
    rows = [{"NPU Name": f"Op{i}.0.forward.output.0", "Bench Name": f"Op{i}.0.forward.output.0",
             "NormRelativeErr": "5%" if i >= 1 else "0", "Result": "pass"} for i in range(6)]
    view = _view(rows, "statistics")
    doc = tmp_path / "diff_analyze_1.json"
    doc.write_text(json.dumps({"rank_0": [{"op_name": "Op3.0.forward", "data_info": {}, "stack_info": None,
                                            "reason": "output MaxRelativeErr 60% > 50%"}]}))
    s = summarize([view], analysis=doc)
    assert s["first_divergence"]["node"] == "Op3.0.forward"
    assert s["first_divergence"]["source"] == "diff_analyze" and "60%" in s["first_divergence"]["reason"]
    doc.write_text(json.dumps({"rank_0": [{"op_name": "NotHere.0.forward"}]}))  # stale: ignored
    assert summarize([view], analysis=doc)["first_divergence"]["node"] == "Op1.0.forward"


def test_summary_and_report_take_the_first_divergence_from_da(tmp_path, run_cli):
    """With -da the first divergence is the analysis' cause (rank 1 of c09a), with its reason."""
    import importlib.util

    import msprobe_core

    spec = importlib.util.find_spec("msprobe_core.default_plugins.diff_analyze")
    if spec is None or Path(spec.origin).parent.parent.parent != Path(msprobe_core.__file__).parent:
        pytest.skip("the -da analysis package is not part of this build")
    multi = REPO / "examples" / "pytorch_multirank"
    summary_file = tmp_path / "s.json"
    proc = run_cli("compare", "-tp", multi / "target/step0", "-gp", multi / "golden/step0", "-o", tmp_path / "out",
                   "-da", "--json-summary", summary_file, "--report", "html")
    assert proc.returncode == 0, proc.stderr
    fd = json.loads(summary_file.read_text())["first_divergence"]
    assert (fd["source"], fd["rank"], fd["node"]) == ("diff_analyze", "rank1", "Functional.linear.0.forward")
    assert fd["row"].startswith("Functional.linear.0.forward.") and fd["reason"]
    assert "first divergence [rank1]: Functional.linear.0.forward" in proc.stdout
    assert len(list((tmp_path / "out").glob("compare_report_*.html"))) == 1


def test_summary_of_a_partly_failed_run(tmp_path, run_cli):
    """One rank cannot be compared: the run fails (exit 1) but what was written is summarised and reported."""
    import shutil

    src = REPO / "examples" / "pytorch_multirank"
    for side in ("target", "golden"):
        shutil.copytree(src / side, tmp_path / side)
    (tmp_path / "golden" / "step0" / "rank1" / "dump.json").unlink()
    summary_file = tmp_path / "s.json"
    proc = run_cli("compare", "-tp", tmp_path / "target/step0", "-gp", tmp_path / "golden/step0", "-o", tmp_path / "out",
                   "--json-summary", summary_file, "--report", "html")
    assert proc.returncode == 1
    assert "1 of 2 compares failed (rank1)" in proc.stderr
    assert "Compare summary" in proc.stdout
    summary = json.loads(summary_file.read_text())
    assert [r["rank"] for r in summary["ranks"]] == ["rank0"]
    assert len(summary["errors"]) == 1 and summary["errors"][0].startswith("rank1: ")
    assert len(list((tmp_path / "out").glob("compare_report_*.html"))) == 1


def test_a_red_gate_and_a_failed_run_have_their_own_exit_statuses(tmp_path, run_cli):
    """A CI gate can tell "the runs differ" (3) from a run that failed (1): a partly failed run whose gate is
    also red exits 1 (its results are incomplete); the README's table is the one the code keeps."""
    import shutil

    from msprobe_core.errors import EXIT_STATUSES, GateFailed

    src = REPO / "examples" / "pytorch_multirank"
    for side in ("target", "golden"):
        shutil.copytree(src / side, tmp_path / side)
    red = run_cli("compare", "-tp", tmp_path / "target/step0", "-gp", tmp_path / "golden/step0", "-o",
                  tmp_path / "red", "-q", "--fail-on", "warning")
    assert red.returncode == GateFailed.exit_code == 3, red.stderr
    (tmp_path / "golden" / "step0" / "rank1" / "dump.json").unlink()
    broken = run_cli("compare", "-tp", tmp_path / "target/step0", "-gp", tmp_path / "golden/step0", "-o",
                     tmp_path / "broken", "-q", "--fail-on", "warning")
    assert broken.returncode == 1 and "1 of 2 compares failed (rank1)" in broken.stderr
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert all(f"| {code}" in readme for code in EXIT_STATUSES if code < 100)
