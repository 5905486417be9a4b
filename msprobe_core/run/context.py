"""What one run hands its stages besides the user's options: a typed :class:`RunContext`.

:class:`~msprobe_core.model.CompareOptions` holds what the user asked for (flags, plugin options).
What the layer that starts a run decides on top of that (where the summary comes from, whether the
tables are kept) and what the run itself fixes once (its timestamp, when it began) travel in a
:class:`RunContext`, passed explicitly from :func:`msprobe_core.run.jobs.run_jobs` down to the
stages and, without its host, to worker processes (it pickles).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..host.registry import PluginHost
    from ..pipeline.sink import ResultSink


@dataclass(frozen=True, slots=True)
class RunContext:
    """One run's settings for its stages (see the module's doc).

    ``summary_sink``: a picklable factory ``() -> ResultSink`` each job feeds its result to
    (:mod:`msprobe_core.pipeline.sink`; ``None``: the run makes no summary partials);
    ``keep_tables``: whether each job's result table is kept for the caller (the Python API does,
    ``msprobe compare`` does not); ``started`` (a ``time.time()``) and ``stamp`` (the result files' timestamp) are set by the run.
    """

    host: PluginHost | None = None
    summary_sink: Callable[[], ResultSink] | None = None
    keep_tables: bool = True
    started: float | None = None
    stamp: str | None = None

    def without_host(self) -> RunContext:
        """This context for a worker process, which has a host of its own."""
        return replace(self, host=None)


#: the fields of :class:`RunContext` a caller of the Python API may set through ``extra=``
CALLER_FIELDS = tuple(f.name for f in fields(RunContext) if f.name not in ("host", "started", "stamp"))


def split_caller_fields(extra: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``extra`` as (the :class:`RunContext` fields it names, the rest, which stays plugin values)."""
    run = {name: value for name, value in extra.items() if name in CALLER_FIELDS}
    return run, {name: value for name, value in extra.items() if name not in CALLER_FIELDS}
