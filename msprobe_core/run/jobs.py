"""The run: every job of a compare, one after the other or side by side on the run's executor.

The run prepares the output directory, holds the run's timestamp, pauses the garbage collector,
and hands each job to the pipeline (:mod:`msprobe_core.pipeline.job`), to the executor's tasks
(:mod:`msprobe_core.run.parallel`) or, when a plugin takes the run (``msprobe_run_jobs``: ``-da``, the default
plugin ``diff_analyze``), to that plugin. Only the jobs' own stages write result files.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path

from ..console.stages import set_job, stage
from ..errors import MsprobeError, OutputError
from ..files.outputs import output_policy, prepare_output_dir, run_stamp
from ..host.registry import PluginHost, get_host
from ..host.specs import CompareJob
from ..model import CompareOptions
from ..pipeline.job import JobOutcome, raise_if_partly_failed, run_job
from ..running import running_with
from ..workers.gcpause import gc_paused
from .context import RunContext
from .parallel import job_partial

log = logging.getLogger("msprobe")


def run_jobs(jobs: list[CompareJob], options: CompareOptions, host: PluginHost | None = None,
             run: RunContext | None = None) -> list[JobOutcome]:
    """Run every job; a failing job does not stop the others but makes the run fail at the end.

    ``run``: the caller's :class:`~msprobe_core.run.context.RunContext` (its summary sink, whether tables are
    kept; default: none, kept); the run sets its host, start time and timestamp and hands it to every stage.
    """
    host = host or (run.host if run is not None and run.host is not None else get_host())
    from ..load.hierarchy import forget_stacks

    forget_stacks()  # what an earlier run that stopped before its summary kept of its stack.json files
    prepare_output_dir(Path(options.output_dir))  # a bad output dir stops the run before any work
    # the run's timestamp, held against other runs into the same directory (outputs.run_stamp)
    # without --force, not a name a file from an earlier run has either
    with run_stamp(Path(options.output_dir), also=sorted({Path(job.output_dir) for job in jobs}),
                   keep_earlier=not options.force) as timestamp:
        # both travel to worker processes
        run = replace(run or RunContext(), host=host, started=time.time(), stamp=timestamp)
        with gc_paused(freeze=True), output_policy(force=options.force, started=run.started), running_with(host):
            # a plugin may run the jobs its own way (-da: the default plugin diff_analyze); else the plain compare
            taken = host.run_jobs(jobs, options, run)
            if taken is not None:
                return taken
            outcomes = _run_on_executor(jobs, options, run)
    raise_if_partly_failed(outcomes, len(jobs))
    return outcomes


def _run_on_executor(jobs: list[CompareJob], options: CompareOptions, run: RunContext) -> list[JobOutcome]:
    """Open the run's executor (``--executor``): several rank pairs run as its tasks, else here."""
    from ..workers.executors import executor_for
    from .parallel import run_parallel, wants_parallel

    with executor_for(options, run.host) as executor:
        if not executor.shares_working_directory:  # its workers: another directory, maybe another machine
            from .shipping import absolute_paths

            jobs, options = absolute_paths(jobs), absolute_paths(options)
        if wants_parallel(jobs, executor):
            stage("compare", f"{len(jobs)} pairs side by side")
            outcomes = run_parallel(jobs, options, run, executor)
            if outcomes is not None:
                return outcomes
        return _run_all(jobs, options, run)


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
