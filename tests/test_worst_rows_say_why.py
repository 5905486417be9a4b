"""Worst rows say why (issue 23, item 4): each names the rule or message behind its verdict, ranks by a
finite measure, shows its value to 4 significant digits on the console and the page, and gives it to
``--json-summary`` as a number (the result files keep msprobe's spelling)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from msprobe_core.default_plugins.summary.reasons import cell_number, people_text
from msprobe_core.default_plugins.summary.result_files import read_result_file
from msprobe_core.default_plugins.summary.summary import format_summary, summarize
from msprobe_core.default_plugins.summary.views import ResultView

from .dumps import api, only_result, tensor, write_dump

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
#: a console worst-row line: "  1. <name>  <value>  <verdict>  <reason>"
LINE = re.compile(r"^\s+\d+\. (?P<name>\S+)\s+(?P<value>\S+)\s+(?P<result>pass|warning|error)\s+(?P<reason>\S.*)$")


def _listed(stdout: str) -> list[re.Match]:
    block = stdout[stdout.index("worst rows by"):stdout.index("  files:")]
    return [m for m in map(LINE.match, block.splitlines()[1:]) if m]


def test_the_tensor_example_lists_its_rows_with_their_reasons(tmp_path, run_cli):
    """examples/pytorch_tensor: the error row with Cosine 1.0 (the One Thousandth Err Ratio rule failed it) no
    longer heads the list; every row says why; the console rounds, the JSON gives numbers, the CSV keeps its cells."""
    ex = EXAMPLES / "pytorch_tensor"
    out, summary_file = tmp_path / "out", tmp_path / "s.json"
    proc = run_cli("compare", "-tp", ex / "target/step0", "-gp", ex / "golden/step0", "-o", out,
                   "--json-summary", summary_file)
    assert proc.returncode == 0, proc.stderr
    worst = json.loads(summary_file.read_text())["worst_rows"]
    assert len(worst) == 10
    # a Cosine of 1 says no difference: it comes after every row of its verdict the metric shows one on
    first = worst[0]
    assert (first["name"], first["cell"], first["result"]) == ("Tensor.__mul__.1.forward.input.1", "unsupported", "error")
    assert first["reason"] == "The scalar parameters of NPU and Bench are inconsistent"
    second = worst[1]
    assert (second["name"], second["value"], second["text"]) == ("Tensor.__mul__.1.forward.output.0", 1.0, "1.000")
    assert "One Thousandth Err Ratio" in second["reason"] and "msprobe tests output < 0.1" in second["reason"]
    assert all(w["reason"].startswith("no rule flags it") for w in worst if w["result"] == "pass")
    for w in worst:
        assert w["value"] is None or isinstance(w["value"], float), w
    # the console: the same rows, rounded to 4 significant digits, each with its reason
    lines = _listed(proc.stdout)
    assert [(m["name"], m["result"], m["reason"]) for m in lines] == [(w["name"], w["result"], w["reason"]) for w in worst]
    assert lines[2]["value"] == "0.9218" and worst[2]["cell"] == "0.921796894986"
    assert all(len(re.sub(r"\D", "", m["value"]).lstrip("0")) <= 4 for m in lines if m["value"] != "unsupported")
    # the result table keeps msprobe's spelling
    view = read_result_file(only_result(out))
    assert "0.921796894986" in view.column("Cosine")


def test_json_summary_values_are_numbers_in_the_tables_unit(tmp_path, run_cli):
    """statistics: NormRelativeErr 0.35…% is the number 0.35… with unit "%" (the cell without its sign)."""
    ex = EXAMPLES / "pytorch_stats"
    summary_file = tmp_path / "s.json"
    proc = run_cli("compare", "-tp", ex / "target/step0", "-gp", ex / "golden/step0", "-o", tmp_path / "out",
                   "--json-summary", summary_file)
    assert proc.returncode == 0, proc.stderr
    worst = json.loads(summary_file.read_text())["worst_rows"]
    top = worst[0]
    assert top["metric"] == "NormRelativeErr" and top["unit"] == "%" and top["cell"].endswith("%")
    assert top["value"] == float(top["cell"][:-1]) and top["text"] == people_text(top["cell"])
    assert "The dtype of NPU and Bench are inconsistent" in top["reason"]
    assert f"  {top['text']}  " in proc.stdout and top["cell"] not in proc.stdout


def _overflow_pair(tmp_path: Path) -> tuple[Path, Path]:
    """Twelve calls whose target input has an infinite L2 norm (an overflow: relative and absolute difference both
    inf), then three whose input norm differs by 10, 20 and 5 %; inputs are never judged, so every row passes."""
    x = tensor(norm=2.0)
    target, golden = {}, {}
    for k in range(12):
        target[f"Torch.over.{k}.forward"] = api([tensor(norm=math.inf)], [x])
        golden[f"Torch.over.{k}.forward"] = api([x], [x])
    for k, norm in enumerate((2.2, 2.4, 2.1)):
        target[f"Torch.scaled.{k}.forward"] = api([tensor(norm=norm)], [x])
        golden[f"Torch.scaled.{k}.forward"] = api([x], [x])
    return write_dump(tmp_path / "t", target), write_dump(tmp_path / "g", golden)


def test_rows_without_a_finite_measure_do_not_fill_the_list(tmp_path, run_cli):
    """An overflowed statistic (inf both ways, as in a generated 60k-entry pair) ranks after the finite measures
    of its verdict, in execution order; the CSV keeps msprobe's inf cells."""
    t, g = _overflow_pair(tmp_path)
    summary_file = tmp_path / "s.json"
    proc = run_cli("compare", "-tp", t, "-gp", g, "-o", tmp_path / "out", "--json-summary", summary_file)
    assert proc.returncode == 0, proc.stderr
    rel = read_result_file(only_result(tmp_path / "out")).column("NormRelativeErr")
    assert sum(c.strip() == "inf" for c in rel) == 12
    worst = json.loads(summary_file.read_text())["worst_rows"]
    assert {w["result"] for w in worst} == {"pass"}
    assert [(w["name"], w["text"]) for w in worst[:3]] == [
        ("Torch.scaled.1.forward.input.0", "20.00%"), ("Torch.scaled.0.forward.input.0", "10.00%"),
        ("Torch.scaled.2.forward.input.0", "5.000%")]
    assert [w["name"] for w in worst[3:]] == [f"Torch.over.{k}.forward.input.0" for k in range(7)]
    assert all(w["cell"] == "inf" and w["value"] is None for w in worst[3:])
    assert all(w["reason"] == "no rule flags it: NormRelativeErr is judged on outputs only" for w in worst)
    assert " inf " in _listed(proc.stdout)[3].group(0)


