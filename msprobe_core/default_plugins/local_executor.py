"""The default plugin ``local_executor``: the ``local`` executor, a process pool on this machine (``--workers``
processes, default every usable core), where a run's rank pairs and tensor chunks go unless ``--executor`` names
another.

Turned off (``-p no:local_executor``), a run does all its work in its own process (``--executor local`` is then
an error naming this plugin).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from msprobe_core.plugin import (
    CompareFailed,
    CompareOptions,
    Executor,
    ExecutorRef,
    ExecutorSpec,
    InlineExecutor,
    Register,
    hookimpl,
    usable_cpus,
)

T = TypeVar("T")
R = TypeVar("R")

#: Below this many bytes of tensors a local run computes in-process: a pool does not pay.
LOCAL_INLINE_BYTES = 64 * 1024 * 1024


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
            yield from InlineExecutor().map_unordered(fn, items)
            return
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

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


@hookimpl
def msprobe_register_executors(register: Register[ExecutorSpec]) -> None:
    """``local``: a process pool on this machine (``--workers`` processes, default every core)."""
    register(ExecutorSpec("local", create_local, "process pool on this machine"))
