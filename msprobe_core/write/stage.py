"""The write stage for one job: its result table into files under the job's output directory."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import OutputError
from ..files.outputs import TEXT_ERRORS, output_policy
from ..host.specs import CompareJob
from ..model import CompareOptions
from ..result import ResultTable

if TYPE_CHECKING:
    from ..host.registry import PluginHost

log = logging.getLogger("msprobe")


def write_result(table: ResultTable, job: CompareJob, options: CompareOptions, timestamp: str, host: PluginHost,
                 tail: Any = None, started: float | None = None) -> list[Path]:
    """Write a result table under the job's output dir with msprobe's file name.

    A mapper may attach files to its match (``MatchResult.notes.attachments``:
    ``(name, text)`` pairs, ``{timestamp}`` in the name standing for the run's
    timestamp, ``{job}`` for the job's part of the result name, ``_rank0`` or nothing,
    e.g. the data mapping ``-lm`` generates); they are written first,
    atomically, into the same directory. Only the result files are returned.
    ``tail``: a tail already writing the last rows (``StrategySpec.tail``; for a writer
    declared ``accepts_csv_tail``); ``started``: when the run began (a ``time.time()``, default now), so that a
    worker process recognises the files of its own run.
    """
    # without --force, atomic_path refuses to replace a file from an earlier run (outputs.output_policy)
    with output_policy(force=options.force, started=started):
        attached = write_attachments(table, Path(job.output_dir), timestamp, job.stem)
        try:
            writer = host.writer(options.output_format)
            path = Path(job.output_dir) / f"{job.stem}_{timestamp}{writer.suffix}"
            if options.force and path.exists():
                log.warning("%s will be replaced (--force).", path)
            kwargs: dict[str, Any] = {"options": options} if writer.accepts_options else {}
            if tail is not None and writer.accepts_csv_tail:
                return writer.write(table, path, tail=tail, **kwargs)
            return writer.write(table, path, **kwargs)
        except BaseException:
            remove_files(attached)  # a failed write leaves none of its files (a mapping without its result)
            raise


def remove_files(paths: list[Path]) -> None:
    """Remove files this run wrote, when the run fails after writing them (one that is gone already is fine)."""
    for path in paths:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("%s could not be removed (%s).", path, exc.strerror or exc)


def write_attachments(table: ResultTable, directory: Path, timestamp: str, stem: str = "") -> list[Path]:
    """Write the files attached to a result (see :func:`write_result`); returns their paths.

    ``stem``: the job's result name (``compare_result_rank0``), whose part after ``compare_result``
    stands for ``{job}`` in an attachment's name, so that the ranks of one run do not share a file.
    """
    from .writers import atomic_path

    job = stem.rsplit("compare_result", 1)[-1] if "compare_result" in stem else (f"_{stem}" if stem else "")
    written: list[Path] = []
    for name, text in table.meta.attachments:
        spelled = name.replace("{timestamp}", timestamp).replace("{job}", job)
        path = directory / spelled
        if Path(path.name) != Path(spelled):
            raise OutputError(f"attachment name '{name}' must be a plain file name", path=directory)
        try:
            with atomic_path(path) as tmp:
                tmp.write_text(text, encoding="utf-8", errors=TEXT_ERRORS)
        except OSError as exc:
            raise OutputError(f"cannot write {path.name} ({exc.strerror or exc})", path=path) from None
        log.info("%s is saved in: %s.", path.name, path.resolve())
        written.append(path)
    return written
