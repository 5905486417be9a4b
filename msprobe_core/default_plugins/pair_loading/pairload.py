"""Loading the two dumps of a pair at the same time: the target in a forked child.

The two sides are independent and loading one is pure Python (one core each), so
on a machine with two or more cores the target is loaded in a forked child while
this process loads the golden; the child sends the table back in the compact wire
form of :mod:`.tablewire` through a pipe.

The child is only an accelerator: whenever it fails, for whatever reason (an
input error, no memory, a table the wire form cannot carry, a killed child, a child
that makes no progress for the stall limit of :mod:`msprobe_core.default_plugins.forking.children`), the
target is loaded here again, so every error reaches the user exactly as a
serial load reports it, and the target's error still comes before the golden's.
Small files, platforms without ``fork``, processes with other threads and
processes that are themselves pool workers load serially.
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import threading
from collections.abc import Callable
from pathlib import Path

from msprobe_core.plugin import DumpTable

from ..forking import children as forking
from .tablewire import TableBuilder, can_encode, encode_parts

#: below this many bytes (the target dump file) a fork costs more than it saves
MIN_FORK_BYTES = 8 * 1024 * 1024
#: set to any non-empty value to always load serially
ENV_SERIAL = "MSPROBE_SERIAL_LOAD"
_END = "end"  # name of the last message of the child
_WHOLE = "whole"  # name of the message carrying a whole loaded object (a table that pickles compactly)
#: the child, as the warning of a stalled one names it
ROLE = "child loading the target dump"


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size if path.is_file() else 0
    except OSError:
        return 0


def fork_allowed() -> bool:
    """Whether this process may fork a child at all (the rule of :func:`msprobe_core.default_plugins.forking.children.fork_allowed`)."""
    return forking.fork_allowed()


def can_fork(target: Path) -> bool:
    """Whether loading the target in a forked child is worth it and safe here (see :func:`fork_allowed`)."""
    if os.environ.get(ENV_SERIAL) or not fork_allowed():
        return False
    return _file_size(target) >= MIN_FORK_BYTES


def load_two(
    load: Callable[[Path], DumpTable],
    target: Path,
    golden: Path,
    meanwhile: Callable[[DumpTable], None] | None = None,
) -> tuple[DumpTable, DumpTable]:
    """``(load(target), load(golden))``, the target loaded in a forked child when :func:`can_fork`.

    ``meanwhile(golden_table)`` (which must not raise) runs in this process after the golden
    is loaded and before the child's table is taken: work that fills the wait for the child.
    """
    if not can_fork(target):
        return load(target), load(golden)
    child = _Child.start(lambda: load(target))
    if child is None:
        return load(target), load(golden)
    try:
        try:
            golden_table = load(golden)
            golden_error = None
        except Exception as exc:  # noqa: BLE001 - re-raised below, after the target's own error
            golden_table, golden_error = None, exc
        if meanwhile is not None and golden_error is None:
            meanwhile(golden_table)
        target_table = child.collect(like=golden_table if isinstance(golden_table, DumpTable) else None)
    finally:
        child.stop()
    if target_table is None:
        target_table = load(target)  # the child failed: load here (raises the target's error, if any)
    if golden_error is not None:
        raise golden_error
    return target_table, golden_table


class _Child:
    """A forked child (:func:`forking.spawn`) that runs one load and writes the pickled wire form to a pipe."""

    def __init__(self, child: forking.Child, fd: int) -> None:
        self.child = child
        self.fd = fd

    @classmethod
    def start(cls, work: Callable[[], DumpTable]) -> _Child | None:
        try:
            read_fd, write_fd = os.pipe()
        except OSError:
            return None
        try:  # fewer, larger hand-overs between the two processes (Linux; the default is 64 KiB)
            import fcntl

            fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 1 << 20)
        except (ImportError, AttributeError, OSError):
            pass

        def in_child() -> None:
            os.close(read_fd)
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the parent cleans up
            _send(work(), write_fd)

        try:
            child = forking.spawn(in_child, ROLE)  # a stop signal during the fork is raised here, the child killed
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        if child.pid is None:
            os.close(read_fd)
            return None
        return cls(child, read_fd)

    def collect(self, like: DumpTable | None = None) -> DumpTable | None:
        """The child's table, or ``None`` when it failed in any way (``like``: see ``TableBuilder``).

        Each part is rebuilt as it arrives, while the child encodes the next one.
        """
        builder = TableBuilder(like)
        whole = None
        complete = False
        with forking.pipe_reader(self.fd, self.child.watch()) as pipe:
            self.fd = -1
            try:
                while True:
                    name, part = pickle.load(pipe)
                    if name == _END:
                        complete = True
                        break
                    if name == _WHOLE:
                        whole = part
                    else:
                        builder.add(name, part)
                    del part
            except forking.Stalled as stalled:  # stopped, or stuck in I/O: this process loads the target
                self.child.give_up(stalled.limit)
                return None
            except Exception:  # noqa: BLE001 - nothing, a damaged message or a part that does not rebuild
                complete = False
        if not self.child.wait() or not complete:
            return None
        if whole is not None:
            return whole
        try:
            return builder.table()
        except ValueError:
            return None

    def stop(self) -> None:
        """Kill and reap the child unless it was collected (an error or Ctrl-C in this process)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.child.kill()


def _send(table: DumpTable, write_fd: int) -> None:
    """In the forked child: the loaded table, encoded part by part, into the pipe (raises on any failure).

    A writer thread sends the parts while the next ones are encoded, so the child never
    waits for a parent still busy with the golden (the pipe holds only 1 MiB).
    """
    if getattr(table, "pickled_whole", False):  # numpy arrays, no row objects (load/dumpindex.DumpIndex)
        data = pickle.dumps((_WHOLE, table), protocol=pickle.HIGHEST_PROTOCOL)
        del table
        _write_all_now([data, pickle.dumps((_END, None), protocol=pickle.HIGHEST_PROTOCOL)], write_fd)
        return
    if not can_encode(table):
        raise ValueError("this table has no wire form")
    outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
    failed: list[BaseException] = []
    writer = threading.Thread(target=_write_all, args=(outbox, write_fd, failed), daemon=True)
    writer.start()
    for name, part in encode_parts(table, consume=True):
        outbox.put(pickle.dumps((name, part), protocol=pickle.HIGHEST_PROTOCOL))
        del part
    outbox.put(pickle.dumps((_END, None), protocol=pickle.HIGHEST_PROTOCOL))
    outbox.put(None)
    writer.join()
    if failed:
        raise failed[0]


def _write_all_now(messages: list[bytes], fd: int) -> None:
    """Write ``messages`` to ``fd`` (nothing is left to do meanwhile: the child waits while the parent reads)."""
    for data in messages:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]


def _write_all(outbox: queue.SimpleQueue, fd: int, failed: list[BaseException]) -> None:
    """Write every message of ``outbox`` to ``fd`` until ``None``."""
    try:
        while (data := outbox.get()) is not None:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            del view, data
    except BaseException as exc:  # noqa: BLE001 - reported through the exit code
        failed.append(exc)
