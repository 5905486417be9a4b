"""The seam through which a job's result reaches the run's summary without the table leaving the job.

``msprobe compare`` does not keep result tables: each job (on this process or on a worker of the
run's executor) feeds its result to a *summary sink* and hands back what the sink makes of it, a
small picklable partial, which the run's run-finished hooks read (:mod:`msprobe_core.run.finished`). The layer
that starts the run chooses the sink: ``msprobe compare`` asks the plugins (``msprobe_register_partials``: the
``summary`` default plugin's ``ViewAccumulator``, a third party's beside it) and puts the factory in the run's
:class:`~msprobe_core.run.context.RunContext`, ``summary_sink``; the stages below never import a plugin.

A sink is made by calling the factory with no argument and has two methods:

* ``feed_table(table, start=0)``: a :class:`~msprobe_core.result.ResultTable`, or a part of the job's
  result whose first row is row ``start`` of the whole (parts in row order: a streamed compare feeds
  each part as it is built and written);
* ``finish(files)``: called once, with the result's files; returns the partial.

A sink may also have the pair ``continued(start)`` (a new sink for the rows from ``start`` on, which
another process feeds, in absolute row numbers, and finishes with ``finish(None)``) and
``absorb(partial)`` (take that sink's partial once every row before ``start`` was fed here): with them, a
streamed compare lets a forked worker build, write and summarise the later chunks
(:mod:`msprobe_core.default_plugins.chunked.chunkworker`); without them it builds every chunk itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from ..result import ResultTable

#: the :class:`~msprobe_core.run.context.RunContext` field (and ``extra=`` name of the Python API) of a picklable
#: factory ``() -> ResultSink`` (``None``: the run keeps no partials)
SUMMARY_SINK = "summary_sink"
#: the :class:`~msprobe_core.run.context.RunContext` field (and ``extra=`` name) saying whether a job's result
#: table is kept in memory for the caller (default ``True``: the Python API returns tables; ``msprobe compare``
#: keeps none when it has partials)
KEEP_TABLES = "keep_tables"


class Written(NamedTuple):
    """A job's result once written: its table (``None`` when it was built chunk by chunk), its files and the
    summary partial its chunks fed as they were built (``None``: none, the run makes one from the table)."""

    table: ResultTable | None
    files: list[Path]
    partial: Any = None


class ResultSink(Protocol):
    """What a job feeds its result to (see the module's doc)."""

    def feed_table(self, table: ResultTable, start: int = 0) -> None:
        """Take the job's result table, or its part beginning at row ``start`` of the whole."""

    def finish(self, files: Iterable[Path]) -> Any:
        """The partial of everything fed (``files``: the result files written)."""


def summary_sink(run: Any) -> ResultSink | None:
    """A new sink for one job's result, when the run (its ``RunContext``) asks for partials (``summary_sink``)."""
    factory: Callable[[], ResultSink] | None = getattr(run, SUMMARY_SINK, None)
    return factory() if factory is not None else None


def summarise_table(run: Any, table: ResultTable, files: Iterable[Path]) -> Any:
    """The summary partial of a whole result table (``None`` when the run asks for none)."""
    sink = summary_sink(run)
    if sink is None:
        return None
    sink.feed_table(table, 0)
    return sink.finish(list(files))
