"""``msprobe report``: an HTML report (and summary, and gate) for results already on disk."""

from __future__ import annotations

import logging
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from msprobe_core.plugin import InputError, UsageError

log = logging.getLogger("msprobe")

_PART = re.compile(r"^(?P<base>.+)_part_(?P<n>\d+)$")
#: The timestamp every file of one compare run carries (``compare_result_rank0_20260101120000.csv``).
_STAMP = re.compile(r"_(?P<stamp>\d{14})(?:_part_\d+)?$")
_ANALYSIS_NS = re.compile(r"^diff_analyze_(?P<ns>\d+)$")
#: How the run of a file without a timestamp in its name is listed.
NO_STAMP = "(no timestamp)"


def run_stamp(path: Path) -> str:
    """The run timestamp in a result file's name (``20260101120000``), ``""`` when it has none."""
    m = _STAMP.search(path.stem)
    return m.group("stamp") if m else ""


@dataclass
class RunChoice:
    """Which runs ``msprobe report`` found and which it shows.

    ``found`` maps each directory given on the command line to the run stamps in it
    (oldest first); ``shown`` is every stamp the report covers.
    """

    found: dict[Path, list[str]] = field(default_factory=dict)
    shown: list[str] = field(default_factory=list)
    how: str = "latest"

    def all_runs(self) -> list[str]:
        """Every run stamp found, oldest first."""
        return sorted({s for stamps in self.found.values() for s in stamps} | set(self.shown))

    def as_dict(self) -> dict[str, object]:
        """The ``run`` entry of the summary: every run found and the ones shown (``""``: no timestamp)."""
        return {"runs": self.all_runs(), "shown": list(self.shown), "choice": self.how}


def _files_in(path: Path) -> list[Path]:
    found = sorted(path.rglob("*compare_result*.csv")) or sorted(path.rglob("*compare_result*.xlsx"))
    if not found:
        raise InputError("no compare_result*.csv or *.xlsx file found", path=path)
    return found


def _matching(stamps: set[str], run: str) -> set[str]:
    """The stamps ``--run`` names: ``all``, ``latest`` is handled by the caller; else a stamp or a prefix of one."""
    if run == "all":
        return set(stamps)
    hits = {s for s in stamps if s and s.startswith(run)}
    if not hits:
        listed = ", ".join(s or NO_STAMP for s in sorted(stamps)) or "none"
        raise UsageError(f"--run {run}: no result file of that run (runs found: {listed})")
    if len(hits) > 1:
        raise UsageError(f"--run {run}: names {len(hits)} runs ({', '.join(sorted(hits))}); give more digits")
    return hits


def collect_result_files(paths: tuple[Path, ...], run: str = "latest") -> tuple[list[list[Path]], RunChoice]:
    """Result files named on the command line or found in directories, ``_part_N`` files grouped.

    A directory contributes every ``*compare_result*.csv`` below it (or, when it holds
    no CSV result, every ``*compare_result*.xlsx``), sorted by path. Every file of one
    compare run carries the run's timestamp in its name; a directory that holds several
    runs contributes only its latest unless ``run`` is ``all`` or names a run (a
    timestamp, or the start of one). Files named one by one are all taken, unless
    ``run`` names a run. Groups come in run order, then by path.
    """
    choice = RunChoice(how=run)
    picked: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = _files_in(path)
            stamps = sorted({run_stamp(f) for f in found})
            choice.found[path] = stamps
            if run == "latest":
                found = [f for f in found if run_stamp(f) == stamps[-1]]
            picked.extend(found)
        elif path.is_file():
            picked.append(path)
        else:
            raise InputError("result path does not exist", path=path)
    if run not in ("latest", "all"):
        wanted = _matching({run_stamp(f) for f in picked}, run)
        picked = [f for f in picked if run_stamp(f) in wanted]
    choice.shown = sorted({run_stamp(f) for f in picked})
    groups: dict[tuple[Path, str, str], list[tuple[int, Path]]] = {}
    for f in picked:
        m = _PART.match(f.stem)
        key = (f.parent, m.group("base") if m else f.stem, f.suffix)
        if key in groups and any(g == f for _, g in groups[key]):
            continue  # the same file named twice (a file and its directory)
        groups.setdefault(key, []).append((int(m.group("n")) if m else 0, f))
    ordered = sorted(groups.values(), key=lambda members: run_stamp(min(members)[1]))  # stable: path order kept
    return [[f for _, f in sorted(members)] for members in ordered], choice


