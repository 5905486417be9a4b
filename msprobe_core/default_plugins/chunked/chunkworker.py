"""A second core for a streamed compare: a forked worker builds, writes and summarises half of the chunks.

Once a streamed compare has matched its indexes (numpy arrays, shared with a forked child rather than
copied) every chunk can be read and built on its own. The chunks are taken in *rounds* of about
:data:`ROUND_ROWS` rows (:func:`plan_rounds`); :func:`start_worker` forks one child that takes the second
half of each round (whole chunks, so whole APIs): it reads and builds them, spells their CSV text into side
files (split where the result's part files split, each beginning with the header where it begins a part)
and feeds them to a continuation of the run's summary sink (:func:`.tailbuild.continues`:
``continued``/``absorb``). Meanwhile this process builds and writes the first half of the round; then it
appends the child's side files, absorbs its partial and re-emits its log records and warnings after its own,
in the order a single process would have given them, and removes the side files. The child runs at most
one round ahead, so side files never hold more than about a round's rows, whatever the result's size.

The child is only an accelerator (:mod:`msprobe_core.default_plugins.forking.children`): when it fails in any way (a hash
collision, a changed dump, no memory, killed), this process builds the rest itself, so the files, the
summary and the console are what one process gives, byte for byte. A child that makes no progress (stopped,
or stuck in I/O) is killed after a while (the stall limit every forked child is watched by:
:func:`msprobe_core.default_plugins.forking.children.stall_limit`) and its share built here too, with one line saying so. Nothing is started for xlsx results, small results, sinks without a continuation, or where
forking is not allowed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import struct
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msprobe_core.plugin import remove_later

from ..forking import children as forking
from .tailbuild import continues

#: below this many result rows a worker costs more than it saves
MIN_ROWS = forking.MIN_SPLIT_ROWS
#: result rows per round (both processes' halves); the side files hold at most about two halves
ROUND_ROWS = 1 << 20
#: set to any non-empty value to build every chunk in this process
ENV_NO_CHUNK_WORKER = "MSPROBE_NO_CHUNK_WORKER"
_LENGTH = struct.Struct("<Q")
#: the child's "one more chunk built" (a message of length 0): a sign of progress as its CPU time is
_BEAT = _LENGTH.pack(0)


class ShareDeclined(Exception):
    """The worker cannot build its share as this process would write it: this process builds it (and finds
    out why itself: a result with attached files or changing columns is written from whole tables)."""


@dataclass
class WorkerResult:
    """What the child hands back for one round: its columns, its side files ``(part, rows, file)``, its
    sink's partial, the log records and warnings it emitted."""

    columns: list[str]
    segments: list[tuple[int, int, Path]]
    partial: Any
    records: list[logging.LogRecord] = field(default_factory=list)
    warned: list[tuple[str, type[Warning], str, int]] = field(default_factory=list)


@dataclass(frozen=True)
class Round:
    """Chunks ``first:middle`` are built here, ``middle:stop`` by the worker (none when ``middle == stop``)."""

    first: int
    middle: int
    stop: int


def split_chunk(chunks: list[tuple[int, int]]) -> int:
    """The first chunk of the worker's share: the chunk holding the middle row (at least one chunk each)."""
    first, rows = chunks[0][0], chunks[-1][1] - chunks[0][0]
    for k, (_start, stop) in enumerate(chunks):
        if stop - first > rows // 2:
            return min(max(k, 1), len(chunks) - 1)
    return len(chunks) - 1


def plan_rounds(chunks: list[tuple[int, int]], rows: int = 0) -> list[Round]:
    """The rounds of ``chunks``: consecutive chunks of about ``rows`` (default :data:`ROUND_ROWS`) result rows,
    each split at its middle row; a round of one chunk is built here."""
    rows = rows or ROUND_ROWS
    rounds: list[Round] = []
    k = 0
    while k < len(chunks):
        stop = k + 1
        while stop < len(chunks) and chunks[stop][1] - chunks[k][0] <= rows:
            stop += 1
        if stop - k == 1 and stop < len(chunks):
            stop += 1  # two chunks at least, so that both processes have one
        middle = k + split_chunk(chunks[k:stop]) if stop - k > 1 else stop
        rounds.append(Round(k, middle, stop))
        k = stop
    return rounds


