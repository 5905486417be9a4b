"""How one job's stages run: on whole tables, or chunk by chunk — the strategies and the one place that chooses.

The stages are the same either way (load, match, metrics, verdicts, write); what differs is their
boundaries. Chunk by chunk (:mod:`msprobe_core.pipeline.streamed`) a statistics or md5 pair is matched on
the dumps' indexes and read, built and written a chunk at a time, with a forked worker taking the later
chunks: memory stays flat and two cores work. On whole tables both dumps are parsed once and every stage
runs over the whole: for a small pair that is faster (no index, no second process), and it holds little.

A strategy (:class:`Strategy`) is what the one orchestration (:func:`msprobe_core.pipeline.job.run_job`) asks
at each stage boundary: what its load asks for, how it matches, how it builds and writes.

So a pair is streamed when a side's dump file is at least :func:`stream_min_bytes` (and the streamed path
can take it at all, :func:`~msprobe_core.pipeline.streamed.stream_plan`). The threshold differs where the
job runs: a serial run's job may fork a chunk worker, a rank pair on a pool worker may not (it runs on one
core either way, so only memory speaks for streaming it). Both thresholds were measured (see
``docs/performance.md``, "Whole tables or chunks").
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..host.registry import PluginHost
    from ..host.specs import CompareJob
    from ..model import CompareOptions
    from ..run.context import RunContext
    from .sink import Written

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


class Strategy(Protocol):
    """How a job's stages run, asked by :func:`~msprobe_core.pipeline.job.run_job` at each boundary.

    ``name`` is said on the debug log; ``index`` is what the load stage asks of the loader (``None``: tables,
    ``True``/``False``: the dumps' indexes, backward calls renumbered or not). :meth:`match` and
    :meth:`finish` may raise :class:`~msprobe_core.pipeline.streamed.WholeTablesNeeded` before any result file
    exists: the job then goes on from the match stage on whole tables.
    """

    name: str

    @property
    def index(self) -> bool | None: ...

    def match(self, target: Any, golden: Any, options: CompareOptions, host: PluginHost) -> Any:
        """The match stage on what the load gave (``None``: nothing matched, said on the console)."""

    def finish(self, matched: Any, job: CompareJob, options: CompareOptions, timestamp: str | None,
               host: PluginHost, run: RunContext | None) -> Written:
        """Metrics, verdicts and the write (``timestamp`` ``None``: build the table, write nothing)."""


def choose_strategy(job: CompareJob, options: CompareOptions, host: PluginHost, *, writes: bool = True,
                    on_worker: bool = False) -> Strategy:
    """The strategy for ``job``: chunk by chunk when it is big enough where it runs (:func:`worth_streaming`) and
    the chunked path can take it (:func:`~msprobe_core.pipeline.streamed.stream_plan`), else whole tables.

    A result that is not written (``writes`` false: the Python API without an output directory) and a small
    pair on a pool worker are built on whole tables in this process, never by a second one.
    """
    from .streamed import Chunked, stream_plan
    from .whole import WholeTables

    if not writes or (on_worker and not worth_streaming(job, on_worker=True)):
        return WholeTables(tail=False)
    plan = stream_plan(job, options, host) if worth_streaming(job) else None
    return WholeTables() if plan is None else Chunked(plan)
