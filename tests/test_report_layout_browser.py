"""The report as a reader uses it, at 1,100 and 1,600 px, in a real Chromium (issue 23, item 7).

"Show in table" brings the row's verdict, metrics and message into view with its name still pinned at the left;
the page never scrolls sideways; file paths break between folders, not inside a name; reasons wrap at words.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from msprobe_core.cli.main import main

from .browser import screenshot, start_browser

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
WIDTHS = (1100, 1600)


@pytest.fixture(scope="module")
def browser():
    b = start_browser()
    yield b
    b.close()


def _report(out: Path, target: Path, golden: Path, *extra: str) -> Path:
    assert main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out), "--report", "html", "-q",
                 *extra]) == 0
    (page,) = out.glob("compare_report_*.html")
    return page


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("layout")
    ex = EXAMPLES
    return {
        "tensor": _report(tmp / "tensor", ex / "pytorch_tensor/target/step0", ex / "pytorch_tensor/golden/step0"),
        "multirank-da": _report(tmp / "da", ex / "pytorch_multirank/target/step0",
                                ex / "pytorch_multirank/golden/step0", "-da"),
        "kernel": _report(tmp / "kernel", ex / "mindspore_kernel/target", ex / "mindspore_kernel/golden"),
        "statistics": _report(tmp / "stats", ex / "pytorch_stats/target/step0", ex / "pytorch_stats/golden/step0"),
        "mindspore-cell": _report(tmp / "cell", ex / "mindspore_cell/target/step0", ex / "mindspore_cell/golden/step0"),
        "cross-framework": _report(tmp / "xfw", ex / "cross_framework/api/target/step0",
                                   ex / "cross_framework/api/golden/step0", "-am"),
    }


def _box(page, selector: str) -> dict:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, selector
    return box


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("which", ["tensor", "multirank-da", "kernel", "statistics", "mindspore-cell",
                                   "cross-framework"])
def test_the_page_never_scrolls_sideways(browser, reports, which, width):
    with browser.open(reports[which], width=width, height=900) as loaded:
        page = loaded.page
        assert loaded.problems() == []
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= width, f"{which} at {width} px is {wide} px wide"
        # nor does a box of the summary hide part of its table (the worst rows' reasons are read whole)
        for box in ("worst", "first-div"):
            hidden = page.evaluate(f"(e => e.scrollWidth - e.clientWidth)(document.getElementById({box!r}))")
            assert hidden <= 1, f"{which} at {width} px: {hidden} px of #{box} are scrolled out of sight"
        screenshot(page, f"layout_{which}_{width}.png")


@pytest.mark.parametrize("width", WIDTHS)
def test_show_in_table_brings_the_verdict_and_message_into_view(browser, reports, width):
    with browser.open(reports["tensor"], width=width, height=900) as loaded:
        page = loaded.page
        page.click("#fd-show")
        page.wait_for_selector("#grid tr.hl")
        wrap = _box(page, "#table-wrap")
        right = wrap["x"] + wrap["width"]

        def visible(col: str) -> bool:
            ix = page.evaluate(f"Array.from(document.querySelectorAll('#grid-head th')).findIndex("
                               f"th => th.getAttribute('data-col') === {col!r})")
            box = page.locator(f"#grid tr.hl td >> nth={ix}").bounding_box()
            return box is not None and box["x"] >= wrap["x"] - 1 and box["x"] + box["width"] <= right + 1

        assert visible("NPU Name"), "the row's name scrolled away"
        assert visible("Result") and visible("Err_message")
        assert page.inner_text("#grid tr.hl td.pl >> nth=-1") == "Tensor.__mul__.1.forward.input.1"
        assert "v-e" in page.get_attribute("#grid tr.hl td.pr", "class")
        # scrolled to the far left or right, the name and the verdict stay where they are
        name_x = _box(page, "#grid tr.hl td.pl >> nth=-1")["x"]
        page.evaluate("document.getElementById('table-wrap').scrollLeft = 1e9")
        _scroll_handled(page)
        assert abs(_box(page, "#grid tr.hl td.pl >> nth=-1")["x"] - name_x) < 1
        verdict = _box(page, "#grid tr.hl td.pr")
        assert verdict["x"] + verdict["width"] <= right + 1
        page.evaluate("document.getElementById('table-wrap').scrollLeft = 0")
        _scroll_handled(page)
        verdict = _box(page, "#grid tr.hl td.pr")
        assert verdict["x"] + verdict["width"] <= right + 1 and verdict["x"] >= wrap["x"]
        screenshot(page, f"layout_show_in_table_{width}.png")


@pytest.mark.parametrize("width", WIDTHS)
def test_paths_break_between_folders_and_reasons_between_words(browser, reports, width):
    with browser.open(reports["multirank-da"], width=width, height=900) as loaded:
        page = loaded.page
        # every line of a wrapped file path ends at a separator (or the end of the path)
        lines = page.evaluate("""Array.from(document.querySelectorAll('#files li')).map(li => {
            const r = document.createRange(), text = li.textContent, ends = [];
            let top = null;
            for (let i = 0; i < text.length; i++) {
              const node = [...li.childNodes].filter(n => n.nodeType === 3);
              let k = i, n = 0;
              while (k >= node[n].length) { k -= node[n].length; n++; }
              r.setStart(node[n], k); r.setEnd(node[n], k + 1);
              const y = r.getBoundingClientRect().top;
              if (top !== null && y > top + 2) ends.push(text[i - 1]);
              top = y;
            }
            return ends;
        })""")
        assert lines, "no files listed"
        for ends in lines:
            assert all(ch in "/\\_" for ch in ends), ends
        # a reason wraps at spaces: no word of it is split over two lines
        for sel in ("#fd-reason", "#fd-parts td.why"):
            if not page.locator(sel).count():
                continue
            split = page.evaluate(f"""Array.from(document.querySelectorAll({sel!r})).some(el => {{
                const words = el.textContent.split(/\\s+/).filter(w => w.length > 1);
                return el.scrollWidth > el.clientWidth + 1 || words.some(w => w.length > 200);
            }})""")
            assert not split, sel


@pytest.mark.parametrize("which", ["statistics", "multirank-da"])
def test_the_summary_cards_stand_in_one_row_at_1100_px(browser, reports, which):
    with browser.open(reports[which], width=1100, height=900) as loaded:
        tops = loaded.page.evaluate("Array.from(document.querySelectorAll('.cards .card')).map(c => c.offsetTop)")
        assert len(tops) >= 8 and len(set(tops)) == 1, tops


def test_the_first_divergence_box_says_where_and_a_cut_reason_ends_at_a_word(browser, reports):
    with browser.open(reports["multirank-da"], width=1100, height=900) as loaded:
        page = loaded.page
        where = page.locator("#fd-path").inner_text()
        assert where.endswith("Functional.linear.0.forward") and "→" in where
        assert "stack.json" in page.locator("#fd-path-source").inner_text()
        cells = page.evaluate("Array.from(document.querySelectorAll('#fd-parts td.why'))"
                              ".map(td => [td.textContent, td.title])")
        assert any(text.endswith("…") for text, _ in cells), cells  # the long -da reason is cut
        for text, whole in cells:
            if text.endswith("…"):
                shown = text[:-1].split()
                assert whole.split()[:len(shown)] == shown, (text, whole)  # cut after a whole word


def _scroll_handled(page) -> None:
    """Until the page has handled a scroll and drawn it: two animation frames (scroll events come before the
    next frame), however long they take on this machine."""
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")


def test_a_run_that_paired_nothing_says_so_first_on_the_page(browser, tmp_path):
    automap = Path(__file__).resolve().parent / "data" / "automap" / "dumps"
    page_file = _report(tmp_path / "renamed", automap / "renamed_L0/dump.json", automap / "golden_L0/dump.json")
    with browser.open(page_file, width=1100, height=900) as loaded:
        page = loaded.page
        assert loaded.problems() == []
        banner = page.locator("#not-compared")
        assert banner.count() == 1
        text = banner.inner_text()
        assert "185 of 185 target rows (100%)" in text and "--auto-map" in text
        # said before the first-divergence box, which is not green
        order = page.evaluate("document.getElementById('not-compared').compareDocumentPosition("
                              "document.getElementById('first-div')) & Node.DOCUMENT_POSITION_FOLLOWING")
        assert order
        assert "few" in (page.locator("#first-div").get_attribute("class") or "")
        assert "among the 0 matched rows" in page.locator("#first-div").inner_text()


def test_a_run_that_paired_its_rows_has_no_banner(browser, reports):
    with browser.open(reports["statistics"], width=1100, height=900) as loaded:
        assert loaded.page.locator("#not-compared").count() == 0