def describe_runs(choice: RunChoice) -> list[str]:
    """Lines telling which run a directory's report shows when the directory holds several."""
    lines = []
    for path, stamps in choice.found.items():
        if len(stamps) < 2:
            continue
        names = ", ".join(s or NO_STAMP for s in stamps)
        if choice.how == "latest":
            lines.append(f"{path} holds {len(stamps)} compare runs ({names}); reporting the latest, {stamps[-1]} "
                         "(--run TIMESTAMP picks another, --run all reports every run).")
        else:
            shown = [s or NO_STAMP for s in stamps if s in choice.shown]
            lines.append(f"{path} holds {len(stamps)} compare runs ({names}); reporting {', '.join(shown)}.")
    if not lines and len(choice.shown) > 1:
        names = ", ".join(s or NO_STAMP for s in choice.shown)
        lines.append(f"The result files come from {len(choice.shown)} compare runs ({names}); "
                     "results of the same rank are labelled with their run's timestamp.")
    return lines


def result_labels(groups: list[list[Path]]) -> list[str]:
    """One label per result: its rank (``rank1``), with its folder when ranks repeat
    (``graph/step0/rank0``), and its run's timestamp when several runs are shown."""
    from .seams import label_from_path

    if len(groups) < 2:
        return [""]
    labels = [label_from_path(g[0]) or g[0].stem for g in groups]
    if len(set(labels)) < len(labels):  # e.g. graph/step0/rank0 and pynative/step0/rank0: say where each is
        root = Path(os.path.commonpath([str(g[0].parent.resolve()) for g in groups]))
        labels = [str((g[0].parent.resolve().relative_to(root) / lab).as_posix()) for g, lab in zip(groups, labels)]
    if len(set(labels)) < len(labels):  # the same results of two runs: name the run
        labels = [f"{run_stamp(g[0]) or NO_STAMP}/{lab}" for g, lab in zip(groups, labels)]
    return labels


def _stamp_time(stamp: str) -> float | None:
    try:
        return time.mktime(time.strptime(stamp, "%Y%m%d%H%M%S"))  # the engine stamps in local time
    except ValueError:
        return None


def find_analysis_file(dirs: list[Path], choice: RunChoice) -> Path | None:
    """The ``diff_analyze_*.json`` (from ``-da``) of the run shown: the newest one written after
    the run started and before the next run in those directories started (any, without stamps)."""
    found = [p for d in dirs for p in d.glob("diff_analyze_*.json")]
    if not found:
        return None

    def written(p: Path) -> float:
        m = _ANALYSIS_NS.match(p.stem)
        return int(m.group("ns")) / 1e9 if m else p.stat().st_mtime

    shown = [s for s in choice.shown if s]
    if len(shown) == 1:
        start = _stamp_time(shown[0])
        later = [t for t in (_stamp_time(s) for s in choice.all_runs() if s > shown[0]) if t is not None]
        if start is not None:
            end = min(later, default=float("inf"))
            found = [p for p in found if start - 1 <= written(p) < end]
    return max(found, key=written) if found else None


def beside(result: Path, name: str) -> Path:
    """The default page of ``msprobe report``: ``name`` in the result folder (a result file's folder)."""
    return (result if result.is_dir() else result.parent) / name


def versus_sides(results: tuple[Path, ...], run: str, *, forced: bool
                 ) -> tuple[list[list[Path]], list[list[Path]]] | None:
    """The two sides of a before-and-after report, or ``None`` when ``results`` are reported together.

    Two arguments are compared before and after when they hold the same results (the same rank and step labels:
    two folders of one model's compares, or two result files of the same rank); ``forced`` (``--versus``) takes any
    two, and refuses anything but two.
    """
    from .seams import label_from_path

    if len(results) != 2 or (results[0].exists() and results[1].exists() and results[0].samefile(results[1])):
        if forced:
            raise UsageError(f"--versus compares two results, OLD NEW; {len(results)} given")
        return None
    old, _ = collect_result_files(results[:1], run)
    new, _ = collect_result_files(results[1:], run)

    def labels(groups: list[list[Path]]) -> list[str]:
        # a process directory's number is the run's PID: two runs of one model have other PIDs
        return sorted(re.sub(r"^proc\d+$", "proc", label_from_path(g[0])) for g in groups)

    if forced or labels(old) == labels(new):
        return old, new
    return None


def _refuse_outputs_over_results(output: Path, json_summary: Path | None, picked: list[Path],
                                 named: tuple[Path, ...]) -> None:
    """Before any work: neither output is a result file read (or found in a directory named), nor a
    ``diff_analyze_*.json``; an existing output holds what it writes (an HTML page, a JSON summary)."""
    from .seams import looks_like_html, looks_like_json_object, refuse_other_kind, refuse_outputs_over_inputs

    inputs = list(picked)
    for path in named:
        if path.is_dir():  # every run's results there, and the analyses: none is this run's output
            inputs.extend(path.rglob("*compare_result*"))
            inputs.extend(path.glob("diff_analyze_*.json"))
    refuse_outputs_over_inputs({"-o": output, "--json-summary": json_summary}, inputs)
    refuse_other_kind("-o", output, looks_like_html, "an HTML report")
    refuse_other_kind("--json-summary", json_summary, looks_like_json_object, "a JSON summary")


