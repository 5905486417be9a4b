"""The HTML report of a large result shows a bounded sample (report/sampling.py): which rows it keeps,
that chunk sizes do not change it, that its cells are the CSV's, and that small results are unchanged.

Thresholds and budgets are set small here (``sample_above``, ``MSPROBE_REPORT_SAMPLE_ABOVE``, a
:class:`Budget`) so that a few thousand rows exercise what happens above 200,000."""

from __future__ import annotations

import base64
import gzip
import json
import random
import re
from pathlib import Path

import pytest

import msprobe_core
from msprobe_core.cli.main import main
from msprobe_core.default_plugins.report.html import build_payload, render_html
from msprobe_core.default_plugins.report.sampling import (
    BIG_ROWS,
    THRESHOLD_ENV,
    Budget,
    ViewSampler,
    sample_threshold,
    sample_views,
)
from msprobe_core.default_plugins.summary.chunks import view_chunks, view_cut
from msprobe_core.default_plugins.summary.divergence import first_divergence_of
from msprobe_core.default_plugins.summary.result_files import read_result_file
from msprobe_core.default_plugins.summary.summary import summarize
from msprobe_core.default_plugins.summary.worst import worst_rows

from .report_synth import write_synthetic_result

REPO = Path(__file__).resolve().parents[1]
STATS = REPO / "examples" / "pytorch_stats"
SMALL = Budget(nonpass_first=300, nonpass_sample=200, pass_sample=150, worst=40, radius=25, buckets=64, groups=64)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """A 12,000-row tensor result read back from its CSV; errors and warnings from row 4,800 on."""
    path = write_synthetic_result(tmp_path_factory.mktemp("synth") / "compare_result_20260101000000.csv",
                                  12_000, seed=3, diverge_at=0.4)
    return path, read_result_file(path, "")


def _sample(view, budget=SMALL, sizes=None):
    sampler = ViewSampler(budget)
    for chunk in (view_cut(view, sizes) if sizes is not None else view_chunks(view, len(view) or 1)):
        sampler.feed(chunk)
    return sampler.finish()


def test_threshold_parameter_environment_default(monkeypatch):
    monkeypatch.delenv(THRESHOLD_ENV, raising=False)
    assert sample_threshold() == BIG_ROWS == 200_000
    monkeypatch.setenv(THRESHOLD_ENV, "1_000")
    assert sample_threshold() == 1000
    assert sample_threshold(5) == 5  # a parameter wins over the environment
    monkeypatch.setenv(THRESHOLD_ENV, "lots")
    assert sample_threshold() == BIG_ROWS


def test_chunk_sizes_do_not_change_the_sample(synthetic):
    _, view = synthetic
    whole = _sample(view)
    rnd = random.Random(7)
    for _ in range(4):
        sizes = [rnd.choice((1, 2, 7, 64, 333, 1000, 4099)) for _ in range(200)]
        cut = _sample(view, sizes=sizes)
        assert cut.positions == whole.positions
        assert cut.cells == whole.cells
        assert cut.verdicts == whole.verdicts


def test_the_sample_keeps_what_matters_and_stays_bounded(synthetic):
    _, view = synthetic
    sample = _sample(view)
    kept = set(sample.positions)
    verdicts = view.verdicts()
    bad = [i for i, v in enumerate(verdicts) if v != "pass"]
    assert len(bad) > SMALL.nonpass_first + SMALL.nonpass_sample  # more than the caps: sampling must happen
    # every non-passing row up to the cap, then an even sample of the rest
    assert set(bad[: SMALL.nonpass_first]) <= kept
    later = [i for i in bad[SMALL.nonpass_first:] if i in kept]
    assert SMALL.nonpass_sample // 2 <= len(later) <= SMALL.nonpass_sample + 300
    # the first divergence and its neighbourhood
    fd = first_divergence_of(view)
    assert fd is not None
    assert set(range(fd.index - SMALL.radius, fd.index + SMALL.radius + 1)) <= kept
    # the worst rows the summary lists, and the first row
    names = set(sample.cells["NPU Name"])
    assert {w["name"] for w in worst_rows([view], SMALL.worst)} <= names
    assert 0 in kept
    # the row holding the highest max relative error of every stretch of 1/64 of the result
    rel = view.numbers("MaxRelativeErr")
    width = -(-len(view) // SMALL.buckets)
    width = 1 << (width - 1).bit_length()
    for a in range(0, len(view), width):
        vals = [(abs(x), i) for i, x in enumerate(rel[a:a + width], start=a) if x is not None]
        if vals:
            top = max(v for v, _ in vals)
            assert min(i for v, i in vals if v == top) in kept
    # bounded: the caps, neighbourhoods and plot extremes, far below the result's rows
    assert len(kept) < 2600 and len(view) == sample.total == 12_000
    assert sample.verdicts == {v: verdicts.count(v) for v in ("pass", "warning", "error")}
    # the cells are the CSV's, row for row
    for k, p in enumerate(sample.positions):
        assert all(sample.cells[c][k] == view.cells[c][p] for c in view.columns), p


def test_a_table_in_memory_samples_as_its_csv(tmp_path):
    """Chunks of a ResultTable (cells spelled lazily, only the rows kept) give the cells the CSV holds."""
    result = msprobe_core.compare(STATS / "target/step0", STATS / "golden/step0", tmp_path / "out")
    (in_memory,) = result._result_views()
    from_csv = read_result_file(result.files[0], "")
    budget = Budget(nonpass_first=3, nonpass_sample=3, pass_sample=4, worst=2, radius=1, buckets=4, groups=4)
    a = _sample(in_memory, budget, sizes=[5, 1, 17, 3] * 50)
    b = _sample(from_csv, budget)
    assert a.positions == b.positions and len(a.positions) < len(from_csv)
    assert a.cells == b.cells


def _payload_of(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="report-data" data-encoding="([^"]+)">(.*?)</script>', html, re.S)
    assert m
    text = m.group(2)
    if m.group(1) == "gzip+base64":
        text = gzip.decompress(base64.b64decode(text)).decode("utf-8")
    return json.loads(text)


