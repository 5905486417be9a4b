"""The ``summary`` default plugin: each job's summary partial, the run's summary, and its text on the console.

Turned off (``-p no:summary``), a compare writes its result files and prints nothing more; ``--min-matched`` is
then no option, and the plugins that read ``run.summary`` (the gate, the JSON summary) have none (the ``report``
plugin makes the summary its page draws itself). The summary writes no page: the report reads it from the run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import click

from msprobe_core.plugin import FinishedRun, OptionSpec, PartialSpec, Register, RunSummary, hookimpl

#: the name of the summary's partial (``run.partial(SUMMARY, outcome)``)
SUMMARY = "summary"


def _share(value: Any) -> float:
    from .unpaired import parse_share

    return parse_share(value)


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``--min-matched``: the least share of paired rows, below which the summary says so first (and the gate fails)."""
    register(OptionSpec("min_matched", ("--min-matched",), "Least share of the target's rows that must find a golden "
                        "counterpart (default 50%): below it the summary says so first and --fail-on exits with "
                        "status 3.", metavar="SHARE", validate=_share, api=False))


def _summary_sink(options: Any, values: Mapping[str, Any], jobs: int) -> Callable[[], Any]:
    """Each job's summary partial (every call counted: the per-module answers)."""
    from .accumulate import ViewAccumulator

    return partial(ViewAccumulator, tree=True)  # a partial of the class travels to workers


@hookimpl
def msprobe_register_partials(register: Register[PartialSpec]) -> None:
    """``summary``: each result's verdict counts, worst rows, first divergence and call counts, made where it ran."""
    register(PartialSpec(SUMMARY, _summary_sink))


@hookimpl(tryfirst=True)
def msprobe_run_finished(run: FinishedRun) -> None:
    """The run's summary, on ``run.summary`` before any other plugin's run-finished hook runs."""
    from .finish import summarise_run

    data, acc, tree_input = summarise_run(run)
    run.summary = RunSummary(data, analysis=acc.analysis, hierarchy=tree_input[1], module_stats=tree_input[0],
                             results=list(acc.partials))


@hookimpl
def msprobe_run_terminal_summary(run: FinishedRun) -> None:
    """The summary's text (not with ``-q``)."""
    if run.summary is None or getattr(run.options, "quiet", False):
        return
    from .summary import format_summary

    run.summary.text = format_summary(run.summary.data)
    click.echo(run.summary.text)


@hookimpl
def msprobe_summarize(run: FinishedRun) -> RunSummary:
    """The Python API's summary: every result's whole view (from its table, else its files), summarised."""
    from .finish import find_analysis, views_from_outcomes
    from .summary import summarize

    views = views_from_outcomes(run.outcomes)
    analysis = None
    files = [f for o in run.outcomes for f in o.files]
    if getattr(run.options, "diff_analyze", False) and files:
        analysis = find_analysis(Path(run.options.output_dir), run.started or 0.0)
    errors = [f"{o.job.label}: {o.error}" for o in run.outcomes if o.error]
    return RunSummary(summarize(views, analysis=analysis, errors=errors), analysis=analysis, results=views)
