"""The compare pipeline for one pair of dumps, and the run over all jobs.

discover → load → normalise names → match → metrics → verdicts → write.
Each stage takes the previous stage's output; only :func:`run_jobs` writes.
"""

from __future__ import annotations

import gc
import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import result_columns as C
from ..console.progress import file_sizes, set_job, stage
from ..errors import CompareFailed, InputError, MsprobeError, OutputError, UsageError
from ..files.outputs import TEXT_ERRORS, output_policy, prepare_output_dir, run_stamp
from ..host.registry import CompareJob, FrameworkSpec, MatchContext, PluginHost, get_host
from ..load.dumpjson import load_stack
from ..match.matching import apply_dtype_gate
from ..model import MODE_TENSOR, NA, CompareOptions, DumpTable, MatchResult
from ..result import (
    ResultTable,
    base_columns,
    data_name_column,
    result_columns,
    stack_column,
)
from ..verdicts.rules import compute_verdicts

log = logging.getLogger("msprobe")

#: ``CompareOptions.extra`` key: ``time.time()`` when the run began (files newer than that are this run's).
RUN_STARTED = "run_started"
RUN_STAMP = "run_stamp"  # the timestamp in the run's file names (outputs.run_stamp)


@dataclass
class MetricContext:
    """What a metric set sees: both tables, the pairs, the cells so far and the options.

    ``meta`` is the result's ``meta``: what a metric set notes there (per-row findings the
    verdict rules or the writer of the same plugin read) goes with the table.
    """

    target: DumpTable
    golden: DumpTable
    match: MatchResult
    columns: dict[str, list[Any]]
    options: CompareOptions
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class VerdictContext:
    """What a verdict rule sees (``msprobe_register_verdicts``).

    ``columns``: every column so far, by name (metric columns, and what rules before this
    one gave); ``group_of_row``: the target API of each row; ``meta``: the result's ``meta``,
    where a rule may leave per-row findings for the writers (row colours…).
    """

    mode: str
    target: DumpTable
    golden: DumpTable
    match: MatchResult
    columns: dict[str, list[Any]]
    group_of_row: list[int]
    options: CompareOptions
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class JobOutcome:
    """What happened to one job."""

    job: CompareJob
    files: list[Path] = field(default_factory=list)
    table: ResultTable | None = None
    error: str | None = None


def resolve_frameworks(target: DumpTable, golden: DumpTable, host: PluginHost) -> tuple[FrameworkSpec, FrameworkSpec]:
    """The framework of each side, checked for compatibility."""
    specs = []
    for table in (target, golden):
        guess = None if table.framework else guess_framework(table, host)
        spec = host.framework(table.framework or guess)
        if spec is None:
            if not table.framework:
                raise UsageError("dump has no 'framework' field and no default framework plugin is installed", path=table.source)
            raise UsageError(
                f"framework '{table.framework}' is not handled by any installed plugin "
                f"(installed: {', '.join(f.name for f in host.frameworks) or 'none'})",
                path=table.source,
            )
        if guess:
            log.warning("Unable to get framework information from %s; its dtypes are spelled as %s spells them, "
                        "compared as %s.", table.source, spec.name, spec.name)
        elif not table.framework:
            log.warning("Unable to get framework information from %s, default setting is %s.", table.source, spec.name)
        specs.append(spec)
    tf, gf = specs
    if gf.name != tf.name and gf.name not in tf.golden_frameworks:
        raise UsageError(
            f"cannot compare a {target.framework or tf.name} target with a {golden.framework or gf.name} golden dump"
        )
    return tf, gf


def guess_framework(table: DumpTable, host: PluginHost) -> str | None:
    """The framework of a dump without a ``framework`` field (dumpers before 1.3.0), from its dtypes.

    A framework other than the default one is named when its float dtypes (``Float32``...) are
    spelled in the dump and no other framework's are; otherwise ``None`` (the default framework).
    """
    dtypes = set(table.dtype)
    hits = [f for f in host.frameworks if dtypes & set(f.float_dtypes)]
    return hits[0].name if len(hits) == 1 and not hits[0].is_default else None


def _dtype_compat(tf: FrameworkSpec, gf: FrameworkSpec):
    if tf is gf:
        floats = tf.float_dtypes

        def same(a: str | None, b: str | None) -> bool:
            return a in floats and b in floats

        return same

    def cross(a: str | None, b: str | None) -> bool:
        if a is None or b is None:
            return False
        ka = tf.dtype_family(a)
        return ka is not None and ka == gf.dtype_family(b)

    return cross


