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

import logging
import os
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from msprobe_core.plugin import MODE_TENSOR, CompareOptions, DumpTable, MatchResult, remove_later

from ..forking import children as forking

#: share of the rows the child builds and writes: this process also builds the rows the child writes
TAIL_SHARE = 0.6
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
) -> forking.SideTail | None:
    """Fork the child that builds (``build(target, golden, part)``) and writes the last rows; None if it did not start."""
    start = tail_start(target, match)
    if start >= len(match.target):
        return None
    try:
        fd, name = tempfile.mkstemp(prefix=".msprobe-", suffix=".tail", dir=side_place(directory))
    except OSError:
        return None  # the writer will say what is wrong with the directory
    os.close(fd)
    side = Path(name)

    def work() -> None:
        from msprobe_core.plugin import TEXT_ERRORS, whole_numbers, write_csv_rows

        logging.disable(logging.CRITICAL)  # this process says whatever the build has to say
        warnings.simplefilter("ignore")

        n = len(match.target)
        # column-wide facts the parts must share
        notes = replace(match.notes, whole_numbers=whole_numbers(target, golden, match))
        with open(side, "w", newline="", encoding="utf-8", errors=TEXT_ERRORS) as fh:
            lo = start
            while lo < n:  # piece by piece, each from an API's first row: verdicts see whole APIs
                hi = api_boundary(target, match, lo + PIECE_ROWS)
                part = replace(match, target=match.target[lo:hi], golden=match.golden[lo:hi], notes=notes)
                table = build(target, golden, part)
                write_csv_rows(fh, None, [table.data[c] for c in table.columns], 0, len(table))
                del table
                lo = hi

    try:
        child = forking.spawn(work, "child writing the result's last rows")  # a stop signal during the fork is raised here, the child killed
    except BaseException:
        side.unlink(missing_ok=True)
        raise
    if child.pid is None:
        side.unlink(missing_ok=True)
        return None
    # a side file of a hundred megabytes takes the file system a noticeable time to free: a thread removes it
    # while the run goes on (the run waits for it before it forks again and before it returns)
    return forking.SideTail(child, side, start, remove_later)
