"""The steps × ranks map of the HTML report, in a real headless Chromium: one row per step with each rank's worst
verdict and first divergent call, the step where the divergence first appears marked, a step one run lacks named,
and a click (or Enter) on a cell filtering the table to that step's rows with its first divergent row marked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from msprobe_core.cli.main import main

from .browser import screenshot, start_browser

CELL = Path(__file__).resolve().parents[1] / "examples" / "mindspore_cell"


@pytest.fixture(scope="module")
def browser():
    b = start_browser()
    yield b
    b.close()


@pytest.fixture(scope="module")
def steps_report(tmp_path_factory) -> tuple[Path, dict]:
    """The report of the two-step cell pair, the target holding a third step the golden run lacks."""
    root = tmp_path_factory.mktemp("steps_report")
    target, golden, out = root / "target", root / "golden", root / "out"
    shutil.copytree(CELL / "target", target)
    shutil.copytree(CELL / "golden", golden)
    shutil.copytree(target / "step1", target / "step2")
    summary = out / "summary.json"
    rc = main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out), "--report", "html",
               "--json-summary", str(summary), "-q"])
    assert rc == 0
    (report,) = sorted(out.glob("compare_report_*.html"))
    return report, json.loads(summary.read_text())


def test_the_steps_map_shows_each_step_and_where_the_divergence_first_appears(browser, steps_report):
    report, summary = steps_report
    steps = summary["steps"]
    first = next(s["step"] for s in steps if s.get("first_divergence"))
    with browser.open(report) as loaded:
        page = loaded.page
        assert page.is_visible("#steps")
        rows = page.locator("#steps-grid tbody tr")
        assert [rows.nth(i).get_attribute("data-step") for i in range(rows.count())] == [s["step"] for s in steps]
        assert page.locator("#steps-grid tr.first-appears").get_attribute("data-step") == first
        assert f"first appears in {first}" in page.inner_text("#steps-note")
        for s in steps:
            row = page.locator(f'#steps-grid tr[data-step="{s["step"]}"]')
            if s.get("absent"):
                assert row.inner_text().split("\t", 1)[1].strip() == f"only in the {s['only_in']} dump, not compared"
                continue
            for r in s["ranks"]:
                cell = row.locator("td.step-cell").first
                assert cell.get_attribute("class").endswith("v-" + r["worst_verdict"][0])
                assert r["first_divergence"]["node"] in cell.get_attribute("title")
            v = s["verdicts"]
            assert row.locator("td.value").inner_text() == f"{v['pass']} / {v['warning']} / {v['error']}"
        carried = page.locator('#steps-grid tr[data-step="step1"] .carried')
        assert carried.count() == (1 if steps[1]["first_divergence"].get("carried") else 0)
        screenshot(page, "report_steps.png")
        assert loaded.problems() == []


@pytest.mark.parametrize("how", ["click", "keyboard"])
def test_a_cell_filters_the_table_to_its_step_and_marks_its_first_divergence(browser, steps_report, how):
    report, summary = steps_report
    step1 = next(s for s in summary["steps"] if s["step"] == "step1")
    with browser.open(report) as loaded:
        page = loaded.page
        cell = page.locator('#steps-grid tr[data-step="step1"] td.step-cell').first
        if how == "click":
            cell.click()
        else:
            cell.focus()
            page.keyboard.press("Enter")
        page.wait_for_selector(f'#row-count[data-count="{step1["rows"]}"]')
        shown = page.locator("#grid tbody tr.r")
        assert all("step1/" in shown.nth(i).inner_text() for i in range(shown.count()))
        marked = page.locator("#grid tbody tr.hl")
        assert marked.count() == 1
        assert step1["ranks"][0]["first_divergence"]["row"] in marked.inner_text()
        assert loaded.problems() == []