def check_pair(target: DumpTable, golden: DumpTable) -> None:
    """Refuse pairs that cannot be compared (different file kinds, tasks or dump modes)."""
    if target.kind != golden.kind:
        raise InputError(f"both files must be dump.json or both debug.json: {target.source} vs {golden.source}")
    if target.task != golden.task:
        raise InputError(
            f"dump tasks differ: '{target.task}' in {target.source}, '{golden.task}' in {golden.source}"
        )
    if target.mode != golden.mode:
        raise InputError(
            f"dump modes differ: {target.mode} in {target.source}, {golden.mode} in {golden.source} "
            "(both must be statistics or both md5)"
        )


def load_pair(job: CompareJob, options: CompareOptions, host: PluginHost) -> tuple[DumpTable, DumpTable]:
    """Load both dumps of a job and attach what the compare needs (stack, tensor dirs)."""
    from ..load.pairload import load_two

    guess = job.target.parent / "stack.json"
    early: dict[str, Any] = {}

    def preload_stack(golden: DumpTable) -> None:
        # while the target loads in a child: read stack.json now; an error is not reported
        # here but where it is read below, in its usual order
        from ..files.validation import is_within

        try:
            if guess.is_file() and not (guess.is_symlink() and not is_within(guess.parent, guess)):
                early["stack"] = load_stack(guess)
        except Exception:  # noqa: BLE001
            early.clear()

    from ..files.validation import dump_file_beside

    target, golden = load_two(lambda path: host.load_dump(path, options, job), job.target, job.golden, preload_stack)
    check_pair(target, golden)
    if target.mode == MODE_TENSOR:
        for table in (target, golden):
            if table.tensor_dir is None or not table.tensor_dir.is_dir():
                raise InputError("tensor dump has no dump_tensor_data directory next to it", path=table.source)
            check_tensor_dir(table)
    stack_file = dump_file_beside(target.source, "stack.json") if target.stack is None else None
    if stack_file is not None:
        if stack_file == guess and "stack" in early:
            target.stack = early.pop("stack")
        else:
            target.stack = load_stack(stack_file)
    return target, golden


def check_tensor_dir(table: DumpTable) -> None:
    """Refuse a ``dump_tensor_data`` that is a symlink pointing outside its dump directory.

    The dump directory itself may be reached through symlinks (the user named it);
    what lies below it must stay below it (see ``docs/differences.md``).
    """
    from ..files.validation import is_within
    from ..options import dump_paths_label

    if table.tensor_dir is not None and not is_within(table.source.parent, table.tensor_dir):
        raise InputError(
            f"{table.tensor_dir.name} resolves to {table.tensor_dir.resolve()}, outside the dump directory "
            f"{table.source.parent}; refusing to read tensors there (point {dump_paths_label()} at the real location)",
            path=table.tensor_dir,
        )


def match_tables(
    target: DumpTable, golden: DumpTable, options: CompareOptions, host: PluginHost
) -> MatchResult:
    """Normalise names on both sides, run the applicable mapper and the dtype gate.

    The result's ``notes["frameworks"]`` holds the (target, golden) :class:`FrameworkSpec`
    pair, for the metric and verdict stages.
    """
    tf, gf = resolve_frameworks(target, golden, host)
    tkeys = host.compare_keys(target, "target", options)
    gkeys = host.compare_keys(golden, "golden", options)
    ctx = MatchContext(target, golden, tkeys, gkeys, options, tf is not gf, host)
    match = host.mapper_for(options, kind=target.kind).run(ctx)
    if match.dtype_gate:
        match = apply_dtype_gate(match, target.dtype, golden.dtype, _dtype_compat(tf, gf))
    match.notes["frameworks"] = (tf, gf)
    return match


def dtype_equal_column(
    columns: dict[str, list[Any]], frameworks: tuple[FrameworkSpec, FrameworkSpec] | None
) -> list[bool] | None:
    """Per row, whether both sides hold the same dtype, for cross-framework pairs only.

    Same-framework pairs return ``None`` (the DType checker compares the strings).
    Across frameworks the two frameworks' specs decide (:meth:`FrameworkSpec.same_dtype`):
    ``Float32`` and ``torch.float32`` are the same dtype, and so are two integer dtypes.
    """
    if frameworks is None or frameworks[0] is frameworks[1]:
        return None
    tf, gf = frameworks
    return [
        a == b or (a != NA and b != NA and tf.same_dtype(a, gf, b))
        for a, b in zip(columns[C.NPU_DTYPE], columns[C.BENCH_DTYPE])
    ]


