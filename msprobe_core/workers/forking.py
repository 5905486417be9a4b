"""Sharing pure-Python work with a forked child: when it is worth it, and running it safely.

Spelling millions of cells or flattening a big dump.json is pure Python and runs on
one core; on a machine with a second core a forked child can take half of such
work. The child is only ever an accelerator: the caller checks whether it
succeeded and otherwise does the work itself, so no error, memory shortage or
killed child changes what the user gets.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

#: set to any non-empty value to never fork (everything then runs in this process)
ENV_NO_FORK = "MSPROBE_NO_FORK"
#: below this many result rows, splitting the CSV spelling costs more than it saves
MIN_SPLIT_ROWS = 100_000


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
    worker (the pool already uses the cores), not when ``MSPROBE_NO_FORK`` is set.
    """
    if os.environ.get(ENV_NO_FORK) or not hasattr(os, "fork") or sys.platform == "win32":
        return False
    if usable_cores() < 2:
        return False
    if threading.active_count() > 1:
        return False
    return multiprocessing.parent_process() is None


def fork_worthwhile(rows: int) -> bool:
    """Whether writing ``rows`` result rows should be split with a forked child."""
    return rows >= MIN_SPLIT_ROWS and fork_allowed()


@dataclass
class Child:
    """A forked child running one function (:func:`spawn`); ``succeeded`` is known once it was waited for."""

    pid: int | None
    succeeded: bool = False
    reaped: bool = False

    def wait(self) -> bool:
        """Wait for the child to end; True only when its work returned normally."""
        if self.pid is not None and not self.reaped:
            _, status = os.waitpid(self.pid, 0)
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


def spawn(work: Callable[[], None]) -> Child:
    """Run ``work()`` in a forked child and return at once; the caller must ``wait()`` or ``kill()`` it.

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
        return Child(None)
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
    child = Child(pid)
    try:
        release_signals(held)
    except BaseException:
        child.kill()
        raise
    return child


@contextlib.contextmanager
def run_in_child(work: Callable[[], None]) -> Iterator[Child]:
    """Run ``work()`` in a forked child while the ``with`` block runs here; wait for it on exit.

    ``child.succeeded`` is True only when ``work`` returned normally in the child. If
    the fork fails, nothing runs and ``succeeded`` stays False. If the block raises,
    the child is killed (and reaped) before the exception goes on.
    """
    child = spawn(work)
    try:
        yield child
    except BaseException:
        child.kill()
        raise
    child.wait()
