"""The chunks of a streamed compare: where they start, and each one's two tables and matched rows.

A chunk is a run of consecutive result rows that starts at a target API's first row and holds about
:data:`CHUNK_ROWS` rows (it never splits an API: verdicts fold per API). Its target rows are a run of
entries of the target dump; its golden rows, whatever entries of the golden dump they are in (one run
when both dumps hold the same calls in the same order). Both are read by byte range
(the loader's reader of entries; the default plugin fast_scan's: its ``chunks`` module) into small tables, and the chunk's rows are numbered in them: built
with the column-wide facts of the whole result (:attr:`msprobe_core.plugin.MatchNotes.whole_numbers`), a chunk's
cells are the whole table's (the property :mod:`.tailbuild` relies on too).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from operator import ne
from pathlib import Path
from typing import Any

import numpy as np

from msprobe_core.plugin import DumpIndex, DumpTable, EntryReader, MatchNotes, MatchResult
from msprobe_core.plugin import result_columns as C

from .index_match import IndexMatch, compare_keys

#: result rows per chunk (a chunk never splits an API, so it may hold more)
CHUNK_ROWS = 65536
#: set to a number of rows to make chunks that small (tests put chunk boundaries everywhere with it)
ENV_CHUNK_ROWS = "MSPROBE_CHUNK_ROWS"


class KeysDiffer(Exception):
    """Two rows paired by equal hashes have different compare keys (a hash collision)."""


def chunk_rows() -> int:
    """The chunk size of this run: :data:`CHUNK_ROWS`, or ``MSPROBE_CHUNK_ROWS``."""
    try:
        return max(1, int(os.environ.get(ENV_CHUNK_ROWS) or CHUNK_ROWS))
    except ValueError:
        return CHUNK_ROWS


def api_starts(match: IndexMatch, target: DumpIndex) -> np.ndarray:
    """The result rows (ascending, 0 excluded) at which a target API starts."""
    if match.target is None:  # first_row ascends: the starts inside (0, rows), each once, without a sort
        starts = target.first_row[1:-1]
        starts = starts[int(np.searchsorted(starts, 0, side="right")): int(np.searchsorted(starts, match.rows))]
        if len(starts) < 2:
            return starts.copy()
        first = np.empty(len(starts), dtype=bool)
        first[0] = True
        np.not_equal(starts[1:], starts[:-1], out=first[1:])
        return starts[first]
    apis = target.api_of_rows(match.target)
    return np.flatnonzero(apis[1:] != apis[:-1]) + 1


def plan_chunks(match: IndexMatch, target: DumpIndex, size: int) -> list[tuple[int, int]]:
    """``(start, stop)`` result rows of each chunk: about ``size`` rows, every start an API's first row."""
    starts = api_starts(match, target)
    bounds = [0]
    while bounds[-1] < match.rows:
        k = int(np.searchsorted(starts, bounds[-1] + size, side="left"))
        bounds.append(int(starts[k]) if k < len(starts) else match.rows)
    return list(zip(bounds[:-1], bounds[1:]))


def whole_numbers(match: IndexMatch, target: DumpIndex, golden: DumpIndex) -> dict[str, bool]:
    """``result.whole_numbers`` of the whole result, from the index's statistics flags.

    A column holds only numbers when every cell is an int or a float and one is a float; a golden
    cell of an unmatched row is ``N/A``. Every target row is in the result.
    """
    unmatched = match.golden is not None and bool((match.golden < 0).any())
    t_flags = target.flags
    g_flags = golden.flags[match.golden] if match.golden is not None else golden.flags[: match.rows]
    out = {}
    for k, label in enumerate(C.STAT_NAMES):
        for side, flags, missing in ((C.NPU, t_flags, False), (C.BENCH, g_flags, unmatched)):
            numbers = not missing and bool(((flags >> k) & 1).all())
            out[C.stat_column(side, label)] = numbers and bool(((flags >> (k + 4)) & 1).any())
    return out


