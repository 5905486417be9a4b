"""The default plugin ``progress``: the run's stage line and the bars of counted work on a terminal
(:mod:`.display`), drawn from the stage events the core sends (``msprobe_stage_started/advanced/finished``).

Turned off (``-p no:progress``), a run draws nothing on the terminal; its log and its results are the same.
"""

from __future__ import annotations

from typing import Any

from msprobe_core.plugin import StageEvent, hookimpl

from . import display

#: the runs open, by event key: the context each opened (an inner run reuses the outer one's line)
_runs: dict[int, Any] = {}
#: the bars of counted work open, by event key
_bars: dict[int, display.Progress] = {}


@hookimpl
def msprobe_stage_started(event: StageEvent) -> None:
    """A run opens the stage line; a job names the pair on it; a stage redraws it; counted work opens a bar."""
    if event.kind == "run":
        opened = display.run_status(event.name, quiet=event.quiet)
        opened.__enter__()
        _runs[event.key] = opened
    elif event.kind == "job":
        display.set_job(event.name, event.step, event.steps)
    elif event.kind == "stage":
        display.stage(event.name, event.detail, event.step, event.steps)
    elif event.kind == "count":
        bar = display.Progress(event.total, unit=event.unit, total_bytes=event.total_bytes, label=event.name,
                               quiet=event.quiet)
        _bars[event.key] = bar.__enter__()


@hookimpl
def msprobe_stage_advanced(event: StageEvent) -> None:
    """How far the stage is (on the stage line), or how much of the counted work is done (on its bar)."""
    if event.kind == "stage":
        display.tick(event.detail)
        return
    bar = _bars.get(event.key) if event.kind == "count" else None
    if bar is not None:
        bar.advance(event.done - bar.done, event.done_bytes - bar.done_bytes)


@hookimpl
def msprobe_stage_finished(event: StageEvent) -> None:
    """A run closes its line; a stage done with the terminal erases it; counted work erases its bar."""
    if event.kind == "run":
        opened = _runs.pop(event.key, None)
        if opened is not None:
            opened.__exit__(None, None, None)
    elif event.kind == "stage":
        display.clear_status()
    elif event.kind == "count":
        bar = _bars.pop(event.key, None)
        if bar is not None:
            bar.close()