def worker_wanted(chunks: list[tuple[int, int]], out: Any, sink: Any) -> bool:
    """Whether to hand chunks to a worker: enough rows in two chunks or more, a CSV result that takes spelled
    rows, a sink with a continuation (or none), a fork allowed here."""
    if os.environ.get(ENV_NO_CHUNK_WORKER) or len(chunks) < 2 or chunks[-1][1] < MIN_ROWS:
        return False
    if getattr(out, "part_rows", None) is None or not callable(getattr(out, "adopt_csv", None)):
        return False
    return (sink is None or continues(sink)) and forking.fork_allowed()


class ChunkWorker:
    """A forked child building the worker's half of every round into side files under ``side``.

    Made before anything else exists, so that whoever asked for it can close it whatever happens next
    (:func:`start_worker` fills it in as it goes: the pipes, then the child). The side directory is locked
    while the run uses it (:func:`.sidedir.make_side_dir`): a run killed outright leaves
    it to a later run's sweep.
    """

    def __init__(self, place: Path) -> None:
        from .sidedir import make_side_dir

        self.side, self._lock = make_side_dir(place)  # marked as ours: only then may a later sweep remove it
        self.child = forking.Child(None)
        self._answers = self._acks = -1  # the child's results, one message per round; one ack per round taken
        self._pipe: Any = None  # the watched reader of ``_answers`` once the child runs (forking.pipe_reader)
        self._since = time.monotonic()  # when this process began its half of the current round

    def next_result(self) -> WorkerResult | None:
        """The child's result of its next round (``None`` when it failed or stalled: build the rest here)."""
        if self._pipe is None:
            self._pipe = forking.pipe_reader(self._answers, self.child.watch())
        self._pipe.raw.watch = self.child.watch(time.monotonic() - self._since)
        try:
            head = self._read(_LENGTH.size)
            while head == _BEAT:  # a chunk built: it is making progress
                head = self._read(_LENGTH.size)
            data = self._read(_LENGTH.unpack(head)[0]) if head is not None else None
        except forking.Stalled as stalled:
            self.child.give_up(stalled.limit)
            data = None
        result = None
        if data is not None:
            try:
                # our own child's answer through a private pipe, never input from outside
                result = pickle.loads(data)
            except Exception:  # noqa: BLE001 - a garbled answer: do the work here
                result = None
        if not isinstance(result, WorkerResult):
            self.close()
            return None
        return result

    def taken(self, result: WorkerResult) -> None:
        """The round's result is in the files: remove its side files, let the child go on."""
        for _part, _rows, file in result.segments:
            remove_later(Path(file))
        with contextlib.suppress(OSError):
            os.write(self._acks, b"1")
        self._since = time.monotonic()

    def close(self) -> None:
        """Stop the child if it still runs and remove its side files (by a thread: ``remove_later``)."""
        self.child.kill()
        if self._pipe is not None:
            self._pipe.close()  # closes ``_answers``
            self._answers = -1
        for fd in (self._answers, self._acks, self._lock):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._answers = self._acks = self._lock = -1
        remove_later(self.side)

    def _read(self, n: int) -> bytes | None:
        """``n`` bytes of the child's answers (``None``: it ended or failed); raises ``forking.Stalled``."""
        try:
            data = self._pipe.read(n)
        except OSError:
            return None
        return data if len(data) == n else None


