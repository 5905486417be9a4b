"""The HTML report made from samples fed chunk by chunk (report/sample_sink.py), never from whole tables:
``msprobe report`` feeds each chunk read from the files to a sampler next to the summary, and
``msprobe compare --report html`` jobs hand back a sample with their summary partial. Below the
threshold the page is the whole-view one, byte for byte; above it, what sampling the whole views gives."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

import pytest

from msprobe_core.cli.main import main
from msprobe_core.default_plugins.report.html import _dumps, build_payload
from msprobe_core.default_plugins.report.sample_sink import ReportSamples
from msprobe_core.default_plugins.report.sampling import THRESHOLD_ENV, Budget, sample_views
from msprobe_core.default_plugins.summary.accumulate import view_partial
from msprobe_core.default_plugins.summary.hierarchy import run_hierarchy
from msprobe_core.default_plugins.summary.result_files import read_result_file
from msprobe_core.default_plugins.summary.summary import summarize

from .report_synth import write_synthetic_result

# what these tests read of results (columns, modes, summaries) they read as a run does (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("as_in_a_run")

REPO = Path(__file__).resolve().parents[1]
STATS = REPO / "examples" / "pytorch_stats"
ROWS = 6_000


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    """Two results of one run (rank0, rank1), 6,000 rows each, read back whole as the reference."""
    root = tmp_path_factory.mktemp("ranks")
    paths = [write_synthetic_result(root / f"compare_result_rank{k}_20260101000000.csv", ROWS, seed=k,
                                    diverge_at=0.3 + 0.2 * k) for k in range(2)]
    return root, [read_result_file(p, f"rank{k}") for k, p in enumerate(paths)]


def _payload_of(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="report-data" data-encoding="([^"]+)">(.*?)</script>', html,
                  re.S)
    assert m
    text = m.group(2)
    if m.group(1) == "gzip+base64":
        text = gzip.decompress(base64.b64decode(text)).decode("utf-8")
    return json.loads(text)


def _same(page: dict, expected: dict) -> None:
    """The page's data equals ``expected`` (as the page spells it), but for the time it was made."""
    expected = json.loads(_dumps(expected))
    page = dict(page, generated=expected["generated"])
    assert page == expected


@pytest.mark.parametrize("threshold", [2 * ROWS, 2 * ROWS - 1, ROWS + 10, 100])
def test_msprobe_report_page_is_the_whole_view_one(two_ranks, tmp_path, monkeypatch, threshold):
    """At or below the threshold every row (the page is the whole-table one); above it, each result's sample as
    the whole views give it: also the first result, kept whole while the report still fitted (``ROWS + 10``)."""
    root, views = two_ranks
    monkeypatch.setenv(THRESHOLD_ENV, str(threshold))
    out = tmp_path / "r.html"
    assert main(["report", str(root), "-o", str(out), "-q"]) == 0
    page = _payload_of(out.read_text(encoding="utf-8"))
    summary = page["summary"]  # the command's summary also names the page and the run shown
    # msprobe report has no dumps at hand: the paths are what the names say (here: the node alone)
    hierarchy = run_hierarchy((v.label, None, None, v.mode, v.frameworks) for v in views)
    whole = summarize(views)
    hierarchy.add_paths(whole)
    assert {k: v for k, v in summary.items() if k not in ("files", "run")} == json.loads(json.dumps(
        {k: v for k, v in whole.items() if k != "files"}))
    # the model tree counts every row of the whole views
    stats = [(v.label, view_partial(v, tree=True).node_stats) for v in views]
    expected = build_payload(views, summary, sample_above=threshold, tree=(stats, hierarchy))
    assert page["tree"] is not None
    assert ("sample" in page) == (threshold < 2 * ROWS)
    _same(page, expected)


