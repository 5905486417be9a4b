"""``msprobe compare`` of several ranks keeps each rank's summary partial, not its result table.

Each job (in this process, on the local pool's workers, on Dask workers) hands back a small partial made
where it ran (msprobe_core.pipeline.sink); the run merges them in rank order. The summary must be the one
made from the whole tables (what a run asked for an HTML report, which keeps its tables, summarises), on
every executor, and no table may reach the run's process.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from msprobe_core.cli.main import main
from msprobe_core.report import finish
from msprobe_core.report.accumulate import ViewPartial

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


@pytest.fixture(scope="module")
def from_tables(ranks, tmp_path_factory) -> dict[str, Any]:
    """The summary of a run that keeps its tables (an HTML report asked for), made from the tables."""
    summary, outcomes = _run(*ranks, tmp_path_factory.mktemp("html"), "--workers", "1", "--report", "html")
    assert len(outcomes) == len(CASES) and all(o.table is not None for o in outcomes)
    return summary


@pytest.mark.parametrize("executor", ["inline", "local pool", "dask"])
def test_ranks_hand_back_partials_and_the_summary_is_the_tables_one(ranks, from_tables, tmp_path, executor,
                                                                     monkeypatch):
    if executor == "inline":
        extra: tuple[str, ...] = ("--workers", "1")
    elif executor == "local pool":
        extra = ("--executor", "local", "--workers", "2")
    else:
        pytest.importorskip("distributed")
        extra = ("--executor", "dask", "--workers", "2")
    summary, outcomes = _run(*ranks, tmp_path, *extra)
    assert len(outcomes) == len(CASES)
    assert all(o.table is None for o in outcomes), "a rank's table reached the run"
    assert all(isinstance(o.partial, ViewPartial) for o in outcomes)
    assert [o.partial.rows for o in outcomes] == [r["rows"] for r in from_tables["ranks"]]
    assert summary == from_tables
    assert summary["worst_rows"] and summary["first_divergence"]


def test_a_job_that_left_its_partial_hands_that_one_back(ranks, tmp_path):
    """A job whose result was never a whole table (a streamed compare fed the sink chunk by chunk) leaves its
    partial in ``job.extra``; the run takes that one, once, and makes none from a table it does not have."""
    from msprobe_core.host.registry import get_host
    from msprobe_core.host.specs import CompareJob
    from msprobe_core.pipeline.sink import SUMMARY_SINK
    from msprobe_core.report.accumulate import ViewAccumulator
    from msprobe_core.run.parallel import JOB_PARTIAL, job_partial

    host = get_host()
    target, golden = ranks
    options = host.build_options(host.options.from_cli({"target": str(target), "golden": str(golden),
                                                        "output_path": str(tmp_path)}), given=set())
    job = CompareJob(target / "rank0" / "dump.json", golden / "rank0" / "dump.json", tmp_path, "compare_result")
    assert job_partial(options, job, None, []) is None  # no sink asked for, nothing left
    options.extra = {**options.extra, SUMMARY_SINK: ViewAccumulator}
    left = ViewPartial("", "statistics", ["NPU Name"], rows=7)
    job.extra[JOB_PARTIAL] = left
    assert job_partial(options, job, None, []) is left
    assert JOB_PARTIAL not in job.extra
    assert job_partial(options, job, None, []) is None