def _stats(rows: list[tuple[str, str, str, str]]) -> ResultView:
    names = [r[0] for r in rows]
    cells = {"NPU Name": names, "Bench Name": names, "NormRelativeErr": [r[1] for r in rows],
             "L2norm diff": ["1" for _ in rows], "Result": [r[2] for r in rows], "Err_message": [r[3] for r in rows]}
    return ResultView("", "statistics", list(cells), cells)


def test_a_warning_at_zero_ranks_after_the_warnings_its_metric_explains_and_says_why():
    warn = json.dumps(["warning: The norm relative error of output is 10 times that of input."])
    view = _stats([("A.0.forward.output.0", "0", "warning", warn), ("B.0.forward.output.0", "12%", "warning", warn),
                   ("C.0.forward.input.0", "182.0%", "pass", "[]"), ("D.0.forward.output.0", "36%", "pass", "[]")])
    worst = summarize([view])["worst_rows"]
    assert [(w["name"][0], w["text"]) for w in worst] == [("B", "12.00%"), ("A", "0"), ("C", "182.0%"), ("D", "36.00%")]
    assert worst[1]["reason"] == ("The norm relative error of output is 10 times that of input "
                                  "(over the call's outputs, marked on its first)")
    # a 182 % pass: an input, which msprobe's NormRelativeErr rule never judges
    assert worst[2]["reason"] == "no rule flags it: NormRelativeErr is judged on outputs only"
    block = format_summary(summarize([view]))
    assert re.search(r"C\.0\.forward\.input\.0 +182\.0% +pass +no rule flags it: NormRelativeErr is judged on outputs only",
                     block), block


def test_values_are_rounded_for_people_and_numbers_for_programs():
    assert [people_text(c) for c in ("0.3503061023911786%", "1.0", "0.00003141592", "503.623901367188", "0",
                                     "inf", "unsupported", " 25.0% ")] == [
        "0.3503%", "1.000", "3.142e-05", "503.6", "0", "inf", "unsupported", "25.00%"]
    assert cell_number("0.3503061023911786%") == (0.3503061023911786, "%")
    assert cell_number("1.0") == (1.0, "")
    assert cell_number("inf") == (None, "") and cell_number("N/A") == (None, "")


def test_the_ranking_does_not_depend_on_the_chunks():
    """Finite measures, infinite ones and the no-difference value, passing and not, fed whole or row by row."""
    warn = json.dumps(["warning: The norm relative error of output is 10 times that of input."])
    rel = ["inf", "0", "3%", "inf", "0", "40%", "1%", "inf", "0", "7%", "0", "2%", "inf", "5%"]
    verdicts = ["pass", "warning", "pass", "warning", "pass", "pass", "warning", "pass", "pass", "pass", "warning",
                "pass", "pass", "pass"]
    rows = [(f"Op{k}.0.forward.output.0", r, v, warn if v != "pass" else "[]") for k, (r, v) in
            enumerate(zip(rel, verdicts))]
    view = _stats(rows)
    view.cells["L2norm diff"][:] = ["inf" if r == "inf" else "1" for r in rel]
    whole = summarize([view], rows=len(rows))["worst_rows"]
    assert [w["name"][:4] for w in whole] == ["Op6.", "Op3.", "Op1.", "Op10", "Op5.", "Op9.", "Op13", "Op2.",
                                             "Op11", "Op0."]
    for size in (1, 2, 3, 5):
        assert summarize([view], rows=size)["worst_rows"] == whole
