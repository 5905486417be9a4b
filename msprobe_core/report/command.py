"""``msprobe report``: an HTML report (and summary, and gate) for results already on disk."""

from __future__ import annotations

import os
import re
from pathlib import Path

import click

from ..errors import InputError

_PART = re.compile(r"^(?P<base>.+)_part_(?P<n>\d+)$")


def collect_result_files(paths: tuple[Path, ...]) -> list[list[Path]]:
    """Result files named on the command line or found in directories, ``_part_N`` files grouped.

    A directory contributes every ``*compare_result*.csv`` below it (or, when it
    holds no CSV result, every ``*compare_result*.xlsx``), sorted by path.
    """
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.rglob("*compare_result*.csv")) or sorted(path.rglob("*compare_result*.xlsx"))
            if not found:
                raise InputError("no compare_result*.csv or *.xlsx file found", path=path)
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise InputError("result path does not exist", path=path)
    groups: dict[tuple[Path, str, str], list[tuple[int, Path]]] = {}
    for f in files:
        m = _PART.match(f.stem)
        key = (f.parent, m.group("base") if m else f.stem, f.suffix)
        groups.setdefault(key, []).append((int(m.group("n")) if m else 0, f))
    return [[f for _, f in sorted(members)] for members in groups.values()]


@click.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", "output", type=click.Path(path_type=Path), default=Path("compare_report.html"),
              show_default=True, help="HTML file to write.")
@click.option("--json-summary", "json_summary", type=click.Path(path_type=Path), default=None,
              help="Also write the summary as JSON to this file.")
@click.option("--fail-on", "fail_on", type=click.Choice(["error", "warning"]), default=None,
              help="Exit with status 1 when any row has this verdict or a worse one.")
@click.option("--title", default="msprobe compare report", show_default=True, help="Title of the page.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors.")
def report_cmd(results: tuple[Path, ...], output: Path, json_summary: Path | None, fail_on: str | None,
               title: str, quiet: bool) -> None:
    """Write one self-contained HTML report for compare results (CSV or xlsx files, or directories of them).

    Several results (one per rank) make one report with a rank x op heat map.
    A diff_analyze_*.json next to the results (from -da) names the first divergence.
    """
    from ..finish import finish_views, read_files_as_view
    from ..logs import setup_logging
    from ..progress import file_sizes, run_status, stage
    from ..summary import label_from_path

    setup_logging(quiet)
    click.get_current_context().with_resource(run_status("msprobe report", quiet=quiet))
    groups = collect_result_files(results)
    labels = [label_from_path(g[0]) or g[0].stem for g in groups] if len(groups) > 1 else [""]
    if len(set(labels)) < len(labels):  # e.g. graph/step0/rank0 and pynative/step0/rank0: say where each is
        root = Path(os.path.commonpath([str(g[0].parent.resolve()) for g in groups]))
        labels = [str((g[0].parent.resolve().relative_to(root) / lab).as_posix()) for g, lab in zip(groups, labels)]
    views = []
    for n, (group, label) in enumerate(zip(groups, labels), start=1):
        which = f" ({n} of {len(groups)})" if len(groups) > 1 else ""
        stage("read", f"{group[0].name}{which}, {file_sizes(*group)}")
        views.append(read_files_as_view(group, label))
    analysis = None
    dirs = sorted({g[0].parent for g in groups})
    found = [p for d in dirs for p in d.glob("diff_analyze_*.json")]
    if found:
        analysis = max(found, key=lambda p: p.stat().st_mtime)
    finish_views(views, report=output, json_summary=json_summary, fail_on=fail_on, quiet=quiet,
                 analysis=analysis, title=title)
