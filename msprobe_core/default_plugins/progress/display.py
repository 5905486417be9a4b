"""Progress on stderr for long runs: a bar (done / total, GB/s, ETA) and a stage line (the default plugin
``progress`` draws them from the core's stage events, :mod:`msprobe_core.console.stages`).

No dependency: a carriage-return line, redrawn at most ten times a second. It is
drawn only when stderr is a terminal, the run is not ``--quiet``, ``MSPROBE_NO_PROGRESS``
is unset, ``CI`` is unset (CI logs are files, even behind a pseudo-terminal) and
``TERM`` is not ``dumb``. Only the outermost bar of nested ones draws (a rank bar
hides the tensor bar of each rank). While a bar is shown, log records clear it
first, so log lines never end up glued to it.

:class:`Progress` counts units of work done in a loop. :func:`run_status` is the
coarse view of a whole run: each stage (load, match, metrics, write, summary,
report…) sends one event when it starts (:func:`stage` here), and one as it moves (:func:`tick`: a
chunk, a block of the dump read). The line shows what moves first — the stage, how
far it is (``chunk 3/23 (13%)``, ``120.0 MB of 800.0 MB``) and the time since the run
began — and the words after, cut to the terminal's width. It is redrawn every second
by an interval timer (``SIGALRM``, only in the main thread of the process that opened
it, with restartable system calls) so that the clock moves during a long stage; no
thread (a thread would stop the run's forks, see :mod:`msprobe_core.default_plugins.forking.children`),
and a stage costs one call, never a callback per row.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

_ACTIVE: Progress | None = None
_STATUS: RunStatus | None = None
_BAR_WIDTH = 24
#: set to any non-empty value to never draw progress
ENV_NO_PROGRESS = "MSPROBE_NO_PROGRESS"


def _fmt_eta(seconds: float) -> str:
    seconds = int(max(0.0, seconds) + 0.5)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class _ClearBeforeLog(logging.Filter):
    """Erases a bar or stage line before each log record is written (and notes when, for the stage line's
    timer: a record being written is not drawn over)."""

    def __init__(self, line: Progress | RunStatus) -> None:
        super().__init__()
        self.line = line

    def filter(self, record: logging.LogRecord) -> bool:
        self.line.clear()
        self.line.cleared_for_log = time.monotonic()
        return True


class Progress:
    """Progress of ``total`` units (rows, ranks…) and optionally ``total_bytes`` bytes.

    Use as a context manager; call :meth:`advance` as work completes.
    ``enabled`` forces drawing on or off (default: stderr is a TTY and not ``quiet``,
    and ``MSPROBE_NO_PROGRESS`` is unset).
    """

    def __init__(
        self,
        total: int,
        *,
        unit: str = "rows",
        total_bytes: int = 0,
        label: str = "compare",
        quiet: bool = False,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        delay: float = 1.0,
        interval: float = 0.1,
    ) -> None:
        self.total = max(0, total)
        self.unit = unit
        self.total_bytes = max(0, total_bytes)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = wanted(self.stream, quiet)
        self.enabled = enabled and _ACTIVE is None
        self.delay = delay
        self.interval = interval
        self.done = 0
        self.done_bytes = 0
        self.start = time.monotonic()
        self._last_draw = 0.0
        self._shown = False
        self._filter: _ClearBeforeLog | None = None
        self.cleared_for_log = 0.0

    # -- context -------------------------------------------------------------
    def __enter__(self) -> Progress:
        global _ACTIVE
        if self.enabled:
            if _STATUS is not None:
                _STATUS.clear()  # the bar takes the line; the next stage draws the status again
            _ACTIVE = self
            self._filter = _ClearBeforeLog(self)
            logging.getLogger("msprobe").addFilter(self._filter)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Erase the bar and stop drawing."""
        global _ACTIVE
        if not self.enabled:
            return
        self.clear()
        if self._filter is not None:
            logging.getLogger("msprobe").removeFilter(self._filter)
            self._filter = None
        if _ACTIVE is self:
            _ACTIVE = None
        self.enabled = False

    # -- updates -------------------------------------------------------------
    def advance(self, units: int = 1, nbytes: int = 0) -> None:
        """Count ``units`` more done (and ``nbytes`` more bytes); redraw when due."""
        self.done += units
        self.done_bytes += nbytes
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.start < self.delay or now - self._last_draw < self.interval:
            return
        self._last_draw = now
        self._draw(now)

    def line(self, now: float | None = None) -> str:
        """The text of the bar as it would be drawn now."""
        now = time.monotonic() if now is None else now
        elapsed = max(now - self.start, 1e-9)
        if self.total_bytes:
            frac = self.done_bytes / self.total_bytes
        else:
            frac = self.done / self.total if self.total else 0.0
        frac = min(max(frac, 0.0), 1.0)
        filled = int(frac * _BAR_WIDTH)
        bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
        parts = [f"{self.label} [{bar}] {self.done:,}/{self.total:,} {self.unit} {frac:4.0%}"]
        if self.done_bytes:
            parts.append(f"{self.done_bytes / elapsed / 1e9:.2f} GB/s")
        if 0 < frac < 1:
            parts.append(f"ETA {_fmt_eta(elapsed * (1 - frac) / frac)}")
        return "  ".join(parts)

    def _draw(self, now: float) -> None:
        try:
            self.stream.write("\r\x1b[K" + self.line(now))
            self.stream.flush()
            self._shown = True
        except (OSError, ValueError):
            self.enabled = False

    def clear(self) -> None:
        """Erase the bar from the terminal (it comes back on the next redraw)."""
        if self._shown:
            try:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            except (OSError, ValueError):
                pass
            self._shown = False


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def wanted(stream: TextIO, quiet: bool = False) -> bool:
    """Whether progress should be drawn on ``stream``: a terminal, not quiet, not CI, not switched off."""
    if quiet or os.environ.get(ENV_NO_PROGRESS) or os.environ.get("TERM") == "dumb":
        return False
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        return False
    return _isatty(stream)