@dataclass
class ChunkSource:
    """What a process needs to read chunks: the indexes, the match, the open files, the stack, the notes."""

    target: DumpIndex
    golden: DumpIndex
    match: IndexMatch
    notes: MatchNotes
    stack: Any = None  # a StackIndex (:mod:`.stackindex`), or None without stack.json

    def open(self) -> tuple[EntryReader, EntryReader]:
        """Readers of both sides' entries (context managers), from their loaders."""
        return self.target.open_reader(), self.golden.open_reader()

    def tables(self, start: int, stop: int, readers: tuple[EntryReader, EntryReader]) -> tuple[
            DumpTable, DumpTable, MatchResult]:
        """Result rows ``start:stop`` as the target and golden tables they are in and the pairs, numbered there."""
        t_ix, g_ix, match = self.target, self.golden, self.match
        t_rows = match.target_rows(start, stop)
        g_rows = match.golden_rows(start, stop)
        first_api = int(t_ix.api_of_rows(t_rows[:1])[0])
        stop_api = int(t_ix.api_of_rows(t_rows[-1:])[0]) + 1
        target = readers[0].read([(first_api, stop_api)])
        local_t = t_rows - t_ix.first_row[first_api]
        paired = g_rows >= 0
        g_api_of = g_ix.api_of_rows(g_rows[paired])
        g_apis = np.unique(g_api_of)
        golden = readers[1].read(runs_of(g_apis))
        local_first = np.zeros(len(g_apis), dtype=np.int64)
        if len(g_apis) > 1:
            np.cumsum(g_ix.n_rows[g_apis[:-1]], out=local_first[1:])
        local_g = np.full(len(g_rows), -1, dtype=np.int64)
        local_g[paired] = (g_rows[paired] - g_ix.first_row[g_api_of]
                           + local_first[np.searchsorted(g_apis, g_api_of)])
        if self.stack is not None:
            target.stack = self.stack.stacks(range(first_api, stop_api), [a.key for a in target.apis])
        if match.hashed:
            self._verify(target, golden, local_t[paired], local_g[paired], t_ix.rank[first_api:stop_api],
                         g_ix.rank[g_apis])
        pairs = MatchResult(local_t.tolist(), local_g.tolist(), dtype_gate=False, notes=self.notes)
        return target, golden, pairs

    def _verify(self, target: DumpTable, golden: DumpTable, rows_t: np.ndarray, rows_g: np.ndarray,
                ranks_t: np.ndarray, ranks_g: np.ndarray) -> None:
        """Every pair's compare keys are equal as text (the join paired them by hash)."""
        tl, gl = rows_t.tolist(), rows_g.tolist()
        names_t, names_g = target.name, golden.name
        differ = list(map(ne, map(names_t.__getitem__, tl), map(names_g.__getitem__, gl)))
        if self.target.renumbered or self.golden.renumbered:
            api_t = np.asarray(target.row_api, dtype=np.int64)[rows_t]
            api_g = np.asarray(golden.row_api, dtype=np.int64)[rows_g]
            keys_t = [a.key for a in target.apis]
            keys_g = [a.key for a in golden.apis]
            heads = list(map(ne, map(keys_t.__getitem__, api_t.tolist()), map(keys_g.__getitem__, api_g.tolist())))
            ranks = (ranks_t[api_t] != ranks_g[api_g]).tolist()
            differ = [a or b or c for a, b, c in zip(differ, heads, ranks)]
        odd = [k for k, d in enumerate(differ) if d]
        if not odd:
            return
        left = compare_keys(target, ranks_t.tolist() if self.target.renumbered else None, [tl[k] for k in odd])
        right = compare_keys(golden, ranks_g.tolist() if self.golden.renumbered else None, [gl[k] for k in odd])
        if left != right:
            raise KeysDiffer("two compare keys of one hash")


def runs_of(apis: np.ndarray) -> list[tuple[int, int]]:
    """Ascending distinct entry numbers as ``(first, stop)`` runs of consecutive ones."""
    if not len(apis):
        return []
    breaks = np.flatnonzero(np.diff(apis) != 1) + 1
    firsts = np.concatenate([apis[:1], apis[breaks]])
    lasts = np.concatenate([apis[breaks - 1], apis[-1:]])
    return list(zip(firsts.tolist(), (lasts + 1).tolist()))


def write_chunks(source: ChunkSource, chunks: list[tuple[int, int]], out: Any,
                 build: Callable[[DumpTable, DumpTable, MatchResult], Any], sink: Any = None,
                 side_dir: Path | None = None) -> None:
    """Read, build and write each chunk in order (``out``: a part-by-part writer, :func:`.csvparts.open_parts`).

    ``build(target, golden, pairs)``: the result rows of a chunk's pairs; ``sink``: fed each built chunk
    with its first row (``feed_table(table, start)``), when given. With ``side_dir`` (where side files may
    go), a forked worker may build half of the chunks meanwhile (:mod:`msprobe_core.default_plugins.chunked.chunkworker`).
    """
    from msprobe_core.plugin import fraction_text, tick

    from .chunkworker import Round, plan_rounds, replay, start_worker, worker_wanted

    rounds, worker, started = [Round(0, len(chunks), len(chunks))], None, []
    try:
        if side_dir is not None and worker_wanted(chunks, out, sink):
            planned = plan_rounds(chunks)
            worker = start_worker(source, chunks, planned, build, sink, out.part_rows, side_dir, into=started)
            rounds = planned if worker is not None else rounds
        readers = source.open()  # after the fork: each process reads through its own descriptors
        with readers[0], readers[1]:
            for r in rounds:
                _write_in_order(source, chunks, r.first, r.middle, readers, out, build, sink)
                if r.middle == r.stop:
                    continue
                done = worker.next_result() if worker is not None else None
                if done is None:  # the worker failed: the rest is built here
                    _write_in_order(source, chunks, r.middle, len(chunks), readers, out, build, sink)
                    return
                out.adopt_csv(done.columns, done.segments)
                if sink is not None:
                    sink.absorb(done.partial)
                replay(done)
                worker.taken(done)  # type: ignore[union-attr]
                tick(f"chunk {fraction_text(r.stop, len(chunks))}, with a worker")
    finally:
        for begun in started:  # a worker that did not start has its side directory to remove
            begun.close()


def _write_in_order(source: ChunkSource, chunks: list[tuple[int, int]], first: int, stop: int,
                    readers: tuple[EntryReader, EntryReader], out: Any,
                    build: Callable[[DumpTable, DumpTable, MatchResult], Any], sink: Any) -> None:
    """Chunks ``first:stop``, each read, built, written and fed to the sink."""
    from msprobe_core.plugin import fraction_text, tick

    for k in range(first, stop):
        start, end = chunks[k]
        table = build(*source.tables(start, end, readers))
        if table.meta.attachments:
            raise KeysDiffer("a chunk's result has files attached")  # written with the whole table
        out.append(table)
        if sink is not None:
            sink.feed_table(table, start)
        del table
        tick(f"chunk {fraction_text(k + 1, len(chunks))}")
