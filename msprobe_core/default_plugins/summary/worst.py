"""The worst rows of a run: ranked by each mode's main metric (the column registry says which and which way)."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from msprobe_core.plugin import result_columns as C

from .chunks import view_slice
from .reasons import cell_number, people_text, row_reason
from .views import VERDICT_LEVEL, ResultView, main_metric, view_grammar

#: the metric column a summary names for an md5 row (its two md5 values)
MD5_METRIC = "MD5"


def worst_rows(views: Sequence[ResultView], limit: int = 10) -> list[dict[str, Any]]:
    """The ``limit`` worst rows: the worst verdict first, then the worst main metric.

    Within a verdict, rows ranked by a finite measure come first: the main metric, or, where a
    relative error is infinite while the absolute difference is finite (a zero golden statistic),
    that difference, which the row then shows. The rows the main metric cannot rank follow in
    execution order: no number (a cell like ``unsupported``; those only when not ``pass``), no
    finite one (a statistic that is itself inf or NaN), or, on a row that does not pass, the value
    meaning no difference (an ``error`` with Cosine 1: another rule failed it, its reason says which).
    md5 tables: the non-passing rows, errors first, in execution order, shown as
    ``<target MD5> vs <golden MD5>``. Each row carries its ``reason`` (:mod:`.reasons`), its cell
    as the table spells it (``cell``), that cell's number and unit (``value``, ``unit``) and its
    value rounded for people (``text``).
    """
    found = []
    for view in views:
        worst = WorstRows(limit)
        worst.feed(view)
        found.append((view.label, worst))
    return merge_worst(found, limit)


#: a ranked row: (−verdict level, 0 ranked by its measure / 1 no finite measure / 2 the value meaning no
#: difference, sort value (execution position for 1 and 2), row of the whole result)
Rank = tuple[int, int, float, int]


class WorstRows:
    """The candidates for :func:`worst_rows` of one result, fed chunk by chunk (picklable: a rank's partial).

    Keeps the ``limit`` best-ranked non-passing rows and the ``limit`` best passing rows by their
    main metric, each with its cells as the summary shows them, and the number of non-passing rows
    (passing rows are listed only when a result has fewer than ``limit`` others). Chunks are fed in
    row order with their first row ``offset``; a table of a mode whose rows are named by their files
    (``MetricSpec.row_names``) must be fed whole (its execution order, used to rank rows without a
    number, is known only over every row).
    """

    __slots__ = ("limit", "bad", "passing", "n_bad")

    def __init__(self, limit: int = 10) -> None:
        self.limit = limit
        self.bad: list[tuple[Rank, dict[str, Any]]] = []
        self.passing: list[tuple[Rank, dict[str, Any]]] = []
        self.n_bad = 0

    def __getstate__(self) -> tuple[Any, ...]:
        return self.limit, self.bad, self.passing, self.n_bad

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.limit, self.bad, self.passing, self.n_bad = state

    def feed(self, view: ResultView, offset: int = 0) -> None:
        """Rank the rows of ``view`` (a chunk whose first row is row ``offset`` of the result)."""
        limit = self.limit
        verdicts = view.verdicts()
        bad = [i for i, v in enumerate(verdicts) if v != "pass"]  # usually few: ranked on their own
        self.n_bad += len(bad)
        metric = main_metric(view.mode)
        parsed = view.numbers(metric[0]) if metric is not None else None
        sort_value = _sort_value(view, metric, parsed)
        nd_key = _no_difference_key(metric)
        position = _positions(view) if view_grammar(view) is not None else None

        def rank(key: float | None, i: int, level: int) -> Rank:
            # a finite measure showing a difference ranks by it; what it cannot rank follows in execution order
            kind = 1 if key is None or key == math.inf else 2 if key == nd_key else 0
            return level, kind, key if kind == 0 else float(offset + (position[i] if position else i)), offset + i  # type: ignore[return-value]

        ranked = bad
        if parsed is not None and len(bad) > 4 * limit:  # many: numpy picks the few that can rank first
            ranked = _first_ranked(bad, verdicts, parsed, metric, _absolute_fallback(view, metric[0]) if metric[1]
                                   else None, nd_key, offset, position, limit)  # type: ignore[index]
        cands = [(rank(sort_value(i) if parsed is not None and parsed[i] is not None else None, i,
                       -VERDICT_LEVEL[verdicts[i]]), i) for i in ranked]
        if cands:
            self.bad = heapq.nsmallest(limit, self.bad + [(r, _shown_row(view, i, metric, r[1])) for r, i in
                                                          heapq.nsmallest(limit, cands)])
        if parsed is not None and self.n_bad < limit:  # passing rows are listed only after every other one
            best = _best_keyed(lambda: _keyed_rows(view, metric, parsed), limit + len(bad), nd_key,  # type: ignore[arg-type]
                               position)
            kept = [(rank(key, i, 0), i) for key, i in best if verdicts[i] == "pass"][:limit]
            if kept:  # the best of the earlier chunks and of this one (spelled only when kept)
                merged = heapq.nsmallest(limit, self.passing + [(r, None) for r, _ in kept])
                shown = {r: _shown_row(view, i, metric, 0) for r, i in kept}
                self.passing = [(r, cells if cells is not None else shown[r]) for r, cells in merged]


    def absorb(self, later: WorstRows) -> None:
        """Carry on with ``later``, the candidates of the rows right after everything fed here (offsets
        numbered in the whole result, same limit): as if those rows had been fed here.

        Passing rows matter only while fewer than ``limit`` rows do not pass; then both sides kept theirs.
        """
        self.n_bad += later.n_bad
        self.bad = heapq.nsmallest(self.limit, self.bad + later.bad)
        if self.n_bad < self.limit:
            self.passing = heapq.nsmallest(self.limit, self.passing + later.passing)


def merge_worst(found: Sequence[tuple[str, WorstRows]], limit: int = 10) -> list[dict[str, Any]]:
    """:func:`worst_rows` of results whose rows were ranked by :class:`WorstRows` (``(label, ranked)`` in
    result order): the same rows in the same order, ties broken by result, then row."""
    cands = []
    for vi, (_, worst) in enumerate(found):
        cands.extend((r[0], r[1], r[2], vi, r[3], k) for k, (r, _) in enumerate(worst.bad))
        if worst.n_bad < limit:
            cands.extend((r[0], r[1], r[2], vi, r[3], -1 - k) for k, (r, _) in enumerate(worst.passing))
    out = []
    for *_, vi, _, k in heapq.nsmallest(limit, cands):
        label, worst = found[vi]
        shown = worst.bad[k][1] if k >= 0 else worst.passing[-1 - k][1]
        out.append({"rank": label, **shown})
    return out


def _shown_row(view: ResultView, i: int, metric: tuple[str, bool] | None, numbered: int) -> dict[str, Any]:
    """:func:`_shown` of row ``i`` read from a view of that row alone: only its cells are spelled (a chunk
    spells a column whole when it is first read, for the few rows a summary lists)."""
    return _shown(view_slice(view, i, i + 1), 0, metric, numbered)


def _shown(view: ResultView, i: int, metric: tuple[str, bool] | None, numbered: int) -> dict[str, Any]:
    """Row ``i`` of ``view`` as the summary lists it (its rank is added when the results are merged)."""
    if numbered == 0:
        col, cell = _numbered_cell(view, i, metric[0])  # type: ignore[index]
    else:
        col, cell = _unnumbered_cell(view, i, metric[0] if metric else None)
    value, unit = cell_number(cell) if col != MD5_METRIC else (None, "")
    return {"name": view.names[i], "metric": col, "value": value, "unit": unit, "cell": cell,
            "text": people_text(cell) if col != MD5_METRIC else cell, "result": view.verdicts()[i],
            "reason": row_reason(view, i)}


def _first_ranked(bad: list[int], verdicts: Sequence[str], parsed: list[float | None], metric: tuple[str, bool],
                  fallback: list[float | None] | None, nd_key: float | None, offset: int,
                  position: list[int] | None, limit: int) -> list[int]:
    """The ``limit`` rows of ``bad`` that rank first, found with numpy: the same :data:`Rank` that
    :meth:`WorstRows.feed` gives each row (the same float operations on every element), ordered as tuples
    compare; the rows are ranked again one by one, this time only those."""
    import numpy as np

    rows = np.asarray(bad, dtype=np.int64)
    level = -np.array([VERDICT_LEVEL[verdicts[i]] for i in bad], dtype=np.int64)
    values = [parsed[i] for i in bad]
    x = np.array(values, dtype=np.float64)  # None reads as NaN (a parsed number is never NaN)
    number = np.array([v is not None for v in values], dtype=bool)
    with np.errstate(invalid="ignore"):
        if not metric[1]:
            key = x.copy()
        else:
            key = -np.abs(x)
            if fallback is not None:  # an infinite relative error ranks by its finite absolute difference
                infinite = np.flatnonzero(number & np.isinf(x))
                for k in infinite.tolist():
                    key[k] = -_sort_abs(values[k], fallback[bad[k]])  # type: ignore[arg-type]
        key[~np.isfinite(key)] = math.inf  # _finite
    kind = np.where(~number | (key == math.inf), 1, np.where(key == nd_key, 2, 0)) if nd_key is not None else \
        np.where(~number | (key == math.inf), 1, 0)
    at = np.asarray(position, dtype=np.int64)[rows] if position else rows
    third = np.where(kind == 0, key, (offset + at).astype(np.float64))
    first = np.lexsort((offset + rows, third, kind, level))[:limit]
    return [bad[k] for k in sorted(first.tolist())]


def _sort_value(view: ResultView, metric: tuple[str, bool] | None, parsed: list[float | None] | None
                ) -> Any:
    """``row → number``, smaller is worse: the main metric (negated when larger is worse), an infinite relative
    error replaced by its finite absolute difference (the column's ``stand_in``, :mod:`msprobe_core.result_columns`)."""
    if metric is None or parsed is None:
        return lambda i: 0.0
    if not metric[1]:
        return lambda i: _finite(parsed[i])  # type: ignore[arg-type]
    fallback = _absolute_fallback(view, metric[0])
    if fallback is None:
        return lambda i: _finite(-abs(parsed[i]))  # type: ignore[arg-type]

    def value(i: int) -> float:
        x = abs(parsed[i])  # type: ignore[arg-type]
        return _finite(-(x if x != math.inf else _sort_abs(x, fallback[i])))

    return value


def _finite(key: float) -> float:
    """A sort value, or +inf (after every finite one) when it is not finite: no finite measure ranks it."""
    return key if math.isfinite(key) else math.inf


def _no_difference_key(metric: tuple[str, bool] | None) -> float | None:
    """The sort value of the main metric's value meaning no difference (Cosine 1, an error 0): it ranks
    after the rows the metric shows a difference on (on a failed row it cannot say why the row failed)."""
    best = C.known_columns().best(metric[0]) if metric is not None else None
    if best is None:
        return None
    return -abs(best) if metric[1] else best  # type: ignore[index]


def _best_keyed(keyed: Callable[[], Iterator[tuple[float, int]]], n: int, nd_key: float | None,
                position: list[int] | None) -> list[tuple[float, int]]:
    """The ``n`` best-ranked ``(sort value, row)`` of ``keyed()`` as :class:`WorstRows` ranks them: finite values
    showing a difference by value, then the infinite ones, then the no-difference ones, each in execution order.

    Every row of a passing table goes through here: one plain pass picks the ``n`` smallest values, which is the
    answer when all of them show a difference (the others sort last or after the answer); more passes are made
    only when fewer than ``n`` rows show one."""
    best = heapq.nsmallest(n, keyed())
    if all(k != math.inf and k != nd_key for k, _ in best):
        return best
    best = heapq.nsmallest(n, ((k, i) for k, i in keyed() if k != math.inf and k != nd_key))
    for wanted in (math.inf, nd_key):
        if len(best) >= n or wanted is None:
            break
        rows = [(k, i) for k, i in keyed() if k == wanted]
        if position is not None:
            rows.sort(key=lambda r: position[r[1]])
        best += rows[:n - len(best)]
    return best


def _keyed_rows(view: ResultView, metric: tuple[str, bool], parsed: list[float | None]
                ) -> Iterator[tuple[float, int]]:
    """``(sort value, row)`` of every row with a number, as :func:`_sort_value` ranks them (inlined: all rows)."""
    if not metric[1]:
        return ((x if x not in _INFINITE else math.inf, i) for i, x in enumerate(parsed) if x is not None)
    fallback = _absolute_fallback(view, metric[0])
    if fallback is None:
        return ((-abs(x) if x not in _INFINITE else math.inf, i) for i, x in enumerate(parsed) if x is not None)
    return ((-abs(x) if x not in _INFINITE else _finite(-_sort_abs(x, fallback[i])), i)
            for i, x in enumerate(parsed) if x is not None)


_INFINITE = (math.inf, -math.inf)


def _positions(view: ResultView) -> list[int]:
    """Each row's position in execution order."""
    position = [0] * len(view)
    for pos, i in enumerate(view.order()):
        position[i] = pos
    return position


def _absolute_fallback(view: ResultView, metric: str) -> list[float | None] | None:
    # an infinite relative error (a zero golden statistic) would rank every zero-golden row first
    col = C.known_columns().stand_in(metric)
    return view.numbers(col) if col else None


def _sort_abs(x: float, diff: float | None) -> float:
    """The size of an infinite relative error for ranking: the absolute difference when that is finite."""
    return abs(diff) if diff is not None and math.isfinite(diff) else abs(x)


def _numbered_cell(view: ResultView, i: int, metric: str) -> tuple[str, str]:
    """(metric, value) of a row ranked by its number: the metric cell, or the absolute difference that stood in."""
    x = view.numbers(metric)[i]  # type: ignore[index]
    fallback = C.known_columns().stand_in(metric)
    if x is not None and abs(x) == math.inf and fallback and (main_metric(view.mode) or ("", False))[1]:
        d = view.numbers(fallback)
        if d is not None and d[i] is not None and math.isfinite(d[i]):  # type: ignore[arg-type]
            return fallback, view.cells[fallback][i].strip()
    return metric, view.cells[metric][i].strip()


def _unnumbered_cell(view: ResultView, i: int, metric: str | None) -> tuple[str, str]:
    """(metric, value) of a non-passing row whose main metric is no number (or whose table has none)."""
    npu, bench = view.column(C.NPU_MD5), view.column(C.BENCH_MD5)
    if metric is None and npu is not None and bench is not None:
        return MD5_METRIC, f"{npu[i].strip() or '-'} vs {bench[i].strip() or '-'}"
    if metric is not None and metric in view.cells:
        return metric, view.cells[metric][i].strip()
    return "", ""


def worst_rows_metric(worst: Sequence[Mapping[str, Any]]) -> str:
    """The metric a worst-rows list is headed by: the first row's main metric (rows that show another say so)."""
    fallbacks = {s.stand_in for s in C.known_columns() if s.stand_in}
    for w in worst:
        if w["metric"] and w["metric"] not in fallbacks:
            return str(w["metric"])
    return str(worst[0]["metric"]) if worst else ""
