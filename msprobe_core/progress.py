"""A one-line progress bar on stderr for long runs: done / total, GB/s, ETA.

No dependency: a carriage-return line redrawn at most ten times a second. It is
drawn only when stderr is a terminal, the run is not ``--quiet``, and the run
has lasted ``delay`` seconds (short runs print nothing). Only the outermost bar
of nested ones draws (a rank bar hides the tensor bar of each rank). While a bar
is shown, log records clear it first, so log lines never end up glued to it.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import TextIO

_ACTIVE: Progress | None = None
_BAR_WIDTH = 24


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
            enabled = not quiet and not os.environ.get("MSPROBE_NO_PROGRESS") and _isatty(self.stream)
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
