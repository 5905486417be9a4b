"""The ``json_summary`` default plugin: ``--json-summary FILE`` writes the run's summary as JSON.

Turned off (``-p no:json_summary``), ``--json-summary`` is no option.
"""

from __future__ import annotations

import logging
from pathlib import Path

from msprobe_core.plugin import FinishedRun, OptionSpec, Register, hookimpl

log = logging.getLogger("msprobe")


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``--json-summary FILE``."""
    register(OptionSpec("json_summary", ("--json-summary",), "Write the run summary (verdict counts, worst rows, "
                        "first divergence, files) as JSON.", kind="path", metavar="FILE", api=False))


def _path(run: FinishedRun) -> Path | None:
    value = getattr(run.options, "json_summary", None)
    return None if value is None else Path(value)


@hookimpl
def msprobe_run_outputs(run: FinishedRun) -> list[Path] | None:
    """The JSON file (the summary lists it among the run's files)."""
    path = _path(run)
    return None if path is None else [path]


@hookimpl
def msprobe_run_finished(run: FinishedRun) -> None:
    """Write ``run.summary`` (made by the ``summary`` plugin's tryfirst implementation) to the file."""
    path = _path(run)
    if path is None:
        return
    if run.summary is None:
        log.warning("--json-summary: the run has no summary (the plugin 'summary' is turned off); %s is not written",
                    path)
        return
    from .summary import write_json_summary

    write_json_summary(run.summary.data, path)