def build_result(
    target: DumpTable, golden: DumpTable, match: MatchResult, options: CompareOptions, host: PluginHost
) -> ResultTable:
    """Metrics and verdicts for matched pairs, as a finished result table.

    A metric set declared ``whole_table`` gives every column itself (kernel dumps: msprobe's kernel table,
    the classic interface's tables); the verdict rules of the mode then add theirs (:func:`judge_rows`).
    """
    mode = target.mode
    spec = host.metric_set(mode, options)
    if spec is None:
        raise UsageError(f"no installed plugin computes metrics for {mode} mode")
    meta = {"target": target.source, "golden": golden.source, "attachments": list(match.notes.get("attachments", ()))}
    if spec.whole_table:
        columns = spec.compute(MetricContext(target, golden, match, {}, options, meta))
        n = len(next(iter(columns.values()), ()))
        group_of_row = [0] * n
        names = judge_rows(list(columns), columns, VerdictContext(mode, target, golden, match, columns, group_of_row,
                                                                  options, meta), host)
        return ResultTable(mode, names, columns, group_of_row, match, meta=meta)
    columns = base_columns(target, golden, match)
    columns.update(spec.compute(MetricContext(target, golden, match, columns, options, meta)))
    group_of_row = [target.row_api[i] for i in match.target]
    with_stack = target.stack is not None
    if with_stack:
        columns[C.STACK_INFO] = stack_column(target, match)
    if mode == MODE_TENSOR:
        columns[C.DATA_NAME] = data_name_column(target, golden, match)
    extra = [m.column for m in host.tensor_metrics_for(options)] if mode == MODE_TENSOR else []
    names = result_columns(mode, with_stack, extra, host.columns)
    names = judge_rows(names, columns, VerdictContext(mode, target, golden, match, columns, group_of_row, options, meta),
                       host)
    return ResultTable(mode, names, columns, group_of_row, match, meta=meta)


#: the column verdict columns new to a table are placed after (msprobe's own verdicts sit there)
VERDICTS_AFTER = C.REQUIRES_GRAD_CONSISTENT


def judge_rows(names: list[str], columns: dict[str, Any], ctx: VerdictContext, host: PluginHost) -> list[str]:
    """The verdict stage: run the verdict rules of the table's mode into ``columns``; returns the column order.

    ``names`` is the order the metric stage gives; the columns the rules give that ``columns`` did not
    hold follow :data:`VERDICTS_AFTER` (or end a table without it) in the order the rules give them, and
    a name of ``names`` that no stage filled (a verdict column whose rule did not run) is left out.
    """
    new: list[str] = []
    for rule in host.verdicts_for(ctx.mode, ctx.options):
        for name, cells in rule.judge(ctx).items():
            if name not in columns and name not in new:
                new.append(name)
            columns[name] = cells
    placed = [n for n in names if n in columns and n not in new]
    at = placed.index(VERDICTS_AFTER) + 1 if VERDICTS_AFTER in placed else len(placed)
    return placed[:at] + new + placed[at:]


def msprobe_verdicts(ctx: VerdictContext) -> dict[str, list[str]]:
    """The core's verdict rule (``msprobe``): ``Result`` and ``Err_message`` as msprobe 26.2.0 judges rows."""
    dtype_equal = dtype_equal_column(ctx.columns, ctx.match.notes.get("frameworks"))
    result, err = compute_verdicts(ctx.mode, ctx.columns, ctx.group_of_row, dtype_equal)
    return {C.RESULT: result, C.ERR_MESSAGE: err}


def compare_job(job: CompareJob, options: CompareOptions, host: PluginHost | None = None) -> ResultTable | None:
    """Run one job up to a result table (``None`` when there is nothing to compare)."""
    host = host or get_host()
    options = _job_options(job, options)
    matched = match_job(job, options, host)
    return None if matched is None else build_result(*matched, options, host)


def _job_options(job: CompareJob, options: CompareOptions) -> CompareOptions:
    if Path(options.output_dir) != Path(job.output_dir):
        # whatever a plugin writes besides the result (e.g. a generated mapping) goes next to it
        options = replace(options, output_dir=Path(job.output_dir))
    return options


