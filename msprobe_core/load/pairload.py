"""Loading the two dumps of a pair at the same time: the target in a forked child.

The two sides are independent and loading one is pure Python (one core each), so
on a machine with two or more cores the target is loaded in a forked child while
this process loads the golden; the child sends the table back in the compact wire
form of :mod:`msprobe_core.load.tablewire` through a pipe.

The child is only an accelerator: whenever it fails, for whatever reason (an
input error, no memory, a table the wire form cannot carry, a killed child), the
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
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from ..model import DumpTable
from ..workers import forking
from ..workers.forking import fork_allowed
from .tablewire import TableBuilder, can_encode, encode_parts

#: below this many bytes (the target dump file) a fork costs more than it saves
MIN_FORK_BYTES = 8 * 1024 * 1024
#: set to any non-empty value to always load serially
ENV_SERIAL = "MSPROBE_SERIAL_LOAD"
_END = "end"  # name of the last message of the child
_WHOLE = "whole"  # name of the message carrying a whole loaded object (a table that pickles compactly)


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size if path.is_file() else 0
    except OSError:
        return 0


def can_fork(target: Path) -> bool:
    """Whether loading the target in a forked child is worth it and safe here (see :func:`forking.fork_allowed`)."""
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
    """A forked child that runs one load and writes the pickled wire form to a pipe."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self.fd = fd
        self.reaped = False

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
        for stream in (sys.stdout, sys.stderr):  # nothing buffered may be written twice
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):  # closed, broken or replaced streams
                pass
        held = forking.hold_signals()  # a signal during the fork is delivered once the child is known
        try:
            pid = os.fork()
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            forking.release_signals(held)
            return None
        if pid == 0:  # the child: never returns
            _run_child(work, write_fd, read_fd, held)
        os.close(write_fd)
        child = cls(pid, read_fd)
        try:
            forking.release_signals(held)
        except BaseException:
            child.stop()
            raise
        return child

    def collect(self, like: DumpTable | None = None) -> DumpTable | None:
        """The child's table, or ``None`` when it failed in any way (``like``: see ``TableBuilder``).

        Each part is rebuilt as it arrives, while the child encodes the next one.
        """
        builder = TableBuilder(like)
        whole = None
        complete = False
        with os.fdopen(self.fd, "rb", closefd=True) as pipe:
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
            except Exception:  # noqa: BLE001 - nothing, a damaged message or a part that does not rebuild
                complete = False
        _, status = os.waitpid(self.pid, 0)
        self.reaped = True
        if not complete or not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
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
        if not self.reaped:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self.reaped = True


def _run_child(work: Callable[[], DumpTable], write_fd: int, read_fd: int, held: object) -> None:
    """Body of the forked child: load, encode part by part, write; leave without any cleanup.

    A writer thread sends the parts while the next ones are encoded, so the child never
    waits for a parent still busy with the golden (the pipe holds only 1 MiB).
    """
    code = 1
    try:
        os.close(read_fd)
        forking.release_signals(held, deliver=False)  # what arrived during the fork was the parent's
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the parent cleans up
        table = work()
        if getattr(table, "pickled_whole", False):  # numpy arrays, no row objects (load/dumpindex.DumpIndex)
            data = pickle.dumps((_WHOLE, table), protocol=pickle.HIGHEST_PROTOCOL)
            del table
            _write_all_now([data, pickle.dumps((_END, None), protocol=pickle.HIGHEST_PROTOCOL)], write_fd)
            code = 0
        elif can_encode(table):
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
            code = 1 if failed else 0
    except BaseException:  # noqa: BLE001 - any failure: the parent loads the table itself
        code = 1
    finally:
        os._exit(code)


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
