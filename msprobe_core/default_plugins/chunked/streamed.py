"""The streamed statistics and md5 compare: one job matched on the dumps' indexes (docs/streaming-design.md).

Pass 1 asks each side's loader for its :class:`~msprobe_core.plugin.DumpIndex` (the default plugin ``fast_scan`` gives
one for a file its C scanner indexes; a third party's loader may opt in, docs/plugins.md), matching runs on the
indexes (:mod:`.index_match`), and the result is built and written from there, each chunk read back through the
loader's reader of entries. Whatever the streamed path does not handle goes back to whole tables, automatically
and silently (:class:`~msprobe_core.plugin.WholeTablesNeeded`, raised before any result file exists): a loader
that gives no index, a file the C scanner does not index, tensor dumps, ``-da``, a mapper or a normaliser other than the
built-in exact join and backward renumbering, a metric set or writer that wants the whole table, two
keys of one hash.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msprobe_core.plugin import (
    BUILTIN_PLUGIN,
    EXACT_MAPPER,
    MODE_MD5,
    MODE_STATISTICS,
    CompareJob,
    CompareOptions,
    DumpIndex,
    DumpTable,
    MatchResult,
    WholeTablesNeeded,
    Written,
    whole_tables,
)

if TYPE_CHECKING:
    from msprobe_core.plugin import PluginHost, ResultTable
    from msprobe_core.run.context import RunContext

    from .index_match import IndexMatch

#: how a result is built from matched rows (:func:`msprobe_core.plugin.build_result`)
Build = Callable[..., "ResultTable"]
#: set to any non-empty value to load whole tables for every compare (the streamed path off)
ENV_WHOLE_TABLES = "MSPROBE_WHOLE_TABLES"
#: the modes the streamed path compares
STREAMED_MODES = (MODE_STATISTICS, MODE_MD5)
@dataclass(frozen=True)
class StreamPlan:
    """What a streamed compare decided before loading: whether the indexes its load asks for renumber backward calls,
    decided for dumps of ``kind`` (an index of another kind is compared on whole tables)."""

    renumber: bool
    kind: str = "dump"


def stream_plan(job: CompareJob, options: CompareOptions, host: PluginHost) -> StreamPlan | None:
    """How to load a job for the streamed path, or ``None`` when it certainly cannot take it."""
    from msprobe_core.plugin import detect_kind

    # -da (the default plugin diff_analyze) reads whole tables
    if os.environ.get(ENV_WHOLE_TABLES) or not DumpIndex.hashes_available() or getattr(options, "diff_analyze", False):
        return None
    try:
        kind = detect_kind(Path(job.target))
    except Exception:  # noqa: BLE001 - not named as msprobe names its files: a plugin's format, of kind dump or not
        kind = "dump"
    renumber = exact_keys(options, host, kind)
    if renumber is None:
        return None
    return StreamPlan(renumber, kind)


def exact_keys(options: CompareOptions, host: PluginHost, kind: str) -> bool | None:
    """Whether the run pairs rows by the built-in exact join of compare keys that the index can hash.

    ``True``/``False``: it does, with/without the built-in backward renumbering; ``None``: another mapper
    runs, or a normaliser other than the renumbering changes the keys (asked on a probe that raises at
    the first look at a row).
    """
    mapper = host.mapper_for(options, kind=kind)
    if mapper.name != EXACT_MAPPER or mapper.plugin != BUILTIN_PLUGIN:
        return None
    renumber = False
    for norm in host.normalizers:
        if kind not in norm.kinds:
            continue
        if norm.name == "backward-renumbering" and norm.plugin == BUILTIN_PLUGIN:
            renumber = not getattr(options, "fuzzy_match", False)  # the built-in normaliser's own rule (builtin._renumber)
            continue
        probe = _Unread()
        try:
            if norm.fn(_probe_table(kind), "target", probe, options) is not probe:
                return None
        except Exception:  # noqa: BLE001 - it looked at the rows (or failed): whole tables, where it runs for real
            return None
    return renumber


class _Unread(list):
    """Rows a probe must not read: any look at them raises."""

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise LookupError("the rows are not loaded")

    __len__ = __getitem__ = __iter__ = __contains__ = __eq__ = __reversed__ = _refuse  # type: ignore[assignment]
    __hash__ = None  # type: ignore[assignment]


def _probe_table(kind: str) -> DumpTable:
    table = DumpTable(source=Path("dump.json"), kind=kind, task="statistics", mode=MODE_STATISTICS, framework="")
    for name in ("apis", "row_api", "name", "state", "dtype", "shape", "requires_grad", "max", "min", "mean",
                 "norm", "md5", "data_name"):
        setattr(table, name, _Unread())
    return table


@dataclass(frozen=True)
class Chunked:
    """The chunked strategy of a job's stages: matched on the dumps' indexes, then read, built and written a chunk
    at a time when the run keeps no table (from whole tables otherwise).

    Its :meth:`match` and :meth:`finish` raise :class:`WholeTablesNeeded` (before any result file exists) for
    whatever it does not take; the run then goes on with the whole-table strategy from the match stage.
    """

    plan: StreamPlan
    name: str = "chunk by chunk"

    @property
    def index(self) -> bool:
        """What the load asks for: the dumps' indexes, backward calls renumbered or not."""
        return self.plan.renumber

    def match(self, target: Any, golden: Any, options: CompareOptions, host: PluginHost) -> tuple[Any, Any, Any] | None:
        """Pair the rows on the two indexes (``None``: nothing matched)."""
        if not (isinstance(target, DumpIndex) and isinstance(golden, DumpIndex)):
            raise WholeTablesNeeded("a side is not indexed")
        if target.kind != self.plan.kind:
            raise WholeTablesNeeded(f"indexes of kind {target.kind}, planned for {self.plan.kind}")
        if target.mode not in STREAMED_MODES:
            raise WholeTablesNeeded(f"{target.mode} mode")
        metrics = host.metric_set(target.mode, options)
        if metrics is None or not metrics.splittable or metrics.whole_table:
            raise WholeTablesNeeded("the metric set wants the whole table")
        match = match_indexes(target, golden, options, host)
        return None if match is None else (target, golden, match)

    def finish(self, matched: tuple[Any, Any, Any], job: CompareJob, options: CompareOptions, timestamp: str | None,
               host: PluginHost, run: RunContext | None) -> Written:
        """Metrics, verdicts and the write: chunk by chunk when the run summarises from a sink and keeps no table
        (no table is returned then, the sink's partial is), else from whole tables."""
        from msprobe_core.plugin import build_result

        if timestamp is None:
            raise WholeTablesNeeded("the result is not written")
        target, golden, match = matched
        started = None if run is None else run.started
        sink = _chunk_sink(options, host, run)
        if sink is None:
            return Written(*_build_whole(job, target, golden, match, options, timestamp, host, build_result, started))
        files = _build_chunked(job, target, golden, match, options, timestamp, host, build_result, sink, started)
        return Written(None, files, sink.finish(files))


