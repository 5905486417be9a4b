"""``msprobe compare`` of several ranks keeps each rank's summary partial, not its result table.

Each job (in this process, on the local pool's workers, on Dask workers) hands back a small partial made
where it ran (msprobe_core.pipeline.sink); the run merges them in rank order. The summary must be the one
made from the whole tables (what a run asked for an HTML report, which keeps its tables, summarises), on
every executor, and no table may reach the run's process.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from msprobe_core.cli.main import main
from msprobe_core.default_plugins.summary import finish
from msprobe_core.default_plugins.summary.accumulate import ViewAccumulator, ViewPartial

# what these tests read of results (columns, modes, summaries) they read as a run does (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("as_in_a_run")

#: rank k of the dumps is a copy of rank0 of CASES[k] (statistics dumps; ranks that differ, and equal ranks
#: whose worst rows tie across ranks)
CASES = ["c01", "c05", "c01", "c08"]


@pytest.fixture(scope="module")
def ranks(corpora, tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("ranks")
    target, golden = root / "t" / "step0", root / "g" / "step0"
    for r, case in enumerate(CASES):
        shutil.copytree(corpora / "pytorch" / case / "target" / "step0" / "rank0", target / f"rank{r}")
        shutil.copytree(corpora / "pytorch" / case / "golden" / "step0" / "rank0", golden / f"rank{r}")
    return target, golden


def _run(target: Path, golden: Path, out: Path, *extra: str) -> tuple[dict[str, Any], list[Any]]:
    """The run's JSON summary (paths and stamps neutralised) and the job outcomes it summarised."""
    seen: list[Any] = []

    def add_outcomes(acc, outcomes, _real=finish.add_outcomes):
        seen.extend(outcomes)
        return _real(acc, outcomes)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(finish, "add_outcomes", add_outcomes)
        rc = main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out / "o"), "-q",
                   "--json-summary", str(out / "summary.json"), *extra])
    assert rc == 0
    text = (out / "summary.json").read_text().replace(str(out.resolve()), "OUT")
    summary = json.loads(re.sub(r"_\d{14}", "_STAMP", text))
    summary["files"] = sorted(f for f in summary["files"] if not f.endswith((".html", "summary.json")))
    return summary, seen


def _executor_flags(executor: str) -> tuple[str, ...]:
    """The command-line flags that run the ranks ``inline``, on the ``local pool`` or on ``dask``."""
    if executor == "inline":
        return ("--workers", "1")
    if executor == "local pool":
        return ("--executor", "local", "--workers", "2")
    pytest.importorskip("distributed")
    return ("--executor", "dask", "--workers", "2")


@pytest.fixture(scope="module")
def from_tables(ranks, tmp_path_factory) -> dict[str, Any]:
    """The summary of a run that keeps its tables and makes no partials (as the Python API runs), made from the
    tables."""
    from msprobe_core.cli import main as cli_main
    from msprobe_core.pipeline.sink import KEEP_TABLES, SUMMARY_SINK

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cli_main, "_summary_extra", lambda results: {SUMMARY_SINK: None, KEEP_TABLES: True})
        summary, outcomes = _run(*ranks, tmp_path_factory.mktemp("html"), "--workers", "1", "--report", "html")
    assert len(outcomes) == len(CASES) and all(o.table is not None and o.partial is None for o in outcomes)
    return summary


@pytest.mark.parametrize("executor", ["inline", "local pool", "dask"])
def test_ranks_hand_back_partials_and_the_summary_is_the_tables_one(ranks, from_tables, tmp_path, executor,
                                                                     monkeypatch):
    extra = _executor_flags(executor)
    summary, outcomes = _run(*ranks, tmp_path, *extra)
    assert len(outcomes) == len(CASES)
    assert all(o.table is None for o in outcomes), "a rank's table reached the run"
    assert all(isinstance(o.partial, ViewPartial) for o in outcomes)
    assert [o.partial.rows for o in outcomes] == [r["rows"] for r in from_tables["ranks"]]
    assert summary == from_tables
    assert summary["worst_rows"] and summary["first_divergence"]


def test_a_job_that_left_its_partial_hands_that_one_back(ranks, tmp_path):
    """A job whose result was never a whole table (a streamed compare fed the sink chunk by chunk) hands back
    its partial with its files; the run takes that one and makes none from a table it does not have."""
    from msprobe_core.default_plugins.summary.accumulate import ViewAccumulator
    from msprobe_core.run.context import RunContext
    from msprobe_core.run.jobs import job_partial

    assert job_partial(RunContext(), None, []) is None  # no sink asked for, nothing left
    run = RunContext(summary_sink=ViewAccumulator)
    left = ViewPartial("", "statistics", ["NPU Name"], rows=7)
    assert job_partial(run, None, [], left) is left
    assert job_partial(run, None, []) is None


