"""What a user sees in the report, in a real headless Chromium: the first-divergence box shows the values that
differ, the heat map labels its op columns and shows its colour scale without cutting rank labels, kernel names
are readable, a -da report shows how the divergence reached another rank, a mixed graph/pynative report points at
the part where the fault is, and a folder of several runs says which run it shows. Screenshots go to
test-artifacts/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from msprobe_core.cli.main import main

from .browser import ARTIFACTS, screenshot, start_browser
from .conftest import corpora_dir

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


@pytest.fixture(scope="module")
def browser():
    b = start_browser()
    yield b
    b.close()


def _compare(out: Path, target: Path, golden: Path, *extra: str) -> tuple[Path, dict]:
    summary_file = out / "summary.json"
    rc = main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out), "--report", "html",
               "--json-summary", str(summary_file), "-q", *extra])
    assert rc == 0
    (report,) = out.glob("compare_report_*.html")
    return report, json.loads(summary_file.read_text())


def _shot(locator, name: str) -> Path:
    """A screenshot of one part of the page, under test-artifacts/."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    locator.screenshot(path=str(path))
    return path


def _texts(page, selector: str) -> list[str]:
    return [t.strip() for t in page.locator(selector).all_inner_texts()]


def test_first_divergence_box_shows_the_differing_values(browser, tmp_path):
    report, _ = _compare(tmp_path, EXAMPLES / "pytorch_tensor/target/step0", EXAMPLES / "pytorch_tensor/golden/step0")
    with browser.open(report) as loaded:
        page = loaded.page
        assert loaded.problems() == []
        assert "NPU (target) → Bench (golden)" in page.inner_text("#fd-values")
        heads = _texts(page, "#fd-table tr >> nth=0 >> th")
        assert heads[:5] == ["row", "max", "min", "mean", "l2norm"] and "Cosine" in heads
        assert "dtype" not in heads  # equal on every row: not worth a column
        marked = page.locator("#fd-table tr.fd-row")
        assert marked.count() == 1 and marked.locator("td").first.inner_text().startswith("input.1")
        # the injected fault: the scale factor is 1.0 on the target, 1/sqrt(8) on the golden side
        max_cell = marked.locator("td").nth(heads.index("max"))
        assert max_cell.inner_text() == "1.0 → 0.3536" and max_cell.get_attribute("class") == "diff"
        assert max_cell.get_attribute("title") == "1.0 → 0.35355339059327373"
        same = page.locator("#fd-table tr >> nth=1 >> td").nth(heads.index("max"))
        assert same.get_attribute("class") == "same" and same.inner_text() == "2.99168"
        _shot(page.locator("#first-div"), "report_fd_values.png")
        assert loaded.problems() == []