def _chunk_sink(options: CompareOptions, host: PluginHost, run: RunContext | None) -> Any:
    """The summary sink the chunks feed, when the result is built chunk by chunk (``None``: from whole tables).

    Chunk by chunk when the run takes its summary from a sink (``RunContext.summary_sink``) and keeps no table
    (``RunContext.keep_tables``) and the result can be written part by part (:func:`.csvparts.open_parts`).
    """
    if run is None or run.keep_tables or run.summary_sink is None:
        return None
    from .csvparts import open_parts

    if open_parts(host.writer(options.output_format)) is None:
        return None
    return run.summary_sink()


def _build_chunked(job: CompareJob, target: DumpIndex, golden: DumpIndex, match: IndexMatch, options: CompareOptions,
                   timestamp: str, host: PluginHost, build: Build, sink: Any, started: float | None) -> list[Path]:
    """Read, build and write the result chunk by chunk (pass 2); returns the result's files."""
    import logging

    from msprobe_core.plugin import output_policy, stage

    from .chunking import ChunkSource, KeysDiffer, chunk_rows, plan_chunks, whole_numbers, write_chunks
    from .csvparts import open_parts
    from .stackindex import entry_stacks

    writer = host.writer(options.output_format)
    notes = replace(match.notes, whole_numbers=whole_numbers(match, target, golden))
    chunks = plan_chunks(match, target, chunk_rows())
    _drop_match_arrays(target, golden)
    stack = entry_stacks(target)
    source = ChunkSource(target, golden, match, notes, stack)
    # metrics and verdicts are computed chunk by chunk, each chunk written as soon as it is built; the write
    # stage is what is left once the last chunk is in: closing the files and putting them in place
    stage("metrics and verdicts", f"{match.rows:,} rows in {len(chunks):,} chunks, each written as it is built", 3, 4)
    path = Path(job.output_dir) / f"{job.stem}_{timestamp}{writer.suffix}"

    def build_part(t: DumpTable, g: DumpTable, pairs: MatchResult) -> ResultTable:
        return build(t, g, pairs, options, host)

    with output_policy(force=options.force, started=started):
        if options.force and path.exists():
            logging.getLogger("msprobe").warning("%s will be replaced (--force).", path)
        try:
            with open_parts(writer)(path, match.rows) as out:
                write_chunks(source, chunks, out, build_part, sink, side_dir=path.parent)
                stage("write", f"{match.rows:,} rows, the files put in place", 4, 4)
                return out.commit()
        except (KeysDiffer, WholeTablesNeeded) as why:  # a reader's or the writer's (a part's columns differ)
            raise WholeTablesNeeded(str(why)) from None


