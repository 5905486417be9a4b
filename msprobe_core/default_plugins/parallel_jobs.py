"""The default plugin ``parallel_jobs``: several jobs (rank pairs) run at once on the run's executor.

It takes a run through ``msprobe_run_jobs`` (``trylast``: a plugin with a way of its own, ``-da``, is asked first)
when more than one job can run and the executor has more than one worker. Each job becomes a task: it loads,
matches, computes and writes its own result on the worker (on a cluster the output directory must be on storage
shared with the client, like the dumps), and sends back a small report: the files written, its error if any, and
the log records it emitted, which the client re-emits in job order, so the console reads as in a serial run. A
task's own sub-tasks (tensor chunks) go to the executor its parent described
(:meth:`~msprobe_core.plugin.Executor.for_task`). Turned off (``-p no:parallel_jobs``), the core runs the jobs
one after the other, with the same result files.
"""

from __future__ import annotations

import logging
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msprobe_core.plugin import hookimpl

if TYPE_CHECKING:
    from msprobe_core.plugin import CompareJob, CompareOptions, Executor, ExecutorRef, JobOutcome

log = logging.getLogger("msprobe")


@dataclass
class JobTask:
    """Everything a worker needs to run one job (``run``: the run's context without its host)."""

    job: CompareJob
    options: CompareOptions
    run: Any  # the run's context (msprobe_run_jobs' ``run``) without its host
    executor: ExecutorRef


@dataclass
class JobReport:
    """What a worker sends back for one job: its files, and its result's summary partial
    (:func:`~msprobe_core.plugin.job_partial`) or, when the run keeps tables, its table."""

    files: list[Path] = field(default_factory=list)
    table: Any = None
    partial: Any = None
    error: str | None = None
    records: list[logging.LogRecord] = field(default_factory=list)
    unrecognised: list[dict[str, Any]] = field(default_factory=list)  # the job's entries no dialect knows


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        # make the record picklable: render the message, drop the traceback objects
        record.msg = record.getMessage()
        record.args = None
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        self.records.append(record)


def run_job_task(task: JobTask) -> JobReport:
    """Run one job where the executor put it; module-level so that it pickles by reference."""
    from dataclasses import replace

    from msprobe_core.plugin import MsprobeError, get_host, job_partial, run_job, running_with, using

    logger = logging.getLogger("msprobe")
    saved = (list(logger.handlers), logger.level, logger.propagate, list(logger.filters))
    collect = _Collect()
    logger.handlers = [collect]
    logger.filters = []
    logger.setLevel(logging.ERROR if task.options.quiet else logging.INFO)
    logger.propagate = False
    report = JobReport()
    try:
        host = get_host()
        run = replace(task.run, host=host)
        with task.executor.open() as executor, using(executor), running_with(host):
            try:
                # the one orchestration, as in a serial run: a big statistics or md5 pair the run keeps no
                # table of is read, built and written chunk by chunk here too, a small one on whole tables
                done = run_job(task.job, task.options, host, run, timestamp=run.stamp, on_worker=True)
                if done is not None:
                    table, report.files, left = done
                    report.partial = job_partial(run, table, report.files, left)
                    report.table = table if run.keep_tables else None
            except MsprobeError as exc:
                report.error = str(exc)
    finally:
        logger.handlers, lvl, logger.propagate, logger.filters = saved[0], saved[1], saved[2], saved[3]
        logger.setLevel(lvl)
    report.records = collect.records
    report.unrecognised = list(task.job.unrecognised)
    return report


def wants_parallel(jobs: list[CompareJob], executor: Executor) -> bool:
    """Whether the jobs should run as executor tasks (several runnable jobs, more than one worker)."""
    runnable = [j for j in jobs if not j.missing]
    return len(runnable) > 1 and executor.parallelism() > 1


@hookimpl(trylast=True)
def msprobe_run_jobs(jobs: list[CompareJob], options: CompareOptions, run: Any,
                     executor: Executor) -> list[JobOutcome] | None:
    """Several runnable jobs and more than one worker: every job a task of ``executor`` (``None``: one job, one
    worker, or a job that cannot be shipped; the core then runs them one after the other)."""
    if not wants_parallel(jobs, executor):
        return None
    from msprobe_core.plugin import raise_if_partly_failed, stage

    stage("compare", f"{len(jobs)} pairs side by side")
    outcomes = run_parallel(jobs, options, run, executor)
    if outcomes is not None:
        raise_if_partly_failed(outcomes, len(jobs))
    return outcomes


def run_parallel(jobs: list[CompareJob], options: CompareOptions, run: Any,
                 executor: Executor) -> list[JobOutcome] | None:
    """Run the jobs as executor tasks; ``None`` when they cannot be shipped (unpicklable job)."""
    from msprobe_core.plugin import JobOutcome, Progress, job_bytes

    outcomes = [JobOutcome(job) for job in jobs]
    runnable = [k for k, job in enumerate(jobs) if not job.missing]
    ref = executor.for_task(len(runnable))
    shipped = run.without_host()  # a worker loads its own plugins
    tasks = [JobTask(jobs[k], options, shipped, ref) for k in runnable]
    try:
        for t in tasks:
            pickle.dumps(t)
    except Exception as exc:  # a plugin's job (runner closure…) that cannot travel: run serially
        log.debug("jobs run serially: %s", exc)
        return None
    reports: dict[int, JobReport] = {}
    next_out = 0
    sizes = [job_bytes(j) for j in jobs]

    def emit_ready() -> None:
        nonlocal next_out
        while next_out < len(jobs):
            k = next_out
            job, outcome = jobs[k], outcomes[k]
            prefix = f"[{job.label}] " if len(jobs) > 1 else ""
            if job.missing:
                outcome.error = job.missing
                log.error("%s%s; skipping this pair.", prefix, outcome.error)
            elif k in reports:
                report = reports.pop(k)
                for record in report.records:
                    if log.isEnabledFor(record.levelno):
                        record.process = os.getpid()  # the console shows the run's pid, as serially
                        log.handle(record)
                outcome.files, outcome.table, outcome.error = report.files, report.table, report.error
                outcome.partial = report.partial
                if report.unrecognised:
                    job.unrecognised = report.unrecognised
                if report.error:
                    log.error("%s%s", prefix, report.error)
                for f in outcome.files:
                    log.info("%sThe result file path is: %s.", prefix, f.resolve())
            else:
                return
            next_out += 1

    with Progress(len(tasks), unit="rank pairs", total_bytes=sum(sizes), quiet=options.quiet) as bar:
        emit_ready()
        for n, report in executor.map_unordered(run_job_task, tasks, in_flight=executor.parallelism()):
            k = runnable[n]
            reports[k] = report
            bar.advance(1, sizes[k])
            emit_ready()
    emit_ready()
    return outcomes