#: seconds between redraws of the stage line by its timer
REDRAW_S = 1.0
#: a log record cleared the line this recently: the timer leaves it alone (the record is being written)
_LOG_HOLD_S = 0.2


class RunStatus:
    """The stage line of one run: ``msprobe compare: [3/4] metrics and verdicts  chunk 3/23 (13%)  0:07  rank1 (2
    of 8): 312,487 rows in 23 chunks…``.

    What moves comes first (stage, its progress, the clock), the words last, cut so that the line never wraps.
    Drawn when a stage starts (:meth:`stage`), as it moves (:meth:`tick`) and every :data:`REDRAW_S` seconds,
    only by the process that opened it (a forked child or pool worker running the same code draws nothing),
    and only while no :class:`Progress` bar holds the line. Cleared by log records, by :meth:`clear` and at the
    end.
    """

    def __init__(self, label: str, *, quiet: bool = False, stream: TextIO | None = None,
                 enabled: bool | None = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = wanted(self.stream, quiet) if enabled is None else enabled
        self.start = time.monotonic()
        self.job = ""
        self.text = ""  # the stage's head (counter and name); empty before the first stage
        self.detail = ""  # the stage's words
        self.moving = ""  # how far the stage is
        self._last_draw = 0.0
        self.shown = False
        self.cleared_for_log = 0.0
        self._held = False  # cleared for output outside the log (the summary): no redraw until the next stage
        self._drawing = False
        self._pid = os.getpid()
        self._filter: _ClearBeforeLog | None = None
        self._old_alarm: object = None
        self._timer = False

    def set_job(self, label: str, index: int = 0, total: int = 1) -> None:
        """The job (rank pair…) the next stages belong to; ``index`` counts from 1."""
        self.job = f"{label} ({index} of {total})" if total > 1 and index else label

    def stage(self, name: str, detail: str = "", step: int = 0, steps: int = 0) -> None:
        """A stage starts: redraw the line (``step`` of ``steps`` when the stage is one of a fixed series)."""
        counter = f"[{step}/{steps}] " if step and steps else ""
        self.text = f"{self.label}: {counter}{name}"
        self.detail = detail
        self.moving = ""
        self._held = False
        self.draw()

    def tick(self, detail: str, interval: float = 0.5) -> None:
        """How far the current stage is (``chunk 3/23 (13%)``), redrawn at most every ``interval`` seconds."""
        self.moving = detail if self.text else ""
        self._held = False
        if time.monotonic() - self._last_draw >= interval:
            self.draw()

    def line(self, now: float | None = None) -> str:
        """The text as drawn now: what moves first, the words after, cut to the terminal's width (never wraps)."""
        now = time.monotonic() if now is None else now
        width = max(10, shutil.get_terminal_size((80, 24)).columns - 1)
        moving = "  ".join(p for p in (self.moving, _fmt_eta(now - self.start)) if p)
        words = ": ".join(p for p in (self.job, self.detail) if p)
        head = f"{self.text}  {moving}"
        if len(head) > width:  # even the head does not fit: keep the clock and progress, cut the stage's name
            room = width - len(moving) - 3
            head = (f"{self.text[:room]}…  {moving}" if room > 0 else moving)[:width]
            return head
        if not words:
            return head
        text = f"{head}  {words}"
        return text if len(text) <= width else text[: max(1, width - 1)] + "…"

    def draw(self, *, from_timer: bool = False) -> None:
        if (not self.enabled or not self.text or _ACTIVE is not None or os.getpid() != self._pid
                or self._drawing):
            return
        self._drawing = True
        try:
            data = "\r\x1b[K" + self.line()
            if from_timer:  # in a signal handler: straight to the descriptor, never into the stream's buffer
                os.write(self.stream.fileno(), data.encode(getattr(self.stream, "encoding", None) or "utf-8",
                                                           "replace"))
            else:
                self.stream.write(data)
                self.stream.flush()
            self.shown = True
            self._last_draw = time.monotonic()
        except (OSError, ValueError, AttributeError):
            self.enabled = False
        finally:
            self._drawing = False

    def _on_timer(self, signum: int, frame: object) -> None:
        if not self._held and time.monotonic() - self.cleared_for_log > _LOG_HOLD_S:
            self.draw(from_timer=True)

    def clear(self, *, hold: bool = False) -> None:
        """Erase the line (the next stage draws it again); ``hold``: no redraw by the timer until then."""
        if hold:
            self._held = True
        if self.shown and os.getpid() == self._pid:
            try:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            except (OSError, ValueError):
                pass
            self.shown = False

    def _start_timer(self) -> None:
        """Redraw every :data:`REDRAW_S` seconds, where an interval timer can be had (main thread, POSIX)."""
        if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
            return
        try:
            if signal.getitimer(signal.ITIMER_REAL) != (0.0, 0.0):
                return  # someone else's timer (a program using the API): leave it alone
            self._old_alarm = signal.signal(signal.SIGALRM, self._on_timer)
            signal.siginterrupt(signal.SIGALRM, False)  # system calls restart: no EINTR in C code
            signal.setitimer(signal.ITIMER_REAL, REDRAW_S, REDRAW_S)
            self._timer = True
        except (OSError, ValueError):
            pass

    def _stop_timer(self) -> None:
        if not self._timer:
            return
        self._timer = False
        try:
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
            signal.signal(signal.SIGALRM, self._old_alarm if self._old_alarm is not None else signal.SIG_DFL)
        except (OSError, ValueError, TypeError):
            pass

    def __enter__(self) -> RunStatus:
        if self.enabled:
            self._filter = _ClearBeforeLog(self)
            logging.getLogger("msprobe").addFilter(self._filter)
            self._start_timer()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop_timer()
        self.clear()
        if self._filter is not None:
            logging.getLogger("msprobe").removeFilter(self._filter)
            self._filter = None
        self.enabled = False


@contextmanager
def run_status(label: str, *, quiet: bool = False, stream: TextIO | None = None,
               enabled: bool | None = None) -> Iterator[RunStatus]:
    """Open the stage line of a run (an inner call, e.g. the API inside a command, reuses the open one)."""
    global _STATUS
    if _STATUS is not None:
        yield _STATUS
        return
    status = RunStatus(label, quiet=quiet, stream=stream, enabled=enabled)
    _STATUS = status
    try:
        with status:
            yield status
    finally:
        _STATUS = None


def stage(name: str, detail: str = "", step: int = 0, steps: int = 0) -> None:
    """Report the start of a stage to the open run status (nothing when none is open)."""
    if _STATUS is not None:
        _STATUS.stage(name, detail, step, steps)


def tick(detail: str) -> None:
    """Report progress within the current stage; call it at most every few thousand rows, never per row."""
    if _STATUS is not None:
        _STATUS.tick(detail)


def set_job(label: str, index: int = 0, total: int = 1) -> None:
    """Name the job the next stages belong to (nothing when no run status is open)."""
    if _STATUS is not None:
        _STATUS.set_job(label, index, total)


def clear_status() -> None:
    """Erase the stage line before printing to the terminal outside the log (the summary)."""
    if _STATUS is not None:
        _STATUS.clear(hold=True)
