"""What happens after the compare jobs ran: HTML report, console summary, JSON summary, CI gate.

``msprobe compare`` calls :func:`finish_run` with the job outcomes;
``msprobe report`` calls :func:`finish_views` with result files read back from disk.
Both print the same summary and apply the same ``--fail-on`` rule.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from ..errors import GateFailed
from .result_files import read_result_file
from .summary import format_summary, gate_failures, summarize, write_json_summary
from .views import ResultView, view_from_table

log = logging.getLogger("msprobe")
_STAMP = re.compile(r"_(\d{14})(?:_part_\d+)?\.[A-Za-z]+$")


def views_from_outcomes(outcomes: Sequence[Any]) -> list[ResultView]:
    """One view per job that produced a result (from the table in memory, else from its files)."""
    views: list[ResultView] = []
    many = len(outcomes) > 1
    for outcome in outcomes:
        label = outcome.job.label if many else ""
        files = [Path(f) for f in outcome.files]
        if outcome.table is not None:
            views.append(view_from_table(outcome.table, label, files))
        else:
            readable = [f for f in files if f.suffix.lower() in (".csv", ".xlsx")]
            if readable:
                views.append(read_files_as_view(readable, label))
    return views


def read_files_as_view(files: Sequence[Path], label: str) -> ResultView:
    """One view from a result written as one file or as ``_part_N`` files."""
    parts = [read_result_file(f, label) for f in files]
    view = parts[0]
    for extra in parts[1:]:
        if extra.columns != view.columns:
            continue
        for c in view.columns:
            view.cells[c].extend(extra.cells[c])
        view.files.extend(extra.files)
    view.invalidate()
    return view


def _report_path(output_dir: Path, files: Sequence[Path]) -> Path:
    for f in files:
        m = _STAMP.search(Path(f).name)
        if m:
            return output_dir / f"compare_report_{m.group(1)}.html"
    return output_dir / f"compare_report_{time.strftime('%Y%m%d%H%M%S')}.html"


def find_analysis(output_dir: Path, since: float) -> Path | None:
    """The newest ``diff_analyze_*.json`` written into ``output_dir`` during this run (by ``-da``)."""
    try:
        found = [p for p in Path(output_dir).glob("diff_analyze_*.json") if p.stat().st_mtime >= since - 1]
    except OSError:
        return None
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def finish_views(
    views: Sequence[ResultView],
    *,
    report: Path | None = None,
    json_summary: Path | None = None,
    fail_on: str | None = None,
    quiet: bool = False,
    analysis: Any = None,
    errors: Sequence[str] = (),
    title: str = "msprobe compare report",
    run: dict[str, Any] | None = None,
    announce: Callable[[], None] | None = None,
    unrecognised: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """Write the report and the JSON summary, print the summary, apply the gate; returns the summary.

    ``run`` (from ``msprobe report``) says which compare runs were found and which are shown.
    ``announce``: called once every file is written, before the summary is printed (the
    "ends successfully" banner of ``msprobe compare``: not before a report that fails).
    ``unrecognised``: what the dumps held that the loader did not understand (:mod:`msprobe_core.load.dialects`).
    """
    from ..console.progress import clear_status, set_job, stage

    extra_files = [p for p in (report, json_summary) if p is not None]
    set_job("")
    stage("summary", f"{sum(len(v) for v in views):,} rows")
    summary = summarize(views, files=extra_files, analysis=analysis, errors=errors, unrecognised=unrecognised)
    if run is not None:
        summary["run"] = run
    if report is not None:
        from . import write_report

        stage("HTML report", Path(report).name)
        write_report(views, summary, report, title=title, analysis=analysis)
        log.info("The report file path is: %s.", Path(report).resolve())
    if json_summary is not None:
        write_json_summary(summary, json_summary)
    clear_status()
    if announce is not None:
        announce()
    if not quiet:
        click.echo(format_summary(summary))
    if fail_on:
        bad = gate_failures(summary, fail_on)
        if bad:
            what = "error" if fail_on == "error" else "warning or error"
            raise GateFailed(f"--fail-on {fail_on}: {bad} of {summary['rows']} rows have the verdict {what}")
    return summary


def finish_run(
    outcomes: Sequence[Any],
    options: Any,
    *,
    report: str | None = None,
    json_summary: Path | None = None,
    fail_on: str | None = None,
    started: float | None = None,
    announce: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """After ``msprobe compare``: summary of every job's result, report and gate (``announce``: see
    :func:`finish_views`)."""
    views = views_from_outcomes(outcomes)
    output_dir = Path(options.output_dir)
    report_path = None
    if report == "html":
        report_path = _report_path(output_dir, [f for v in views for f in v.files])
    analysis = None
    if getattr(options, "diff_analyze", False):
        analysis = _analysis_answer(outcomes, output_dir, started or 0.0)
    errors = [f"{o.job.label}: {o.error}" for o in outcomes if getattr(o, "error", None)]
    from ..load.dialects import merge_records

    unrecognised = merge_records((getattr(o.job, "extra", None) or {}).get("unrecognised", ()) for o in outcomes)
    return finish_views(
        views,
        report=report_path,
        json_summary=json_summary,
        fail_on=fail_on,
        quiet=bool(getattr(options, "quiet", False)),
        analysis=analysis,
        errors=errors,
        announce=announce,
        unrecognised=unrecognised,
    )


def _analysis_answer(outcomes: Sequence[Any], output_dir: Path, started: float) -> Any:
    """The ``-da`` answer: from the analysis package when it exposes one, else its JSON file."""
    for outcome in outcomes:
        extra = getattr(outcome.job, "extra", {}) or {}
        for key in ("first_divergence", "diff_analyze"):
            if extra.get(key):
                return extra[key]
    return find_analysis(output_dir, started)
