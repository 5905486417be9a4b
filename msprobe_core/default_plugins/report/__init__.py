"""The HTML report (``--report html``) and ``msprobe report``: a default plugin (``-p no:report`` turns it off).

One self-contained page with the summary, plots, the module tree and the table (:mod:`.html`), drawn from a
sample of the rows (:mod:`.sampling`, :mod:`.sample_sink`) when a run is big. On ``msprobe compare`` the plugin
owns ``--report`` and listens to the run-finished hooks (:mod:`.run_page`): it names its file, makes its partial
(the summary's and the result's sample, where each job ran) and draws the page from the run's summary.
``msprobe report`` draws it from result files already written (:mod:`.command`), and ``--versus`` sets two runs
side by side (:mod:`.versus`). The page draws the summary's views: the report takes the ``summary`` plugin's
machinery (:mod:`.seams`), never the other way round. Registering it imports only the command's module: numpy
and the page's machinery load when a page is drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msprobe_core.plugin import FinishedRun, OptionSpec, PartialSpec, hookimpl

if TYPE_CHECKING:
    import click

    from msprobe_core.plugin import Register

#: the name of the report's partial: the summary's partial and the result's sample (it replaces the summary's)
REPORT = "report"


def _wanted(values: Mapping[str, Any]) -> bool:
    """Whether this run draws the page (``--report html``)."""
    return values.get("report") == "html"


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``--report html``: the page of the run, beside its results."""
    register(OptionSpec("report", ("--report",), "Also write a self-contained HTML report "
                        "(compare_report_<timestamp>.html) into the output dir.", kind="choice", choices=("html",),
                        api=False, attribute=False))


def _report_sink(options: Any, values: Mapping[str, Any], jobs: int) -> Callable[[], Any] | None:
    """With ``--report html``: each job's summary partial with the result's sample for the page (a sampled sink
    that makes the summary's partial too, so the rows are read once)."""
    if not _wanted(values):
        return None
    from .sample_sink import sink_factory

    return sink_factory(jobs)


@hookimpl
def msprobe_register_partials(register: Register[PartialSpec]) -> None:
    """``report``: the summary's partial and the result's sample, made where the job ran (replaces ``summary``)."""
    register(PartialSpec(REPORT, _report_sink, replaces=("summary",)))


@hookimpl(tryfirst=True)
def msprobe_run_outputs(run: FinishedRun) -> list[Path] | None:
    """The page's file (first among the files the summary lists beside the results)."""
    if not _wanted(run.values):
        return None
    from .run_page import report_path_of

    return [report_path_of(run.outcomes, run.options)]


@hookimpl
def msprobe_run_finished(run: FinishedRun) -> None:
    """Draw the page (after the ``summary`` plugin's tryfirst implementation has put the summary on the run)."""
    if not _wanted(run.values):
        return
    from .run_page import write_run_page

    # the path msprobe_run_outputs gave (asked once: it may warn)
    path = next((p for p in run.outputs if p.suffix == ".html" and p.name.startswith("compare_report_")), None)
    if path is not None:
        write_run_page(run, path, REPORT)


@hookimpl
def msprobe_register_commands(register: Register[click.Command]) -> None:
    """``msprobe report``: the HTML page (or the summary) of result files already written."""
    from .command import report_cmd

    register(report_cmd)


@hookimpl
def msprobe_write_report(views: list[Any], summary: dict[str, Any], path: Path) -> Path:
    """The Python API's ``CompareResult.write_report(path)``: the HTML page of results held in memory."""
    from .html import write_report

    return write_report(views, summary, path)
