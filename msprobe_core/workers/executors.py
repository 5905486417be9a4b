"""Executors: where the independent pieces of a run go (rank pairs, tensor chunks).

An :class:`Executor` maps a picklable, module-level function over a list of
items and yields ``(index, result)`` as results come back, keeping at most
``in_flight`` items submitted at a time, so memory stays bounded whatever the
number of items. Callers put results back in item order themselves, which is
why the output never depends on the executor or on scheduling.

Executors are registered through the ``msprobe_register_executors`` hook
(:class:`ExecutorSpec`); the built-in one is ``local`` (a process pool on this
machine, :class:`LocalExecutor`), the Dask plugin adds ``dask``.
:func:`executor_for` gives the stages the executor of the current run:
:func:`msprobe_core.run.jobs.run_jobs` opens one per run and makes it current
with :func:`using`; a task that runs on a worker opens the one its parent
described with :meth:`Executor.for_task` (an :class:`ExecutorRef`).
"""

from __future__ import annotations

import contextvars
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ..host.registry import PluginHost
    from ..model import CompareOptions

T = TypeVar("T")
R = TypeVar("R")

#: Name of the executor used when none is asked for.
DEFAULT_EXECUTOR = "local"

#: Below this many bytes of tensors a local run computes in-process: a pool does not pay.
LOCAL_INLINE_BYTES = 64 * 1024 * 1024


class ExecutorRef(ABC):
    """A picklable recipe for an executor, opened where a task runs (see :meth:`Executor.for_task`)."""

    @abstractmethod
    def open(self) -> Executor:
        """The executor this recipe describes (the caller closes it)."""


class Executor(ABC):
    """Runs independent tasks, in this process, in a process pool or on a cluster."""

    #: The registered name (``local``, ``dask``…).
    name: str = ""
    #: Tensor stage: below this many bytes it computes in the calling process.
    inline_bytes: int = 0
    #: Whether its tasks run where a relative path means what it means here (this process, or processes
    #: started from it); when not, every path of the run is made absolute before work is shipped
    #: (:mod:`msprobe_core.run.shipping`).
    shares_working_directory: bool = True

    @abstractmethod
    def parallelism(self) -> int:
        """How many tasks can run at the same time (1: everything runs in this process)."""

    @abstractmethod
    def map_unordered(
        self, fn: Callable[[T], R], items: Sequence[T], *, in_flight: int | None = None
    ) -> Iterator[tuple[int, R]]:
        """``(index, fn(items[index]))`` for every item, in completion order.

        At most ``in_flight`` items (default ``2 × parallelism()``) are submitted
        and not yet consumed at any time. An exception raised by ``fn`` is
        re-raised here; closing the iterator early cancels what is still queued.
        """

    def for_task(self, n_tasks: int) -> ExecutorRef:
        """What a task run by this executor should use for its own sub-tasks.

        ``n_tasks`` is the number of sibling tasks that will run at once; the
        default runs sub-tasks inline (in the task's own process).
        """
        return LocalRef(1)

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release workers, pools and connections (the executor is unusable afterwards)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class ExecutorSpec:
    """A way of running tasks: ``create(options) -> Executor``.

    ``options.workers`` is the number of local worker processes; an executor's own
    settings are options its plugin declares (the Dask plugin's ``--scheduler``).
    ``selected_by(options)``: whether these options pick this executor when no
    ``--executor`` is named (``dask`` when a scheduler address is given).
    """

    name: str
    create: Callable[[CompareOptions], Executor]
    description: str = ""
    selected_by: Callable[[CompareOptions], bool] | None = None
    plugin: str = ""


# --------------------------------------------------------------------------- local
def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask: taskset, cpusets, SLURM), else ``os.cpu_count()``."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _serial(fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, R]]:
    for i, item in enumerate(items):
        yield i, fn(item)


class LocalExecutor(Executor):
    """A process pool on this machine (``fork`` where the platform has it), created on first use.

    With ``workers <= 1`` everything runs in the calling process.
    """

    name = "local"
    inline_bytes = LOCAL_INLINE_BYTES

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers if workers is not None else usable_cpus())
        self._pool: Any = None

    def parallelism(self) -> int:
        return self.workers

    def _get_pool(self) -> Any:
        if self._pool is None:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx)
        return self._pool

    def map_unordered(
        self, fn: Callable[[T], R], items: Sequence[T], *, in_flight: int | None = None
    ) -> Iterator[tuple[int, R]]:
        if self.workers <= 1 or len(items) <= 1:
            yield from _serial(fn, items)
            return
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        from ..errors import CompareFailed

        pool = self._get_pool()
        limit = max(1, in_flight or 2 * self.workers)
        queue = iter(enumerate(items))
        pending: dict[Any, int] = {}

        def submit_next() -> None:
            nxt = next(queue, None)
            if nxt is not None:
                pending[pool.submit(fn, nxt[1])] = nxt[0]

        try:
            for _ in range(limit):
                submit_next()
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    index = pending.pop(fut)
                    try:
                        result = fut.result()
                    except BrokenProcessPool:
                        raise CompareFailed(
                            "a worker process died (out of memory? try fewer --workers; or a tensor file was truncated while it was read)"
                        ) from None
                    yield index, result
                    submit_next()
        finally:
            for fut in pending:
                fut.cancel()

    def for_task(self, n_tasks: int) -> ExecutorRef:
        # siblings share the cores: each task gets its part for its own sub-tasks
        return LocalRef(max(1, self.workers // max(1, min(n_tasks, self.workers))))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


@dataclass(frozen=True)
class LocalRef(ExecutorRef):
    """A local executor with ``workers`` processes (1: inline)."""

    workers: int = 1

    def open(self) -> Executor:
        return LocalExecutor(self.workers)


def create_local(options: CompareOptions) -> Executor:
    """The built-in ``local`` executor for ``options.workers`` processes (default: every usable core)."""
    return LocalExecutor(options.workers)


# --------------------------------------------------------------------------- current executor
_CURRENT: contextvars.ContextVar[Executor | None] = contextvars.ContextVar("msprobe_executor", default=None)


@contextmanager
def using(executor: Executor) -> Iterator[Executor]:
    """Make ``executor`` the one :func:`executor_for` hands out inside the block."""
    token = _CURRENT.set(executor)
    try:
        yield executor
    finally:
        _CURRENT.reset(token)


def open_executor(options: CompareOptions, host: PluginHost) -> Executor:
    """A new executor as the options ask for it (``--executor``, ``--workers``, the executor's own options)."""
    return host.executor(executor_name(options, host)).create(options)


def executor_name(options: CompareOptions, host: PluginHost) -> str:
    """The executor the options select: ``--executor``, else one whose ``selected_by`` says so, else ``local``."""
    name = getattr(options, "executor", None)
    if name:
        return name
    for spec in host.executors.values():
        if spec.selected_by is not None and spec.selected_by(options):
            return spec.name
    return DEFAULT_EXECUTOR


@contextmanager
def executor_for(options: CompareOptions, host: PluginHost) -> Iterator[Executor]:
    """The current executor, or a new one for ``options`` that is closed when the block ends."""
    current = _CURRENT.get()
    if current is not None:
        yield current
        return
    executor = open_executor(options, host)
    try:
        with using(executor):
            yield executor
    finally:
        executor.close()
