"""The plugin host of the run this code is part of: set by the layer that starts the run, read below it.

The stages are handed the run's host. What reads a result without being a stage — the summary, the report,
the column registry a writer asks, the hierarchy sources behind the first divergence's path — is reached from
many places (a job's summary sink, a pool worker, ``msprobe report`` on files, the Python API's
``CompareResult``), so the layer that starts the work says which host it runs with (:func:`running_with`),
for the block and the children it forks, and those readers ask :func:`run_host`. Outside
such a block they know the core alone: no plugin's mode, framework, column or hierarchy — never a host that
some earlier code of the process happened to make.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .host.registry import PluginHost

#: what gives the run's host (its host itself, or the function that loads it on first use)
_RUN_HOST: ContextVar[Callable[[], PluginHost] | None] = ContextVar("msprobe_run_host", default=None)


def run_host() -> PluginHost | None:
    """The host of the run this code is part of (``None``: none was started; the core's own knowledge only)."""
    give = _RUN_HOST.get()
    return None if give is None else give()


@contextmanager
def running_with(host: PluginHost | None = None, *, loaded_by: Callable[[], PluginHost] | None = None
                 ) -> Iterator[None]:
    """Make ``host`` the run's host inside the block (the layers that start a run call this); ``loaded_by``: the
    function that gives it, called only when something asks (a command that needs no plugin loads none)."""
    if (host is None) == (loaded_by is None):
        raise TypeError("running_with() takes a host or loaded_by, one of them")
    token = _RUN_HOST.set(loaded_by if loaded_by is not None else (lambda: host))
    try:
        yield
    finally:
        _RUN_HOST.reset(token)
