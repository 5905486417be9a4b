"""The supported entry for a plugin that brings a front end of its own: :func:`run_compare`.

A front end (another tool's command line or Python API, msprobe 8.3.3's for instance) builds the
jobs and the options and hands them here; the stages are the core's (load → match → metrics → verdicts →
write), and what the front end's compares do differently is what its plugin registers through the hooks:
its columns are a metric set (``MetricSpec(applies=...)``), its verdicts verdict rules (``VerdictSpec``,
``replaces=("msprobe",)`` for the core's), its workbook and highlighting a writer (``WriterSpec``, named by
``options.output_format``) reading what the rules left in the result's ``meta``. The stage functions
themselves are no part of the plugin API (``msprobe_core.plugin``) and may change; this entry stays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..files.outputs import run_stamp
from ..host.registry import PluginHost
from ..host.specs import CompareJob
from ..model import CompareOptions, DumpTable
from ..pipeline.job import run_job
from ..pipeline.whole import WholeTables
from ..result import ResultTable
from ..running import running_with


@dataclass
class CompareRun:
    """What :func:`run_compare` did with one job.

    ``files``: what its writer wrote, the result first (none when there was nothing to compare, or it failed);
    ``table``: the result table (``None`` when none was kept or built); ``error``: why the job
    failed, for a run of several jobs that went on with the others.
    """

    job: CompareJob
    files: list[Path] = field(default_factory=list)
    table: ResultTable | None = None
    error: str | None = None


def run_compare(
    jobs: Sequence[CompareJob],
    options: CompareOptions,
    host: PluginHost,
    *,
    stages_only: bool = False,
    on_loaded: Callable[[DumpTable, DumpTable], None] | None = None,
) -> list[CompareRun]:
    """Compare every job through the core's stages, with the plugins of ``host``, and write each result.

    By default the jobs run as ``msprobe compare`` runs them: the output directory is checked first,
    the run holds a timestamp no earlier result in it has (unless ``options.force``), progress lines are shown, a
    plugin that takes the run (``msprobe_run_jobs``: ``-da``; several rank pairs side by side on the run's executor:
    ``parallel_jobs``) runs it, and a failing job fails the run once the others are written.

    ``stages_only=True`` runs each job's stages alone, one after the other, for a front end that owns the
    rest (its output directory, its console, its way of going on after a failure): no progress lines,
    each result named by the second it is written in (``run_stamp(keep_earlier=False)``: not moved on to a
    later second past the names an earlier run's files carry, so a second compare into the same directory
    in the same second is refused as writing over a result), an error raised as it happens;
    ``on_loaded(target, golden)`` is called once both tables are read (a front end's own messages about
    them). A job that leaves no target row to compare writes nothing and warns, as ``msprobe compare`` does.
    """
    if not stages_only:
        from .jobs import run_jobs

        return [CompareRun(o.job, list(o.files), o.table, o.error) for o in run_jobs(list(jobs), options, host)]
    with running_with(host):
        return [_stages(job, options, host, on_loaded) for job in jobs]


def _stages(job: CompareJob, options: CompareOptions, host: PluginHost,
            on_loaded: Callable[[DumpTable, DumpTable], None] | None) -> CompareRun:
    """One job's stages, nothing around them (``run_compare(stages_only=True)``): the one orchestration on whole
    tables in this process, the result named by a second no other run holds in its directory."""
    host.pm.hook.msprobe_output_dirs_ready(directories=[Path(job.output_dir)])  # the default plugin sweep's
    with run_stamp(Path(job.output_dir), keep_earlier=False) as stamp:
        done = run_job(job, options, host, timestamp=stamp, strategy=WholeTables(tail=False), on_loaded=on_loaded,
                       check_empty=False)
    return CompareRun(job) if done is None else CompareRun(job, done.files, done.table)
