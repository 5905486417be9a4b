"""msprobe-core hook: the ``dask`` executor."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msprobe_core import hookimpl
from msprobe_core.plugin import CompareOptions, Executor, ExecutorSpec, OptionSpec

if TYPE_CHECKING:
    from msprobe_core.plugin import Register

#: ``--scheduler ADDRESS`` (``scheduler=`` in Python): the Dask scheduler to use; given alone it selects ``dask``.
SCHEDULER = OptionSpec("scheduler", ("--scheduler",), "Scheduler address for --executor dask (default: a local cluster).",
                       metavar="ADDRESS")


def create_dask(options: CompareOptions) -> Executor:
    """A Dask executor: ``--scheduler ADDRESS`` or, without one, a local cluster of ``--workers`` processes."""
    from .executor import DaskExecutor

    return DaskExecutor(address=options.scheduler, workers=options.workers)


def _scheduler_given(options: CompareOptions) -> bool:
    return bool(options.scheduler)


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``--scheduler ADDRESS``."""
    register(SCHEDULER)


@hookimpl
def msprobe_register_executors(register: Register[ExecutorSpec]) -> None:
    """``dask``: rank pairs and tensor chunks as tasks of a Dask cluster (also chosen by ``--scheduler`` alone)."""
    register(ExecutorSpec("dask", create_dask, "Dask cluster (--scheduler ADDRESS; default: a local cluster)",
                          selected_by=_scheduler_given))
