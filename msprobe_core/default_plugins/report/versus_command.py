"""``msprobe report OLD NEW``: read both sides, compare them, write the page and the JSON summary, print."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import click

log = logging.getLogger("msprobe")


def read_side(groups: Sequence[Sequence[Path]], labels: Sequence[str]) -> list:
    """One side's result views, each with its label (as ``msprobe report`` labels them)."""
    from .seams import read_files_as_view

    return [read_files_as_view(list(group), label) for group, label in zip(groups, labels)]


def report_versus(results: Sequence[Path], sides: tuple[list[list[Path]], list[list[Path]]],
                  labels: tuple[list[str], list[str]], output: Path, json_summary: Path | None, title: str,
                  quiet: bool) -> dict:
    """Compare the two sides before and after (``labels``: each side's result labels); writes ``output`` (HTML)
    and ``json_summary``; returns the summary."""
    from msprobe_core.plugin import TEXT_ERRORS, OutputError, atomic_path, clear_status, stage

    from .seams import write_json_summary
    from .versus import format_versus, versus_summary
    from .versus_html import versus_page

    old_groups, new_groups = sides
    stage("read", f"{len(old_groups) + len(new_groups)} result files")
    summary = versus_summary(read_side(old_groups, labels[0]), read_side(new_groups, labels[1]), results[:1],
                             results[1:])
    stage("HTML report", Path(output).name)
    try:
        with atomic_path(Path(output)) as tmp:
            tmp.write_text(versus_page(summary, title), encoding="utf-8", errors=TEXT_ERRORS)
    except OSError as exc:
        raise OutputError(f"cannot write report ({exc.strerror or exc})", path=output) from None
    log.info("The report file path is: %s.", Path(output).resolve())
    summary["files"] = [str(Path(output).resolve())]
    if json_summary is not None:
        write_json_summary(summary, json_summary)
        summary["files"].append(str(Path(json_summary).resolve()))
    clear_status()
    if not quiet:
        click.echo(format_versus(summary))
    return summary
