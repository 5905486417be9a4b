r"""The HTML report of a large result: a bounded sample of its rows, chosen chunk by chunk.

Above :func:`sample_threshold` rows in all (:data:`BIG_ROWS`, or ``MSPROBE_REPORT_SAMPLE_ABOVE``), the
report does not embed every cell: the full table is in the result files, the summary (counts, worst
rows, first divergence) is over every row, and the page shows a sample. Each result is fed to a
:class:`ViewSampler` in chunks of rows (:class:`~msprobe_core.default_plugins.summary.chunks.ResultChunk`, execution
order: whole views are cut by :func:`sample_views`, a streamed producer feeds its chunks as they come),
which keeps, within a :class:`Budget`:

* every non-passing row up to a cap, then an evenly spaced sample of the later ones;
* the worst rows by the mode's main metric (ranked as :mod:`~msprobe_core.default_plugins.summary.worst` ranks them);
* the neighbourhood (``radius`` rows either side) of every candidate of the first divergence (the
  rule's first hit, the first error row, the first unmatched error row) and of the calls a ``-da``
  analysis names, and the first row;
* an evenly spaced sample of the passing rows;
* per bucket of execution positions (at most ``buckets``), the rows holding the lowest and highest
  value of each plotted metric, so every spike of the full plot is in the sampled one;
* per call (groups of consecutive calls above ``groups``), its worst row, so the heat map keeps it.

The result is a :class:`ViewSample`: a few tens of thousands of rows whatever the row count, and
picklable, so a rank's worker can send it back instead of its table. Which rows are kept does not
depend on the chunk sizes. :func:`~msprobe_core.default_plugins.report.html.build_payload` makes the page from it.

A streamed run, which knows its row count only at the end, makes one :class:`RowAllowance` per report
and one ``ViewSampler(Budget.for_views(results), watch, allowance)`` per result, feeds each its chunks,
and passes the samples to :func:`~msprobe_core.default_plugins.report.html.write_report` (``samples=``): while all
results together fit the threshold every row is kept and the page is the whole-table one.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np

from msprobe_core.plugin import result_columns as C

from .buckets import Buckets, Decimated, TopRows
from .seams import (
    CHUNK_ROWS,
    VERDICT_LEVEL,
    CallNumbers,
    CellWindow,
    ResultChunk,
    ResultHead,
    ResultView,
    SpelledColumns,
    concat_chunks,
    first_divergence_of,
    head_of,
    main_metric,
    plot_metrics,
    view_chunks,
    view_grammar,
)

#: Above this many rows (all results together) the report shows a sample; at or below it, every row.
BIG_ROWS = 200_000
#: Sets another threshold (a number of rows; tests and users with a big browser machine).
THRESHOLD_ENV = "MSPROBE_REPORT_SAMPLE_ABOVE"


def sample_threshold(explicit: int | None = None) -> int:
    """The row count above which the report shows samples: ``explicit``, else ``$MSPROBE_REPORT_SAMPLE_ABOVE``
    (an unreadable value is ignored), else :data:`BIG_ROWS`."""
    if explicit is not None:
        return max(0, int(explicit))
    text = os.environ.get(THRESHOLD_ENV, "").strip().replace("_", "")
    return max(0, int(text)) if text.isdigit() else BIG_ROWS


@dataclass(frozen=True)
class Budget:
    """What one result's sample may hold (see the module's doc)."""

    nonpass_first: int = 20_000
    nonpass_sample: int = 20_000
    pass_sample: int = 10_000
    worst: int = 1_000
    radius: int = 500
    buckets: int = 4096
    groups: int = 2048

    @classmethod
    def for_views(cls, views: int) -> Budget:
        """The budget of each of ``views`` results: the whole for up to four, shared beyond (with floors)."""
        n = max(1, int(views))
        if n <= 4:
            return cls()
        return cls(nonpass_first=max(50, 80_000 // n), nonpass_sample=max(50, 80_000 // n),
                   pass_sample=max(20, 40_000 // n), worst=max(20, 4_000 // n), radius=max(10, min(500, 2_000 // n)),
                   buckets=max(32, min(4096, 16_384 // n)), groups=max(32, min(2048, 16_384 // n)))


@dataclass
class ViewSample(ResultHead):
    """The sample of one result: the rows shown (``positions``, ascending execution positions in the result,
    and ``cells`` per column, row ``k`` at ``positions[k]``); ``total`` and ``verdicts``: every row's."""

    total: int = 0
    positions: list[int] = field(default_factory=list)
    cells: dict[str, list[str]] = field(default_factory=dict)
    #: rows of the whole result per verdict (``pass``, ``warning``, ``error``)
    verdicts: dict[str, int] = field(default_factory=dict)
    #: the :class:`Budget` the rows were chosen within, as a dict
    budget: dict[str, int] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Whether every row of the result is here."""
        return len(self.positions) == self.total

    def view(self) -> ResultView:
        """The rows shown, as a view (row ``k`` is position ``positions[k]`` of the result)."""
        return ResultView(self.label, self.mode, self.columns, self.cells, list(self.files), self.frameworks,
                          self.level, self.dump_mode)


_CODES = {v: np.int8(k) for v, k in VERDICT_LEVEL.items()}
def _numbers(chunk: ResultView, column: str | None) -> np.ndarray | None:
    if column is None or column not in chunk.cells:
        return None
    parsed = chunk.numbers(column)
    return None if parsed is None else np.array(parsed, dtype=np.float64)


def _badness(metric: str, values: np.ndarray) -> np.ndarray:
    """How bad each value is, as the heat map colours it (larger is worse; NaN: no value)."""
    return 1.0 - values if metric == C.COSINE else np.abs(values)


def _take(chunk: ResultView, rows: list[int]) -> list[tuple[str, ...]]:
    """The cells of rows ``rows`` (ascending, relative to the chunk), one tuple per row, in column order."""
    cells = chunk.cells
    texts_at = getattr(cells, "texts_at", None)  # SpelledColumns, CellWindow: without spelling/slicing every row
    if texts_at is not None:
        columns = [texts_at(c, rows) for c in chunk.columns]
    else:
        pick = itemgetter(*rows)
        columns = [pick(cells[c]) if len(rows) > 1 else (cells[c][rows[0]],) for c in chunk.columns]
    return list(zip(*columns))


class RowAllowance:
    """The rows the samplers of one report keep whole: every row while all results together have at most
    ``limit`` rows (the page is then the whole-table one), only each result's sample once they have more.

    One per report, shared by its results' :class:`ViewSampler` s (a streamed run does not know its row
    count before the end); while it is open, memory grows with the rows, up to ``limit``."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = sample_threshold(limit)
        self.used = 0
        self.open = True

    def take(self, rows: int) -> bool:
        """Count ``rows`` more; whether every row is still kept."""
        if self.open:
            self.used += rows
            self.open = self.used <= self.limit
        return self.open