@pytest.fixture(scope="module")
def da_report(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("da_browser")
    multi = EXAMPLES / "pytorch_multirank"
    return _compare(out, multi / "target/step0", multi / "golden/step0", "-da")


def test_da_report_shows_how_the_divergence_reached_rank0(browser, da_report):
    report, summary = da_report
    assert summary["first_divergence"]["rank"] == "rank1"
    with browser.open(report) as loaded:
        page = loaded.page
        assert loaded.problems() == []
        lines = _texts(page, "#fd-spread li")
        assert any(t.startswith("rank0 receives it from rank1 (Functional.linear.0.forward) through "
                                "Distributed.all_gather.0.forward") for t in lines), lines
        assert any(t.startswith("rank1: the divergence arises at Functional.linear.0.forward") for t in lines), lines
        assert page.is_visible("#legend-via")
        # the heat map frames the cause and the all_gather it came through, and labels both columns
        heat = page.evaluate("window.__report.heat()")
        kinds = {lab["text"]: lab["kind"] for lab in heat["labels"]}
        assert kinds["Functional.linear.0.forward"] == "first" and kinds["Distributed.all_gather.0.forward"] == "via"
        assert "reached through" in page.inner_text("#heat-scale")
        _shot(page.locator("#heat"), "report_da_heat.png")
        # "show" on rank0's line opens rank0's all_gather output in the table
        page.click("#fd-spread li:has-text('rank0') button")
        hl = page.locator("#grid tr.hl td")
        assert hl.nth(1).inner_text() == "rank0"
        assert hl.nth(2).inner_text().startswith("Distributed.all_gather.0.forward.output.")
        screenshot(page, "report_da.png")
        assert loaded.problems() == []


def test_heat_map_labels_columns_and_shows_its_scale(browser, tmp_path):
    """The mixed example has long labels (pynative/step0/rank0) and long L0 module names."""
    mixed = EXAMPLES / "mindspore_mixed"
    report, summary = _compare(tmp_path, mixed / "target", mixed / "golden")
    with browser.open(report) as loaded:
        page = loaded.page
        assert loaded.problems() == []
        heat = page.evaluate("window.__report.heat()")
        labels = [p["rank"] for p in summary["ranks"]]
        assert heat["ranks"] == labels == ["graph/step0/rank0", "pynative/step0/rank0"]  # not cut
        cols = heat["columns"]
        labelled = sorted({lab["col"] for lab in heat["labels"]})
        assert len(labelled) >= cols // 2 and all(lab["text"] for lab in heat["labels"])
        names = {lab["text"] for lab in heat["labels"]}
        assert "Cell.blocks.1.attn.out_proj.Dense.forward.0" in names
        scale = page.inner_text("#heat-scale")
        assert "colour: |NormRelativeErr|, worst per call, log scale" in scale
        assert "1e-6" in scale and "1e0" in scale and "call not in that result" in scale
        assert page.locator("#heat-scale .bar").is_visible()
        assert "61 op calls in execution order" in page.inner_text("#heat-cols")
        page.select_option("#heat-metric", "verdict")
        assert "colour: verdict" in page.inner_text("#heat-scale")
        page.select_option("#heat-metric", "NormRelativeErr")
        _shot(page.locator("#heat"), "report_mixed_heat.png")
        assert loaded.problems() == []


def test_mixed_report_points_at_the_part_where_the_fault_is(browser, tmp_path):
    mixed = EXAMPLES / "mindspore_mixed"
    report, summary = _compare(tmp_path, mixed / "target", mixed / "golden")
    with browser.open(report) as loaded:
        page = loaded.page
        assert "[graph/step0/rank0]" in page.inner_text("#first-div")
        assert page.inner_text("#fd-node").startswith("Cell.blocks.1.attn.")
        rows = page.locator("#fd-parts-table tr")
        assert rows.count() == 3
        graph, pyn = rows.nth(1).inner_text(), rows.nth(2).inner_text()
        assert graph.startswith("graph/step0/rank0") and "arises in this part" in graph
        assert pyn.startswith("pynative/step0/rank0") and "carried in: its parameters already differ" in pyn
        assert rows.nth(1).get_attribute("class") == "fd-row"
        _shot(page.locator("#first-div"), "report_mixed_fd.png")
        assert loaded.problems() == []


def test_kernel_names_are_readable(browser, tmp_path, monkeypatch):
    case = corpora_dir() / "mindspore" / "kernel_l2_bug_2steps"
    if not case.is_dir():
        pytest.skip("corpus case kernel_l2_bug_2steps not found")
    monkeypatch.chdir(case)
    report, summary = _compare(tmp_path, Path("target"), Path("golden"), "--rank", "0")
    fd = summary["first_divergence"]
    assert fd["row"].startswith(str(case)) or "/" in fd["row"]
    with browser.open(report) as loaded:
        page = loaded.page
        assert loaded.problems() == []
        # the first divergence: op and slot, not the dump folder or the task/stream/timestamp fields
        assert page.inner_text("#fd-row") == f"{fd['node']} output.0"
        worst = _texts(page, "#worst td.name")
        assert worst and all("/" not in w and ".npy" not in w for w in worst)
        assert any(w.endswith(" output.0") for w in worst)
        # the table shows each kernel file without the folder every row shares; the cell data stays the path
        p, r = page.evaluate("window.__report.visibleRows()[0]")  # the table's first row (execution order)
        full = page.evaluate(f"window.__report.cell({p}, {r}, 'NPU Name')")
        shown = page.evaluate(f"window.__report.shownCell({p}, {r}, 'NPU Name')")
        assert full.endswith("/" + shown) and "/" not in shown and shown.endswith(".npy")
        first_row = page.locator("#grid tbody tr.r >> nth=0 >> td")
        assert first_row.nth(2).inner_text() == shown and first_row.nth(2).get_attribute("title") == full
        assert page.is_visible("#path-note")
        labels = page.evaluate("window.__report.heat()")["labels"]
        assert labels and all("/" not in lab["text"] for lab in labels)
        assert page.evaluate("window.__report.heat()")["ranks"] == ["rank 0 step 0", "rank 0 step 1"]
        _shot(page.locator("#summary"), "report_kernel_summary.png")
        _shot(page.locator("#table-sec"), "report_kernel_table.png")
        assert loaded.problems() == []


def test_report_of_a_folder_with_two_runs_says_which_it_shows(browser, tmp_path):
    multi = EXAMPLES / "pytorch_multirank"
    first = tmp_path / "first"
    assert main(["compare", "-tp", str(multi / "target/step0"), "-gp", str(multi / "golden/step0"), "-o", str(first),
                 "-q"]) == 0
    both = tmp_path / "both"
    both.mkdir()
    for f in first.glob("compare_result_*.csv"):
        for stamp in ("20260101120000", "20260102120000"):
            shutil.copy(f, both / f.name.replace(f.stem[-14:], stamp))
    out = tmp_path / "r.html"
    assert main(["report", str(both), "-o", str(out), "-q"]) == 0
    with browser.open(out) as loaded:
        page = loaded.page
        assert loaded.problems() == []
        note = page.inner_text("#run-note")
        assert note.startswith("This report shows compare run 20260102120000, the latest of 2 runs found; "
                               "also found: 20260101120000.")
        assert "--run" in note
        assert page.locator("#plot-rank option").all_inner_texts() == ["rank0", "rank1"]
        screenshot(page, "report_two_runs.png")
    assert main(["report", str(both), "-o", str(out), "-q", "--run", "all"]) == 0
    with browser.open(out) as loaded:
        page = loaded.page
        assert "shows 2 compare runs (20260101120000, 20260102120000)" in page.inner_text("#run-note")
        ranks = page.evaluate("window.__report.heat()")["ranks"]
        assert ranks == ["20260101120000/rank0", "20260101120000/rank1", "20260102120000/rank0",
                         "20260102120000/rank1"]
        assert loaded.problems() == []
