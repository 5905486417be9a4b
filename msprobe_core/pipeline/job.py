"""One job through the stages: load → match → metrics → verdicts → write.

discover (the run's jobs) → load (:mod:`msprobe_core.load.stage`) → match
(:mod:`msprobe_core.match.stage`) → metrics (:mod:`msprobe_core.metrics.stage`) → verdicts
(:mod:`msprobe_core.verdicts.stage`) → write (:mod:`msprobe_core.write.stage`). Each stage takes the
previous stage's output; :func:`compare_job` stops at the table, :func:`compare_and_write` writes it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..console.progress import file_sizes, stage
from ..errors import CompareFailed
from ..host.registry import PluginHost
from ..host.specs import CompareJob
from ..load.stage import account_unrecognised, load_pair
from ..match.stage import match_tables
from ..model import CompareOptions, DumpTable, MatchResult
from ..result import ResultTable
from ..write.stage import write_result
from .build import NO_MATCH, build_result
from .sink import Written

if TYPE_CHECKING:
    from ..run.context import RunContext

log = logging.getLogger("msprobe")


@dataclass
class JobOutcome:
    """What happened to one job (``partial``: its result's summary partial, see :mod:`msprobe_core.pipeline.sink`)."""

    job: CompareJob
    files: list[Path] = field(default_factory=list)
    table: ResultTable | None = None
    error: str | None = None
    partial: Any = None


def compare_job(job: CompareJob, options: CompareOptions, host: PluginHost) -> ResultTable | None:
    """Run one job up to a result table (``None`` when there is nothing to compare)."""
    options = _job_options(job, options)
    matched = match_job(job, options, host)
    return None if matched is None else build_result(*matched, options, host)


def _job_options(job: CompareJob, options: CompareOptions) -> CompareOptions:
    if Path(options.output_dir) != Path(job.output_dir):
        # whatever a plugin writes besides the result (e.g. a generated mapping) goes next to it
        options = replace(options, output_dir=Path(job.output_dir))
    return options


def match_job(
    job: CompareJob, options: CompareOptions, host: PluginHost
) -> tuple[DumpTable, DumpTable, MatchResult] | None:
    """Load and match one job's tables (``None``, with a warning, when there is nothing to compare).

    What either file held that the loader did not understand is named on the console and kept
    in ``job.unrecognised`` for the run's summary (:mod:`msprobe_core.load.dialects`).
    """
    loaded = load_job(job, options, host)
    return None if loaded is None else match_loaded(*loaded, options, host)


def load_job(job: CompareJob, options: CompareOptions, host: PluginHost,
             index: bool | None = None) -> tuple[Any, Any] | None:
    """The load stage of :func:`match_job`: both sides (tables, or the indexes a streamed compare asked for:
    ``index``, see :func:`~msprobe_core.load.stage.load_pair`)."""
    names = f"both {job.target.name}" if job.target.name == job.golden.name else f"{job.target.name} + {job.golden.name}"
    stage("load", f"{names}, {file_sizes(job.target, job.golden)}", 1, 4)
    target, golden = load_pair(job, options, host, index)
    account_unrecognised(job, target, golden)
    if not len(target) or not len(golden):
        log.warning("No valid data found in %s or %s. No compare result file generated.", job.target, job.golden)
        return None
    return target, golden


def match_loaded(target: DumpTable, golden: DumpTable, options: CompareOptions,
                 host: PluginHost) -> tuple[DumpTable, DumpTable, MatchResult] | None:
    """The match stage of :func:`match_job` (``None``, with a warning, when no row matched)."""
    stage("match", f"{len(target):,} + {len(golden):,} rows", 2, 4)
    match = match_tables(target, golden, options, host)
    if not match.target:
        log.warning(NO_MATCH)
        return None
    return target, golden, match


def compare_and_write(
    job: CompareJob, options: CompareOptions, timestamp: str, host: PluginHost, run: RunContext | None = None
) -> Written | None:
    """Compare one job and write its result; ``None`` when there is nothing to compare.

    A statistics or md5 compare the streamed path takes (:mod:`msprobe_core.pipeline.streamed`) is matched
    on the dumps' indexes; when the run summarises from a sink and keeps no table (``run``, the run's
    :class:`~msprobe_core.run.context.RunContext`), it is also read, built and written chunk by chunk: no
    table is returned then, and the sink's partial is. Otherwise the whole tables are loaded, and a big
    statistics result is built and written by two processes (:mod:`msprobe_core.write.tailbuild`).
    """
    from ..write.tailbuild import finish_removals
    from .strategy import worth_streaming
    from .streamed import WholeTablesNeeded, compare_streamed, stream_plan, whole_tables

    finish_removals()  # the side file of the job before: its thread must end before this job forks
    options = _job_options(job, options)
    plan = stream_plan(job, options, host) if worth_streaming(job) else None
    log.debug("%s: %s", job.label, "chunk by chunk" if plan is not None else "whole tables")
    loaded = load_job(job, options, host, None if plan is None else plan.renumber)
    if loaded is None:
        return None
    if plan is not None:
        try:
            return compare_streamed(job, *loaded, options, timestamp, host, plan, build_result, run)
        except WholeTablesNeeded as why:
            log.debug("%s: whole tables (%s)", job.label, why)
        loaded = whole_tables(*loaded)
    matched = match_loaded(*loaded, options, host)
    if matched is None:
        return None
    rows = len(matched[2].target)
    tail = _start_tail(*matched, job, options, host)
    try:
        stage("metrics and verdicts", f"{rows:,} rows", 3, 4)
        table = build_result(*matched, options, host)
        stage("write", f"{rows:,} rows", 4, 4)
        files = write_result(table, job, options, timestamp, host, tail=tail, started=_started(run))
    except BaseException:
        if tail is not None:
            tail.close()
            finish_removals()  # nothing of a failed run is left behind when the error reaches the user
        raise
    if tail is not None:
        tail.close()
    return Written(table, files)


def _started(run: RunContext | None) -> float | None:
    """When the run began (``None`` outside a run: the write stage's own now)."""
    return None if run is None else run.started


def _start_tail(target: DumpTable, golden: DumpTable, match: MatchResult, job: CompareJob,
                options: CompareOptions, host: PluginHost) -> Any:
    from ..write.tailbuild import start_tail, wants_tail

    # the writer must take rows a child spelled, and the metric set give a part's rows as the whole gives them
    metrics = host.metric_set(target.mode, options)
    splittable = metrics is not None and metrics.splittable and not metrics.whole_table
    if not wants_tail(target, match, options, host.writer(options.output_format).accepts_csv_tail and splittable):
        return None

    def build(t: DumpTable, g: DumpTable, part: MatchResult) -> ResultTable:
        return build_result(t, g, part, options, host)

    return start_tail(target, golden, match, options, build, Path(job.output_dir))


def raise_if_partly_failed(outcomes: list[JobOutcome], n_jobs: int) -> None:
    """Fail a multi-job run when some jobs failed; the error carries every outcome for the summary."""
    failed = [o for o in outcomes if o.error]
    if failed and n_jobs > 1:
        exc = CompareFailed(
            f"{len(failed)} of {n_jobs} compares failed ({', '.join(o.job.label for o in failed)}); "
            "the other results were written"
        )
        exc.outcomes = outcomes
        raise exc


