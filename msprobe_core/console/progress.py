"""Progress on stderr for long runs: a bar (done / total, GB/s, ETA) and a stage line.

No dependency: a carriage-return line, redrawn at most ten times a second. It is
drawn only when stderr is a terminal, the run is not ``--quiet``, ``MSPROBE_NO_PROGRESS``
is unset, ``CI`` is unset (CI logs are files, even behind a pseudo-terminal) and
``TERM`` is not ``dumb``. Only the outermost bar of nested ones draws (a rank bar
hides the tensor bar of each rank). While a bar is shown, log records clear it
first, so log lines never end up glued to it.

:class:`Progress` counts units of work done in a loop. :func:`run_status` is the
coarse view of a whole run: each stage (load, match, metrics, write, summary,
report…) calls :func:`stage` once when it starts, and the line names the stage,
its size and the time since the run began. Nothing runs in between (no thread,
no timer: a thread would stop the run's forks, see :mod:`msprobe_core.workers.forking`),
so a stage costs one call, never a callback per row.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
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
    def __init__(self, bar: Progress) -> None:
        super().__init__()
        self.bar = bar

    def filter(self, record: logging.LogRecord) -> bool:
        self.bar.clear()
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


def _size(nbytes: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


class RunStatus:
    """The stage line of one run: ``msprobe compare: rank1 (2 of 8) [3/4] metrics: 312,487 rows  0:07``.

    Drawn when a stage starts (:meth:`stage`), only by the process that opened it (a forked
    child or pool worker running the same code draws nothing), and only while no
    :class:`Progress` bar holds the line. Cleared by log records, by :meth:`clear` and at the end.
    """

    def __init__(self, label: str, *, quiet: bool = False, stream: TextIO | None = None,
                 enabled: bool | None = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = wanted(self.stream, quiet) if enabled is None else enabled
        self.start = time.monotonic()
        self.job = ""
        self.text = ""
        self._stage_text = ""
        self._last_draw = 0.0
        self.shown = False
        self._pid = os.getpid()
        self._filter: _ClearBeforeLog | None = None

    def set_job(self, label: str, index: int = 0, total: int = 1) -> None:
        """The job (rank pair…) the next stages belong to; ``index`` counts from 1."""
        self.job = f"{label} ({index} of {total}) " if total > 1 and index else (f"{label} " if label else "")

    def stage(self, name: str, detail: str = "", step: int = 0, steps: int = 0) -> None:
        """A stage starts: redraw the line (``step`` of ``steps`` when the stage is one of a fixed series)."""
        counter = f"[{step}/{steps}] " if step and steps else ""
        self.text = self._stage_text = f"{self.label}: {self.job}{counter}{name}" + (f": {detail}" if detail else "")
        self.draw()

    def tick(self, detail: str, interval: float = 0.5) -> None:
        """Progress within the current stage (``column 3 of 27``), redrawn at most every ``interval`` seconds."""
        self.text = f"{self._stage_text} ({detail})" if self._stage_text else ""
        if time.monotonic() - self._last_draw >= interval:
            self.draw()

    def line(self, now: float | None = None) -> str:
        """The text as drawn now (cut to the terminal's width, so that it never wraps)."""
        now = time.monotonic() if now is None else now
        text = f"{self.text}  {_fmt_eta(now - self.start)}"
        width = shutil.get_terminal_size((80, 24)).columns - 1
        return text if len(text) <= width else text[: max(1, width - 1)] + "…"

    def draw(self) -> None:
        if not self.enabled or not self.text or _ACTIVE is not None or os.getpid() != self._pid:
            return
        try:
            self.stream.write("\r\x1b[K" + self.line())
            self.stream.flush()
            self.shown = True
            self._last_draw = time.monotonic()
        except (OSError, ValueError):
            self.enabled = False

    def clear(self) -> None:
        """Erase the line (the next stage draws it again)."""
        if self.shown and os.getpid() == self._pid:
            try:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            except (OSError, ValueError):
                pass
            self.shown = False

    def __enter__(self) -> RunStatus:
        if self.enabled:
            self._filter = _ClearBeforeLog(self)  # type: ignore[arg-type]
            logging.getLogger("msprobe").addFilter(self._filter)
        return self

    def __exit__(self, *exc: object) -> None:
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
        _STATUS.clear()


def file_sizes(*paths: object) -> str:
    """``231.8 MB`` for the files that exist among ``paths`` (a stage's detail)."""
    total = 0
    for p in paths:
        try:
            total += os.stat(p).st_size  # type: ignore[arg-type]
        except (OSError, TypeError, ValueError):
            pass
    return _size(total)
