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


def hold_signals() -> Any:
    """Hold the stopping signals (:func:`release_signals` delivers what arrived meanwhile); ``None`` where
    signals cannot be held. Around a fork: a handler that ran inside the fork's own hooks (the logging
    module's locks) would have its ``KeyboardInterrupt`` ignored there, and the run would go on."""
    try:
        return signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
    except (AttributeError, ValueError, OSError):  # no pthread_sigmask, or not the main thread's business
        return None


def release_signals(held: Any) -> None:
    """Undo :func:`hold_signals`; a signal that arrived meanwhile has its handler run now, here (it may raise)."""
    if held is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)  # runs the pending handlers before it returns


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
            release_signals(held)  # a fork's child has no pending signals of its parent
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
