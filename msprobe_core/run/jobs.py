"""The run: every job of a compare, one after the other, unless a plugin runs them its own way.

The run prepares the output directory, holds the run's timestamp, pauses the garbage collector, opens the run's
executor, and hands the jobs to the plugin that takes the run (``msprobe_run_jobs``: ``-da``, the default plugin
``diff_analyze``; several rank pairs side by side on the executor, the default plugin ``parallel_jobs``) or, when
none does, each job in turn to the pipeline (:mod:`msprobe_core.pipeline.job`). Only the jobs' own stages write
result files.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..console.stages import set_job
from ..errors import MsprobeError, OutputError
from ..files.outputs import output_policy, prepare_output_dir, run_stamp
from ..host.registry import PluginHost, get_host
from ..host.specs import CompareJob
from ..model import CompareOptions
from ..pipeline.job import JobOutcome, raise_if_partly_failed, run_job
from ..running import running_with
from ..workers.executors import executor_for
from ..workers.gcpause import gc_paused
from .context import RunContext

log = logging.getLogger("msprobe")


def run_jobs(jobs: list[CompareJob], options: CompareOptions, host: PluginHost | None = None,
             run: RunContext | None = None) -> list[JobOutcome]:
    """Run every job; a failing job does not stop the others but makes the run fail at the end.

    ``run``: the caller's :class:`~msprobe_core.run.context.RunContext` (its summary sink, whether tables are
    kept; default: none, kept); the run sets its host, start time and timestamp and hands it to every stage.
    """
    host = host or (run.host if run is not None and run.host is not None else get_host())
    host.notify("msprobe_run_released")  # what an earlier run that stopped before its summary kept of its files
    prepare_output_dir(Path(options.output_dir))  # a bad output dir stops the run before any work
    # the run's timestamp, held against other runs into the same directory (outputs.run_stamp)
    # without --force, not a name a file from an earlier run has either
    with run_stamp(Path(options.output_dir), also=sorted({Path(job.output_dir) for job in jobs}),
                   keep_earlier=not options.force) as timestamp:
        # both travel to worker processes
        run = replace(run or RunContext(), host=host, started=time.time(), stamp=timestamp)
        with gc_paused(freeze=True), output_policy(force=options.force, started=run.started), running_with(host), \
                executor_for(options, host) as executor:  # the run's executor (--executor): one for every job
            if not executor.shares_working_directory:  # its workers: another directory, maybe another machine
                from .shipping import absolute_paths

                jobs, options = absolute_paths(jobs), absolute_paths(options)
            # a plugin may run the jobs its own way (-da: the default plugin diff_analyze; several rank pairs at
            # once: parallel_jobs); else one after the other here
            taken = host.run_jobs(jobs, options, run, executor)
            if taken is not None:
                return taken
            outcomes = _run_all(jobs, options, run)
    raise_if_partly_failed(outcomes, len(jobs))
    return outcomes


def _run_all(jobs: list[CompareJob], options: CompareOptions, run: RunContext) -> list[JobOutcome]:
    outcomes: list[JobOutcome] = []
    for n, job in enumerate(jobs, start=1):
        outcome = JobOutcome(job)
        outcomes.append(outcome)
        set_job(job.label, n, len(jobs))
        prefix = f"[{job.label}] " if len(jobs) > 1 else ""
        if job.missing:
            outcome.error = job.missing
            log.error("%s%s; skipping this pair.", prefix, outcome.error)
            continue
        try:
            done = run_job(job, options, run.host, run, timestamp=run.stamp)
            if done is None:
                continue
            outcome.table, outcome.files, left = done
        except OutputError:
            raise  # disk full, read-only, existing file: the other jobs would fail the same way
        except MsprobeError as exc:
            if len(jobs) == 1:
                raise
            outcome.error = str(exc)
            log.error("%s%s", prefix, exc)
            continue
        for f in outcome.files:
            log.info("%sThe result file path is: %s.", prefix, f.resolve())
        outcome.partial = job_partial(run, outcome.table, outcome.files, left)
        outcome.table = outcome.table if run.keep_tables else None
    return outcomes


def job_partial(run: RunContext, table: Any, files: list[Path], left: Any = None) -> Any:
    """The summary partial of one job's result (``None`` when the run asks for none): ``left``, the partial a job
    streamed chunk by chunk made as it went, else one made from its ``table`` (:mod:`msprobe_core.pipeline.sink`)."""
    from ..pipeline.sink import summarise_table

    if left is not None or table is None:
        return left
    return summarise_table(run, table, files)