def test_at_or_below_the_threshold_the_payload_is_every_row(synthetic):
    _, view = synthetic
    summary = summarize([view])
    at = build_payload([view], summary, sample_above=len(view))
    assert "sample" not in at
    (part,) = at["parts"]
    assert part["n"] == len(view) and "pos" not in part and "total" not in part
    default = build_payload([view], summary)  # 12,000 rows: far below the default threshold
    at["generated"] = default["generated"]
    assert json.dumps(at, default=list) == json.dumps(default, default=list)


def test_above_the_threshold_the_page_holds_the_sample(synthetic):
    path, view = synthetic
    summary = summarize([view])
    data = _payload_of(render_html([view], summary, sample_above=len(view) - 1))
    (part,) = data["parts"]
    (sample,) = sample_views([view])
    assert part["n"] < len(view)  # the default budget keeps 20,000 non-passing rows: not all of these
    assert part["pos"] == sample.positions and part["n"] == len(sample.positions) and part["total"] == len(view)
    fd = summary["first_divergence"]
    assert part["first"]["at"] == fd["index"] and part["pos"][part["first"]["pos"]] == fd["index"]
    assert data["detail"]["rows"]  # the first divergent call's values are in the sample too
    note = data["sample"]
    assert note["shown"] == len(sample.positions) and note["total"] == len(view)
    assert note["files"] == [str(path)]
    assert [note["verdicts"][v][1] for v in ("pass", "warning", "error")] == [summary["verdicts"][v] for v in
                                                                             ("pass", "warning", "error")]
    assert sum(n[0] for n in note["verdicts"].values()) == note["shown"]
    assert data["summary"] == json.loads(json.dumps(summary))  # the summary is over every row


def test_msprobe_report_samples_above_the_environment_threshold(synthetic, tmp_path, monkeypatch):
    path, view = synthetic
    out = tmp_path / "report.html"
    monkeypatch.setenv(THRESHOLD_ENV, "5000")
    assert main(["report", str(path), "-o", str(out), "-q"]) == 0
    data = _payload_of(out.read_text(encoding="utf-8"))
    assert data["sample"]["total"] == 12_000 and data["sample"]["shown"] < 12_000
    assert data["parts"][0]["n"] == data["sample"]["shown"]
    monkeypatch.setenv(THRESHOLD_ENV, "12000")
    assert main(["report", str(path), "-o", str(out), "-q"]) == 0
    data = _payload_of(out.read_text(encoding="utf-8"))
    assert "sample" not in data and data["parts"][0]["n"] == 12_000


def test_several_results_share_the_budget(synthetic, tmp_path):
    _, view = synthetic
    views = []
    for k in range(6):
        v = read_result_file(synthetic[0], f"rank{k}")
        views.append(v)
    samples = sample_views(views)
    assert [s.label for s in samples] == [f"rank{k}" for k in range(6)]
    assert all(s.budget == samples[0].budget for s in samples)
    assert samples[0].budget["nonpass_first"] == Budget.for_views(6).nonpass_first < Budget().nonpass_first
    assert all(s.positions == samples[0].positions for s in samples)


