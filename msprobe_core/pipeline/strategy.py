"""How one job's stages run: on whole tables, or chunk by chunk — the strategies and the one place that chooses.

The stages are the same either way (load, match, metrics, verdicts, write); what differs is their
boundaries. Chunk by chunk (the default plugin ``chunked``, a strategy registered through
``msprobe_register_strategies``) a statistics or md5 pair is matched on the dumps' indexes and read, built and
written a chunk at a time, with a forked worker taking the later chunks: memory stays flat and two cores work.
On whole tables (the core's own, :mod:`msprobe_core.pipeline.whole`) both dumps are parsed once and every stage
runs over the whole: for a small pair that is faster (no index, no second process), and it holds little.

A strategy (:class:`Strategy`) is what the one orchestration (:func:`msprobe_core.pipeline.job.run_job`) asks
at each stage boundary: what its load asks for, how it matches, how it builds and writes.

So a pair is offered to the registered strategies when a side's dump file is at least :func:`stream_min_bytes`
(and streamed when the chunked strategy can take it at all). The threshold differs where the
job runs: a serial run's job may fork a chunk worker, a rank pair on a pool worker may not (it runs on one
core either way, so only memory speaks for streaming it). Both thresholds were measured (see
``docs/performance.md``, "Whole tables or chunks").
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..host.strategies import DumpIndex, Strategy, WholeTablesNeeded
from ..model import DumpTable

if TYPE_CHECKING:
    from ..host.registry import PluginHost
    from ..host.specs import CompareJob
    from ..model import CompareOptions

__all__ = ["Strategy", "WholeTablesNeeded", "choose_strategy", "is_index", "stream_min_bytes", "whole_tables",
           "worth_streaming"]

#: a job of a serial run is streamed when a side's dump file has at least this many bytes
SERIAL_STREAM_MIN_BYTES = 32 << 20
#: a rank pair on a pool worker is streamed when a side's dump file has at least this many bytes
WORKER_STREAM_MIN_BYTES = 64 << 20
#: set to a number of bytes to change :data:`SERIAL_STREAM_MIN_BYTES` (``0``: stream every pair it can take)
ENV_SERIAL_STREAM_MIN_BYTES = "MSPROBE_STREAM_MIN_BYTES"
#: set to a number of bytes to change :data:`WORKER_STREAM_MIN_BYTES` (``0``: stream every pair)
ENV_WORKER_STREAM_MIN_BYTES = "MSPROBE_RANK_STREAM_MIN_BYTES"


def stream_min_bytes(on_worker: bool = False) -> int:
    """The dump size from which a job is streamed: a pool worker's or a serial run's (or its variable's)."""
    name, default = ((ENV_WORKER_STREAM_MIN_BYTES, WORKER_STREAM_MIN_BYTES) if on_worker
                     else (ENV_SERIAL_STREAM_MIN_BYTES, SERIAL_STREAM_MIN_BYTES))
    try:
        return max(0, int(os.environ.get(name) or default))
    except ValueError:
        return default


def job_bytes(job: CompareJob, largest: bool = False) -> int:
    """The bytes of the job's two dump files (``largest``: of the larger one; a directory counts 0)."""
    sizes = []
    for p in (job.target, job.golden):
        try:
            path = Path(p)
            sizes.append(path.stat().st_size if path.is_file() else 0)
        except OSError:
            sizes.append(0)
    return max(sizes) if largest else sum(sizes)


def worth_streaming(job: CompareJob, on_worker: bool = False) -> bool:
    """Whether ``job`` is big enough for the chunked strategy to pay where it runs."""
    return job_bytes(job, largest=True) >= stream_min_bytes(on_worker)


def choose_strategy(job: CompareJob, options: CompareOptions, host: PluginHost, *, writes: bool = True,
                    on_worker: bool = False) -> Strategy:
    """The strategy for ``job``: the first one a registered :class:`~msprobe_core.host.strategies.StrategySpec` gives
    for it (the default plugin ``chunked``: chunk by chunk) when it is big enough where it runs
    (:func:`worth_streaming`), else whole tables.

    A result that is not written (``writes`` false: the Python API without an output directory) and a small
    pair on a pool worker are built on whole tables in this process, never by a second one.
    """
    from .whole import WholeTables

    if not writes or (on_worker and not worth_streaming(job, on_worker=True)):
        return WholeTables(tail=False)
    if worth_streaming(job):
        for spec in host.strategies:
            chosen = spec.choose(job, options, host, on_worker)
            if chosen is not None:
                return chosen
    return WholeTables()


def is_index(side: Any) -> bool:
    """Whether a loaded side is a dump's index (a loader's :class:`~msprobe_core.host.strategies.DumpIndex`), not a table."""
    return isinstance(side, DumpIndex)


def whole_tables(target: Any, golden: Any) -> tuple[DumpTable, DumpTable]:
    """The tables of a pair one or both of whose sides were indexed (each read whole by its loader), for a strategy
    that handed the job back (:class:`~msprobe_core.host.strategies.WholeTablesNeeded`)."""
    return _whole(target), _whole(golden)


def _whole(side: Any) -> DumpTable:
    if not is_index(side):
        return side
    table = side.whole_table()
    if side.stack is None or isinstance(side.stack, dict):
        table.stack = side.stack
    else:  # an index's stack (records, a per-entry stack) keeps no API names: stack.json is read again
        from ..files.validation import dump_file_beside
        from ..load.dumpjson import load_stack

        stack_file = dump_file_beside(side.source, "stack.json")
        table.stack = None if stack_file is None else load_stack(stack_file)
    return table
