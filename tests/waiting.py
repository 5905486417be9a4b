"""Waiting on an event in a test (a file gone, a process reaped), never on the clock.

A test asserts behaviour, not the machine's speed: on a busy two-core machine a run that takes a second alone
may take a minute. Each wait polls for the event itself and gives up only after :data:`BOUND` seconds, a bound
that only a hung run reaches.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

#: seconds after which a wait gives up: far beyond any run on a loaded machine, reached only by a hang
BOUND = 600.0


def wait_until(event: Callable[[], object], bound: float = BOUND, poll: float = 0.005) -> bool:
    """Poll ``event()`` until it is true (True) or ``bound`` seconds passed (False)."""
    end = time.monotonic() + bound
    while not event():
        if time.monotonic() > end:
            return bool(event())
        time.sleep(poll)
    return True


def process_gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (gone, or a zombie not yet reaped: it holds no file or lock then)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in (b"Z", b"X")
