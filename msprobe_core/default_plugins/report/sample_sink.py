"""The HTML report's samples made while the results stream by: no whole result table is kept for the page.

``msprobe report`` feeds each chunk of a result file to the summary and to a :class:`ReportSamples`'
sampler (:class:`~msprobe_core.default_plugins.report.sampling.ViewSampler`); ``msprobe compare --report html`` puts a
:class:`SampledSinkFactory` in the run's context (:mod:`msprobe_core.pipeline.sink`), so each job,
wherever it ran, hands back its :class:`~msprobe_core.default_plugins.report.sampling.ViewSample` in its summary
partial's ``extra`` (:data:`SAMPLE_KEY`) instead of its table.

While all results together have at most :func:`~msprobe_core.default_plugins.report.sampling.sample_threshold` rows,
every row is kept and the page is the whole-table one; above it, each result's sample is within
``Budget.for_views(results)``, as :func:`~msprobe_core.default_plugins.report.sampling.sample_views` samples whole views.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from msprobe_core.plugin import gc_paused

from .sampling import Budget, RowAllowance, ViewSample, ViewSampler, sample_threshold, sample_views, watched_calls
from .seams import ViewAccumulator, ViewPartial, table_chunks

#: the key the result's :class:`~msprobe_core.default_plugins.report.sampling.ViewSample` was kept under in a summary
#: partial before it had a field of its own (``ViewPartial.sample``)
SAMPLE_KEY = "report_sample"


class ReportSamples:
    """The samples of one report's results, one result after the other (in the report's order).

    ``results``: how many results the report has (they share the budget); ``analysis``: the ``-da``
    answer (its calls are kept with their neighbourhood); ``limit``: the threshold (default:
    :func:`~msprobe_core.default_plugins.report.sampling.sample_threshold`); ``budget``: default ``Budget.for_views(results)``. Results fed here share one
    :class:`~msprobe_core.default_plugins.report.sampling.RowAllowance`, so the rows kept whole never exceed ``limit``.
    """

    def __init__(self, results: int, analysis: Any = None, limit: int | None = None,
                 budget: Budget | None = None) -> None:
        self.limit = sample_threshold(limit)
        self.budget = budget or Budget.for_views(results)
        self.watch = watched_calls(analysis) if analysis is not None else []
        self.allowance = RowAllowance(self.limit)
        self.samples: list[ViewSample] = []

    def sampler(self) -> ViewSampler:
        """A sampler for the next result (feed it every chunk, then :meth:`add` what it finishes)."""
        return ViewSampler(self.budget, self.watch, self.allowance)

    def add(self, sample: ViewSample) -> None:
        """The sample of the next result (made here, or handed back by a job's sink)."""
        self.samples.append(sample)

    def finish(self) -> list[ViewSample]:
        """The samples for :func:`~msprobe_core.default_plugins.report.html.write_report` (``samples=``, ``sample_above=limit``).

        Below the threshold they are every row (the page is the whole-table one): a job's result sampled
        because it passed its share of the threshold (:class:`SampledSinkFactory`) is read back from its
        files here. Above it, a result kept whole while the report still fitted (one before the overflow,
        or a job's own result within its share) is sampled now within the budget, as the whole-view path
        samples it.
        """
        if sum(s.total for s in self.samples) <= self.limit:
            return [s if s.complete else self._reread(s) for s in self.samples]
        return [self._resample(s) if s.complete else s for s in self.samples]

    def _reread(self, sample: ViewSample) -> ViewSample:
        """Every row of a sampled result, from its files (the sample itself when they cannot be read)."""
        from msprobe_core.plugin import MsprobeError

        from .seams import read_result_chunks

        files = [Path(f) for f in sample.files if Path(f).suffix.lower() in (".csv", ".xlsx")]
        sampler = ViewSampler(self.budget, self.watch, RowAllowance(self.limit))
        try:
            for chunk in read_result_chunks(files, sample.label):
                sampler.feed(chunk)
            again = sampler.finish()
        except (MsprobeError, OSError, ValueError):
            return sample
        if again.total != sample.total or not again.complete:
            return sample
        # what the job knew of its result (frameworks from its match, not guessed from cells) stays
        return replace(again, label=sample.label, mode=sample.mode, files=list(sample.files),
                       frameworks=sample.frameworks, level=sample.level, dump_mode=sample.dump_mode)

    def _resample(self, sample: ViewSample) -> ViewSample:
        (again,) = sample_views([sample.view()], self.watch, budget=self.budget)
        return again


class SampledSink:
    """A summary sink (:mod:`msprobe_core.pipeline.sink`) that also samples the result for the HTML report:
    ``finish`` gives the :class:`~msprobe_core.default_plugins.summary.accumulate.ViewPartial` with the
    :class:`~msprobe_core.default_plugins.report.sampling.ViewSample` in ``extra[SAMPLE_KEY]``."""

    def __init__(self, budget: Budget, limit: int) -> None:
        self._summary = ViewAccumulator(tree=True)  # the report's model tree counts every call
        self._sampler = ViewSampler(budget, (), RowAllowance(limit))
        self._frameworks: tuple[str, str] | None = None

    def feed_table(self, table: Any, start: int = 0) -> None:
        """Take the job's result table, or its part beginning at row ``start`` of the whole."""
        with gc_paused():
            for chunk in table_chunks(table, start=start, frameworks=self._frameworks):
                self._frameworks = chunk.frameworks
                self._summary.feed(chunk)
                self._sampler.feed(chunk)
        self._summary.note_table(table)

    def finish(self, files: Iterable[Path | str]) -> ViewPartial:
        """The summary partial, with the sample."""
        partial = self._summary.finish(files)
        sample = self._sampler.finish()
        sample.files = list(partial.files)
        partial.sample = sample
        return partial


@dataclass(frozen=True)
class SampledSinkFactory:
    """The ``RunContext.summary_sink`` of ``msprobe compare --report html``: picklable (it travels to
    pool and Dask workers), the budget and threshold decided once by the run (workers may not share its environment).

    Each job keeps every row of its result only up to its share of the threshold (``limit / results``), so
    that what the jobs hand back together stays within the threshold however many they are; a result
    sampled that way while all results together fit is read back from its files for the page
    (:meth:`ReportSamples.finish`)."""

    results: int
    limit: int

    def __call__(self) -> SampledSink:
        return SampledSink(Budget.for_views(self.results), max(1, self.limit // self.results))


def sink_factory(results: int, limit: int | None = None) -> SampledSinkFactory:
    """The factory for a run of ``results`` jobs (``limit``: see :func:`~msprobe_core.default_plugins.report.sampling.sample_threshold`)."""
    return SampledSinkFactory(max(1, int(results)), sample_threshold(limit))


def partial_sample(partial: ViewPartial | None, label: str, files: Sequence[Path]) -> ViewSample | None:
    """The sample a job's sink left in its partial, labelled and with the files as the run names them."""
    sample = partial.sample if partial is not None else None
    return None if sample is None else replace(sample, label=label, files=list(files))


def chunks_sample(samples: ReportSamples, chunks: Iterator[Any]) -> ViewSample | None:
    """The sample of a result given as chunks (``None``: no chunk)."""
    sampler = samples.sampler()
    fed = False
    for chunk in chunks:
        sampler.feed(chunk)
        fed = True
    return sampler.finish() if fed else None
