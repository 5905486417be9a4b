"""Executors: where the independent pieces of a run go (rank pairs, tensor chunks).

An :class:`Executor` maps a picklable, module-level function over a list of
items and yields ``(index, result)`` as results come back, keeping at most
``in_flight`` items submitted at a time, so memory stays bounded whatever the
number of items. Callers put results back in item order themselves, which is
why the output never depends on the executor or on scheduling.

Executors are registered through the ``msprobe_register_executors`` hook
(:class:`ExecutorSpec`); the default plugin ``local_executor`` registers ``local`` (a process pool on this
machine), the Dask plugin adds ``dask``; with none, everything runs in the calling process (:class:`InlineExecutor`).
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
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from ..host.registry import PluginHost
    from ..model import CompareOptions

T = TypeVar("T")
R = TypeVar("R")

#: Name of the executor used when none is asked for (the default plugin ``local_executor``'s process pool; when it
#: is turned off, everything runs in this process: :class:`InlineExecutor`).
DEFAULT_EXECUTOR = "local"


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
        return InlineRef()

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release workers, pools and connections (the executor is unusable afterwards)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class ExecutorSpec:
    """A way of running tasks: ``create(options) -> Executor``.

    ``options.workers`` is the number of local worker processes; an executor's own settings are options its plugin
    declares (the Dask plugin's ``--scheduler``). ``selected_by(options)``: whether these options pick this executor
    when no ``--executor`` is named (``dask`` when a scheduler address is given).
    """

    name: str
    create: Callable[[CompareOptions], Executor]
    description: str = ""
    selected_by: Callable[[CompareOptions], bool] | None = None
    plugin: str = ""


# --------------------------------------------------------------------------- this process
def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask: taskset, cpusets, SLURM), else ``os.cpu_count()``."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _serial(fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, R]]:
    for i, item in enumerate(items):
        yield i, fn(item)


class InlineExecutor(Executor):
    """Everything in the calling process, one task after another: what runs when no executor is registered for
    the run (the default plugin ``local_executor`` turned off) and what a task's sub-tasks use by default."""

    name = "inline"

    def parallelism(self) -> int:
        return 1

    def map_unordered(
        self, fn: Callable[[T], R], items: Sequence[T], *, in_flight: int | None = None
    ) -> Iterator[tuple[int, R]]:
        yield from _serial(fn, items)


@dataclass(frozen=True)
class InlineRef(ExecutorRef):
    """The recipe of an :class:`InlineExecutor` (a task's sub-tasks run in the task's own process)."""

    def open(self) -> Executor:
        return InlineExecutor()


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
    """A new executor as the options ask for it (``--executor``, ``--workers``, the executor's own options); the
    run's own process when none is asked for and the default one is not registered (its plugin is off)."""
    name = executor_name(options, host)
    if name == DEFAULT_EXECUTOR and name not in host.executors and not getattr(options, "executor", None):
        return InlineExecutor()
    return host.executor(name).create(options)


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
