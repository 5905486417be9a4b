"""What happens after the compare jobs ran: the summary (console, JSON file), the CI gate.

``msprobe compare`` goes through the run-finished hooks (:func:`summarise_run` from the ``summary`` plugin's,
:func:`gate_reason` from the ``gate`` plugin's); ``msprobe report`` feeds the result files read back from disk
chunk by chunk and calls :func:`finish_summary`, which draws its page through a callable it is given (the
summary writes no page). All print the same summary (:mod:`msprobe_core.default_plugins.summary.accumulate`) and
apply the same ``--fail-on`` rule.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from msprobe_core.plugin import GateFailed, gc_paused

from .accumulate import SummaryAccumulator, note_pairing
from .result_files import read_files_as_view, read_result_chunks
from .summary import format_summary, gate_failures, write_json_summary
from .unpaired import gate_shortfall
from .views import ResultView, view_from_table

log = logging.getLogger("msprobe")
_STAMP = re.compile(r"_(\d{14})(?:_part_\d+)?\.[A-Za-z]+$")


def labelled(outcomes: Sequence[Any]) -> bool:
    """Whether the results carry their job's label: when there are several, and always for the steps of dump
    roots compared step by step (the label names the step)."""
    return len(outcomes) > 1 or any(getattr(o.job, "step", "") for o in outcomes)


def views_from_outcomes(outcomes: Sequence[Any]) -> list[ResultView]:
    """One view per job that produced a result (from the table in memory, else from its files)."""
    views: list[ResultView] = []
    many = labelled(outcomes)
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


def add_outcomes(acc: SummaryAccumulator, outcomes: Sequence[Any]) -> None:
    """Add each job that produced a result to the summary: its summary partial (made where the job ran,
    see :mod:`msprobe_core.pipeline.sink`), else its table in memory, else its files read back in chunks."""
    many = labelled(outcomes)
    for outcome in outcomes:
        label = outcome.job.label if many else ""
        files = [Path(f) for f in outcome.files]
        partial = getattr(outcome, "partial", None)
        if partial is not None and acc.searched(partial):
            acc.add(replace(partial, label=label, files=files))
        elif outcome.table is not None:
            acc.add_view(view_from_table(outcome.table, label, files))
            note_pairing(acc.partials[-1], getattr(outcome.table, "meta", None))
        else:
            readable = [f for f in files if f.suffix.lower() in (".csv", ".xlsx")]
            if readable:
                view = acc.view_accumulator()
                for chunk in read_result_chunks(readable, label):
                    view.feed(chunk)
                acc.add(view.finish())


def _module_answers(parts: Any, hierarchy: Any) -> dict[str, Any] | None:
    """The summary's ``modules`` (:mod:`msprobe_core.default_plugins.summary.modules`), where the results counted their calls."""
    from .modules import module_answers

    return module_answers(parts, hierarchy)


def _add_modules(summary: dict[str, Any], parts: Any, hierarchy: Any) -> None:
    """The summary's ``modules``, and its calling-code paths numbered by visit (:mod:`msprobe_core.default_plugins.summary.modules`)."""
    from .modules import number_paths

    answers = _module_answers(parts, hierarchy)
    if answers is None:
        return
    number_paths(summary, answers)
    summary["modules"] = {k: v for k, v in answers.items() if not k.startswith("_")}


def run_stamp(files: Sequence[Path]) -> str:
    """The run's stamp, as its result files spell it (now, where none does)."""
    for f in files:
        m = _STAMP.search(Path(f).name)
        if m:
            return m.group(1)
    return time.strftime("%Y%m%d%H%M%S")