def match_job(
    job: CompareJob, options: CompareOptions, host: PluginHost
) -> tuple[DumpTable, DumpTable, MatchResult] | None:
    """Load and match one job's tables (``None``, with a warning, when there is nothing to compare).

    What either file held that the loader did not understand is named on the console and kept
    in ``job.extra["unrecognised"]`` for the run's summary (:mod:`msprobe_core.load.dialects`).
    """
    names = f"both {job.target.name}" if job.target.name == job.golden.name else f"{job.target.name} + {job.golden.name}"
    stage("load", f"{names}, {file_sizes(job.target, job.golden)}", 1, 4)
    target, golden = load_pair(job, options, host)
    account_unrecognised(job, target, golden)
    if not len(target) or not len(golden):
        log.warning("No valid data found in %s or %s. No compare result file generated.", job.target, job.golden)
        return None
    stage("match", f"{len(target):,} + {len(golden):,} rows", 2, 4)
    match = match_tables(target, golden, options, host)
    if not match.target:
        log.warning("Can`t match any op. No compare result file generated.")
        return None
    return target, golden, match


def account_unrecognised(job: CompareJob, target: DumpTable, golden: DumpTable) -> None:
    """Name what the two tables' files held that the loader did not understand, and keep it on the job."""
    from ..load.dialects import DIALECT_KEY, merge_records, records_of, warn_unrecognised

    for table in (target, golden):
        features = table.extra.get(DIALECT_KEY)
        if features:
            log.info("%s: %s.", table.source, "; ".join(features))
    records = merge_records([records_of(target), records_of(golden)])
    if records:
        warn_unrecognised(records)
        job.extra["unrecognised"] = merge_records([job.extra.get("unrecognised", ()), records])


def compare_and_write(
    job: CompareJob, options: CompareOptions, timestamp: str, host: PluginHost
) -> tuple[ResultTable, list[Path]] | None:
    """Compare one job and write its result; ``None`` when there is nothing to compare.

    A big statistics result is built and written by two processes (:mod:`msprobe_core.write.tailbuild`).
    """
    from ..write.tailbuild import finish_removals

    finish_removals()  # the side file of the job before: its thread must end before this job forks
    options = _job_options(job, options)
    matched = match_job(job, options, host)
    if matched is None:
        return None
    rows = len(matched[2].target)
    tail = _start_tail(*matched, job, options, host)
    try:
        stage("metrics and verdicts", f"{rows:,} rows", 3, 4)
        table = build_result(*matched, options, host)
        stage("write", f"{rows:,} rows", 4, 4)
        files = write_result(table, job, options, timestamp, host, tail=tail)
    except BaseException:
        if tail is not None:
            tail.close()
            finish_removals()  # nothing of a failed run is left behind when the error reaches the user
        raise
    if tail is not None:
        tail.close()
    return table, files


def _start_tail(target: DumpTable, golden: DumpTable, match: MatchResult, job: CompareJob,
                options: CompareOptions, host: PluginHost) -> Any:
    from ..write.tailbuild import start_tail, wants_tail

    # the writer must take rows a child spelled, and the metric set give a part's rows as the whole gives them
    metrics = host.metric_set(target.mode, options)
    splittable = metrics is not None and metrics.splittable and not metrics.whole_table
    if not wants_tail(target, match, options, host.writer(options.output_format).accepts_csv_tail and splittable):
        return None

    def build(t: DumpTable, g: DumpTable, part: MatchResult) -> ResultTable:
        return build_result(t, g, part, options, host)

    return start_tail(target, golden, match, options, build, Path(job.output_dir))


def write_result(table: ResultTable, job: CompareJob, options: CompareOptions, timestamp: str, host: PluginHost,
                 tail: Any = None) -> list[Path]:
    """Write a result table under the job's output dir with msprobe's file name.

    A mapper may attach files to its match (``MatchResult.notes["attachments"]``:
    ``(name, text)`` pairs, ``{timestamp}`` in the name standing for the run's
    timestamp, e.g. the data mapping ``-lm`` generates); they are written first,
    atomically, into the same directory. Only the result files are returned.
    ``tail``: a :class:`msprobe_core.write.tailbuild.Tail` already writing the last rows (for a writer
    declared ``accepts_csv_tail``).
    """
    # without --force, atomic_path refuses to replace a file from an earlier run (outputs.output_policy)
    with output_policy(force=options.force, started=options.extra.get(RUN_STARTED)):
        write_attachments(table, Path(job.output_dir), timestamp)
        writer = host.writer(options.output_format)
        path = Path(job.output_dir) / f"{job.stem}_{timestamp}{writer.suffix}"
        if options.force and path.exists():
            log.warning("%s will be replaced (--force).", path)
        kwargs: dict[str, Any] = {"options": options} if writer.accepts_options else {}
        if tail is not None and writer.accepts_csv_tail:
            return writer.write(table, path, tail=tail, **kwargs)
        return writer.write(table, path, **kwargs)