def _whole_tree(views: list, outcomes: list) -> tuple:
    """The model tree's input as the whole results give it: each view's calls counted in this process (the
    ranks' own counts, made where they ran, must equal these), the hierarchy of the jobs' dumps."""
    from msprobe_core.default_plugins.summary.accumulate import SummaryAccumulator
    from msprobe_core.default_plugins.summary.finish import outcomes_hierarchy

    acc = SummaryAccumulator(tree=True)
    for view in views:
        acc.add_view(view)
    return [(p.label, p.node_stats) for p in acc.partials], outcomes_hierarchy(outcomes, acc)


def _page_data(path: Path) -> dict[str, Any]:
    import base64
    import gzip

    m = re.search(r'<script type="application/json" id="report-data" data-encoding="([^"]+)">(.*?)</script>',
                  path.read_text(encoding="utf-8"), re.S)
    assert m
    text = m.group(2)
    if m.group(1) == "gzip+base64":
        text = gzip.decompress(base64.b64decode(text)).decode("utf-8")
    return json.loads(text)


@pytest.mark.parametrize("threshold", [None, "20"])
@pytest.mark.parametrize("executor", ["inline", "local pool", "dask"])
def test_report_html_pages_come_from_the_ranks_samples(ranks, tmp_path, executor, threshold, monkeypatch):
    """``--report html``: no rank's table reaches the run, each hands back its sample with its partial, and the
    page is the one made from the whole results (every row below the threshold, their samples above it)."""
    from msprobe_core.default_plugins.report.html import _dumps, build_payload
    from msprobe_core.default_plugins.report.sampling import THRESHOLD_ENV, ViewSample
    from msprobe_core.default_plugins.summary.result_files import read_files_as_view

    if threshold is None:
        monkeypatch.delenv(THRESHOLD_ENV, raising=False)
    else:
        monkeypatch.setenv(THRESHOLD_ENV, threshold)
    extra = _executor_flags(executor)
    _, outcomes = _run(*ranks, tmp_path, *extra, "--report", "html")
    assert all(o.table is None for o in outcomes), "a rank's table reached the run"
    samples = [o.partial.sample for o in outcomes]
    assert all(isinstance(s, ViewSample) for s in samples)
    assert [s.total for s in samples] == [o.partial.rows for o in outcomes]
    if threshold is None:
        assert all(s.complete for s in samples)
    (page,) = (tmp_path / "o").glob("compare_report_*.html")
    data = _page_data(page)
    views = [read_files_as_view([Path(f) for f in o.files], o.job.label) for o in outcomes]
    expected = json.loads(_dumps(build_payload(views, data["summary"], sample_above=int(threshold or 200_000),
                                               tree=_whole_tree(views, outcomes))))
    assert ("sample" in data) == (threshold is not None)
    assert dict(data, generated=expected["generated"]) == expected


class PartsCounted:
    """A summary sink that also counts the parts of the result it was fed (in ``partial.parts``):
    one part for a result built as a whole table, one per chunk for a result streamed chunk by chunk."""

    def __init__(self) -> None:
        self._inner = ViewAccumulator()
        self._parts = 0

    def feed_table(self, table: Any, start: int = 0) -> None:
        self._parts += 1
        self._inner.feed_table(table, start)

    def finish(self, files: Any) -> Any:
        partial = self._inner.finish(files)
        partial.parts = self._parts  # the test's own count, on the partial it made
        return partial


def _result_files(out: Path) -> dict[str, bytes]:
    return {re.sub(r"_\d{14}", "_STAMP", str(p.relative_to(out))): p.read_bytes() for p in sorted(out.rglob("*.csv"))}


