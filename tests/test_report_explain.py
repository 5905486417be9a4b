"""What the report page is given to explain a divergence: the values of the divergent call's rows, how -da says it
reached other ranks, and, for a mixed graph/pynative dump, which part it arises in (read back from the written page)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from msprobe_core.cli.main import main
from msprobe_core.default_plugins.report.explain import MAX_DETAIL_ROWS, divergence_detail, divergence_spread
from msprobe_core.default_plugins.summary.divergence import carried_in, first_divergence, first_divergence_of
from msprobe_core.default_plugins.summary.summary import summarize
from msprobe_core.default_plugins.summary.views import ResultView

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def page_data(report: Path) -> dict:
    """The JSON payload a written report page carries (uncompressed: these reports are small)."""
    html = report.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="report-data" data-encoding="json">(.*?)</script>', html, re.S)
    assert m, "no uncompressed data block"
    return json.loads(m.group(1))


def _compare(out: Path, target: Path, golden: Path, *extra: str) -> tuple[dict, dict]:
    summary_file = out / "summary.json"
    assert main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out), "--report", "html",
                 "--json-summary", str(summary_file), "-q", *extra]) == 0
    (report,) = out.glob("compare_report_*.html")
    return page_data(report), json.loads(summary_file.read_text())


def test_detail_gives_the_values_of_the_divergent_call(tmp_path):
    """c06b: block 1 scales attention scores by 1.0 instead of 1/sqrt(8); the box gets the scalar's two values."""
    data, summary = _compare(tmp_path, EXAMPLES / "pytorch_tensor/target/step0", EXAMPLES / "pytorch_tensor/golden/step0")
    det = data["detail"]
    part = data["parts"][det["part"]]
    assert part["chosen"] and det["more"] == 0
    assert [r["name"] for r in det["rows"]] == [f"Tensor.__mul__.1.forward.{s}" for s in ("input.0", "input.1",
                                                                                           "output.0")]
    assert [r["first"] for r in det["rows"]] == [False, True, False]
    assert det["rows"][1]["row"] == part["first"]["row"]
    assert summary["first_divergence"]["row"] == "Tensor.__mul__.1.forward.input.1"
    values = {label: (a, b) for label, a, b in det["rows"][1]["values"]}
    assert values["max"] == ("1.0", "0.35355339059327373")
    assert values["dtype"] == ("<class 'float'>", "<class 'float'>")
    assert [m[0] for m in det["rows"][2]["metrics"]] == ["Cosine", "MaxAbsErr", "MaxRelativeErr"]
    assert det["rows"][2]["verdict"] == "error"


def test_detail_of_a_call_with_many_rows_is_cut_around_the_divergent_row():
    n = 40
    names = [f"Module.big.Block.forward.0.parameters.p{i}" for i in range(n)]
    view = ResultView("", "statistics", ["NPU Name", "Bench Name", "NPU max", "Bench max", "NormRelativeErr"],
                      {"NPU Name": names, "Bench Name": names, "NPU max": ["1.0"] * n, "Bench max": ["1.0"] * n,
                       "NormRelativeErr": ["0.0"] * n})
    det = divergence_detail(view, 30, [0] * n, list(range(n)))
    rows = [r["row"] for r in det["rows"]]
    assert len(rows) == MAX_DETAIL_ROWS and 30 in rows and det["more"] == n - MAX_DETAIL_ROWS
    assert [r["metrics"][0][0] for r in det["rows"][:1]] == ["NormRelativeErr"]


@pytest.fixture(scope="module")
def da_report(tmp_path_factory) -> tuple[dict, dict]:
    """The multi-rank example (corpus c09a) compared with -da: rank 1's fault reaches rank 0 through all_gather."""
    out = tmp_path_factory.mktemp("da")
    multi = EXAMPLES / "pytorch_multirank"
    return _compare(out, multi / "target/step0", multi / "golden/step0", "-da")


def test_spread_says_how_the_divergence_reached_rank0(da_report):
    data, summary = da_report
    spread = {s["rank"]: s for s in data["spread"]}
    assert set(spread) == {"rank0", "rank1"}
    cause, reached = spread["rank1"], spread["rank0"]
    assert (cause["role"], cause["node"], cause["via"]) == ("cause", "Functional.linear.0.forward", None)
    assert (reached["role"], reached["via"]) == ("propagated", "Distributed.all_gather.0.forward")
    assert reached["from"] == [{"rank": "rank1", "node": "Functional.linear.0.forward"}]
    part = data["parts"][reached["part"]]
    assert part["label"] == "rank0"
    # the row located is the communication call's first output row, at its execution position
    order = part["order"] or list(range(part["n"]))
    assert order[reached["pos"]] == reached["row"]
    assert data["nodes"][part["node"][reached["row"]]] == "Distributed.all_gather.0.forward"
    assert summary["first_divergence"]["rank"] == "rank1"