def start_worker(source: Any, chunks: list[tuple[int, int]], rounds: list[Round], build: Callable[..., Any],
                 sink: Any, part_rows: int, directory: Path, into: list[ChunkWorker]) -> ChunkWorker | None:
    """Fork the child that builds, writes and summarises the worker's half of each of ``rounds`` (``None``: it
    did not start).

    ``source``: the :class:`~msprobe_core.default_plugins.chunked.chunking.ChunkSource`; ``build(target, golden, pairs)``: a
    chunk's result table; ``part_rows``: rows per CSV part file; ``directory``: where the side files go;
    ``into``: the caller's list, which holds the worker from its first resource on (close it, started or not).
    """
    from .tailbuild import side_place

    try:
        into.append(ChunkWorker(side_place(directory)))
    except OSError:
        return None
    worker = into[-1]
    side = worker.side
    worker._answers, answers_w = os.pipe()
    acks_r, worker._acks = os.pipe()

    def work() -> None:
        os.close(worker._answers)
        os.close(worker._acks)
        _quiet_logger()
        readers = source.open()
        with readers[0], readers[1], os.fdopen(answers_w, "wb") as answers:
            shares = [r for r in rounds if r.middle < r.stop]
            for n, share in enumerate(shares):
                if n >= 2 and not os.read(acks_r, 1):  # the round before the last one is taken in
                    return
                later = sink.continued(chunks[share.middle][0]) if sink is not None else None
                result = _build_share(source, chunks[share.middle:share.stop], readers, build, later, part_rows,
                                      side / f"round-{n}", beat=lambda: (answers.write(_BEAT), answers.flush()))
                data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
                answers.write(_LENGTH.pack(len(data)) + data)
                answers.flush()

    try:
        worker.child = forking.spawn(work, "chunk worker")  # a stop signal during the fork is raised here, the child killed
    finally:
        os.close(answers_w)
        os.close(acks_r)
    return worker if worker.child.pid is not None else None


class _Records(logging.Handler):
    """The child's log records, made picklable (the parent re-emits them)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        record.msg, record.args = record.getMessage(), None
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        self.records.append(record)


def _quiet_logger() -> None:
    """In the child: log records are collected per round (:func:`_build_share`), never printed here."""
    logger = logging.getLogger("msprobe")
    logger.handlers, logger.filters, logger.propagate = [], [], False


def _build_share(source: Any, chunks: list[tuple[int, int]], readers: Any, build: Callable[..., Any], sink: Any,
                 part_rows: int, prefix: Path, beat: Callable[[], object] = lambda: None) -> WorkerResult:
    """The child's work for one round: read, build, spell and summarise each chunk (raises on any failure);
    ``beat()`` after each chunk tells the parent it is making progress."""
    from msprobe_core.plugin import TEXT_ERRORS, write_csv_rows

    logger = logging.getLogger("msprobe")
    collect = _Records()
    logger.handlers = [collect]
    columns: list[str] | None = None
    segments: list[tuple[int, int, Path]] = []
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.ExitStack() as files:
            warnings.simplefilter("always")
            current: tuple[int, Any] | None = None
            for start, stop in chunks:
                table = build(*source.tables(start, stop, readers))
                if table.meta.attachments:
                    raise ShareDeclined("a chunk's result has files attached")
                if columns is None:
                    columns = [str(c) for c in table.columns]
                elif [str(c) for c in table.columns] != columns:
                    raise ShareDeclined("a chunk's columns differ")
                cells = [table.data[c] for c in table.columns]
                n, at = len(table), 0
                while at < n:
                    part, within = divmod(start + at, part_rows)
                    take = min(n - at, part_rows - within)
                    if current is None or current[0] != part:
                        path = prefix.with_name(f"{prefix.name}-part-{part}.csv")
                        current = (part, files.enter_context(
                            open(path, "w", newline="", encoding="utf-8", errors=TEXT_ERRORS)))
                        segments.append((part, 0, path))
                    write_csv_rows(current[1], columns if within == 0 else None, cells, at, at + take)
                    segments[-1] = (part, segments[-1][1] + take, segments[-1][2])
                    at += take
                if sink is not None:
                    sink.feed_table(table, start)
                del table, cells
                beat()
            warned = [(str(w.message), w.category, w.filename, w.lineno) for w in caught]
        partial = sink.finish(None) if sink is not None else None
    finally:
        logger.handlers = []
    return WorkerResult(columns or [], segments, partial, collect.records, warned)


def replay(result: WorkerResult) -> None:
    """Emit the child's log records and warnings here, after this process's own."""
    log = logging.getLogger("msprobe")
    for record in result.records:
        if log.isEnabledFor(record.levelno):
            record.process = os.getpid()
            log.handle(record)
    for message, category, filename, lineno in result.warned:
        warnings.warn_explicit(message, category, filename, lineno)