@pytest.mark.parametrize("executor", ["inline", "local pool", "dask"])
def test_rank_jobs_stream_their_results_on_every_executor(ranks, tmp_path, executor, monkeypatch):
    """Each rank pair's statistics compare is read, built and written chunk by chunk wherever it runs (the
    streamed path), and writes exactly the files the whole-table path writes."""
    from msprobe_core.cli import main as cli_main
    from msprobe_core.default_plugins.chunked.chunking import ENV_CHUNK_ROWS
    from msprobe_core.default_plugins.chunked.streamed import ENV_WHOLE_TABLES
    from msprobe_core.pipeline.sink import KEEP_TABLES, SUMMARY_SINK
    from msprobe_core.pipeline.strategy import ENV_WORKER_STREAM_MIN_BYTES as ENV_STREAM_MIN_BYTES

    extra = _executor_flags(executor)
    if executor == "dask":  # Dask's worker processes import the sink's module by name
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(cli_main, "_summary_extra", lambda results: {SUMMARY_SINK: PartsCounted,
                                                                            KEEP_TABLES: False})
    monkeypatch.setenv(ENV_CHUNK_ROWS, "4")
    monkeypatch.setenv(ENV_STREAM_MIN_BYTES, "0")  # the corpus' ranks are small: a worker streams every pair
    _, streamed = _run(*ranks, tmp_path / "streamed", *extra)
    monkeypatch.setenv(ENV_WHOLE_TABLES, "1")
    _, whole = _run(*ranks, tmp_path / "whole", *extra)
    rows = [o.partial.rows for o in streamed]
    assert rows == [o.partial.rows for o in whole] and min(rows) > 8
    assert [o.partial.parts for o in whole] == [1] * len(CASES)
    # API-aligned chunks of about 4 rows: many parts per rank
    assert all(o.partial.parts >= r // 8 for o, r in zip(streamed, rows))
    assert _result_files(tmp_path / "streamed" / "o") == _result_files(tmp_path / "whole" / "o")


@pytest.mark.parametrize("executor", ["inline", "local pool"])
def test_each_rank_keeps_whole_rows_only_up_to_its_share_and_a_page_that_fits_is_still_exact(
        ranks, from_tables, tmp_path, executor, monkeypatch):
    """With many ranks the rows the jobs hand back stay within the threshold together: each keeps every row only
    up to its share (threshold / ranks) and samples beyond it; when all results together fit, the page still has
    every row, the sampled ranks read back from their files."""
    from msprobe_core.default_plugins.report.html import _dumps, build_payload
    from msprobe_core.default_plugins.report.sampling import THRESHOLD_ENV, Budget
    from msprobe_core.default_plugins.summary.result_files import read_files_as_view

    # budgets small enough that a rank over its share is really sampled (the local pool's workers are forks)
    monkeypatch.setattr(Budget, "for_views", classmethod(lambda cls, n: cls(10, 10, 10, 5, 2, 32, 32)))
    rows = [r["rows"] for r in from_tables["ranks"]]
    threshold = sum(rows)  # everything fits, but the largest rank is over its quarter of it
    assert max(rows) > threshold // len(rows)
    monkeypatch.setenv(THRESHOLD_ENV, str(threshold))
    extra = _executor_flags(executor)
    _, outcomes = _run(*ranks, tmp_path, *extra, "--report", "html")
    samples = [o.partial.sample for o in outcomes]
    share = threshold // len(rows)
    assert all(s.complete == (s.total <= share) for s in samples)
    assert not all(s.complete for s in samples)
    (page,) = (tmp_path / "o").glob("compare_report_*.html")
    data = _page_data(page)
    views = [read_files_as_view([Path(f) for f in o.files], o.job.label) for o in outcomes]
    expected = json.loads(_dumps(build_payload(views, data["summary"], sample_above=threshold,
                                               tree=_whole_tree(views, outcomes))))
    assert "sample" not in data
    assert dict(data, generated=expected["generated"]) == expected


def test_small_rank_pairs_on_a_worker_are_compared_on_whole_tables(ranks, tmp_path, monkeypatch):
    """Below ``MSPROBE_RANK_STREAM_MIN_BYTES`` (64 MiB by default) a pool worker compares a rank pair on whole
    tables, faster for small pairs; the run still gets partials, never tables, and the same files."""
    from msprobe_core.cli import main as cli_main
    from msprobe_core.pipeline.sink import KEEP_TABLES, SUMMARY_SINK
    from msprobe_core.pipeline.strategy import ENV_WORKER_STREAM_MIN_BYTES as ENV_STREAM_MIN_BYTES

    monkeypatch.setattr(cli_main, "_summary_extra", lambda results: {SUMMARY_SINK: PartsCounted,
                                                                            KEEP_TABLES: False})
    monkeypatch.setenv("MSPROBE_CHUNK_ROWS", "4")
    extra = ("--executor", "local", "--workers", "2")
    monkeypatch.delenv(ENV_STREAM_MIN_BYTES, raising=False)
    _, small = _run(*ranks, tmp_path / "default", *extra)
    monkeypatch.setenv(ENV_STREAM_MIN_BYTES, "0")
    _, streamed = _run(*ranks, tmp_path / "streamed", *extra)
    assert all(o.table is None for o in small + streamed)
    assert [o.partial.parts for o in small] == [1] * len(CASES)
    assert all(o.partial.parts > 1 for o in streamed)
    assert _result_files(tmp_path / "default" / "o") == _result_files(tmp_path / "streamed" / "o")
