"""``msprobe compare --report html``: the page of a finished run, drawn from the run-finished hooks.

The report names its file before anything is written (:func:`report_path_of`), makes its sample of each result
where the job ran (its own partial, :mod:`.sample_sink`), and draws the page once the ``summary`` plugin has put
the run's summary on ``run.summary`` (:func:`write_run_page`). With the ``summary`` plugin turned off, the page
makes the summary it draws itself (the console then shows none, and no next dump's config is written).
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .sample_sink import ReportSamples
from .sampling import ViewSample
from .seams import ResultView

log = logging.getLogger("msprobe")
#: the stamp of a result file's name (``compare_result_<stamp>[_part_N].csv``), which the page's name takes
_STAMP = re.compile(r"_(\d{14})(?:_part_\d+)?\.[A-Za-z]+$")


def samples_from_outcomes(outcomes: Sequence[Any], analysis: Any = None) -> ReportSamples:
    """The HTML report's samples of the jobs' results: the sample each job's sink made where the job ran (see
    :mod:`.sample_sink`; no table kept), else one made here from its table in memory, else from its files read
    back in chunks."""
    from .sample_sink import chunks_sample, partial_sample
    from .seams import labelled, read_result_chunks, table_chunks

    many = labelled(outcomes)
    found: list[tuple[Any, str, list[Path]]] = []
    for outcome in outcomes:
        files = [Path(f) for f in outcome.files]
        if (getattr(outcome, "partial", None) is not None or outcome.table is not None
                or any(f.suffix.lower() in (".csv", ".xlsx") for f in files)):
            found.append((outcome, outcome.job.label if many else "", files))
    samples = ReportSamples(len(found), analysis)
    for outcome, label, files in found:
        sample = partial_sample(getattr(outcome, "partial", None), label, files)
        if sample is None and outcome.table is not None:
            sample = chunks_sample(samples, table_chunks(outcome.table, label, files))
        elif sample is None:
            readable = [f for f in files if f.suffix.lower() in (".csv", ".xlsx")]
            sample = chunks_sample(samples, read_result_chunks(readable, label)) if readable else None
        if sample is not None:
            samples.add(sample)
    return samples


def _report_path(output_dir: Path, files: Sequence[Path], force: bool = False) -> Path:
    """``compare_report_<stamp>.html`` with the results' stamp; a report already there is never replaced
    (without ``--force``): the next second whose name is free is taken, and the log says so."""
    stamp = next((m.group(1) for m in (_STAMP.search(Path(f).name) for f in files) if m), None)
    first = output_dir / f"compare_report_{stamp}.html" if stamp else None
    if first is not None and (force or not os.path.lexists(first)):
        return first
    start = time.time()
    for k in range(3600):
        path = output_dir / f"compare_report_{time.strftime('%Y%m%d%H%M%S', time.localtime(start + k))}.html"
        if not os.path.lexists(path):
            break
    if first is not None:
        log.warning("%s already exists (not written by this run) and is kept; this run's report is %s.", first,
                    path.name)
    return path


def report_path_of(outcomes: Sequence[Any], options: Any) -> Path:
    """Where ``--report html`` writes the report of these outcomes (the results' stamp; see :func:`_report_path`)."""
    return _report_path(Path(options.output_dir), [Path(f) for o in outcomes for f in o.files],
                        force=bool(getattr(options, "force", False)))


def write_html(analysis: Any, summary: dict[str, Any], tree_input: Any, report: Path, *,
               title: str = "msprobe compare report", sample_above: int | None = None,
               report_views: Callable[[], Sequence[ResultView]] | None = None,
               report_samples: Callable[[], Sequence[ViewSample]] | None = None) -> None:
    """The HTML page of the summary (``analysis``: the ``-da`` answer; ``tree_input``: the model tree's input, as
    the summary makes it): from the results' samples, else their whole views."""
    from msprobe_core.plugin import stage

    from .html import write_report

    stage("HTML report", Path(report).name)
    if report_samples is not None:
        write_report([], summary, report, title=title, analysis=analysis, sample_above=sample_above,
                     samples=report_samples(), tree=tree_input)
    else:
        views = report_views() if report_views is not None else []
        write_report(views, summary, report, title=title, analysis=analysis, sample_above=sample_above,
                     tree=tree_input)
    log.info("The report file path is: %s.", Path(report).resolve())


def write_run_page(run: Any, path: Path, partial: str) -> None:
    """Draw the page of the finished ``run`` (:class:`msprobe_core.plugin.FinishedRun`) to ``path``: the summary the
    ``summary`` plugin put on ``run.summary``, else one made here; the samples the jobs made with the report's
    partial (``run.partial(partial, outcome)``)."""
    if run.summary is not None:
        data, analysis = run.summary.data, run.summary.analysis
        tree_input = (run.summary.module_stats, run.summary.hierarchy)
    else:  # the summary plugin is turned off: the page still has its summary, made as the plugin makes it
        from .seams import summarise_run

        data, acc, tree_input = summarise_run(run, next_dump=False)
        analysis = acc.analysis
    outcomes = [o if (mine := run.partial(partial, o)) is getattr(o, "partial", None) else replace(o, partial=mine)
                for o in run.outcomes]
    write_html(analysis, data, tree_input, path,
               report_samples=lambda: samples_from_outcomes(outcomes, analysis).finish())