def test_samplers_fed_chunks_keep_every_row_while_the_report_fits(synthetic):
    """A streamed run does not know its row count in advance: below the threshold its samples are every row
    and the page is the whole-table one; above it, each result's sample as if fed whole."""
    from msprobe_core.default_plugins.report.sampling import RowAllowance

    _, view = synthetic
    summary = summarize([view])
    fits = RowAllowance(len(view))
    whole = _sample(view, sizes=[1000, 7, 4000], budget=Budget())
    sampler = ViewSampler(Budget(), allowance=fits)
    for chunk in view_cut(view, [1000, 7, 4000]):
        sampler.feed(chunk)
    complete = sampler.finish()
    assert fits.open and complete.complete and complete.positions == list(range(len(view)))
    assert not whole.complete
    payload = build_payload([], summary, samples=[complete], sample_above=len(view))
    expected = build_payload([view], summary, sample_above=len(view))
    payload["generated"] = expected["generated"]
    assert json.dumps(payload, default=list) == json.dumps(expected, default=list)

    shared = RowAllowance(len(view) + 100)  # two results: the second one overflows it
    samples = []
    for _ in range(2):
        sampler = ViewSampler(Budget(), allowance=shared)
        for chunk in view_cut(view, [1000, 7, 4000]):
            sampler.feed(chunk)
        samples.append(sampler.finish())
    assert not shared.open
    assert samples[0].complete and samples[1].positions == whole.positions and samples[1].cells == whole.cells
    data = build_payload([], summary, samples=samples, sample_above=len(view) + 100)
    assert data["sample"]["total"] == 2 * len(view) and [p["n"] for p in data["parts"]] == [len(view), len(whole.positions)]


def _corpus_results() -> list[Path]:
    from .conftest import corpora_dir

    return sorted(corpora_dir().glob("**/compare_result*.csv"))


@pytest.mark.skipif(not _corpus_results(), reason="reference corpora not found")
def test_call_numbers_agree_with_node_of_on_every_corpus_result():
    """The call numbering's shortcut (a row whose leaf surely stays in its call is not parsed) numbers the calls
    as runs of :func:`node_of` do, whatever the chunk boundaries, on every result name of the corpora."""
    from msprobe_core.default_plugins.summary.calls import CallNumbers
    from msprobe_core.default_plugins.summary.views import node_of

    rnd = random.Random(11)
    names: list[str] = []
    for path in _corpus_results():
        names += read_result_file(path, "").names
    names += ["Tensor.add.0.forward.input.0", "Tensor.add.0.forward.1.input.0", "Module.a.forward.0.output",
              "Module.a.forward.0.input.0", "Module.a.forward.0.parameters_grad.weight", "x.backward.input.0.npy"]
    expected, call, last = [], -1, None
    for name in names:
        node = node_of(name)[0]
        if node != last:
            call, last = call + 1, node
        expected.append(call)
    numbers, got, a = CallNumbers(), [], 0
    while a < len(names):
        b = a + rnd.choice((1, 2, 5, 50, 700))
        calls, _ = numbers.feed(names[a:b])
        got += calls.tolist()
        a = b
    assert len(names) > 1000 and got == expected and numbers.count == call + 1


def test_odd_metric_cells_sample_without_numpy_warnings(synthetic):
    """inf, -inf, nan, N/A and huge values in the plotted and ranked columns: no RuntimeWarning reaches the user,
    and the rows holding the infinities are kept (they are the plots' extremes)."""
    import warnings

    from msprobe_core.default_plugins.summary.views import ResultView

    _, view = synthetic
    cells = {c: list(view.cells[c]) for c in view.columns}
    odd = {100: "inf", 200: "-inf", 300: "nan", 400: "N/A", 500: "1e308", 600: "-1e308", 700: "unsupported"}
    for column in ("Cosine", "MaxRelativeErr", "MaxAbsErr"):
        for row, text in odd.items():
            cells[column][row] = text
    odd_view = ResultView("", view.mode, view.columns, cells, view.files, view.frameworks)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sample = _sample(odd_view, sizes=[150, 450, 7000])
    assert {100, 200} <= set(sample.positions)


def test_compare_report_html_samples_the_tables_in_memory(tmp_path, monkeypatch):
    """``msprobe compare --report html`` above the threshold: a sample of the table in memory (its rows, the file
    that holds them all, the rows the CSV read back gives; which rows a table keeps: see the test above)."""
    monkeypatch.setenv(THRESHOLD_ENV, "20")
    out = tmp_path / "out"
    assert main(["compare", "-tp", str(STATS / "target/step0"), "-gp", str(STATS / "golden/step0"), "-o", str(out),
                 "--report", "html", "-q"]) == 0
    (page,) = out.glob("compare_report_*.html")
    (result,) = out.glob("compare_result_*.csv")
    data = _payload_of(page.read_text(encoding="utf-8"))
    view = read_result_file(result)
    (part,) = data["parts"]
    assert data["sample"]["total"] == part["total"] == len(view) > 20
    assert data["sample"]["files"] == [str(result)]
    assert part["pos"] == sample_views([view])[0].positions
