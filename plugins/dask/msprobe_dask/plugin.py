"""msprobe-core hook: the ``dask`` executor."""

from __future__ import annotations

from typing import Any

from msprobe_core import hookimpl
from msprobe_core.executors import Executor, ExecutorSpec
from msprobe_core.model import CompareOptions


def create_dask(options: CompareOptions) -> Executor:
    """A Dask executor: ``--scheduler ADDRESS`` or, without one, a local cluster of ``--workers`` processes."""
    from .executor import DaskExecutor

    return DaskExecutor(address=options.scheduler, workers=options.workers)


@hookimpl
def msprobe_register_executors(register: Any) -> None:
    """``dask``: rank pairs and tensor chunks as tasks of a Dask cluster."""
    register(ExecutorSpec("dask", create_dask, "Dask cluster (--scheduler ADDRESS; default: a local cluster)"))