def choose(job: CompareJob, options: CompareOptions, host: PluginHost, on_worker: bool) -> Chunked | None:
    """The chunked strategy for a job the core offers it (big enough where it runs), when it can take it at all."""
    plan = stream_plan(job, options, host)
    return None if plan is None else Chunked(plan)


def _drop_match_arrays(*indexes: DumpIndex) -> None:
    """Let go of what only matching reads of an index (compare heads, dtype ids, statistics flags).

    Pass 2 reads entries by offset and checks them by key hash and row count; a fallback to whole tables
    reads the files again. The stack's records become a :class:`.stackindex.StackIndex` after this, with the index smaller.
    """
    import numpy as np

    for index in indexes:
        index.head = np.zeros(0, dtype=index.head.dtype)
        index.dtype = np.zeros(0, dtype=index.dtype.dtype)
        index.flags = np.zeros(0, dtype=index.flags.dtype)


def match_indexes(target: DumpIndex, golden: DumpIndex, options: CompareOptions,
                  host: PluginHost) -> IndexMatch | None:
    """The match stage on the indexes: frameworks, the exact join, the dtype gate (``None``: no row matched)."""
    from msprobe_core.plugin import dtype_compat, pairing_note, resolve_frameworks, stage

    from .index_match import framework_view, gate_dtypes, golden_paired, join_indexes

    stage("match", f"{len(target):,} + {len(golden):,} rows", 2, 4)
    tf, gf = resolve_frameworks(framework_view(target), framework_view(golden), host)
    match = gate_dtypes(join_indexes(target, golden), target, golden, dtype_compat(tf, gf))
    match.notes.frameworks = (tf, gf)
    match.notes.pairing = pairing_note(len(golden), golden_paired(match, len(golden)))
    return match if match.rows else None


def _build_whole(job: CompareJob, target: DumpIndex, golden: DumpIndex, match: IndexMatch, options: CompareOptions,
                 timestamp: str, host: PluginHost, build: Build,
                 started: float | None) -> tuple[ResultTable, list[Path]]:
    """The result of an index match built from whole tables, as the whole-table path builds it."""
    from msprobe_core.plugin import stage, write_result

    from .index_match import compare_keys

    t, g = whole_tables(target, golden)
    rows_t = match.target_rows(0, match.rows).tolist()
    rows_g = match.golden_rows(0, match.rows).tolist()
    paired = [k for k, j in enumerate(rows_g) if j >= 0]
    keys_t = compare_keys(t, target.rank if target.renumbered else None, [rows_t[k] for k in paired])
    keys_g = compare_keys(g, golden.rank if golden.renumbered else None, [rows_g[k] for k in paired])
    if keys_t != keys_g:
        raise WholeTablesNeeded("two compare keys of one hash")
    result = MatchResult(target=rows_t, golden=rows_g, notes=match.notes)
    stage("metrics and verdicts", f"{match.rows:,} rows", 3, 4)
    table = build(t, g, result, options, host)
    stage("write", f"{match.rows:,} rows", 4, 4)
    return table, write_result(table, job, options, timestamp, host, started=started)
