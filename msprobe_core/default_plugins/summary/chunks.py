r"""Results in chunks of rows: :class:`ResultChunk` and the functions that cut views and tables into them.

A result of millions of rows is summarised (:class:`~msprobe_core.default_plugins.summary.accumulate.ViewAccumulator`)
and sampled for the HTML report chunk by chunk, so that no consumer needs the whole table at once:
a :class:`ResultChunk` is the rows ``[start, start + len(chunk))`` of one result, with every column of
the result and the result's own label, mode, files and frameworks. It *is* a
:class:`~msprobe_core.default_plugins.summary.views.ResultView` (cells spelled as in the CSV), so whatever reads a view
reads a chunk; only :meth:`~msprobe_core.default_plugins.summary.views.ResultView.order` is the chunk's own (tables of a
mode named by their files, which may be sorted otherwise, are put in execution order by whoever needs the
whole: the accumulator gathers their chunks).

Where chunks come from:

* :func:`view_chunks` cuts a view (result files read back, a table's view) into chunks;
* :func:`table_chunks` cuts an in-memory :class:`~msprobe_core.result.ResultTable`, or a part of one
  (``start``: the row of the whole result the part begins at: a streamed compare feeds its parts as
  they are built);
* :func:`~msprobe_core.default_plugins.summary.result_files.read_result_chunks` reads result files (CSV in blocks of
  rows, xlsx sheet rows) without ever holding more than a chunk of cells.

Every producer yields at least one chunk per result (an empty result: one empty chunk), in row order,
with the same label, mode, columns and frameworks in each.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .views import ResultView, SpelledColumns, view_from_table, view_grammar

#: Rows per chunk: small enough that every temporary of a chunk (parsed numbers, spelled cells) stays well
#: below the allocator's mmap threshold and in the caches, large enough that per-chunk costs do not show.
CHUNK_ROWS = 65536


@dataclass
class ResultChunk(ResultView):
    """The rows ``[start, start + len(self))`` of one result, as a view of their cells.

    ``label``, ``mode``, ``columns``, ``files``, ``frameworks``, ``level`` and ``dump_mode`` are the
    whole result's (``frameworks``: as the whole result's first rows tell them, see
    :func:`~msprobe_core.default_plugins.summary.views.guess_frameworks`). ``cells`` hold this chunk's rows only.
    """

    start: int = 0

    @property
    def stop(self) -> int:
        """The row of the whole result after this chunk's last one."""
        return self.start + len(self)


class CellWindow(Mapping[str, list[str]]):
    """Rows ``start:stop`` of columns of text cells: a column is sliced when first read whole, and a few rows of
    it are picked from the whole column (:meth:`texts_at`)."""

    def __init__(self, cells: Mapping[str, list[str]], start: int, stop: int) -> None:
        self._cells, self._start, self._stop = cells, start, stop
        self._sliced: dict[str, list[str]] = {}

    def __getitem__(self, name: str) -> list[str]:
        out = self._sliced.get(name)
        if out is None:
            part = self._cells[name][self._start:self._stop]
            out = self._sliced[name] = part if isinstance(part, list) else list(part)
        return out

    def texts_at(self, name: str, rows: Sequence[int]) -> list[str]:
        """Cells ``rows`` (relative to the window) of column ``name``."""
        col, base = self._cells[name], self._start
        return [col[base + i] for i in rows]

    def __contains__(self, name: object) -> bool:
        return name in self._cells

    def __iter__(self) -> Iterator[str]:
        return iter(self._cells)

    def __len__(self) -> int:
        return len(self._cells)


def _meta(view: ResultView) -> dict[str, Any]:
    """The fields a chunk takes from its result (everything but the cells and the derived caches)."""
    return {f.name: getattr(view, f.name) for f in fields(ResultView) if f.name not in ("cells", "_verdicts")}


