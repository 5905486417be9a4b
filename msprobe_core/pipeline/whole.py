"""The whole-table strategy of a job's stages: both dumps parsed once, every stage over the whole.

Its load asks for tables (no index); its match is the mapper chain's (:func:`match_loaded`); metrics,
verdicts and the write run over the whole result, a big statistics result built and written by two
processes when the writer and the metric set allow and a registered strategy lends a second one
(``StrategySpec.tail``: the default plugin ``chunked``'s). It takes
every job; a registered strategy (the default plugin ``chunked``) hands back to it whatever it
cannot take.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..console.stages import stage
from ..match.stage import match_tables
from ..model import CompareOptions, DumpTable, MatchResult
from ..write.stage import write_result
from . import build
from .sink import Written, summary_sink

if TYPE_CHECKING:
    from ..host.registry import PluginHost
    from ..host.specs import CompareJob
    from ..result import ResultTable
    from ..run.context import RunContext

# ``build.build_result`` is looked up at each call (the stage profiler and tests wrap it there)

#: matched whole tables: the two tables and the rows paired in them
Matched = tuple[DumpTable, DumpTable, MatchResult]


def match_loaded(target: DumpTable, golden: DumpTable, options: CompareOptions,
                 host: PluginHost) -> Matched | None:
    """The match stage on whole tables (``None`` when no row matched: the run says so)."""
    stage("match", f"{len(target):,} + {len(golden):,} rows", 2, 4)
    match = match_tables(target, golden, options, host)
    return (target, golden, match) if match.target else None


@dataclass(frozen=True)
class WholeTables:
    """Every stage over whole tables (``tail``: a big statistics result may be built by a second process, which
    a pool worker, whose process may not fork, does not start)."""

    tail: bool = True
    name: str = "whole tables"
    #: the load asks for tables, not indexes (see :func:`msprobe_core.load.stage.load_pair`)
    index: bool | None = None

    def match(self, target: DumpTable, golden: DumpTable, options: CompareOptions, host: PluginHost) -> Matched | None:
        """Pair the rows of the two tables (``None``: nothing matched)."""
        return match_loaded(target, golden, options, host)

    def finish(self, matched: Matched, job: CompareJob, options: CompareOptions, timestamp: str | None,
               host: PluginHost, run: RunContext | None) -> Written:
        """Metrics, verdicts and (given a ``timestamp``) the write of the whole result."""
        if timestamp is None:  # the Python API without an output directory: the table only
            return Written(build.build_result(*matched, options, host), [])
        rows = len(matched[2].target)
        # a run that keeps no table: the tail's child may summarise its rows, this process builds only the others
        sink = summary_sink(run) if self.tail and run is not None and not run.keep_tables else None
        tail = _start_tail(*matched, job, options, host, sink) if self.tail else None
        try:
            if getattr(tail, "summarises", False):
                done = tail.head(lambda table, head_tail: write_result(
                    table, job, options, timestamp, host, tail=head_tail, started=run.started))  # type: ignore[union-attr]
                if done is not None:
                    return Written(*done)
                tail = None  # the child failed: every row is built, written and summarised here
            stage("metrics and verdicts", f"{rows:,} rows", 3, 4)
            table = build.build_result(*matched, options, host)
            stage("write", f"{rows:,} rows", 4, 4)
            files = write_result(table, job, options, timestamp, host, tail=tail,
                                 started=None if run is None else run.started)
        except BaseException:
            if tail is not None:
                from ..files.removals import finish_removals

                tail.close()
                finish_removals()  # nothing of a failed run is left behind when the error reaches the user
            raise
        if tail is not None:
            tail.close()
        return Written(table, files)


def _start_tail(target: DumpTable, golden: DumpTable, match: MatchResult, job: CompareJob,
                options: CompareOptions, host: PluginHost, sink: Any = None) -> Any:
    from ..write.writers import CSV_MAX_ROWS

    lend = next((spec.tail for spec in host.strategies if spec.tail is not None), None)
    # the writer must take rows a child spelled into one file, and the metric set give a part's rows as the
    # whole gives them
    metrics = host.metric_set(target.mode, options)
    splittable = metrics is not None and metrics.splittable and not metrics.whole_table
    if lend is None or not (splittable and host.writer(options.output_format).accepts_csv_tail and len(match.target) <= CSV_MAX_ROWS):
        return None

    def build_part(t: DumpTable, g: DumpTable, part: MatchResult) -> ResultTable:
        return build.build_result(t, g, part, options, host)

    more = {} if sink is None else {"sink": sink}  # a tail may summarise its rows too (it has then head())
    return lend(target, golden, match, options, build_part, Path(job.output_dir), **more)
