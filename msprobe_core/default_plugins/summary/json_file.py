"""The ``json_summary`` default plugin: ``--json-summary FILE`` writes the run's summary as JSON.

Turned off (``-p no:json_summary``), ``--json-summary`` is no option.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from msprobe_core.plugin import CompareJob, CompareOptions, FinishedRun, OptionSpec, Register, hookimpl

log = logging.getLogger("msprobe")


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``--json-summary FILE``."""
    register(OptionSpec("json_summary", ("--json-summary",), "Write the run summary (verdict counts, worst rows, "
                        "first divergence, files) as JSON.", kind="path", metavar="FILE", api=False))


@hookimpl
def msprobe_check_run(jobs: list[CompareJob], options: CompareOptions, values: dict[str, Any]) -> None:
    """Before any work: the ``--json-summary`` file is none of the run's inputs (the dumps, the files beside
    them, a file an option names) and, when it exists, an earlier JSON summary (not a result; --force: anything)."""
    from . import refusals as refuse

    summary = values.get("json_summary")
    if summary is None:
        return
    inputs: list = []
    for job in jobs:
        for side in (Path(job.target), Path(job.golden)):
            inputs.append(side)
            inputs.extend(side.parent / name for name in ("stack.json", "construct.json"))
    inputs.extend(Path(v) for k, v in values.items()
                  if k not in ("json_summary", "output_dir") and isinstance(v, (str, Path)) and v)
    refuse.refuse_outputs_over_inputs({"--json-summary": Path(summary)}, inputs)
    refuse.refuse_other_kind("--json-summary", Path(summary), refuse.looks_like_json_object, "a JSON summary",
                             force=bool(getattr(options, "force", False)))


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