def test_spread_ignores_nodes_not_in_the_results():
    names = ["A.0.forward.input.0", "A.0.forward.output.0", "Distributed.all_gather.0.forward.input.0",
             "Distributed.all_gather.0.forward.output.0"]
    view = ResultView("rank0", "statistics", ["NPU Name"], {"NPU Name": names})
    doc = {"rank_0": [{"op_name": "Distributed.all_gather.0.forward", "role": "propagated",
                       "via": "Distributed.all_gather.0.forward", "caused_by": [{"rank": 1, "op_name": "B.0.forward"}]}],
           "rank_1": [{"op_name": "B.0.forward", "role": "cause"}],  # no rank1 result here
           "rank_2": "not a list"}
    (entry,) = divergence_spread([view, ResultView("rankX", "statistics", ["NPU Name"], {"NPU Name": []})], doc)
    assert (entry["rank"], entry["pos"], entry["row"]) == ("rank0", 3, 3)
    assert divergence_spread([view], None) == [] and divergence_spread([view], "/no/such/file.json") == []


def _stats_view(label: str, rows: list[tuple[str, str]]) -> ResultView:
    names = [n for n, _ in rows]
    return ResultView(label, "statistics", ["NPU Name", "Bench Name", "NormRelativeErr", "Result"],
                      {"NPU Name": names, "Bench Name": names, "NormRelativeErr": [e for _, e in rows],
                       "Result": ["pass"] * len(rows)})


def test_a_divergence_carried_into_a_part_is_recognised():
    early_params = _stats_view("pynative/step0/rank0", [
        ("Cell.a.Dense.forward.0.input.0", "0"), ("Cell.a.Dense.forward.0.parameters.weight", "3%"),
        ("Cell.a.Dense.forward.0.output.0", "4%")])
    d = first_divergence_of(early_params)
    assert d.row.endswith("parameters.weight") and "parameters already differ" in carried_in(early_params, d)
    first_input = _stats_view("pynative/step0/rank0", [("Cell.b.Dense.forward.0.input.0", "3%")])
    assert "first call" in carried_in(first_input, first_divergence_of(first_input))
    arises = _stats_view("graph/step0/rank0", [
        ("Cell.a.Dense.forward.0.input.0", "0"), ("Cell.a.Dense.forward.0.output.0", "0"),
        ("Cell.b.Dense.forward.0.input.0", "0"), ("Cell.b.Dense.forward.0.output.0", "20%")])
    assert carried_in(arises, first_divergence_of(arises)) is None
    # in a mixed dump the part where it arises is the first divergence, though the other part differs earlier
    chosen, per_part = first_divergence([arises, early_params])
    assert chosen.label == "graph/step0/rank0" and chosen.node == "Cell.b.Dense.forward.0"
    assert min(per_part, key=lambda x: x.index).label == "pynative/step0/rank0"
    # ranks run side by side: there the earliest position still wins
    early_params.label, arises.label = "rank1", "rank0"
    assert first_divergence([arises, early_params])[0].label == "rank1"


def test_mixed_report_points_at_the_part_where_the_fault_is(tmp_path):
    """examples/mindspore_mixed: graph holds step 0 with the injected fault (block 1 attention), pynative holds
    step 1, whose weights already differ (updated by the faulty step 0)."""
    mixed = EXAMPLES / "mindspore_mixed"
    data, summary = _compare(tmp_path, mixed / "target", mixed / "golden")
    assert data["mixed"] is True
    fd = summary["first_divergence"]
    assert fd["rank"] == "graph/step0/rank0" and fd["node"].startswith("Cell.blocks.1.attn.")
    parts = {p["label"]: p for p in data["parts"]}
    assert parts["graph/step0/rank0"]["chosen"] and parts["graph/step0/rank0"]["first"]["carried"] is None
    pyn = parts["pynative/step0/rank0"]["first"]
    assert pyn["pos"] < parts["graph/step0/rank0"]["first"]["pos"]
    assert "parameters already differ" in pyn["carried"]


def test_summary_of_ranks_has_no_mixed_note():
    view = _stats_view("rank0", [("A.0.forward.output.0", "5%")])
    other = _stats_view("rank1", [("A.0.forward.output.0", "0")])
    from msprobe_core.default_plugins.report.html import build_payload

    data = build_payload([view, other], summarize([view, other]))
    assert data["mixed"] is False and "carried" not in data["parts"][0]["first"]
    assert data["spread"] == [] and data["detail"]["rows"][0]["first"] is True
