"""Sharing pure-Python work with a forked child: when it is worth it, and running it safely.

Spelling millions of cells or flattening a big dump.json is pure Python and runs on
one core; on a machine with a second core a forked child can take half of such
work. The child is only ever an accelerator: the caller checks whether it
succeeded and otherwise does the work itself, so no error, memory shortage or
killed child changes what the user gets.

Every child is watched the same way while this process waits for it (:class:`Watch`: its exit with
:meth:`Child.wait`, its answers through a pipe with :func:`pipe_reader`): a child that makes no progress (no
CPU time spent, no byte sent) for :func:`stall_limit` seconds is stopped or stuck in I/O; it is killed, this
process does its share itself and says so in one warning line (:meth:`Child.give_up`).

A child's side files are removed by a thread (:func:`msprobe_core.plugin.remove_later`), which the run waits for
before it forks again and before it returns.

The machinery of the default plugin ``forking``: the default plugins ``chunked`` and ``pair_loading`` run their
children through it, and the plugin itself lends the CSV writer a child for the second half of a big file
(:mod:`.csvsplit`). With the plugin turned off (``-p no:forking``) :func:`fork_allowed` is false: nothing forks
and every share of the work is done in this process, with the same results.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: the name this plugin is registered under (``msprobe_core.host.defaults``)
PLUGIN = "forking"
#: set to any non-empty value to never fork (everything then runs in this process)
ENV_NO_FORK = "MSPROBE_NO_FORK"
#: below this many result rows, splitting the CSV spelling costs more than it saves
MIN_SPLIT_ROWS = 100_000
#: seconds a child may go without progress while this process waits for it; see :func:`stall_limit`
STALL_S = 60.0
#: set to a number of seconds to use that stall limit for every forked child instead (tests make it short)
ENV_STALL_S = "MSPROBE_CHILD_STALL_S"
#: the setting's first name, from when only the chunk worker was watched; still honoured
ENV_STALL_S_FORMER = "MSPROBE_CHUNK_WORKER_STALL_S"


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity), else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def fork_allowed() -> bool:
    """Whether a fork is safe and can run in parallel here.

    Not on platforms without ``fork``, not on one core, not with other threads
    running (a fork copies the locks they hold), not inside a process-pool
    worker (the pool already uses the cores), not when ``MSPROBE_NO_FORK`` is set, not when the run's plugins
    have this plugin turned off (:func:`turned_off`).
    """
    if os.environ.get(ENV_NO_FORK) or not hasattr(os, "fork") or sys.platform == "win32":
        return False
    if usable_cores() < 2:
        return False
    if threading.active_count() > 1:
        return False
    # a multiprocessing worker has the module loaded (a process that never loaded it is none: not loaded for this)
    mp = sys.modules.get("multiprocessing")
    return (mp is None or mp.parent_process() is None) and not turned_off()


def turned_off() -> bool:
    """Whether the run's plugin host has the plugin ``forking`` turned off (``-p no:forking``,
    ``MSPROBE_DISABLE_PLUGINS``): the children of ``chunked`` and ``pair_loading`` then stay unforked too."""
    from msprobe_core.plugin import run_host

    host = run_host()
    return host is not None and PLUGIN in host.disabled


def fork_worthwhile(rows: int) -> bool:
    """Whether writing ``rows`` result rows should be split with a forked child."""
    return rows >= MIN_SPLIT_ROWS and fork_allowed()


def stall_limit(own_s: float = 0.0) -> float:
    """How long a child may go without progress while this process waits for it: :data:`ENV_STALL_S` (or
    :data:`ENV_STALL_S_FORMER`) when set, else the larger of :data:`STALL_S` and twice the time this process
    took for its own share of the work (``own_s``: a slow disk or huge tensors make everything slow, here too)."""
    for name in (ENV_STALL_S, ENV_STALL_S_FORMER):
        try:
            configured = float(os.environ.get(name) or "nan")
        except ValueError:
            continue
        if configured > 0:
            return configured
    return max(STALL_S, 2 * own_s)


class Stalled(Exception):
    """The child made no progress within the stall limit (``limit``: that limit, in seconds)."""

    def __init__(self, limit: float) -> None:
        super().__init__(f"no progress for {limit:g} s")
        self.limit = limit


@dataclass
class Child:
    """A forked child running one function (:func:`spawn`); ``succeeded`` is known once it was waited for.

    ``role`` names it in the warning a stalled child gives (:meth:`give_up`); ``started``: when it was forked.
    """

    pid: int | None
    succeeded: bool = False
    reaped: bool = False
    role: str = "forked child"
    started: float = field(default_factory=time.monotonic)

    def watch(self, own_s: float | None = None) -> Watch:
        """A watch over this child from now on (``own_s``: this process's own share took that long; default:
        the time since the fork)."""
        return Watch(self, time.monotonic() - self.started if own_s is None else own_s)

    def wait(self, own_s: float | None = None) -> bool:
        """Wait for the child to end; True only when its work returned normally.

        A child that makes no progress for the stall limit is given up (:meth:`give_up`: False).
        """
        if self.pid is not None and not self.reaped:
            watch = self.watch(own_s)
            try:
                status = watch.exit_status()
            except Stalled as stalled:
                self.give_up(stalled.limit)
                return False
            self.reaped = True
            self.succeeded = os.waitstatus_to_exitcode(status) == 0
        return self.succeeded

    def kill(self) -> None:
        """Stop the child if it still runs, and reap it (its work counts as failed)."""
        if self.pid is None or self.reaped:
            return
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(self.pid, 0)
        self.reaped = True
        self.succeeded = False

    def give_up(self, limit: float) -> None:
        """Say in one warning line that the child made no progress for ``limit`` seconds and that this process
        does its share, and kill it without waiting long: one stuck in uninterruptible I/O dies only when the
        I/O ends, and the run must not wait for that (it is reaped at exit, or by init)."""
        if self.pid is None or self.reaped:
            return
        logging.getLogger("msprobe").warning(
            "The %s (pid %s) made no progress for %g s; it was stopped and this process does its share itself.",
            self.role, self.pid, limit)
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            try:
                if os.waitpid(self.pid, os.WNOHANG)[0]:
                    break
            except ChildProcessError:
                break
            time.sleep(0.01)
        self.reaped, self.succeeded = True, False


class Watch:
    """This process waiting for a child: progress is CPU time the child spends (where ``/proc`` tells it) or a
    byte it sends; none for the stall limit (:attr:`limit`) raises :class:`Stalled`.

    Where the child's CPU time cannot be read, a wait for its exit alone never stalls (nothing tells a stopped
    child from a busy one), and a wait for its bytes counts only the bytes.
    """

    def __init__(self, child: Child, own_s: float = 0.0) -> None:
        self.child = child
        self.limit = stall_limit(own_s)
        self.streamed = False  # bytes are a sign of progress: no CPU time read means no progress
        self._mark = _cpu_time(child.pid)
        self._last = time.monotonic()

    def _tick(self) -> float:
        """Seconds to wait for an event before looking at the child's CPU time again."""
        return max(0.005, min(0.5, self.limit / 4, self.limit - (time.monotonic() - self._last)))

    def check(self) -> None:
        """Note the child's progress since the last look; raise :class:`Stalled` when there was none for the limit."""
        mark = _cpu_time(self.child.pid)
        now = time.monotonic()
        if (mark is not None and mark != self._mark) or (mark is None and not self.streamed):
            self._mark, self._last = mark, now
        if now - self._last >= self.limit:
            raise Stalled(self.limit)

    def readable(self, fd: int) -> None:
        """Wait until ``fd`` (the child's pipe) has bytes or is closed."""
        self.streamed = True
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while not poller.poll(self._tick() * 1000):
            self.check()
        self._last = time.monotonic()

    def exit_status(self) -> int:
        """Wait until the child ends and reap it: its wait status."""
        pid = self.child.pid
        assert pid is not None
        exited = _exit_fd(pid)
        try:
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    return status
                if exited is not None:
                    select.select([exited], [], [], self._tick())
                else:
                    time.sleep(min(0.02, self._tick()))
                self.check()
        finally:
            if exited is not None:
                os.close(exited)


