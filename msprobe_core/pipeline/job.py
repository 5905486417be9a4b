"""One job through the stages: load → match → metrics → verdicts → write, under one orchestration.

discover (the run's jobs) → load (:mod:`msprobe_core.load.stage`) → match
(:mod:`msprobe_core.match.stage`) → metrics (:mod:`msprobe_core.metrics.stage`) → verdicts
(:mod:`msprobe_core.verdicts.stage`) → write (:mod:`msprobe_core.write.stage`). Each stage takes the
previous stage's output. :func:`run_job` runs them for every job, serial, on a pool worker or for the
Python API; whole tables (:mod:`msprobe_core.pipeline.whole`) and those plugins register (the default plugin
``chunked``: chunk by chunk) are its strategies (:mod:`msprobe_core.pipeline.strategy`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..console.stages import file_sizes, stage
from ..errors import CompareFailed
from ..host.registry import PluginHost
from ..host.specs import CompareJob
from ..load.stage import load_pair
from ..model import CompareOptions, DumpTable
from ..result import ResultTable
from .sink import Written

if TYPE_CHECKING:
    from ..run.context import RunContext
    from .strategy import Strategy

log = logging.getLogger("msprobe")
#: what a caller of :func:`run_job` is handed once both sides are read: it may return the pair to go on with
OnLoaded = Callable[[DumpTable, DumpTable], "tuple[DumpTable, DumpTable] | None"]


@dataclass
class JobOutcome:
    """What happened to one job (``partial``: its result's summary partial, see :mod:`msprobe_core.pipeline.sink`)."""

    job: CompareJob
    files: list[Path] = field(default_factory=list)
    table: ResultTable | None = None
    error: str | None = None
    partial: Any = None


def run_job(job: CompareJob, options: CompareOptions, host: PluginHost, run: RunContext | None = None, *,
            timestamp: str | None = None, on_worker: bool = False, strategy: Strategy | None = None,
            on_loaded: OnLoaded | None = None, check_empty: bool = True) -> Written | None:
    """One job through the stages, whatever strategy runs them: the one orchestration of a job.

    The strategy (:func:`~msprobe_core.pipeline.strategy.choose_strategy`: whole tables, or chunk by chunk) is
    chosen by the job's size where it runs (``on_worker``: on a pool worker) and by what the chunked path can take;
    the stages are load (:func:`load_job`, asking what the strategy needs), match and finish (metrics, verdicts and,
    given a ``timestamp``, the write). A strategy that cannot take the job past its load hands it to whole tables,
    which go on from the match stage. ``None`` (with a warning): nothing to compare. ``run``: the run's
    :class:`~msprobe_core.run.context.RunContext` (its start, its summary sink, whether it keeps tables).

    A caller that owns the rest of a run (a front end's :func:`msprobe_core.run.frontend.run_compare`, the
    ``-da`` analysis) may name the ``strategy``, and be handed both sides once read (``on_loaded(target,
    golden)``, which may return the pair to go on with instead); ``check_empty=False`` leaves an empty dump to
    the match stage, which then pairs nothing and says so.
    """
    from ..files.removals import finish_removals
    from .build import NO_MATCH
    from .strategy import WholeTablesNeeded, choose_strategy, whole_tables
    from .whole import WholeTables

    finish_removals()  # the side file of the job before: its thread must end before this job forks
    options = _job_options(job, options)
    if strategy is None:
        strategy = choose_strategy(job, options, host, writes=timestamp is not None, on_worker=on_worker)
    log.debug("%s: %s", job.label, strategy.name)
    loaded = load_job(job, options, host, strategy.index, on_loaded, check_empty)
    while loaded is not None:
        try:
            matched = strategy.match(*loaded, options, host)
            if matched is None:  # whichever strategy matched: one warning
                log.warning(NO_MATCH)
                return None
            return strategy.finish(matched, job, options, timestamp, host, run)
        except WholeTablesNeeded as why:
            if isinstance(strategy, WholeTables):
                raise
            log.debug("%s: whole tables (%s)", job.label, why)
            strategy, loaded = WholeTables(), whole_tables(*loaded)
    return None


def compare_job(job: CompareJob, options: CompareOptions, host: PluginHost) -> ResultTable | None:
    """Run one job up to a result table, writing nothing (``None`` when there is nothing to compare)."""
    done = run_job(job, options, host)
    return None if done is None else done.table


def _job_options(job: CompareJob, options: CompareOptions) -> CompareOptions:
    if Path(options.output_dir) != Path(job.output_dir):
        # whatever a plugin writes besides the result (e.g. a generated mapping) goes next to it
        options = replace(options, output_dir=Path(job.output_dir))
    return options


def load_job(job: CompareJob, options: CompareOptions, host: PluginHost, index: bool | None = None,
             on_loaded: OnLoaded | None = None, check_empty: bool = True) -> tuple[Any, Any] | None:
    """The load stage: both sides (tables, or the indexes a chunked strategy asked for: ``index``, see
    :func:`~msprobe_core.load.stage.load_pair`); ``on_loaded``: see :func:`run_job`."""
    names = f"both {job.target.name}" if job.target.name == job.golden.name else f"{job.target.name} + {job.golden.name}"
    stage("load", f"{names}, {file_sizes(job.target, job.golden)}", 1, 4)
    target, golden = load_pair(job, options, host, index)
    if on_loaded is not None:
        target, golden = on_loaded(target, golden) or (target, golden)
    if check_empty and (not len(target) or not len(golden)):
        log.warning("No valid data found in %s or %s. No compare result file generated.", job.target, job.golden)
        return None
    return target, golden


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