def _share_option(value: str | None) -> float | None:
    """``--min-matched`` of ``msprobe report`` as a share (a bad value: a usage error naming the option)."""
    from .seams import parse_share

    if value is None:
        return None
    try:
        return parse_share(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--min-matched") from None


@click.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", "output", type=click.Path(path_type=Path), default=None,
              help="HTML file to write  [default: compare_report.html beside the results (the first result's "
                   "folder); before and after: compare_versus.html beside NEW].")
@click.option("--run", "run", default="latest", show_default=True, metavar="latest|all|TIMESTAMP",
              help="Which compare run of a directory holding several to report: the latest, all of them, or the "
                   "one with this timestamp (or its first digits).")
@click.option("--json-summary", "json_summary", type=click.Path(path_type=Path), default=None,
              help="Also write the summary as JSON to this file.")
@click.option("--fail-on", "fail_on", type=click.Choice(["error", "warning"]), default=None,
              help="Exit with status 1 when any row has this verdict or a worse one.")
@click.option("--min-matched", "min_matched", default=None, metavar="SHARE",
              help="Least share of the target's rows that must have a golden counterpart (default 50%): below it "
                   "the summary says so first and --fail-on fails.")
@click.option("--title", default=None, help="Title of the page  [default: msprobe compare report; "
              "before and after: msprobe compare, before and after]")
@click.option("--versus/--together", "versus", default=None,
              help="With two results OLD NEW: compare them before and after (the default when both hold the same "
                   "results: the same ranks and steps), or report them together as one run.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors.")
def report_cmd(results: tuple[Path, ...], output: Path | None, run: str, json_summary: Path | None, fail_on: str | None,
               min_matched: str | None, title: str | None, versus: bool | None, quiet: bool) -> None:
    """Write one self-contained HTML report for compare results (CSV or xlsx files, or directories of them).

    Several results (one per rank) make one report with a rank x op heat map.
    A directory holding several compare runs is reported for its latest run (see --run).
    A diff_analyze_*.json next to the results (from -da) names the first divergence.

    Two results of the same model, OLD NEW (two result folders, or two result files of the same rank), are
    compared before and after: which rows got better or worse, which appeared or disappeared, and where the
    first divergence was and is (see --versus).
    """
    from msprobe_core.plugin import file_sizes, gc_paused, run_status, setup_logging, stage

    from .sample_sink import ReportSamples
    from .seams import SummaryAccumulator, finish_summary, read_result_chunks

    setup_logging(quiet)
    click.get_current_context().with_resource(run_status("msprobe report", quiet=quiet))
    run = run.strip() or "latest"
    if versus is not False:
        sides = versus_sides(results, run, forced=bool(versus))
        if sides is not None:
            from .versus_command import report_versus

            output = output or beside(results[1], "compare_versus.html")
            _refuse_outputs_over_results(output, json_summary, [f for g in (*sides[0], *sides[1]) for f in g],
                                         results)
            report_versus(results, sides, (result_labels(sides[0]), result_labels(sides[1])), output, json_summary,
                          title or "msprobe compare, before and after", quiet)
            return
    title = title or "msprobe compare report"
    groups, choice = collect_result_files(results, run)
    output = output or beside(results[0], "compare_report.html")
    _refuse_outputs_over_results(output, json_summary, [f for g in groups for f in g], results)
    for line in describe_runs(choice):
        log.info("%s", line)
    labels = result_labels(groups)
    analysis = find_analysis_file(sorted({g[0].parent for g in groups}), choice)
    acc = SummaryAccumulator(analysis, tree=True)
    acc.min_matched = _share_option(min_matched)
    # each chunk feeds the summary and the HTML report's sample: no result is held whole (a report whose
    # results together fit the sampling threshold keeps every row, up to that many)
    samples = ReportSamples(len(groups), analysis)
    with gc_paused():
        for n, (group, label) in enumerate(zip(groups, labels), start=1):
            which = f" ({n} of {len(groups)})" if len(groups) > 1 else ""
            stage("read", f"{group[0].name}{which}, {file_sizes(*group)}")
            partial = acc.view_accumulator()
            sampler = samples.sampler()
            fed = False
            for chunk in read_result_chunks(group, label):
                partial.feed(chunk)
                sampler.feed(chunk)
                fed = True
            acc.add(partial.finish())
            if fed:
                samples.add(sampler.finish())
    stage("summary", f"{sum(p.rows for p in acc.partials):,} rows")
    from .run_page import write_html

    def draw_page(summary: dict, tree_input: Any) -> None:
        write_html(acc.analysis, summary, tree_input, output, title=title, sample_above=samples.limit,
                   report_samples=samples.finish)

    finish_summary(acc, page=output, draw_page=draw_page, json_summary=json_summary, fail_on=fail_on, quiet=quiet,
                   run=choice.as_dict())