def find_analysis(output_dir: Path, since: float) -> Path | None:
    """The newest ``diff_analyze_*.json`` written into ``output_dir`` during this run (by ``-da``)."""
    try:
        found = [p for p in Path(output_dir).glob("diff_analyze_*.json") if p.stat().st_mtime >= since - 1]
    except OSError:
        return None
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def finish_summary(
    acc: SummaryAccumulator,
    *,
    page: Path | None = None,
    draw_page: Callable[[dict[str, Any], Any], None] | None = None,
    json_summary: Path | None = None,
    fail_on: str | None = None,
    quiet: bool = False,
    errors: Sequence[str] = (),
    run: dict[str, Any] | None = None,
    announce: Callable[[], None] | None = None,
    unrecognised: Sequence[dict[str, Any]] = (),
    hierarchy: Any = None,
    after_summary: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Draw the page and write the JSON summary, print the summary, apply the gate; returns the summary.

    ``acc``: every result of the run added (its ``analysis`` is the ``-da`` answer, if any).
    ``page``: the page the caller draws (listed among the summary's files); ``draw_page(summary, tree_input)``
    draws it once the summary is made (``tree_input``: see :func:`summary_of`).
    ``run`` (from ``msprobe report``) says which compare runs were found and which are shown.
    ``announce``: called once every file is written, before the summary is printed (the
    "ends successfully" banner of ``msprobe compare``: not before a report that fails).
    ``unrecognised``: what the dumps held that the loader did not understand (:mod:`msprobe_core.load.dialects`).
    ``hierarchy``: the run's :class:`~msprobe_core.default_plugins.summary.hierarchy.RunHierarchy` (from the dumps; without it
    only what the names say, e.g. a kernel's scope), which gives each first divergence its ``path`` and the
    report its model tree.
    ``after_summary``: called with the summary once its paths are known, before anything is written or printed
    (it may write a file of its own and note it in the summary: the next dump's config).

    ``msprobe report`` calls it; ``msprobe compare`` goes through the run-finished hooks, which call the same
    steps (:func:`summary_of`, :func:`gate_reason`) from the default plugins.
    """
    from msprobe_core.plugin import clear_status

    summary, tree_input = summary_of(acc, outputs=[p for p in (page, json_summary) if p is not None],
                                     errors=errors, unrecognised=unrecognised, hierarchy=hierarchy,
                                     after_summary=after_summary, run=run)
    if draw_page is not None:
        draw_page(summary, tree_input)
    if json_summary is not None:
        write_json_summary(summary, json_summary)
    clear_status()
    if announce is not None:
        announce()
    if not quiet:
        click.echo(format_summary(summary))
    if fail_on:
        why = gate_reason(summary, fail_on)
        if why:
            raise GateFailed(why)
    return summary


def summary_of(acc: SummaryAccumulator, *, outputs: Sequence[Path] = (), errors: Sequence[str] = (),
               unrecognised: Sequence[dict[str, Any]] = (), hierarchy: Any = None,
               after_summary: Callable[[dict[str, Any]], None] | None = None,
               run: dict[str, Any] | None = None) -> tuple[dict[str, Any], Any]:
    """The run's summary of every result added to ``acc`` (``outputs``: the files written beside the results,
    listed among its files), with its module paths and per-module answers; and the report's model-tree input
    ``(per label, its calls' counts), hierarchy``. See :func:`finish_summary` for the other arguments."""
    from msprobe_core.plugin import set_job

    from .hierarchy import run_hierarchy

    set_job("")
    with gc_paused():  # the summary and the module tree are acyclic objects freed by reference counting
        summary = acc.summary(files=list(outputs), errors=errors, unrecognised=unrecognised)
        if hierarchy is None:
            hierarchy = run_hierarchy((p.label, None, None, p.mode, p.frameworks) for p in acc.partials)
        hierarchy.add_paths(summary)
        tree_input = ([(p.label, p.node_stats) for p in acc.partials], hierarchy)
        _add_modules(summary, *tree_input)
    if after_summary is not None:
        after_summary(summary)
    if run is not None:
        summary["run"] = run
    return summary, tree_input


def gate_reason(summary: dict[str, Any], fail_on: str) -> str | None:
    """Why the run fails ``--fail-on fail_on`` (rows with that verdict or worse, too few rows compared), else
    ``None``."""
    bad = gate_failures(summary, fail_on)
    why = []
    if bad:
        what = "error" if fail_on == "error" else "warning or error"
        why.append(f"{bad} of {summary['rows']} rows have the verdict {what}")
    short = gate_shortfall(summary)
    if short:  # a run that compared almost nothing is no pass (see unpaired.py)
        why.append(short)
    if summary.get("not_judged"):  # a gate that cannot look does not pass
        why.append(f"{summary['not_judged']} of {summary['rows']} rows were judged by no verdict rule")
    return f"--fail-on {fail_on}: " + "; ".join(why) if why else None


def summarise_run(run: Any, next_dump: bool = True) -> tuple[dict[str, Any], SummaryAccumulator, Any]:
    """``msprobe compare``'s summary of a finished run (:class:`msprobe_core.plugin.FinishedRun`): every job's
    result added (its summary partial where the run made one, else its table, else its files read back in chunks),
    the next dump's config written beside the results (not with ``next_dump=False``: the summary a page draws
    when the ``summary`` plugin is turned off). Returns the summary, its accumulator and the model-tree input
    (:func:`summary_of`)."""
    from msprobe_core.plugin import set_job, stage

    outcomes, options = run.outcomes, run.options
    analysis = None
    if getattr(options, "diff_analyze", False):
        analysis = _analysis_answer(outcomes, Path(options.output_dir), run.started or 0.0)
    acc = SummaryAccumulator(analysis, tree=True)  # the per-module answers count every call
    acc.steps_absent = steps_absent(outcomes)
    acc.step_analyses = step_analyses(outcomes)
    acc.inputs = run_inputs(outcomes, run.inputs)
    acc.min_matched = getattr(options, "min_matched", None)
    set_job("")
    stage("summary", f"{len(outcomes):,} result{'s' if len(outcomes) != 1 else ''}")
    # each outcome with the summary's own partial (a job of a run of several partials hands back all of them)
    outcomes = [o if (mine := run.partial("summary", o)) is getattr(o, "partial", None) else replace(o, partial=mine)
                for o in outcomes]
    with gc_paused():
        add_outcomes(acc, outcomes)
    errors = [f"{o.job.label}: {o.error}" for o in outcomes if getattr(o, "error", None)]
    from msprobe_core.plugin import dump_json

    unrecognised = dump_json.merge_records(getattr(o.job, "unrecognised", ()) for o in outcomes)
    summary, tree_input = summary_of(
        acc, outputs=run.outputs, errors=errors, unrecognised=unrecognised,
        hierarchy=outcomes_hierarchy(outcomes, acc),
        after_summary=(lambda summary: _write_next_dump(summary, outcomes, acc, options)) if next_dump else None)
    return summary, acc, tree_input


def _write_next_dump(summary: dict[str, Any], outcomes: Sequence[Any], acc: SummaryAccumulator,
                     options: Any) -> None:
    """The next, narrower dump's config for the first divergence, beside the results
    (:mod:`msprobe_core.default_plugins.summary.next_dump`)."""
    from .next_dump import write_next_dump_config

    many = labelled(outcomes)
    dumps = {(o.job.label if many else ""): Path(o.job.target) for o in outcomes}
    stamp = run_stamp([f for p in acc.partials for f in p.files])
    write_next_dump_config(summary, dumps, Path(options.output_dir), stamp)


def run_inputs(outcomes: Sequence[Any], given: tuple[Any, Any] | None) -> tuple[str, str] | None:
    """The run's two inputs for the summary, as absolute paths: as given, else those of its one job."""
    if given is None and len(outcomes) == 1:
        given = (outcomes[0].job.target, outcomes[0].job.golden)
    if given is None or not all(given):
        return None
    return (str(Path(given[0]).resolve()), str(Path(given[1]).resolve()))


def steps_absent(outcomes: Sequence[Any]) -> list[dict[str, str]]:
    """The steps only one run has, as step discovery noted them on the jobs (the default plugin ``steps``, :mod:`msprobe_core.default_plugins.steps`)."""
    for outcome in outcomes:
        absent = getattr(outcome.job, "steps_absent", None)
        if absent is not None:
            return list(absent)
    return []


def step_analyses(outcomes: Sequence[Any]) -> dict[str, Any]:
    """Per step, the ``diff_analyze_*.json`` that ``-da`` wrote for it (a step-by-step run with ``-da``)."""
    found: dict[str, Any] = {}
    for outcome in outcomes:
        job = outcome.job
        if getattr(job, "step_analysis", "") and getattr(job, "step", ""):
            found.setdefault(job.step, job.step_analysis)
    return found


def outcomes_hierarchy(outcomes: Sequence[Any], acc: SummaryAccumulator) -> Any:
    """The hierarchies of the jobs' dumps (their ``construct.json``/``stack.json``, a plugin's source), by the
    labels their results have in the summary; read once per dump, after the compare."""
    from .hierarchy import run_hierarchy

    many = labelled(outcomes)
    heads = {p.label: p for p in acc.partials}
    results = []
    for outcome in outcomes:
        label = outcome.job.label if many else ""
        head = heads.get(label)
        if head is None:
            continue
        results.append((label, Path(outcome.job.target), Path(outcome.job.golden), head.mode, head.frameworks))
    return run_hierarchy(results)


def _analysis_answer(outcomes: Sequence[Any], output_dir: Path, started: float) -> Any:
    """The ``-da`` answer: from the analysis package when it exposes one, else its JSON file."""
    for outcome in outcomes:
        if getattr(outcome.job, "analysis_file", ""):
            return outcome.job.analysis_file
    return find_analysis(output_dir, started)
