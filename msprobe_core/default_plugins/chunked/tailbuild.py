"""The last rows of a big result, built and spelled by a forked child while this process builds the whole.

Building a statistics result (diffs, verdicts) and spelling it as CSV are pure
Python, one core each. For a big table a forked child takes the rows from an API
boundary on to the end: it builds them piece by piece from the matched tables and
writes their CSV text into a side file, while this process builds the whole table
(the summary and the Python API read it) and writes the rows before the boundary;
the side file is then appended. A piece always starts at an API's first row
(verdicts are decided per API) and is built with the facts that belong to whole
columns (whether a statistics column holds only numbers, :attr:`MatchNotes.whole_numbers`),
so each piece's cells are those of the whole table. The child is only an
accelerator: when it fails in any way, the CSV writer spells those rows itself,
so the file is the same byte for byte. The core's whole-table strategy offers each big result through
``StrategySpec.tail`` (this plugin's); with the plugin off, it builds and writes every row itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from msprobe_core.plugin import MODE_TENSOR, CompareOptions, DumpTable, MatchResult, remove_later, whole_numbers

from ..forking import children as forking

#: share of the rows the child builds and writes: this process also builds the rows the child writes
TAIL_SHARE = 0.6
#: the child's share when it also summarises its rows: this process then builds only the rows before them, but also
#: adds the child's text and partial to its own (at 0.5 the child waited for it, 30,000 entries: 50 ms)
SUMMARY_SHARE = 0.55
#: rows the child builds at a time (its own memory holds one such piece of the result)
PIECE_ROWS = 32768


def side_place(directory: Path) -> Path:
    """Where side files of a result going to ``directory`` are put: the directory, or (it is made when the
    result is written) its closest existing ancestor, the one the run checked it may write into."""
    place = Path(directory).absolute()
    while not place.is_dir() and place != place.parent:
        place = place.parent
    return place


def api_boundary(target: DumpTable, match: MatchResult, row: int) -> int:
    """The first result row at or after ``row`` that starts an API (the row count if none does)."""
    rows, apis = match.target, target.row_api
    n = len(rows)
    row = max(1, row)
    while row < n and apis[rows[row]] == apis[rows[row - 1]]:
        row += 1
    return min(row, n)


def tail_start(target: DumpTable, match: MatchResult, share: float = TAIL_SHARE) -> int:
    """The first row of the child's part: the first row of an API at or after ``(1 - share)`` of the rows.

    Returns the row count when no API starts there (the child would have nothing to do).
    """
    return api_boundary(target, match, int(len(match.target) * (1.0 - share)))


def wants_tail(target: DumpTable, match: MatchResult, options: CompareOptions) -> bool:
    """Whether a result the core offers (``StrategySpec.tail``: its writer takes rows spelled by a child, its
    metric set gives a part's rows as the whole table gives them, one CSV file) is worth splitting: big, cheap
    metrics, a second core."""
    n = len(match.target)
    return target.mode != MODE_TENSOR and forking.MIN_SPLIT_ROWS <= n and forking.fork_allowed()


def start_tail(
    target: DumpTable,
    golden: DumpTable,
    match: MatchResult,
    options: CompareOptions,
    build: Callable[[DumpTable, DumpTable, MatchResult], Any],
    directory: Path,
    sink: Any = None,
) -> forking.SideTail | None:
    """Fork the child that builds (``build(target, golden, part)``) and writes the last rows; None if it did not start.

    ``sink``: a summary sink with a continuation (``continued``/``absorb``, :mod:`msprobe_core.pipeline.sink`): the
    child also feeds its rows to ``sink.continued(start)`` and hands back that partial (``SideTail.partial``),
    so this process builds and summarises the rows before ``start`` only."""
    summarise = continues(sink)
    start = tail_start(target, match, SUMMARY_SHARE if summarise else TAIL_SHARE)
    if start >= len(match.target):
        return None
    later = sink.continued(start) if summarise else None
    # column-wide facts the parts must share: found before the fork where this process builds a part with them too
    # (and before the side file is made: a Ctrl-C meanwhile leaves nothing behind)
    notes = match.notes if match.notes.whole_numbers is not None or later is None else replace(
        match.notes, whole_numbers=whole_numbers(target, golden, match))
    try:
        fd, name = tempfile.mkstemp(prefix=".msprobe-", suffix=".tail", dir=side_place(directory))
    except OSError:
        return None  # the writer will say what is wrong with the directory
    side = Path(name)
    answers = told = -1

    def work() -> None:
        from msprobe_core.plugin import TEXT_ERRORS, write_csv_rows

        logging.disable(logging.CRITICAL)  # this process says whatever the build has to say
        warnings.simplefilter("ignore")
        _close(answers)  # the parent's end

        n = len(match.target)
        facts = notes if notes.whole_numbers is not None else replace(
            notes, whole_numbers=whole_numbers(target, golden, match))
        with open(side, "w", newline="", encoding="utf-8", errors=TEXT_ERRORS) as fh:
            lo = start
            while lo < n:  # piece by piece, each from an API's first row: verdicts see whole APIs
                hi = api_boundary(target, match, lo + PIECE_ROWS)
                part = replace(match, target=match.target[lo:hi], golden=match.golden[lo:hi], notes=facts)
                table = build(target, golden, part)
                write_csv_rows(fh, None, [table.data[c] for c in table.columns], 0, len(table))
                if later is not None:
                    later.feed_table(table, lo)
                del table
                lo = hi
        if later is not None:  # the rows are all in the side file: their summary goes back
            with open(told, "wb") as out:
                pickle.dump(later.finish(None), out, pickle.HIGHEST_PROTOCOL)

    try:
        os.close(fd)
        if later is not None:
            answers, told = os.pipe()
        child = forking.spawn(work, "child writing the result's last rows")  # a stop signal during the fork is raised here, the child killed
    except BaseException:
        _close(answers, told)
        side.unlink(missing_ok=True)
        raise
    _close(told)
    if child.pid is None:
        _close(answers)
        side.unlink(missing_ok=True)
        return None
    # a side file of a hundred megabytes takes the file system a noticeable time to free: a thread removes it
    # while the run goes on (the run waits for it before it forks again and before it returns)
    if later is None:
        return forking.SideTail(child, side, start, remove_later)

    def build_head() -> Any:  # with the facts of whole columns, as the child's parts have them
        return build(target, golden, replace(match, target=match.target[:start], golden=match.golden[:start],
                                             notes=notes))

    return SummarisingTail(child, side, start, remove_later, answers, build_head=build_head, sink=sink,
                           rows=len(match.target))


class TailLost(Exception):
    """The child building a result's last rows failed: they are in no table of this process."""


@dataclass
class HeadTail:
    """A tail as a writer takes it when the table holds only the rows before it (``stop``: every row's count):
    :meth:`finish` raises :class:`TailLost` when the child failed, since those rows are nowhere else."""

    tail: forking.SideTail
    stop: int

    @property
    def start(self) -> int:
        return self.tail.start

    @property
    def side(self) -> Path:
        return self.tail.side

    def finish(self) -> bool:
        if not self.tail.finish():
            raise TailLost
        return True

    def close(self) -> None:
        self.tail.close()


@dataclass
class SummarisingTail(forking.SideTail):
    """A tail whose child also summarises its rows (a continuation of the job's summary sink): this process
    builds, summarises and writes only the rows before it (:meth:`head`)."""

    summarises = True

    build_head: Callable[[], Any] = lambda: None
    sink: Any = None
    rows: int = 0

    def head(self, write: Callable[[Any, HeadTail], list[Path]]) -> tuple[Any, list[Path], Any] | None:
        """Build and summarise the rows before the child's, ``write(table, tail)`` them (the writer appends the
        child's text) and take the child's partial: ``(table of those rows, files, the job's partial)``;
        ``None`` (this tail closed, nothing written) when the child failed in any way."""
        from msprobe_core.plugin import stage

        try:
            stage("metrics and verdicts", f"{self.rows:,} rows", 3, 4)
            table = self.build_head()
            self.sink.feed_table(table, 0)
            stage("write", f"{self.rows:,} rows", 4, 4)
            files = write(table, HeadTail(self, self.rows))
            self.sink.absorb(self.partial)
        except (TailLost, ValueError):  # ValueError: a sink that cannot take the child's partial after all
            self.close()
            return None
        self.close()
        return table, files, self.sink.finish(files)


def continues(sink: Any) -> bool:
    """Whether a summary sink can hand the rows from some row on to another process: ``continued(start)`` (a new
    sink for the rows from ``start`` on, fed and finished there with ``finish(None)``) and ``absorb(partial)``
    (take that sink's partial once every row before ``start`` was fed here; :mod:`msprobe_core.pipeline.sink`)."""
    return callable(getattr(sink, "continued", None)) and callable(getattr(sink, "absorb", None))


def _close(*fds: int) -> None:
    for fd in fds:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