def write_attachments(table: ResultTable, directory: Path, timestamp: str) -> list[Path]:
    """Write the files attached to a result (see :func:`write_result`); returns their paths."""
    from ..write.writers import atomic_path

    written: list[Path] = []
    for name, text in table.meta.get("attachments", ()):
        path = directory / name.replace("{timestamp}", timestamp)
        if Path(path.name) != Path(name.replace("{timestamp}", timestamp)):
            raise OutputError(f"attachment name '{name}' must be a plain file name", path=directory)
        try:
            with atomic_path(path) as tmp:
                tmp.write_text(text, encoding="utf-8", errors=TEXT_ERRORS)
        except OSError as exc:
            raise OutputError(f"cannot write {path.name} ({exc.strerror or exc})", path=path) from None
        log.info("%s is saved in: %s.", path.name, path.resolve())
        written.append(path)
    return written


def run_jobs(jobs: list[CompareJob], options: CompareOptions, host: PluginHost | None = None) -> list[JobOutcome]:
    """Run every job; a failing job does not stop the others but makes the run fail at the end."""
    host = host or get_host()
    prepare_output_dir(Path(options.output_dir))  # a bad output dir stops the run before any work
    # the run's timestamp, held against other runs into the same directory (outputs.run_stamp)
    # without --force, not a name a file from an earlier run has either
    with run_stamp(Path(options.output_dir), also=sorted({Path(job.output_dir) for job in jobs}),
                   keep_earlier=not options.force) as timestamp:
        # both travel to worker processes
        options = replace(options, extra={**options.extra, RUN_STARTED: time.time(), RUN_STAMP: timestamp})
        with _no_gc(), output_policy(force=options.force, started=options.extra[RUN_STARTED]):
            if options.diff_analyze:  # first-divergence analysis: its own outputs (msprobe_core.analysis)
                from ..analysis import run_diff_analyze

                stage("first-divergence analysis (-da)", f"{len(jobs)} pair{'s' if len(jobs) > 1 else ''}")
                analysed = run_diff_analyze(jobs, options, host)
                if analysed is not None:
                    return analysed
            outcomes = _run_on_executor(jobs, options, host, timestamp)
    raise_if_partly_failed(outcomes, len(jobs))
    return outcomes


def raise_if_partly_failed(outcomes: list[JobOutcome], n_jobs: int) -> None:
    """Fail a multi-job run when some jobs failed; the error carries every outcome for the summary."""
    failed = [o for o in outcomes if o.error]
    if failed and n_jobs > 1:
        exc = CompareFailed(
            f"{len(failed)} of {n_jobs} compares failed ({', '.join(o.job.label for o in failed)}); "
            "the other results were written"
        )
        exc.outcomes = outcomes
        raise exc


@contextmanager
def _no_gc():
    """Pause the cyclic garbage collector: a compare builds millions of small acyclic objects
    (parsed JSON, row cells) and the collector's repeated scans of them cost more than the parse."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            # what the run allocated sits, uncollected, in the youngest generation: left there, the
            # first collection after re-enabling scans all of it (about a second for a big table);
            # moved to the permanent generation it is freed by reference counting as usual
            gc.freeze()
            gc.enable()


def _run_on_executor(
    jobs: list[CompareJob], options: CompareOptions, host: PluginHost, timestamp: str
) -> list[JobOutcome]:
    """Open the run's executor (``--executor``): several rank pairs run as its tasks, else here."""
    from ..workers.executors import executor_for
    from .parallel import run_parallel, wants_parallel

    with executor_for(options, host) as executor:
        if wants_parallel(jobs, executor):
            keep = options.extra.get("keep_tables", True)
            stage("compare", f"{len(jobs)} pairs side by side")
            outcomes = run_parallel(jobs, options, host, timestamp, executor, keep)
            if outcomes is not None:
                return outcomes
        return _run_all(jobs, options, host, timestamp)


def _run_all(jobs: list[CompareJob], options: CompareOptions, host: PluginHost, timestamp: str) -> list[JobOutcome]:
    outcomes: list[JobOutcome] = []
    for n, job in enumerate(jobs, start=1):
        outcome = JobOutcome(job)
        outcomes.append(outcome)
        set_job(job.label, n, len(jobs))
        prefix = f"[{job.label}] " if len(jobs) > 1 else ""
        if job.extra.get("missing"):
            outcome.error = job.extra["missing"]
            log.error("%s%s; skipping this pair.", prefix, outcome.error)
            continue
        try:
            done = compare_and_write(job, options, timestamp, host)
            if done is None:
                continue
            outcome.table, outcome.files = done
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
        outcome.table = outcome.table if options.extra.get("keep_tables", True) else None
    return outcomes
