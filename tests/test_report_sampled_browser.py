"""A sampled report (a result above the sampling threshold) in a real headless Chromium: it loads clean,
says plainly that it shows a sample and where the full table is, numbers rows by their place in the
whole result, and still shows the first divergence."""

from __future__ import annotations

import pytest

from msprobe_core.cli.main import main
from msprobe_core.default_plugins.report.sampling import THRESHOLD_ENV, sample_views
from msprobe_core.default_plugins.summary.result_files import read_result_file
from msprobe_core.default_plugins.summary.summary import summarize

from .browser import screenshot, start_browser
from .report_synth import write_synthetic_result


@pytest.fixture(scope="module")
def browser():
    b = start_browser()
    yield b
    b.close()


def test_sampled_report_says_so_and_keeps_the_first_divergence(browser, tmp_path, monkeypatch):
    result = write_synthetic_result(tmp_path / "compare_result_rank0_20260101000000.csv", 30_000, seed=5)
    view = read_result_file(result, "")
    (sample,) = sample_views([view])
    summary = summarize([view])
    assert len(sample.positions) < len(view)
    out = tmp_path / "report.html"
    monkeypatch.setenv(THRESHOLD_ENV, "20000")
    assert main(["report", str(result), "-o", str(out), "-q"]) == 0
    with browser.open(out) as loaded:
        page = loaded.page
        assert loaded.problems() == []
        assert page.is_hidden("#fatal")
        note = page.inner_text("#sample-note")
        assert page.is_visible("#sample-note")
        assert f"This report shows a sample: {len(sample.positions)} of 30000 rows" in note
        assert str(result) in note
        assert page.get_attribute("#row-count", "data-count") == str(len(sample.positions))
        assert "(of 30000 in the result)" in page.inner_text("#row-count")
        # counts are over every row; the table's "#" is the row's place in the whole result
        assert page.inner_text("#count-error .v") == str(summary["verdicts"]["error"])
        shown = page.locator("#grid tbody tr.r td:nth-child(1)").all_inner_texts()
        assert shown and [int(t) for t in shown] == sample.positions[: len(shown)]
        page.click("#fd-show")
        fd = summary["first_divergence"]
        assert page.inner_text("#grid tr.hl td:nth-child(1)") == str(fd["index"])
        assert page.inner_text("#grid tr.hl td:nth-child(2)") == fd["row"]
        # the plot draws each row at its place in the whole result: its right end is the last row
        plot = page.locator("canvas.plot >> nth=0")
        width = plot.bounding_box()["width"]
        plot.hover(position={"x": width - 14, "y": 100})  # 14: the plot's right margin
        assert page.inner_text("#tip").startswith(f"#{sample.positions[-1]} ")
        plot.hover(position={"x": 64, "y": 100})  # 64: its left margin, row 0
        assert page.inner_text("#tip").startswith("#0 ")
        screenshot(page, "report_sampled.png")
        assert loaded.problems() == []