def test_streamed_samples_without_the_environment_match_whole_views(two_ranks):
    """The same with the threshold given (no environment), fed in small odd chunks."""
    from msprobe_core.default_plugins.summary.chunks import view_cut

    _, views = two_ranks
    for limit in (2 * ROWS, ROWS + 1, ROWS - 1, 0):
        samples = ReportSamples(len(views), limit=limit)
        for view in views:
            sampler = samples.sampler()
            for chunk in view_cut(view, [7, 1000, 33, 2500, 1] * 3):
                sampler.feed(chunk)
            samples.add(sampler.finish())
        kept = samples.finish()
        summary = summarize(views)
        got = build_payload([], summary, samples=kept, sample_above=limit)
        expected = build_payload(views, summary, sample_above=limit)
        got["generated"] = expected["generated"]
        assert json.dumps(got, default=list) == json.dumps(expected, default=list), limit


def test_above_the_threshold_each_result_is_its_whole_view_sample(two_ranks):
    """With a budget that keeps a fraction of the rows: the first result, kept whole while the report fitted,
    and the second, which overflowed the allowance mid-way, are each the sample of their whole view."""
    from msprobe_core.default_plugins.summary.chunks import view_cut

    _, views = two_ranks
    small = Budget(nonpass_first=300, nonpass_sample=200, pass_sample=150, worst=40, radius=25, buckets=64, groups=64)
    expected = sample_views(views, budget=small)
    samples = ReportSamples(len(views), limit=ROWS + 500, budget=small)
    for view in views:
        sampler = samples.sampler()
        for chunk in view_cut(view, [7, 1000, 33, 2500, 1] * 3):
            sampler.feed(chunk)
        samples.add(sampler.finish())
    assert samples.samples[0].complete and not samples.allowance.open
    kept = samples.finish()
    assert all(len(s.positions) < ROWS // 2 for s in kept)
    assert [(s.positions, s.cells, s.verdicts, s.total) for s in kept] == [
        (s.positions, s.cells, s.verdicts, s.total) for s in expected]


def test_a_sink_fed_parts_of_a_table_gives_the_whole_views_sample_and_partial(tmp_path):
    """The compare's sink (what a job, or a streamed compare part by part, feeds): its partial is the table's and
    its sample the whole view's, whatever the parts; both survive pickling (they travel back from workers)."""
    import pickle

    import msprobe_core
    from msprobe_core.default_plugins.report.sample_sink import SampledSink
    from msprobe_core.default_plugins.summary.accumulate import SummaryAccumulator, table_partial
    from msprobe_core.result import ResultTable

    result = msprobe_core.compare(STATS / "target/step0", STATS / "golden/step0", tmp_path / "out")
    (outcome,) = result._outcomes
    table = outcome.table
    (view,) = result._result_views()
    small = Budget(nonpass_first=3, nonpass_sample=3, pass_sample=4, worst=2, radius=1, buckets=4, groups=4)
    (expected,) = sample_views([view], budget=small)
    assert len(expected.positions) < len(view)
    whole_partial = table_partial(table, result.files)
    for cuts in ([len(table)], [1, 5, 17], [13] * 3):
        sink = SampledSink(small, 0)
        a = 0
        for size in [*cuts, len(table)]:
            b = min(len(table), a + size)
            if a < b:
                part = ResultTable(table.mode, table.columns, {c: list(table.data[c])[a:b] for c in table.columns},
                                   table.group_of_row[a:b], meta=table.meta)
                sink.feed_table(part, a)
            a = b
        partial = pickle.loads(pickle.dumps(sink.finish(result.files)))
        sample, partial.sample = partial.sample, None
        assert (sample.positions, sample.cells, sample.total) == (expected.positions, expected.cells, len(view))
        assert sample.files == [Path(f) for f in result.files]
        summaries = []
        for p in (partial, whole_partial):
            acc = SummaryAccumulator()
            acc.add(p)
            summaries.append(acc.summary())
        assert summaries[0] == summaries[1] and summaries[0]["rows"] == len(view)
