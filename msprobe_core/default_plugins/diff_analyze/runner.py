"""``-da``: compare every rank pair, write the per-rank JSON, locate the first divergence, write the analysis.

Stage 1 runs the ordinary engine stages (load, normalise, whichever mapper the
options select, metrics, verdicts) on every job; tensor dumps are judged on the
statistics their dump.json holds, as msprobe does, so no tensor file is read.
Stage 2 is :func:`.locate.locate`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from msprobe_core.plugin import (
    BUILTIN_PLUGIN,
    EXACT_MAPPER,
    MODE_STATISTICS,
    MODE_TENSOR,
    CommOpSpec,
    CompareJob,
    CompareOptions,
    DumpTable,
    MsprobeError,
    OutputError,
    PluginHost,
    rank_number,
)

from .comm import DEFAULT_SPEC
from .config import DiffAnalyzeConfig
from .construct import load_construct
from .locate import Finding, locate
from .nodes import RankView, build_nodes
from .report import compare_result_doc, finding_doc, write_json

log = logging.getLogger("msprobe")

#: ``options.extra`` key of a :class:`DiffAnalyzeConfig` (Python API).
CONFIG_KEY = "diff_analyze_config"


def comm_specs(host: PluginHost) -> list[CommOpSpec]:
    """Communication-op rules registered by plugins, then the built-in one (``msprobe_register_comm_ops``, which
    the host collects for this plugin: ``host.registered``); the first one registered under a name wins.

    This plugin registers :data:`.comm.DEFAULT_SPEC` like any other;
    it is added here only for a host built without it.
    """
    registered: list[CommOpSpec] = []
    for spec in host.registered.get("msprobe_register_comm_ops", ()):
        if all(s.name != spec.name for s in registered):
            registered.append(spec)
    return registered + ([DEFAULT_SPEC] if all(s.name != DEFAULT_SPEC.name for s in registered) else [])


def p2p_ops(path: Path) -> dict[str, tuple[str, str]]:
    """Row name → (op, peer) of the point-to-point op records in a dump (empty when it has none)."""
    import mmap

    from msprobe_core.plugin import read_json_file

    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            if mm.find(b"P2POp") < 0:  # the common case: no point-to-point records, nothing parsed again
                return {}
        data = read_json_file(path, "dump").get("data", {})
    except (OSError, ValueError, AttributeError, MsprobeError):
        return {}
    out: dict[str, tuple[str, str]] = {}

    def walk(value: Any, name: str) -> None:
        if isinstance(value, list):
            for n, item in enumerate(value):
                walk(item, f"{name}.{n}")
        elif isinstance(value, dict):
            if str(value.get("class_type", "")).endswith("P2POp"):
                out[name] = (str(value.get("op", "None")), str(value.get("peer", "None")))
            elif not isinstance(value.get("type"), str):
                for k, v in value.items():
                    walk(v, f"{name}.{k}")

    for key, entry in data.items() if isinstance(data, dict) else ():
        if isinstance(entry, dict):
            for json_key, suffix in (("input_args", "input"), ("input_kwargs", "input"), ("input", "input"),
                                     ("output", "output")):
                if json_key in entry:
                    walk(entry[json_key], f"{key}.{suffix}")
    return out


def analyse_job(job: CompareJob, options: CompareOptions, host: PluginHost, config: DiffAnalyzeConfig,
                index: int) -> RankView | None:
    """Stage 1 for one rank pair: the result table and the calls with their evidence."""
    from msprobe_core.plugin import WholeTables, run_job

    read: dict[str, Any] = {}

    def for_analysis(target: DumpTable, golden: DumpTable) -> tuple[DumpTable, DumpTable]:
        read["dump_mode"] = target.mode
        if target.mode == MODE_TENSOR:
            # msprobe's -da judges real-data dumps on their dump.json statistics (summary mode)
            target, golden = replace(target, mode=MODE_STATISTICS), replace(golden, mode=MODE_STATISTICS)
        read["target"], read["golden"] = target, golden
        return target, golden

    # the compare's own stages, on whole tables in this process; the analysis writes its own files
    done = run_job(job, options, host, strategy=WholeTables(tail=False), on_loaded=for_analysis)
    if done is None or done.table is None:
        return None
    table, target, golden, dump_mode = done.table, read["target"], read["golden"], read["dump_mode"]
    match = table.pairs
    table.meta.dump_mode = dump_mode  # the summary reports the dump as it is, not as -da compared it
    tf, gf = host.framework(target.framework or None), host.framework(golden.framework or None)
    cross = tf is not None and gf is not None and tf.name != gf.name
    nodes = build_nodes(target, table, match.notes.frameworks, comm_specs(host), config, cross)
    # which mapper paired the rows, not which options were given: the options that select a mapper
    # belong to the plugins that declare them, and may not be installed
    mapper = host.mapper_for(options, kind=target.kind)
    return RankView(
        rank=rank_number(job.label, index),
        label=job.label,
        target=target,
        golden=golden,
        table=table,
        nodes=nodes,
        parents=load_construct(Path(job.target)),
        cross_framework=cross,
        stem=job.stem,
        by_call_number=mapper.name == EXACT_MAPPER and mapper.plugin == BUILTIN_PLUGIN,
    )


def _call_count_hints(view: RankView, finding: Finding) -> list[str]:
    """A hint when the op of a finding is called a different number of times in the two runs.

    Only for plain compares (same framework, rows paired by the built-in exact mapper: no name
    mapping, no ``-fm``): there call numbers pair calls, and a shifted count pairs calls with the
    wrong partners.
    """
    if not view.by_call_number or view.cross_framework:
        return []
    from msprobe_core.plugin import strip_call_number

    op = strip_call_number(finding.node.key)
    n_target = sum(1 for a in view.target.apis if strip_call_number(a.key) == op)
    n_golden = sum(1 for a in view.golden.apis if strip_call_number(a.key) == op)
    if n_target != n_golden and n_target and n_golden:
        return [
            f"{op} is called {n_target} time(s) in the target and {n_golden} in the golden run: call numbers "
            "may be shifted, so calls may meet the wrong partners; try -fm/--fuzzy_match"
        ]
    return []


#: the name of the attachment the default plugin 'automap' makes (the core imports no default plugin)
_AUTO_MAPPING_NAME = "auto_mapping{job}_{timestamp}.yaml"


def _write_auto_mapping(table: Any, directory: Path, timestamp: str, stem: str) -> list[Path]:
    """The mapping ``--auto-map`` proposed, beside the ``-da`` result as beside a compare's (only that
    attachment: with ``-da`` msprobe writes none of the files a mapping plugin may attach); its path."""
    from msprobe_core.plugin import write_attachments

    mine = [a for a in table.meta.attachments if a[0] == _AUTO_MAPPING_NAME]
    if not mine:
        return []
    return write_attachments(replace(table, meta=replace(table.meta, attachments=mine)), directory, timestamp, stem)


def run_diff_analyze(
    jobs: list[CompareJob], options: CompareOptions, host: PluginHost, stamp: str | None = None,
    previous_step: str = "",
) -> list[Any] | None:
    """Run ``-da`` over ``jobs``; returns the engine's :class:`JobOutcome` list (files: the JSON written).

    ``stamp``: the run's timestamp, for the files' names (default: now). ``previous_step``: the step compared before
    these jobs' step (two dump roots compared step by step), whose update left the weights a cause found at its
    parameters or at an input no dumped call explains: its reason says the difference was carried from there.

    ``None`` when the jobs are not pairs of dump files, which the analysis reads (a plugin's
    directory-shaped dumps, such as kernel dumps with ``--rank``): the caller then runs the
    ordinary compare, as msprobe does.
    """
    from msprobe_core.plugin import JobOutcome, raise_if_partly_failed

    by_step = _step_groups(jobs)
    if len(by_step) > 1:
        return _per_step(by_step, options, host, stamp)
    if any(Path(job.target).is_dir() for job in jobs):
        log.warning("-da does not apply to this dump layout (its compare is done by a plugin); running the compare.")
        return None
    config = options.extra.get(CONFIG_KEY) or DiffAnalyzeConfig()
    timestamp = stamp or time.strftime("%Y%m%d%H%M%S")
    log.info("Start finding first diff node......")
    log.info("Start comparing data ......")
    outcomes: list[JobOutcome] = []
    views: list[RankView] = []
    for index, job in enumerate(jobs):
        outcome = JobOutcome(job)
        outcomes.append(outcome)
        prefix = f"[{job.label}] " if len(jobs) > 1 else ""
        if job.missing:
            outcome.error = job.missing
            log.error("%s%s; skipping this pair.", prefix, outcome.error)
            continue
        try:
            view = analyse_job(job, replace(options, output_dir=Path(job.output_dir)), host, config, index)
            if view is None:
                continue
            outcome.table = view.table
            view.p2p = p2p_ops(Path(job.target))
            doc = compare_result_doc(view, view.p2p, p2p_ops(Path(job.golden)))
            path = Path(job.output_dir) / f"{job.stem}_{timestamp}.json"
            log.info("%sSaving json file to disk: %s", prefix, path.resolve())
            mapping = _write_auto_mapping(view.table, Path(job.output_dir), timestamp, job.stem)
            try:
                outcome.files = [write_json(path, doc, indent=4)]
            except BaseException:
                from msprobe_core.plugin import remove_files

                remove_files(mapping)  # a failed run leaves none of its files
                raise
            views.append(view)
        except OutputError:
            raise
        except MsprobeError as exc:
            if len(jobs) == 1:
                raise
            outcome.error = str(exc)
            log.error("%s%s", prefix, exc)
    log.info("Pre Process completed.")
    log.info("Start searching diff node.")
    findings = locate(views)
    if not findings:
        log.info("Cannot find any diff node, no need to generate analyze file.")
    else:
        by_rank = {v.rank: v for v in views}
        doc: dict[str, list[dict[str, Any]]] = {}
        for f in findings:
            view = by_rank[f.rank]
            f.hints = _call_count_hints(view, f)
            if previous_step and f.role == "cause" and f.carried_in:  # a later step: the weights came from there
                f.reason += (f" In a step after {previous_step}, that is the state {previous_step}'s update left: "
                             f"the difference was carried from {previous_step}.")
            what = "first diff node" if f.role == "cause" else "divergence propagated to"
            log.info("Rank %d %s: %s (%s)", f.rank, what, f.node.key, f.reason)
            doc.setdefault(f"rank_{f.rank}", []).append(finding_doc(view, f, view.p2p))
        out_dir = Path(options.output_dir)
        path = out_dir / f"diff_analyze_{time.time_ns()}.json"
        write_json(path, doc, indent=2)
        log.info("The analyze result is saved in: %s", path)
        if outcomes:
            outcomes[0].files.append(path)
    raise_if_partly_failed(outcomes, len(jobs))
    return outcomes


def _step_groups(jobs: list[CompareJob]) -> dict[str, list[CompareJob]]:
    """The jobs of each step of two dump roots compared step by step (the default plugin ``steps``, :mod:`msprobe_core.default_plugins.steps`)."""
    groups: dict[str, list[CompareJob]] = {}
    for job in jobs:
        groups.setdefault(job.step, []).append(job)
    return groups


def _per_step(by_step: dict[str, list[CompareJob]], options: CompareOptions, host: PluginHost,
              stamp: str | None = None) -> list[Any] | None:
    """``-da`` over each step on its own: the ranks of one step exchange data, two steps do not. Each step's
    analysis is written into its output folder; the run's answer is the earliest step's that found a divergence
    (noted on that step's jobs as ``CompareJob.analysis_file``, which the summary reads)."""
    outcomes: list[Any] = []
    answered = False
    previous = ""
    for step, group in by_step.items():
        log.info("-da of %s (%d pair%s).", step, len(group), "s" if len(group) > 1 else "")
        found = run_diff_analyze(group, replace(options, output_dir=Path(group[0].output_dir)), host, stamp,
                                 previous_step=previous)
        previous = step
        if found is None:
            return None
        written = [f for o in found for f in o.files if Path(f).name.startswith("diff_analyze_")]
        for job in group if written else ():
            job.step_analysis = written[0]  # the step's own answer, for the summary's steps list
        if written and not answered:
            answered = True
            for job in group:
                job.analysis_file = written[0]
        outcomes.extend(found)
    return outcomes
