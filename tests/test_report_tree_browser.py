"""The model tree of the HTML report in a real headless Chromium (Playwright, the system's Chromium).

A PyTorch mix dump (construct.json), a MindSpore cell dump and a two-rank ``-da`` run: the tree renders as a
WAI-ARIA tree, the first divergence's path is open and marked, a click filters the table to the rows of the
node's subtree, and the keyboard moves through it as the WAI-ARIA tree pattern says.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from msprobe_core.cli.main import main
from msprobe_core.default_plugins.summary.result_files import read_result_file
from msprobe_core.default_plugins.summary.views import node_of

from .browser import ARTIFACTS, start_browser
from .conftest import corpora_dir


@pytest.fixture(scope="module")
def browser():
    b = start_browser()
    yield b
    b.close()


def _report(out: Path, rel: str, *extra: str) -> tuple[Path, dict, Path]:
    case = corpora_dir() / rel
    if not case.is_dir():
        pytest.skip(f"corpus case {rel} not found")
    rc = main(["compare", "-tp", str(case / "target/step0"), "-gp", str(case / "golden/step0"), "-o", str(out),
               "--report", "html", "--json-summary", str(out / "s.json"), "-q", *extra])
    assert rc == 0
    (report,) = out.glob("compare_report_*.html")
    return report, json.loads((out / "s.json").read_text()), case


@pytest.fixture(scope="module")
def mix_report(tmp_path_factory):
    return _report(tmp_path_factory.mktemp("mix"), "pytorch/c05")


def _item(page, name: str):
    return page.locator(f'#tree [role=treeitem][data-name="{name}"]')


def _count(page) -> int:
    return int(page.get_attribute("#row-count", "data-count"))


def _focused(page) -> str | None:
    return page.evaluate("document.activeElement && document.activeElement.getAttribute('data-name')")


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#tree-sec").screenshot(path=str(ARTIFACTS / name))


def test_the_tree_renders_with_the_path_open(browser, mix_report):
    report, summary, _ = mix_report
    path = summary["first_divergence"]["path"]
    with browser.open(report, width=1200) as loaded:
        page = loaded.page
        assert loaded.problems() == []
        assert page.locator("#tree[role=tree]").count() == 1 and page.is_visible("#tree-sec")
        top = page.locator("#tree > [role=treeitem]")
        assert top.count() > 3 and top.first.get_attribute("aria-level") == "1"
        for level, name in enumerate(path, start=1):
            item = _item(page, name)
            assert item.is_visible(), name
            assert item.get_attribute("aria-level") == str(level)
            if name != path[-1]:
                assert item.get_attribute("aria-expanded") == "true"
            assert "on-path" in item.get_attribute("class")
        last = _item(page, path[-1])
        assert last.locator(".mark-first").inner_text().startswith("first divergence")
        assert "v-e" in last.get_attribute("class")  # coloured by its worst verdict
        # roving tabindex: exactly one item is in the tab order, the first divergence
        assert page.locator("#tree [role=treeitem][tabindex='0']").count() == 1
        assert last.get_attribute("tabindex") == "0"
        assert page.locator("#tree [role=group]").count() == len(path) - 1  # only opened nodes were built
        assert "construct.json" in page.inner_text("#tree-note")
        _shot(page, "tree_pytorch_mix.png")


def test_a_click_filters_the_table_to_the_subtree(browser, mix_report):
    report, summary, case = mix_report
    (csv,) = report.parent.glob("compare_result_*.csv")
    view = read_result_file(csv)
    (construct,) = (case / "target/step0").rglob("construct.json")
    parents = json.loads(construct.read_text())
    module = "Module.blocks.1.mlp.MLP.forward.0"

    def inside(node: str) -> bool:
        key = node if node in parents else node.replace(".backward", ".forward")
        seen = set()
        while key is not None and key not in seen:
            if key == module:
                return True
            seen.add(key)
            key = parents.get(key)
        return False

    expected = [name for name in view.names if inside(node_of(name)[0])]
    assert expected
    with browser.open(report, width=1200) as loaded:
        page = loaded.page
        total = _count(page)
        _item(page, "Module.blocks.1.Block.forward.0").locator(":scope > .tn-row .tn-twist").click()
        _item(page, module).locator(":scope > .tn-row .tn-name").click()
        assert _item(page, module).get_attribute("aria-selected") == "true"
        assert _count(page) == len(expected)
        shown = page.evaluate("window.__report.visibleRows()")
        names = [page.evaluate(f"window.__report.cell({p}, {r}, 'NPU Name')") for p, r in shown]
        assert sorted(names) == sorted(expected)
        assert page.is_visible("#tree-filter") and "blocks.1.mlp" in page.inner_text("#tree-filter")
        page.click("#f-reset")
        assert _count(page) == total and _item(page, module).get_attribute("aria-selected") == "false"
        assert not page.is_visible("#tree-filter")


def test_keyboard_navigation_follows_the_tree_pattern(browser, mix_report):
    report, summary, _ = mix_report
    path = summary["first_divergence"]["path"]
    with browser.open(report, width=1200) as loaded:
        page = loaded.page
        total = _count(page)
        _item(page, path[-1]).focus()
        page.keyboard.press("ArrowLeft")  # a leaf: to its parent
        assert _focused(page) == path[-2]
        page.keyboard.press("ArrowLeft")  # an open node: closes it
        assert _item(page, path[-2]).get_attribute("aria-expanded") == "false"
        assert not _item(page, path[-1]).is_visible()
        page.keyboard.press("ArrowRight")  # a closed node: opens it
        assert _item(page, path[-2]).get_attribute("aria-expanded") == "true"
        page.keyboard.press("ArrowRight")  # an open node: to its first child
        assert _focused(page) == path[-1]
        page.keyboard.press("ArrowUp")
        assert _focused(page) == path[-2]
        page.keyboard.press("ArrowDown")
        assert _focused(page) == path[-1]
        page.keyboard.press("Home")
        first = page.locator("#tree > [role=treeitem]").first.get_attribute("data-name")
        assert _focused(page) == first
        page.keyboard.press("End")
        assert _focused(page) == page.locator("#tree > [role=treeitem]").last.get_attribute("data-name")
        # roving tabindex follows the focus
        assert page.locator("#tree [role=treeitem][tabindex='0']").count() == 1
        page.keyboard.press("Home")
        page.keyboard.press("Enter")  # selects: the table shows that node's rows
        assert _item(page, first).get_attribute("aria-selected") == "true"
        counts = _item(page, first).locator(":scope > .tn-row .tn-counts").inner_text()
        assert 0 < _count(page) < total
        assert _count(page) == sum(int(part.split()[0]) for part in counts.split(" · "))


def test_a_mindspore_cell_tree(browser, tmp_path):
    report, summary, _ = _report(tmp_path, "mindspore/ms_l0_stat_bug_2steps")
    path = summary["first_divergence"]["path"]
    assert path[0] == "Cell.blocks.1.Block.forward.0"
    with browser.open(report, width=1200) as loaded:
        page = loaded.page
        assert loaded.problems() == []
        for name in path[:-1]:
            assert _item(page, name).get_attribute("aria-expanded") == "true"
        assert _item(page, path[-1]).locator(".mark-first").count() == 1
        label = _item(page, "Cell.blocks.1.Block.forward.0").locator(":scope > .tn-row").inner_text()
        assert label.startswith("blocks.1") and "Block" in label
        _shot(page, "tree_mindspore_cell.png")


def test_every_ranks_first_divergence_is_marked(browser, tmp_path):
    """c09a with -da: rank 1 causes, rank 0 receives it through its all_gather: both marked, the tree merged."""
    report, summary, _ = _report(tmp_path, "pytorch/c09a", "-da")
    by_rank = {d["rank"]: d for d in summary["first_divergence_by_rank"]}
    assert set(by_rank) == {"rank0", "rank1"}
    with browser.open(report, width=1200) as loaded:
        page = loaded.page
        assert loaded.problems() == []
        chosen = summary["first_divergence"]
        assert _item(page, chosen["node"]).locator(".mark-first").inner_text() == f"first divergence ({chosen['rank']})"
        other = by_rank["rank0" if chosen["rank"] == "rank1" else "rank1"]
        assert _item(page, other["node"]).is_visible()  # opened to, although off the chosen path
        assert _item(page, other["node"]).locator(".mark-rank").inner_text().startswith(other["rank"])
        via = page.locator("#tree .mark-via")
        assert via.count() >= 1 and "through this" in via.first.inner_text()
        assert via.first.locator("xpath=ancestor::li[1]").get_attribute("data-name").startswith("Distributed.")
        _shot(page, "tree_multirank_da.png")


def test_a_kernel_dumps_leaves_show_their_files_name_not_its_path(browser, tmp_path):
    ex = Path(__file__).resolve().parents[1] / "examples" / "mindspore_kernel"
    out = tmp_path / "k"
    assert main(["compare", "-tp", str(ex / "target"), "-gp", str(ex / "golden"), "-o", str(out), "--report", "html",
                 "-q"]) == 0
    (report,) = out.glob("compare_report_*.html")
    with browser.open(report, width=1200) as loaded:
        page = loaded.page
        assert loaded.problems() == []
        leaves = page.evaluate("Array.from(document.querySelectorAll('#tree [role=treeitem]'))"
                               ".filter(li => (li.getAttribute('data-name') || '').includes('/'))"
                               ".map(li => li.querySelector(':scope > .tn-row').innerText)")
        assert leaves, "the kernel tree has file rows"
        assert not any("/" in text for text in leaves), leaves[:3]
        assert all(".npy" in text for text in leaves), leaves[:3]