def view_slice(view: ResultView, start: int, stop: int) -> ResultChunk:
    """Rows ``start:stop`` of ``view`` as a chunk (its ``start`` counts from the first row of the whole result:
    a chunk of a chunk adds the outer chunk's ``start``). Cells are sliced or spelled only when read."""
    n = len(view)
    start, stop = max(0, min(start, n)), max(0, min(stop, n))
    stop = max(start, stop)
    cells = view.cells
    if isinstance(cells, SpelledColumns):
        sub: Mapping[str, list[str]] = cells.rows(start, stop)
    elif start == 0 and stop == n:
        sub = cells
    else:
        sub = CellWindow(cells, start, stop)
    base = view.start if isinstance(view, ResultChunk) else 0
    chunk = ResultChunk(**_meta(view), cells=sub, start=base + start)
    if view._verdicts is not None:  # already worked out for the whole view (the HTML report reads them too)
        chunk._verdicts = view._verdicts[start:stop]
    numbers = view.__dict__.get("_numbers")
    if numbers:  # columns the whole view parsed already (ResultView.numbers' cache)
        chunk.__dict__["_numbers"] = {k: v if v is None else v[start:stop] for k, v in numbers.items()}
    unmatched = view.__dict__.get("_unmatched")
    if unmatched is not None:
        chunk.__dict__["_unmatched"] = unmatched[start:stop]
    return chunk


def view_chunks(view: ResultView, rows: int = CHUNK_ROWS) -> Iterator[ResultChunk]:
    """``view`` in chunks of ``rows`` rows (the last one shorter), at least one chunk."""
    n = len(view)
    rows = max(1, int(rows))
    yield view_slice(view, 0, min(n, rows))
    for a in range(rows, n, rows):
        yield view_slice(view, a, min(n, a + rows))


#: the rows a scan that stops at its first hit reads before it reads the rest (see :func:`head_first`)
HEAD_ROWS = 1024


def head_first(view: ResultView, rows: int = HEAD_ROWS) -> Iterator[tuple[ResultChunk | ResultView, int]]:
    """``(part, its first row within view)``: the first ``rows`` rows of ``view``, then the rest; the whole view
    as one part when it is that small or its rows are put in execution order only over every row (a mode named
    by its files). A scan that stops at its first hit (the first divergence is mostly near the start) parses
    the cells of the head only; the scans are the same whatever the chunk sizes."""
    n = len(view)
    if n <= 2 * rows or view_grammar(view) is not None:
        yield view, 0
        return
    yield view_slice(view, 0, rows), 0
    yield view_slice(view, rows, n), rows


def view_cut(view: ResultView, sizes: Iterable[int]) -> Iterator[ResultChunk]:
    """``view`` in consecutive chunks of the given sizes (the last one takes what is left), at least one chunk.

    For tests and for producers whose chunk boundaries are set elsewhere (API-aligned parts)."""
    n, a, any_chunk = len(view), 0, False
    for size in sizes:
        if a >= n and any_chunk:
            return
        b = min(n, a + max(0, int(size)))
        yield view_slice(view, a, b)
        any_chunk, a = True, b
    if a < n or not any_chunk:
        yield view_slice(view, a, n)


def table_chunks(
    table: Any,
    label: str = "",
    files: Iterable[Path] = (),
    *,
    start: int = 0,
    rows: int = CHUNK_ROWS,
    frameworks: tuple[str, str] | None = None,
) -> Iterator[ResultChunk]:
    """An in-memory :class:`~msprobe_core.result.ResultTable` (or a part of a result: its first row is row
    ``start`` of the whole) in chunks of ``rows`` rows, cells spelled as the CSV writer spells them.

    ``frameworks`` overrides what :func:`~msprobe_core.default_plugins.summary.views.view_from_table` finds (a later part of a
    result passes the first part's, so that every chunk of a result agrees).
    """
    view = view_from_table(table, label, files)
    if frameworks is not None:
        view.frameworks = tuple(frameworks)  # type: ignore[assignment]
    whole = ResultChunk(**_meta(view), cells=view.cells, start=start)
    yield from view_chunks(whole, rows)


def concat_chunks(chunks: Sequence[ResultChunk]) -> ResultView:
    """The rows of consecutive chunks of one result as one view (for consumers that need the whole: tables
    whose execution order is known only over every row)."""
    first = chunks[0]
    cells = {c: [v for ch in chunks for v in ch.cells[c]] for c in first.columns}
    return ResultChunk(**_meta(first), cells=cells, start=first.start)
