r"""The run summary built incrementally: results fed chunk by chunk, ranks merged from their partials.

:func:`~msprobe_core.default_plugins.summary.summary.summarize` is "feed every chunk of every result and ask":

* a :class:`ViewAccumulator` takes the chunks of one result (:class:`~msprobe_core.default_plugins.summary.chunks.ResultChunk`,
  in row order, or parts of a :class:`~msprobe_core.result.ResultTable` with :meth:`ViewAccumulator.feed_table`)
  and gives a :class:`ViewPartial`: its verdict counts, matched/unmatched rows, first-divergence candidates,
  worst-row candidates with the cells the summary shows, where the ``-da`` analysis' rows are, and an
  ``extra`` dict for other consumers (the HTML report's aggregates). A partial is small (a few KB whatever
  the row count) and picklable: a rank run on a worker sends back its partial instead of its table;
* a :class:`SummaryAccumulator` takes the partials in result order and makes the summary dict, the same
  whatever the chunk sizes, whichever process built each partial, in whatever order ranks finished.

Memory is bounded by one chunk (plus what the chunk's producer holds). A table of a plugin's mode whose
rows are named by their files (``MetricSpec.row_names``) is the exception: its rows may be sorted otherwise
and are put in execution order only over every row, so its chunks are gathered (such tables are small: one
row per dumped tensor file).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from msprobe_core.plugin import MODE_TENSOR, gc_paused
from msprobe_core.plugin import result_columns as C

from .chunks import CHUNK_ROWS, ResultChunk, concat_chunks, table_chunks, view_chunks
from .divergence import (
    AnalysisQuery,
    Divergence,
    DivergenceScan,
    analysis_choice,
    analysis_queries,
    choose_divergence,
    mixed_labels,
)
from .drift import DriftScan
from .rowsearch import RowSearch
from .tree import NodeStats
from .views import VERDICT_LEVEL, VERDICTS, ResultHead, ResultView, head_of, view_grammar
from .worst import WorstRows, merge_worst, worst_rows_metric

#: How many worst rows a summary lists.
WORST_ROWS = 10


#: ``ResultTable.meta`` key of old: lines a stage wrote for the run's summary (now ``ResultNotes.summary_notes``)
NOTES_KEY = "notes"


@dataclass
class ViewPartial(ResultHead):
    """What the summary keeps of one result (one rank pair, one part of a mixed dump…).

    ``label``, ``mode``, ``dump_mode``, ``columns``, ``files``, ``frameworks``, ``level``: as the
    result's :class:`~msprobe_core.default_plugins.summary.views.ResultView` has them; ``rows``, ``unmatched`` and
    ``verdicts`` (``pass``/``warning``/``error`` counts) over every row; ``first_row``: the name of
    the first row in execution order (a mixed dump's part tells by it whether a divergence was carried
    in). ``divergence``, ``worst`` and ``search`` are the candidates of the first divergence, the
    worst rows and the rows the ``-da`` analysis names. ``node_stats``: every call's counts (the per-module
    answers and the report's model tree; ``None`` unless asked for); ``notes``: what the stages said about the
    result for the summary (a mapper's account). ``extra``: what the HTML report's sampled sink carries with the
    partial (its sample), until the report registers a partial of its own (``msprobe_register_partials``).
    """

    rows: int = 0
    unmatched: int = 0
    verdicts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(VERDICTS, 0))
    #: rows whose tensor data could not be read (their verdict: ``warning``, see ``verdict_messages.MSG_UNREAD``)
    not_compared: int = 0
    #: rows no verdict rule judged (their rule's default plugin is off: ``ResultNotes.not_judged``), counted here
    #: and not as ``pass``
    not_judged: int = 0
    #: the unmatched rows by kind (:func:`~msprobe_core.default_plugins.summary.unpaired.row_kind`: module, api, backward, other)
    unmatched_kinds: dict[str, int] = field(default_factory=dict)
    #: the golden dump's rows and how many of them no target row took (``None``: not known, e.g. from result
    #: files: a table lists the target's rows only); set once per result by the match stage's account
    golden_rows: int | None = None
    golden_unmatched: int | None = None
    first_row: str | None = None
    divergence: DivergenceScan = field(default_factory=DivergenceScan)
    worst: WorstRows = field(default_factory=lambda: WorstRows(WORST_ROWS))
    search: RowSearch = field(default_factory=lambda: RowSearch(()))
    #: the first matched row whose values differ at all (a later step's difference carried in: see report/drift.py)
    drift: DriftScan = field(default_factory=DriftScan)
    node_stats: NodeStats | None = None
    notes: list[str] = field(default_factory=list)
    #: the HTML report's sample of the result (the ``report`` plugin's ``ViewSample``), made where the job ran
    sample: Any = None

    def first_divergence(self) -> Divergence | None:
        """This result's own first divergence (labelled with this partial's label)."""
        d = self.divergence.result()
        return None if d is None else replace(d, label=self.label)


class ViewAccumulator:
    """Chunks of one result in, a :class:`ViewPartial` out.

    Feed the chunks in row order (:meth:`feed`; each chunk's ``start`` must be the number of rows fed
    before it), or whole tables and parts of tables (:meth:`feed_table`), then call :meth:`finish` once.
    ``queries``: the nodes of a ``-da`` analysis whose rows the summary names
    (:attr:`SummaryAccumulator.queries`); ``limit``: how many worst rows are kept; ``tree``: also count
    each call for the HTML report's model tree (:class:`~msprobe_core.default_plugins.summary.tree.NodeStats` in ``extra``).
    """

    def __init__(self, queries: Sequence[AnalysisQuery] = (), limit: int = WORST_ROWS, tree: bool = False) -> None:
        self._queries = tuple(queries)
        self._limit = limit
        self._tree = tree
        self._partial: ViewPartial | None = None
        #: the chunks of a result put in execution order only over every row (see the module's doc)
        self._gathered: list[ResultChunk] = []
        self._gather = False
        self._origin = 0  # the first row fed (a continuation's, see continued())

    @property
    def rows(self) -> int:
        """Rows fed so far."""
        if self._gathered:
            return sum(len(c) for c in self._gathered)
        return self._partial.rows if self._partial is not None else 0

    def feed(self, chunk: ResultView) -> None:
        """Take the next chunk of the result (a :class:`~msprobe_core.default_plugins.summary.chunks.ResultChunk`, or a whole
        :class:`~msprobe_core.default_plugins.summary.views.ResultView` as the only chunk)."""
        start = chunk.start if isinstance(chunk, ResultChunk) else 0
        if start != self._origin + self.rows:
            raise ValueError(f"chunk of rows {start}:{start + len(chunk)} fed after {self._origin + self.rows} rows")
        if self._partial is None:
            self._partial = ViewPartial(*head_of(chunk), worst=WorstRows(self._limit), search=RowSearch(self._queries))
            self._gather = view_grammar(chunk) is not None
        if self._gather:  # execution order is known only over every row (see the module's doc)
            self._gathered.append(chunk if isinstance(chunk, ResultChunk) else ResultChunk(
                chunk.label, chunk.mode, chunk.columns, chunk.cells, chunk.files, chunk.frameworks, chunk.level,
                chunk.dump_mode))
            return
        self._take(chunk, start)

    def feed_table(self, table: Any, start: int = 0) -> None:
        """Take a :class:`~msprobe_core.result.ResultTable`, or the part of a result whose first row is row
        ``start`` of the whole (parts in row order), in chunks of :data:`~msprobe_core.default_plugins.summary.chunks.CHUNK_ROWS`."""
        frameworks = self._partial.frameworks if self._partial is not None else None
        with gc_paused():
            for chunk in table_chunks(table, start=start, frameworks=frameworks):
                self.feed(chunk)
        self.note_table(table)

    def note_table(self, table: Any) -> None:
        """Carry what the stages said about ``table`` for the summary (``meta.summary_notes``: a mapper's account
        of how it paired the rows, such as ``--auto-map``'s) into the partial, once per result."""
        meta = getattr(table, "meta", None)
        notes = getattr(meta, "summary_notes", None)
        if notes and self._partial is not None and not self._partial.notes:
            self._partial.notes = [str(n) for n in notes]
        if self._partial is not None:
            note_pairing(self._partial, meta)
            if getattr(meta, "not_judged", False):  # an N/A Result reads as pass: these rows were never judged
                p = self._partial
                p.not_judged += p.verdicts["pass"]
                p.verdicts["pass"] = 0

    def _take(self, chunk: ResultView, start: int) -> None:
        p = self._partial
        assert p is not None
        n = len(chunk)
        if not n:
            return
        if p.rows == 0:
            p.first_row = chunk.names[chunk.order()[0]]
        p.rows += n
        for verdict, count in Counter(chunk.verdicts()).items():
            p.verdicts[verdict] += count
        unmatched = chunk.unmatched()
        p.unmatched += sum(unmatched)
        count_kinds(p.unmatched_kinds, chunk.names, unmatched)
        p.not_compared += not_compared_rows(chunk)
        # the scans that read every row first: the ones that stop at their first hit read their head only, with
        # what those parsed already (chunks.head_first)
        p.worst.feed(chunk, start)
        if self._tree:
            if p.node_stats is None:
                p.node_stats = NodeStats()
            p.node_stats.feed(chunk, start)
        p.divergence.feed(chunk, start)
        p.drift.feed(chunk, start)
        p.search.feed(chunk, start)

    def continued(self, start: int) -> ViewAccumulator:
        """A new accumulator for the rows of this result from row ``start`` on, made by another process
        while this one takes the rows before; :meth:`absorb` takes its partial back (see
        :mod:`msprobe_core.pipeline.sink`: a summary sink's optional pair of methods)."""
        later = ViewAccumulator(self._queries, self._limit, self._tree)
        later._origin = start
        return later

    def absorb(self, later: ViewPartial) -> None:
        """Take the partial of a :meth:`continued` accumulator whose first row is the row after everything fed
        here: the partial is then the one of feeding those rows here (results whose chunks are gathered are not
        split)."""
        p = self._partial
        if p is None or self._gathered:
            raise ValueError("a continuation is absorbed after the rows before it, and not into a gathered result")
        p.rows += later.rows
        p.unmatched += later.unmatched
        p.not_compared += later.not_compared
        p.not_judged += later.not_judged
        for kind, count in later.unmatched_kinds.items():
            p.unmatched_kinds[kind] = p.unmatched_kinds.get(kind, 0) + count
        if p.golden_rows is None:  # the match stage's account, whichever chunk's table carried it
            p.golden_rows, p.golden_unmatched = later.golden_rows, later.golden_unmatched
        for verdict, count in later.verdicts.items():
            p.verdicts[verdict] = p.verdicts.get(verdict, 0) + count
        p.divergence.absorb(later.divergence)
        p.drift.absorb(later.drift)
        p.worst.absorb(later.worst)
        p.search.absorb(later.search)
        if later.node_stats is not None:
            if p.node_stats is None:
                p.node_stats = NodeStats()
            p.node_stats.absorb(later.node_stats)

    def finish(self, files: Iterable[Path | str] | None = None) -> ViewPartial:
        """The partial of everything fed (``files``: the result's files, when known only now)."""
        if self._partial is None:
            raise ValueError("no chunk was fed")
        if self._gathered:
            whole = concat_chunks(self._gathered)
            self._gathered = []
            self._take(whole, 0)
        if files is not None:
            self._partial.files = [Path(f) for f in files]
        return self._partial


def note_pairing(partial: ViewPartial, meta: Any) -> None:
    """Take the match stage's account of the golden side (a result's ``meta.pairing``, see
    :attr:`msprobe_core.plugin.MatchNotes.pairing`) into ``partial``, once per result."""
    pairing = getattr(meta, "pairing", None)
    if pairing and partial.golden_rows is None:
        partial.golden_rows = int(pairing["golden_rows"])
        partial.golden_unmatched = int(pairing["golden_unmatched"])


def count_kinds(kinds: dict[str, int], names: Sequence[str], unmatched: Sequence[bool]) -> None:
    """Add the kinds of the unmatched rows among ``names`` to ``kinds``."""
    from .unpaired import row_kind

    for name, alone in zip(names, unmatched):
        if alone:
            kind = row_kind(name)
            kinds[kind] = kinds.get(kind, 0) + 1


def not_compared_rows(chunk: ResultView) -> int:
    """Rows of a tensor-mode chunk whose ``Err_message`` says their tensor data could not be read."""
    if chunk.mode != MODE_TENSOR:
        return 0
    from msprobe_core.default_plugins.msprobe_verdicts import messages as verdict_messages

    return sum(verdict_messages.UNREAD_PREFIX in str(c) for c in chunk.column(C.ERR_MESSAGE) or ())


def view_partial(view: ResultView, queries: Sequence[AnalysisQuery] = (), *, rows: int = CHUNK_ROWS,
                 limit: int = WORST_ROWS, tree: bool = False) -> ViewPartial:
    """The partial of a whole view, fed in chunks of ``rows`` rows (``tree``: see :class:`ViewAccumulator`)."""
    acc = ViewAccumulator(queries, limit, tree)
    for chunk in view_chunks(view, rows):
        acc.feed(chunk)
    return acc.finish()


def table_partial(table: Any, files: Iterable[Path | str] = ()) -> ViewPartial:
    """The partial of an in-memory :class:`~msprobe_core.result.ResultTable` (what a rank's worker sends back)."""
    acc = ViewAccumulator()
    acc.feed_table(table)
    return acc.finish(files)


class SummaryAccumulator:
    """Partials of the results of a run in, the run's summary dict out.

    ``analysis``: the ``-da`` answer (its ``diff_analyze_*.json`` path or document, or a
    :class:`~msprobe_core.default_plugins.summary.divergence.Divergence`), when it ran; make each result's
    :class:`ViewAccumulator` with :meth:`view_accumulator` so that it looks for the analysis' rows.
    """

    def __init__(self, analysis: Any = None, limit: int = WORST_ROWS, tree: bool = False) -> None:
        self.analysis = analysis
        self.limit = limit
        #: whether the results' calls are counted for the HTML report's model tree
        self.tree = tree
        #: the analysis' nodes whose rows the summary names (empty without ``-da``)
        self.queries = tuple(analysis_queries(analysis))
        self.partials: list[ViewPartial] = []
        #: the steps only one run has, when the run compared dump roots step by step (``summary()["steps"]``)
        self.steps_absent: Sequence[Mapping[str, str]] = ()
        #: per step, the ``-da`` analysis of that step (its first divergence in ``summary()["steps"]``)
        self.step_analyses: Mapping[str, Any] = {}
        #: the run's two inputs as given (target, golden): ``summary()["target"]``/``["golden"]`` (``None``: not
        #: known, e.g. a report of result files)
        self.inputs: tuple[str, str] | None = None
        #: the least share of a side's rows that must have found a counterpart
        #: (:data:`~msprobe_core.default_plugins.summary.unpaired.MIN_MATCHED`; ``--min-matched``)
        self.min_matched: float | None = None

    def view_accumulator(self) -> ViewAccumulator:
        """A :class:`ViewAccumulator` for the next result."""
        return ViewAccumulator(self.queries, self.limit, self.tree)

    def searched(self, partial: ViewPartial) -> bool:
        """Whether ``partial`` was made looking for this run's analysis rows (a rank's worker does not know them)."""
        return partial.search.queries == self.queries

    def add(self, partial: ViewPartial) -> None:
        """The partial of the next result (results in order: rank order, part order)."""
        self.partials.append(partial)

    def add_view(self, view: ResultView, rows: int = CHUNK_ROWS) -> None:
        """A whole view, fed in chunks of ``rows`` rows."""
        self.add(view_partial(view, self.queries, rows=rows, limit=self.limit, tree=self.tree))

    def summary(
        self,
        *,
        files: Iterable[Path | str] = (),
        errors: Iterable[str] = (),
        unrecognised: Iterable[Mapping[str, Any]] = (),
    ) -> dict[str, Any]:
        """The summary as :func:`~msprobe_core.default_plugins.summary.summary.summarize` gives it."""
        partials = self.partials
        counts = dict.fromkeys(VERDICTS, 0)
        total = unmatched = not_compared = not_judged = 0
        parts = []
        modes: list[str] = []
        compared_as: list[str] = []
        frameworks: list[dict[str, str]] = []
        for p in partials:
            for k in VERDICTS:
                counts[k] += p.verdicts[k]
            total += p.rows
            unmatched += p.unmatched
            not_compared += p.not_compared
            not_judged += p.not_judged
            dump_mode = p.dump_mode or p.mode
            if dump_mode not in modes:
                modes.append(dump_mode)
            if p.mode not in compared_as:
                compared_as.append(p.mode)
            fw = {"target": p.frameworks[0], "golden": p.frameworks[1]} if p.frameworks else None
            if fw and fw not in frameworks:
                frameworks.append(fw)
            parts.append({
                "rank": p.label,
                "mode": dump_mode,
                "compared_as": p.mode,
                "rows": p.rows,
                "matched": p.rows - p.unmatched,
                "unmatched": p.unmatched,
                "verdicts": dict(p.verdicts),
                "not_compared": p.not_compared,
                "golden_rows": p.golden_rows,
                "golden_unmatched": p.golden_unmatched,
                "files": [str(Path(f).resolve()) for f in p.files],
            })
        chosen, per_view = self._first_divergence()
        all_files = [str(Path(f).resolve()) for p in partials for f in p.files]
        for f in files:
            s = str(Path(f).resolve())
            if s not in all_files:
                all_files.append(s)
        worst_level = max((VERDICT_LEVEL[k] for k in VERDICTS if counts[k]), default=0)
        worst = merge_worst([(p.label, p.worst) for p in partials], self.limit)
        summary = {
            "schema": "msprobe-core/summary/2",
            "target": self.inputs[0] if self.inputs else None,
            "golden": self.inputs[1] if self.inputs else None,
            "modes": modes,
            "compared_as": compared_as,
            "frameworks": frameworks,
            "rows": total,
            "matched": total - unmatched,
            "unmatched": unmatched,
            "verdicts": counts,
            "not_compared": not_compared,
            "worst_verdict": VERDICTS[worst_level] if total > not_judged else None,
            "first_divergence": chosen.as_dict() if chosen else None,
            "first_divergence_by_rank": [d.as_dict() for d in per_view],
            "worst_rows": worst,
            "worst_rows_metric": worst_rows_metric(worst),
            "ranks": parts,
            "files": all_files,
            "errors": list(errors),
            "unrecognised": [dict(r) for r in unrecognised],
        }
        from .unpaired import unpaired_view

        summary["unpaired"] = unpaired_view(partials, frameworks, self.inputs, self.min_matched)
        notes = [{"rank": p.label, "text": n} for p in partials for n in p.notes]
        notes += [{"rank": p.label, "text": n} for p in partials if (n := p.divergence.form_note())]
        if notes:  # only when a stage said something: the summary of every other run keeps its keys
            summary["notes"] = notes
        if not_judged:  # only when no rule judged rows (-p no:msprobe_verdicts): the rows the pass count leaves out
            summary["not_judged"] = not_judged
            # the rule is off for the whole run: a row that reads as pass is one no rule judged
            for row in [*worst, summary["first_divergence"], *summary["first_divergence_by_rank"]]:
                for key in ("result", "verdict"):
                    if row and row.get(key) == "pass":
                        row[key] = "not judged"
        from .steps_view import add_steps

        add_steps(summary, partials, self.steps_absent, self.step_analyses)
        return summary

    def _first_divergence(self) -> tuple[Divergence | None, list[Divergence]]:
        """The rule of :func:`~msprobe_core.default_plugins.summary.divergence.first_divergence` over the partials."""
        partials = self.partials
        per_view = [d for d in (p.first_divergence() for p in partials) if d is not None]
        if isinstance(self.analysis, Divergence):
            return self.analysis, per_view
        chosen = None
        if self.queries:
            none = [None] * len(self.queries)
            found = [(p.label, p.search.best if self.searched(p) else none) for p in partials]
            chosen = analysis_choice(self.queries, found)
        if chosen is None:
            mixed = mixed_labels([p.label for p in partials])
            chosen = choose_divergence(per_view, {p.label: p.first_row for p in partials}, mixed)
        return chosen, per_view