class ViewSampler:
    """Chunks of one result in (execution order, each chunk's ``start`` the rows fed before it), a
    :class:`ViewSample` out. ``watch``: calls whose rows are kept with their neighbourhood (the nodes of a
    ``-da`` analysis and the communication calls it names). ``allowance``: every row is kept while it is
    open (see :class:`RowAllowance`)."""

    def __init__(self, budget: Budget | None = None, watch: Iterable[str] = (),
                 allowance: RowAllowance | None = None) -> None:
        self.budget = budget or Budget()
        self.allowance = allowance
        self.watch = set(watch)
        self._meta: ResultView | None = None
        self._gathered: list[ResultView] = []  # chunks put in execution order only over every row
        self._gather = False
        self.total = 0
        self._rows: dict[int, tuple[str, ...]] = {}
        self._fixed: set[int] = set()
        self._recent: deque[tuple[int, ResultView]] = deque()
        self._pending = 0  # rows before this position (past the chunks seen) belong to a neighbourhood
        self._live = 0
        self._found = self._error = self._unmatched_error = False
        self._watched: set[str] = set()
        self._calls = CallNumbers()
        self._np_first = 0

    def _start(self, chunk: ResultView) -> None:
        self._meta = chunk
        grammar = view_grammar(chunk)
        self._gather = grammar is not None
        self._calls = CallNumbers(grammar)
        b = self.budget
        self._plot = [m for m in plot_metrics(chunk.mode) if m in chunk.cells]
        self._main = main_metric(chunk.mode)
        if self._main is not None and self._main[0] not in chunk.cells:
            self._main = None
        self._nonpass = Decimated(b.nonpass_sample)
        self._passing = Decimated(b.pass_sample)
        self._worst = TopRows(b.worst, 3)
        self._buckets = Buckets(b.buckets, len(self._plot))
        self._heat = Buckets(b.groups, 1, lows=False)
        self._counts = np.zeros(len(VERDICT_LEVEL), dtype=np.int64)

    def feed(self, chunk: ResultView) -> None:
        """Take the next chunk of the result (a whole view counts as one chunk)."""
        if self._meta is None:
            self._start(chunk)
        if self._gather:  # rows named by their files: execution order is known only over every row
            self._gathered.append(chunk)
            return
        self._take_rows(chunk)

    def _take_rows(self, chunk: ResultView) -> None:
        n = len(chunk)
        if not n:
            return
        b, start = self.budget, self.total
        self.total += n
        pos = np.arange(start, start + n, dtype=np.int64)
        verd = np.fromiter(map(_CODES.__getitem__, chunk.verdicts()), dtype=np.int8, count=n)
        self._counts += np.bincount(verd, minlength=len(self._counts))
        unmatched = np.fromiter(chunk.unmatched(), dtype=bool, count=n)
        values = [_numbers(chunk, m) for m in self._plot]
        values = [np.full(n, np.nan) if v is None else v for v in values]
        fixed = set(range(start, min(self.total, self._pending)))  # the tail of an earlier neighbourhood
        keep: list[np.ndarray] = []
        bad = pos[verd > 0]
        first = bad[: max(0, b.nonpass_first - self._np_first)]
        self._np_first += len(first)
        fixed.update(first.tolist())
        keep += [self._nonpass.offer(bad[len(first):]), self._passing.offer(pos[verd == 0])]
        keep.append(self._offer_worst(chunk, verd, pos))
        self._buckets.add(pos, pos, [v if m == C.COSINE else np.abs(v) for m, v in zip(self._plot, values)], verd)
        calls, starts = self._calls.feed(chunk.names)
        self._offer_heat(verd, pos, calls, values)
        keep.append(np.array(sorted(self._buckets.positions()), dtype=np.int64))
        keep.append(self._heat.hi_pos[0])
        marks = [0] if start == 0 else []
        marks += self._divergence_marks(chunk, verd, unmatched, start)
        for i, _, nd in starts:
            if nd in self.watch and nd not in self._watched:
                self._watched.add(nd)
                marks.append(start + i)
        for p in marks:
            fixed.update(range(max(0, p - b.radius), min(self.total, p + b.radius + 1)))
            self._pending = max(self._pending, p + b.radius + 1)
        self._fixed |= fixed
        wanted = set(np.concatenate(keep).tolist())
        wanted |= fixed
        if self.allowance is not None and self.allowance.take(n):
            wanted.update(range(start, self.total))
        self._extract(chunk, start, wanted)
        self._recent.append((start, chunk))
        while len(self._recent) > 1 and self._recent[1][0] <= self.total - b.radius:
            self._recent.popleft()
        if len(self._rows) > 2 * self._live + 4096 and not self._whole():
            self._prune()

    def _offer_worst(self, chunk: ResultView, verd: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """The worst-rows candidates of the chunk, ranked as :func:`~msprobe_core.default_plugins.summary.worst.worst_rows` ranks."""
        level = -verd.astype(np.float64)
        if self._main is None:
            rows = verd > 0
            return self._worst.offer([level[rows], np.ones(int(rows.sum())), pos[rows].astype(np.float64)], pos[rows])
        metric, larger_worse = self._main
        x = _numbers(chunk, metric)
        x = np.full(len(pos), np.nan) if x is None else x
        numbered = ~np.isnan(x)
        if larger_worse:
            size = np.abs(x)
            stand_in = C.known_columns().stand_in(metric)
            if stand_in and np.isinf(size).any():  # an infinite relative error ranks as its finite difference
                fb = _numbers(chunk, stand_in)
                if fb is not None:
                    use = np.isinf(size) & np.isfinite(fb)
                    size[use] = np.abs(fb[use])
            value = -size
        else:
            value = x
        rows = (verd > 0) | numbered
        # what the main metric cannot rank follows in execution order, as worst.WorstRows ranks: no finite
        # number (kind 1), then the value meaning no difference (kind 2)
        kind = np.where(numbered & np.isfinite(value), 0.0, 1.0)
        best = C.known_columns().best(metric)
        if best is not None:
            kind[(kind == 0) & (value == (-abs(best) if larger_worse else best))] = 2.0
        key = np.where(kind > 0, pos.astype(np.float64), value)
        return self._worst.offer([level[rows], kind[rows], key[rows]], pos[rows])

    def _offer_heat(self, verd: np.ndarray, pos: np.ndarray, calls: np.ndarray, values: list[np.ndarray]) -> None:
        """Per call: a key that finds its worst row (verdict, then the main metric)."""
        main = self._plot[0] if self._plot else None
        if main is not None:
            worst = np.maximum(_badness(main, values[0]), 0.0)
            frac = np.full(len(worst), -0.5)  # no value: below every value
            frac[np.isinf(worst)] = 1.0
            finite = np.isfinite(worst)
            frac[finite] = worst[finite] / (1.0 + worst[finite])
        else:
            frac = np.zeros(len(pos))
        key = verd.astype(np.float64) * 2.0 + frac
        self._heat.add(calls, pos, [key], verd)

    def _divergence_marks(self, chunk: ResultView, verd: np.ndarray, unmatched: np.ndarray, start: int) -> list[int]:
        """Positions of this chunk that may be the result's first divergence (the rule's first hit, the first
        error row, the first unmatched error row): their neighbourhoods are kept, whichever the summary names."""
        marks = []
        if not self._error:
            hit = np.flatnonzero((verd == 2) & ~unmatched)
            if len(hit):
                self._error = True
                marks.append(start + int(hit[0]))
        if not self._unmatched_error:
            hit = np.flatnonzero((verd == 2) & unmatched)
            if len(hit):
                self._unmatched_error = True
                marks.append(start + int(hit[0]))
        if not self._found:
            d = first_divergence_of(chunk)
            if d is not None and d.source != "verdict":
                self._found = True
                marks.append(start + d.index)
        return marks

    def _extract(self, chunk: ResultView, start: int, wanted: set[int]) -> None:
        """Spell the rows of ``wanted`` not kept yet (this chunk's, and the recent chunks' for neighbourhoods)."""
        missing = sorted(p for p in wanted if p not in self._rows)
        sources = [*self._recent, (start, chunk)]
        for s, c in sources:
            rows = [p - s for p in missing if s <= p < s + len(c)]
            if rows:
                self._rows.update(zip((s + i for i in rows), _take(c, rows)))

    def _whole(self) -> bool:
        """Whether every row is kept yet (the report's rows fit its allowance so far)."""
        return self.allowance is not None and self.allowance.open

    def _referenced(self) -> set[int]:
        live = set(self._fixed)
        for arr in (self._nonpass.positions, self._passing.positions, self._worst.positions, self._heat.hi_pos[0]):
            live.update(arr.tolist())
        live.update(self._buckets.positions())
        live.discard(-1)
        return live

    def _prune(self) -> None:
        live = self._referenced()
        self._rows = {p: cells for p, cells in self._rows.items() if p in live}
        self._live = len(self._rows)

    def finish(self) -> ViewSample:
        """The sample of everything fed."""
        if self._meta is None:
            raise ValueError("no chunk was fed")
        if self._gathered:
            chunks, self._gathered = self._gathered, []
            for chunk in _in_execution_order(chunks):
                self._take_rows(chunk)
        if not self._whole():
            self._prune()
        m = self._meta
        positions = sorted(self._rows)
        columns = list(zip(*(self._rows[p] for p in positions))) or [()] * len(m.columns)
        cells = {c: _shared(col) for c, col in zip(m.columns, columns)}
        verdicts = dict(zip(VERDICT_LEVEL, self._counts.tolist()))
        return ViewSample(*head_of(m), self.total, positions, cells, verdicts, asdict(self.budget))


def _shared(cells: Sequence[str]) -> list[str]:
    """The cells as a list in which equal texts are one object (a sample pickles to a fraction of the size:
    the stack cells of a call's rows are equal)."""
    seen: dict[str, str] = {}
    return [seen.setdefault(t, t) for t in cells]


def _in_execution_order(chunks: list[ResultView]) -> Iterable[ResultView]:
    """Chunks gathered, their rows put in execution order (:meth:`ResultView.order`), re-cut into chunks."""
    whole = concat_chunks(chunks) if len(chunks) > 1 else chunks[0]
    order = whole.order()
    cells = {c: [whole.cells[c][i] for i in order] for c in whole.columns}
    ordered = ResultView(whole.label, whole.mode, whole.columns, cells, list(whole.files), whole.frameworks,
                         whole.level, whole.dump_mode)
    return view_chunks(ordered)


def sample_views(views: Sequence[ResultView], analysis_calls: Iterable[str] = (), rows: int | None = None,
                 budget: Budget | None = None) -> list[ViewSample]:
    """The sample of each of ``views`` (whole views, cut into chunks here; ``analysis_calls``: see ``watch``;
    ``budget``: default ``Budget.for_views(len(views))``)."""
    budget = budget or Budget.for_views(len(views))
    size = max(1, rows or CHUNK_ROWS)
    out = []
    for view in views:
        sampler = ViewSampler(budget, analysis_calls)
        if isinstance(view.cells, SpelledColumns):
            chunks: Iterable[ResultView] = view_chunks(view, size)
        else:
            chunks = (ResultChunk(view.label, view.mode, view.columns,
                                  CellWindow(view.cells, a, min(len(view), a + size)), view.files, view.frameworks, view.level, view.dump_mode, start=a)
                      for a in range(0, max(1, len(view)), size))
        for chunk in chunks:
            _share_parsed(view, chunk)
            sampler.feed(chunk)
        out.append(sampler.finish())
    return out


def _share_parsed(view: ResultView, chunk: Any) -> None:
    """Give a chunk of ``view`` what the whole view has parsed already (the summary parsed its metric columns)."""
    parsed = view.__dict__.get("_numbers")
    start = getattr(chunk, "start", 0)
    stop = start + len(chunk)
    if parsed:
        chunk.__dict__["_numbers"] = {c: (None if v is None else v[start:stop]) for c, v in parsed.items()}
    unmatched = view.__dict__.get("_unmatched")
    if unmatched is not None:
        chunk.__dict__["_unmatched"] = unmatched[start:stop]


def watched_calls(analysis: Any) -> list[str]:
    """The calls a ``-da`` analysis names (its nodes and the communication calls they came through)."""
    from .seams import read_analysis

    doc = read_analysis(Path(analysis)) if isinstance(analysis, (str, Path)) else analysis
    if not isinstance(doc, dict):
        return []
    out = []
    for nodes in doc.values():
        for node in nodes if isinstance(nodes, list) else ():
            if isinstance(node, dict):
                out += [str(node[k]) for k in ("op_name", "via") if isinstance(node.get(k), str) and node[k]]
    return out


def sample_note(samples: Sequence[ViewSample]) -> dict[str, Any]:
    """What the page says about its samples: rows shown and in all, per verdict ``[shown, in all]``, the
    result files that hold every row, and how many non-passing rows of each result are all kept."""
    from .seams import VERDICTS, row_verdicts

    shown = dict.fromkeys(VERDICTS, 0)
    for s in samples:
        for v in row_verdicts(s.view()):
            shown[v] += 1
    return {
        "shown": sum(len(s.positions) for s in samples),
        "total": sum(s.total for s in samples),
        "verdicts": {v: [shown[v], sum(s.verdicts.get(v, 0) for s in samples)] for v in VERDICTS},
        "files": [str(f) for s in samples for f in s.files],
        "nonpass_first": min((s.budget.get("nonpass_first", 0) for s in samples), default=0),
    }