def _exit_fd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` ends (Linux's pidfd), else None (the wait polls)."""
    try:
        return os.pidfd_open(pid)  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        return None


def _cpu_time(pid: int | None) -> int | None:
    """The CPU time ``pid`` has spent, in clock ticks (Linux ``/proc``); None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of the line)
    except (OSError, IndexError, ValueError):
        return None


class _ChildPipe(io.RawIOBase):
    """The read end of a child's pipe, each read waiting under :attr:`watch` (raises :class:`Stalled`)."""

    def __init__(self, fd: int, watch: Watch) -> None:
        super().__init__()
        self.fd = fd
        self.watch = watch

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self.watch.readable(self.fd)
        return os.readv(self.fd, [buffer])

    def close(self) -> None:
        if not self.closed and self.fd >= 0:
            fd, self.fd = self.fd, -1
            with contextlib.suppress(OSError):
                os.close(fd)
        super().close()


def pipe_reader(fd: int, watch: Watch) -> io.BufferedReader:
    """A buffered reader of a child's pipe ``fd`` (it owns ``fd``): every wait for bytes is watched by ``watch``
    (:class:`Stalled` out of a read; a new watch can be put in ``reader.raw.watch``)."""
    return io.BufferedReader(_ChildPipe(fd, watch), 1 << 20)


#: the signals the command line turns into an orderly stop (Ctrl-C, ``kill``, a closed terminal)
_STOPPING = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


@dataclass
class HeldSignals:
    """The stop signals' handlers while :func:`hold_signals` records them instead (see there)."""

    handlers: dict[int, Any]
    pending: list[int]


def hold_signals() -> HeldSignals | None:
    """Record the stop signals instead of handling them, until :func:`release_signals`; ``None`` where this
    thread cannot set handlers (not the main thread).

    Around a fork: a handler that ran inside ``os.fork``'s own hooks (the logging module's locks) would have
    its ``KeyboardInterrupt`` ignored there, and the run would go on as if nothing had happened. Blocking
    the signals is not enough: the kernel hands a process signal to any thread that does not block it (a
    BLAS thread), and the main thread then runs the Python handler at its next instruction, wherever it is.
    """
    pending: list[int] = []

    def record(signum: int, frame: object) -> None:
        pending.append(signum)

    handlers: dict[int, Any] = {}
    if any(signal.getsignal(signum) is None for signum in _STOPPING):
        return None  # a handler set outside Python could not be put back
    try:
        for signum in _STOPPING:
            handlers[signum] = signal.signal(signum, record)
    except ValueError:  # not the main thread
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        return None
    return HeldSignals(handlers, pending)


def release_signals(held: HeldSignals | None, deliver: bool = True) -> None:
    """Undo :func:`hold_signals`; a stop signal recorded meanwhile is handled now, here (it may raise), unless
    ``deliver`` is false (a fork's child: the signals were its parent's)."""
    if held is None:
        return
    for signum, handler in held.handlers.items():
        signal.signal(signum, handler)
    if not deliver:
        return
    for signum in dict.fromkeys(held.pending):
        handler = held.handlers.get(signum)
        if callable(handler):
            handler(signum, sys._getframe())
        elif handler == signal.SIG_DFL:
            os.kill(os.getpid(), signum)


def spawn(work: Callable[[], None], role: str = "forked child") -> Child:
    """Run ``work()`` in a forked child and return at once; the caller must ``wait()`` or ``kill()`` it.

    ``role`` names the child in the one line said when it stalls (:meth:`Child.give_up`).

    If the fork fails, nothing runs: the child's ``pid`` is None and ``wait()`` is False. A stopping signal
    that arrives during the fork is delivered once the child is known: the child is killed and reaped and
    the signal's exception goes on from here.
    """
    for stream in (sys.stdout, sys.stderr):  # what is buffered here must not be written twice
        with contextlib.suppress(Exception):
            stream.flush()
    held = hold_signals()
    try:
        pid = os.fork()
    except OSError:
        release_signals(held)
        return Child(None, role=role)
    if pid == 0:  # the child: run the work, never return into the caller's code
        code = 1
        try:
            release_signals(held, deliver=False)  # what arrived during the fork was its parent's
            work()
            code = 0
        except BaseException:  # noqa: BLE001 - any failure just means the parent does the work
            pass
        finally:
            os._exit(code)
    child = Child(pid, role=role)
    try:
        release_signals(held)
    except BaseException:
        child.kill()
        raise
    return child


@dataclass
class SideTail:
    """A running child writing the CSV text (no header) of a result's rows ``start:`` into ``side``: the tail a
    writer takes (``StrategySpec.tail``, ``msprobe_csv_tail``). ``remove`` takes the side file away once the
    result is written (``remove_later`` where it may be big and a thread may free its blocks meanwhile).

    A tail that also summarises its rows (``StrategySpec.tail`` given a summary sink) sends the partial of a
    continuation of that sink through the pipe ``answers`` before it ends; :meth:`finish` reads it into
    ``partial`` (``None`` when the child failed: whoever asked builds and summarises those rows itself)."""

    child: Child
    side: Path
    start: int
    remove: Callable[[Path], None] = field(default=lambda path: path.unlink(missing_ok=True))
    answers: int = -1
    partial: Any = None
    #: whether the child also sends the partial of its rows (a tail made with ``answers``)
    summarises = False

    def finish(self) -> bool:
        """Wait for the child; True when ``side`` holds every row from ``start`` on (and, for a tail that
        summarises, when ``partial`` holds the summary of those rows)."""
        if self.answers >= 0 and self.child.pid is not None and not self.child.reaped:
            import pickle

            reader = pipe_reader(self.answers, self.child.watch())
            self.answers = -1  # the reader owns the descriptor now
            try:
                with reader:
                    self.partial = pickle.load(reader)
            except Stalled as stalled:
                self.child.give_up(stalled.limit)
            except Exception:  # noqa: BLE001 - a child that died mid-answer: its rows are done here
                self.child.kill()
        return self.child.wait() and (self.partial is not None or not self.summarises)

    def close(self) -> None:
        """Stop the child if it still runs and remove the side file (once the file is written, or has failed)."""
        self.child.kill()
        if self.answers >= 0:
            with contextlib.suppress(OSError):
                os.close(self.answers)
            self.answers = -1
        self.remove(self.side)
