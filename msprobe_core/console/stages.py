"""Stage events: what a run says as it moves, for the plugins that listen (the default plugin ``progress`` draws
them on the terminal; a third party may log them, time them or send them elsewhere).

The stages call :func:`stage` once when they start, :func:`tick` as they move (a chunk, a block of a dump
read), :class:`Progress` around work counted in units (tensor pairs, rank pairs) and :func:`clear_status` before
they print to the terminal outside the log (the summary); a command opens :func:`run_status` around its run and
names the job (rank pair) the next stages belong to with :func:`set_job`. Each becomes one call of the hooks
``msprobe_stage_started``, ``msprobe_stage_advanced`` and ``msprobe_stage_finished`` with a :class:`StageEvent`,
on the plugin host of the run (:func:`msprobe_core.running.run_host`, else that of the open run status); with
no run and no host, or no plugin listening, an event costs a function call. A stage costs one event, never one
per row: :class:`Progress` sends its count at most every :data:`COUNT_EVERY_S` seconds, and when it ends.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..running import run_host

if TYPE_CHECKING:
    from ..host.registry import PluginHost

#: what an event is about: a whole run (a command), a job of it (a rank pair), one of its stages, counted work
RUN, JOB, STAGE, COUNT = "run", "job", "stage", "count"
#: seconds between two counts :class:`Progress` sends while it moves (the display redraws ten times a second)
COUNT_EVERY_S = 0.05

_keys = itertools.count(1)
#: the hosts of the open run statuses, innermost last (an event outside any run goes to the last one's)
_OPEN: list[PluginHost] = []


@dataclass(frozen=True)
class StageEvent:
    """One event of a run, handed to ``msprobe_stage_started/advanced/finished`` (all fields but ``kind`` and
    ``name`` have a neutral default).

    ``kind``: :data:`RUN` (``name``: the command, ``msprobe compare``; ``quiet``: ``-q``), :data:`JOB` (``name``:
    its label, ``rank1``, empty when the run's own stages follow; ``step`` of ``steps``: which job of how many),
    :data:`STAGE` (``name``; ``detail``: its words; ``step`` of ``steps`` when it is one of a fixed series; an
    advanced event's ``detail`` says how far it is, ``chunk 3/23 (13%)``; finished: the terminal is about to
    get output outside the log) or :data:`COUNT` (``name`` and ``unit`` of ``total`` units, ``total_bytes``;
    ``done``/``done_bytes`` so far). ``key`` tells apart the spans of one kind open at once (nested counts, a
    run opened inside another).
    """

    kind: str
    name: str
    detail: str = ""
    step: int = 0
    steps: int = 0
    done: int = 0
    total: int = 0
    unit: str = ""
    done_bytes: int = 0
    total_bytes: int = 0
    quiet: bool = False
    key: int = 0


def _emit(when: str, event: StageEvent, host: PluginHost | None = None) -> None:
    host = host or run_host() or (_OPEN[-1] if _OPEN else None)
    if host is not None:
        host.notify(f"msprobe_stage_{when}", event=event)


@contextmanager
def run_status(label: str, *, quiet: bool = False) -> Iterator[None]:
    """A command's run, from its start to its end (``label``: ``msprobe compare``; ``quiet``: ``-q``)."""
    host = run_host()
    key = next(_keys)
    _emit("started", StageEvent(RUN, label, quiet=quiet, key=key), host)
    if host is not None:
        _OPEN.append(host)
    try:
        yield
    finally:
        if host is not None:
            _OPEN.remove(host)
        _emit("finished", StageEvent(RUN, label, quiet=quiet, key=key), host)


def stage(name: str, detail: str = "", step: int = 0, steps: int = 0) -> None:
    """A stage starts (``step`` of ``steps`` when it is one of a fixed series; ``detail``: its words)."""
    _emit("started", StageEvent(STAGE, name, detail, step, steps))


def tick(detail: str) -> None:
    """How far the current stage is (``chunk 3/23 (13%)``); call it at most every few thousand rows, never per
    row."""
    _emit("advanced", StageEvent(STAGE, "", detail))


def set_job(label: str, index: int = 0, total: int = 1) -> None:
    """The job (rank pair…) the next stages belong to; ``index`` of ``total`` counts from 1 (``""``: none)."""
    _emit("started", StageEvent(JOB, label, step=index, steps=total))


def clear_status() -> None:
    """The current stage is done with the terminal's line: output outside the log follows (the summary)."""
    _emit("finished", StageEvent(STAGE, ""))


class Progress:
    """``total`` units of work (rows, tensor pairs, rank pairs…) and optionally ``total_bytes`` bytes, counted
    as they are done: a context manager; call :meth:`advance` as work completes."""

    def __init__(self, total: int, *, unit: str = "rows", total_bytes: int = 0, label: str = "compare",
                 quiet: bool = False) -> None:
        self.total = max(0, total)
        self.unit = unit
        self.total_bytes = max(0, total_bytes)
        self.label = label
        self.quiet = quiet
        self.done = 0
        self.done_bytes = 0
        self._key = next(_keys)
        self._sent = 0.0

    def _event(self) -> StageEvent:
        return StageEvent(COUNT, self.label, done=self.done, total=self.total, unit=self.unit,
                          done_bytes=self.done_bytes, total_bytes=self.total_bytes, quiet=self.quiet, key=self._key)

    def __enter__(self) -> Progress:
        _emit("started", self._event())
        return self

    def __exit__(self, *exc: object) -> None:
        _emit("finished", self._event())

    def advance(self, units: int = 1, nbytes: int = 0) -> None:
        """Count ``units`` more done (and ``nbytes`` more bytes)."""
        self.done += units
        self.done_bytes += nbytes
        now = time.monotonic()
        if now - self._sent >= COUNT_EVERY_S:
            self._sent = now
            _emit("advanced", self._event())


def size_text(nbytes: int) -> str:
    """``231.8 MB``: a size for people."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


def fraction_text(done: int, total: int) -> str:
    """``3/23 (13%)``: how far a stage of ``total`` pieces is."""
    return f"{done:,}/{total:,} ({done / total:.0%})" if total > 0 else f"{done:,}"


def file_sizes(*paths: Any) -> str:
    """``231.8 MB`` for the files that exist among ``paths`` (a stage's detail)."""
    total = 0
    for p in paths:
        try:
            total += os.stat(p).st_size
        except (OSError, TypeError, ValueError):
            pass
    return size_text(total)
