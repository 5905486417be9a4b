"""The Dask executor: tasks of a compare run as futures of a ``dask.distributed`` cluster.

On the client (the ``msprobe compare`` process), :class:`DaskExecutor` connects to
the scheduler given by ``--scheduler`` or starts a :class:`~distributed.LocalCluster`
of ``--workers`` single-threaded worker processes on the loopback interface. Rank
pairs become tasks; a rank pair's own tensor chunks are submitted from inside its
task through :func:`distributed.worker_client` (the task secedes from the worker's
thread pool while it waits), so the chunks of every rank spread over the whole
cluster. Functions travel by reference: every worker needs msprobe-core and the
same plugins installed, and sees the dumps (and the output directory) under the
same paths as the client; relative paths are made absolute on the client first
(:mod:`msprobe_core.run.shipping`), as the worker's working directory is its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from msprobe_core.plugin import Executor, ExecutorRef, UsageError, usable_cpus

T = TypeVar("T")
R = TypeVar("R")

CONNECT_TIMEOUT = "20s"


class DaskExecutor(Executor):
    """Runs tasks on a Dask cluster; connects (or starts a local cluster) on first use.

    ``address``: a scheduler address (``tcp://host:8786``); ``None`` starts a
    local cluster with ``workers`` processes (default: every core), torn down by
    :meth:`close`. ``client``: an existing client to use as is (not closed).
    """

    name = "dask"
    inline_bytes = 0  # asked for a cluster: always distribute
    shares_working_directory = False  # workers started elsewhere: every path goes out absolute

    def __init__(self, address: str | None = None, workers: int | None = None, client: Any = None) -> None:
        self.address = address
        self.workers = workers
        self._client = client
        self._owns_client = client is None
        self._cluster: Any = None

    # -- connection ----------------------------------------------------------
    def client(self) -> Any:
        """The ``distributed.Client`` (connecting or starting the local cluster now if needed)."""
        if self._client is None:
            from distributed import Client, LocalCluster

            if self.address:
                try:
                    self._client = Client(self.address, timeout=CONNECT_TIMEOUT, set_as_default=False)
                except (OSError, TimeoutError, ValueError) as exc:
                    raise UsageError(f"cannot connect to the Dask scheduler at {self.address}: {exc}") from None
            else:
                n = max(1, self.workers or usable_cpus())
                self._cluster = LocalCluster(
                    n_workers=n,
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address="127.0.0.1:0",
                    silence_logs=logging.ERROR,
                )
                self._client = Client(self._cluster, set_as_default=False)
        return self._client

    def parallelism(self) -> int:
        """Worker threads of the whole cluster."""
        return max(1, sum(self.client().nthreads().values()))

    # -- tasks ---------------------------------------------------------------
    def map_unordered(
        self, fn: Callable[[T], R], items: Sequence[T], *, in_flight: int | None = None
    ) -> Iterator[tuple[int, R]]:
        from distributed import as_completed

        if not items:
            return
        client = self.client()
        limit = max(1, in_flight or 2 * self.parallelism())
        queue = iter(enumerate(items))
        index: dict[str, int] = {}
        futures = as_completed(loop=client.loop)
        live: dict[str, Any] = {}

        def submit_next() -> None:
            nxt = next(queue, None)
            if nxt is not None:
                fut = client.submit(fn, nxt[1], pure=False)
                index[fut.key] = nxt[0]
                live[fut.key] = fut
                futures.add(fut)

        try:
            for _ in range(limit):
                submit_next()
            for fut in futures:
                k = index.pop(fut.key)
                live.pop(fut.key, None)
                result = fut.result()  # re-raises the task's exception here
                fut.release()
                yield k, result
                submit_next()
        finally:
            if live:
                client.cancel(list(live.values()))

    def for_task(self, n_tasks: int) -> ExecutorRef:
        # a task's sub-tasks go back to the same cluster, from inside the worker
        return InWorkerRef()

    def close(self) -> None:
        if self._owns_client and self._client is not None:
            self._client.close()
        self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


class InWorkerExecutor(DaskExecutor):
    """The Dask executor as seen from inside a task: ``worker_client()``, entered on first use."""

    def __init__(self) -> None:
        super().__init__()
        self._owns_client = False
        self._context: Any = None

    def client(self) -> Any:
        if self._client is None:
            from distributed import worker_client

            self._context = worker_client()
            self._client = self._context.__enter__()
        return self._client

    def close(self) -> None:
        if self._context is not None:
            context, self._context = self._context, None
            self._client = None
            context.__exit__(None, None, None)


@dataclass(frozen=True)
class InWorkerRef(ExecutorRef):
    """Recipe for :class:`InWorkerExecutor` (opened by a task on a Dask worker)."""

    def open(self) -> Executor:
        from distributed import get_worker

        try:
            get_worker()
        except ValueError:  # not on a worker (a task run inline): nothing to reach
            from msprobe_core.plugin import InlineExecutor

            return InlineExecutor()
        return InWorkerExecutor()
