"""A second core for a streamed compare: a forked worker builds, writes and summarises the later chunks.

Once a streamed compare has matched its indexes (numpy arrays, shared with a forked child rather than
copied) every chunk can be read and built on its own. :func:`start_worker` forks one child that takes the
second half of the chunks (whole chunks, so whole APIs): it reads and builds them, spells their CSV text
into side files (split where the result's part files split, each beginning with the header where it
begins a part) and feeds them to a continuation of the run's summary sink
(:mod:`msprobe_core.pipeline.sink`: ``continued``/``absorb``). Meanwhile this process builds and writes
the first half; then it appends the side files, absorbs the child's partial and re-emits the child's log
records and warnings after its own, in the order a single process would have given them.

The child is only an accelerator (:mod:`msprobe_core.workers.forking`): when it fails in any way (a hash
collision, a changed dump, no memory, killed), this process builds those chunks itself, so the files,
the summary and the console are what one process gives, byte for byte. Nothing is started for xlsx
results, small results, sinks without a continuation, or where forking is not allowed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import shutil
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..workers import forking
from .sink import continues

#: below this many result rows a worker costs more than it saves
MIN_ROWS = forking.MIN_SPLIT_ROWS
#: set to any non-empty value to build every chunk in this process
ENV_NO_CHUNK_WORKER = "MSPROBE_NO_CHUNK_WORKER"


class ShareDeclined(Exception):
    """The worker cannot build its share as this process would write it: this process builds it (and finds
    out why itself: a result with attached files or changing columns is written from whole tables)."""


@dataclass
class WorkerResult:
    """What the child hands back: its columns, its side files ``(part, rows, file)``, its sink's partial,
    the log records and warnings it emitted."""

    columns: list[str]
    segments: list[tuple[int, int, Path]]
    partial: Any
    records: list[logging.LogRecord] = field(default_factory=list)
    warned: list[tuple[str, type[Warning], str, int]] = field(default_factory=list)


def split_chunk(chunks: list[tuple[int, int]]) -> int:
    """The first chunk of the worker's share: the chunk holding the middle row (at least one chunk each)."""
    rows = chunks[-1][1]
    for k, (_start, stop) in enumerate(chunks):
        if stop > rows // 2:
            return min(max(k, 1), len(chunks) - 1)
    return len(chunks) - 1


def worker_wanted(chunks: list[tuple[int, int]], out: Any, sink: Any) -> bool:
    """Whether to hand the later chunks to a worker: enough rows in two chunks or more, a CSV result that
    takes spelled rows, a sink with a continuation (or none), a fork allowed here."""
    if os.environ.get(ENV_NO_CHUNK_WORKER) or len(chunks) < 2 or chunks[-1][1] < MIN_ROWS:
        return False
    if getattr(out, "part_rows", None) is None or not callable(getattr(out, "adopt_csv", None)):
        return False
    return (sink is None or continues(sink)) and forking.fork_allowed()


class ChunkWorker:
    """A forked child building chunks ``chunks`` (result rows from ``chunks[0][0]`` on) into ``side``."""

    def __init__(self, child: forking.Child, read_fd: int, side: Path) -> None:
        self.child = child
        self._fd = read_fd
        self.side = side

    def collect(self) -> WorkerResult | None:
        """Wait for the child; what it handed back, or ``None`` when it failed (build those chunks here)."""
        data = bytearray()
        try:
            while chunk := os.read(self._fd, 1 << 20):
                data += chunk
        except OSError:
            data = bytearray()
        finally:
            self._close_fd()
        if not self.child.wait() or not data:
            return None
        try:
            # our own child's answer through a private pipe, never input from outside
            result = pickle.loads(bytes(data))
        except Exception:  # noqa: BLE001 - a garbled answer: do the work here
            return None
        return result if isinstance(result, WorkerResult) else None

    def close(self) -> None:
        """Stop the child if it still runs and remove its side files (by a thread: see ``tailbuild``)."""
        self._close_fd()
        self.child.kill()
        from ..write.tailbuild import remove_later

        remove_later(self.side)

    def _close_fd(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1


def start_worker(source: Any, chunks: list[tuple[int, int]], build: Callable[..., Any], sink: Any,
                 part_rows: int, directory: Path) -> ChunkWorker | None:
    """Fork the child that builds, writes and summarises ``chunks`` (``None``: it did not start).

    ``source``: the :class:`~msprobe_core.pipeline.chunking.ChunkSource`; ``build(target, golden, pairs)``:
    a chunk's result table; ``part_rows``: rows per CSV part file; ``directory``: where the side files go.
    """
    from ..write.tailbuild import side_place

    try:
        side = Path(tempfile.mkdtemp(prefix=".msprobe-", suffix=".chunks", dir=side_place(directory)))
    except OSError:
        return None
    later = sink.continued(chunks[0][0]) if sink is not None else None
    read_fd, write_fd = os.pipe()

    def work() -> None:
        os.close(read_fd)
        result = _build_share(source, chunks, build, later, part_rows, side)
        data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(data)

    child = forking.spawn(work)
    os.close(write_fd)
    if child.pid is None:
        os.close(read_fd)
        shutil.rmtree(side, ignore_errors=True)
        return None
    return ChunkWorker(child, read_fd, side)


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


def _build_share(source: Any, chunks: list[tuple[int, int]], build: Callable[..., Any], sink: Any,
                 part_rows: int, side: Path) -> WorkerResult:
    """The child's work: read, build, spell and summarise each chunk (raises on any failure)."""
    from ..files.outputs import TEXT_ERRORS
    from ..write.writers import write_csv_rows

    logger = logging.getLogger("msprobe")
    collect = _Records()
    logger.handlers, logger.filters, logger.propagate = [collect], [], False
    columns: list[str] | None = None
    segments: list[tuple[int, int, Path]] = []
    with warnings.catch_warnings(record=True) as caught, contextlib.ExitStack() as files:
        warnings.simplefilter("always")
        readers = source.open()
        files.enter_context(readers[0])
        files.enter_context(readers[1])
        current: tuple[int, Any] | None = None
        for start, stop in chunks:
            table = build(*source.tables(start, stop, readers))
            if table.meta.get("attachments"):
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
                    path = side / f"part-{part}.csv"
                    current = (part, files.enter_context(
                        open(path, "w", newline="", encoding="utf-8", errors=TEXT_ERRORS)))
                    segments.append((part, 0, path))
                write_csv_rows(current[1], columns if within == 0 else None, cells, at, at + take)
                segments[-1] = (part, segments[-1][1] + take, segments[-1][2])
                at += take
            if sink is not None:
                sink.feed_table(table, start)
            del table, cells
        warned = [(str(w.message), w.category, w.filename, w.lineno) for w in caught]
    partial = sink.finish(None) if sink is not None else None
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
