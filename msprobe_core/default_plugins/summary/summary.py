r"""What a finished compare says, in a few lines: verdict counts, worst rows, first divergence, files.

:func:`summarize` works on :class:`~msprobe_core.default_plugins.summary.views.ResultView`\ s — result tables as
their cells are written — so a summary made right after a compare and one made later from the
result files (``msprobe report``) are identical. The same summary feeds the console block printed
after every compare, ``--json-summary``, the HTML report and the ``--fail-on`` gate.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from msprobe_core.plugin import gc_paused

from .accumulate import SummaryAccumulator
from .chunks import CHUNK_ROWS
from .hierarchy import format_path
from .views import VERDICT_LEVEL, ResultView
from .worst import MD5_METRIC, worst_rows_metric


def summarize(
    views: Sequence[ResultView],
    *,
    files: Iterable[Path | str] = (),
    analysis: Any = None,
    errors: Iterable[str] = (),
    unrecognised: Iterable[Mapping[str, Any]] = (),
    rows: int = CHUNK_ROWS,
) -> dict[str, Any]:
    """The summary of a run as a JSON-ready dict (also what the console block and the report show).

    Every view is fed to the incremental summary in chunks of ``rows`` rows
    (:mod:`msprobe_core.default_plugins.summary.accumulate`), which gives the same answers whatever the chunks.
    ``unrecognised``: records ``{"file", "kind", "name", "count", "first"}`` of what the dumps held
    that the loader did not understand (see :mod:`msprobe_core.load.dialects`); listed under that key.
    The first divergences have no ``path`` here (the dumps are not at hand): :mod:`msprobe_core.default_plugins.summary.finish`
    adds it (:meth:`~msprobe_core.default_plugins.summary.hierarchy.RunHierarchy.add_paths`).
    """
    acc = SummaryAccumulator(analysis)
    with gc_paused():
        for view in views:
            acc.add_view(view, rows)
        return acc.summary(files=files, errors=errors, unrecognised=unrecognised)


def short_name(name: str, limit: int = 96) -> str:
    """A row name for the console: the file name of a path-like name (a plugin's file rows), middle-elided past ``limit``."""
    if "/" in name or "\\" in name:
        name = name.replace("\\", "/").rsplit("/", 1)[-1]
    if len(name) > limit:
        keep = (limit - 1) // 2
        name = name[:keep] + "…" + name[-keep:]
    return name


def mode_text(summary: Mapping[str, Any]) -> str:
    """``tensor``, or ``tensor (compared as statistics)`` when the tables compare the dumps otherwise (``-da``)."""
    modes = ", ".join(summary["modes"]) or "-"
    compared = ", ".join(summary.get("compared_as") or ())
    return f"{modes} (compared as {compared})" if compared and compared != modes else modes


def format_summary(summary: dict[str, Any]) -> str:
    """The console block printed after a compare."""
    from .unpaired import unpaired_lines

    lines = ["", "Compare summary"]
    lines.extend(unpaired_lines(summary))  # first: the verdicts below judge few rows
    if summary.get("target") or summary.get("golden"):
        lines.append(f"  target: {summary.get('target') or '?'}")
        lines.append(f"  golden: {summary.get('golden') or '?'}")
    modes = mode_text(summary)
    fws = ", ".join(f"{f['target'] or '?'} vs {f['golden'] or '?'}" for f in summary["frameworks"]) or "-"
    lines.append(f"  dump mode: {modes}; frameworks (target vs golden): {fws}")
    nparts = len(summary["ranks"])
    lines.append(
        f"  rows: {summary['rows']} ({summary['matched']} matched, {summary['unmatched']} unmatched)"
        + (f" in {nparts} results" if nparts > 1 else "")
    )
    v = summary["verdicts"]
    lines.append(f"  verdicts: pass {v['pass']}, warning {v['warning']}, error {v['error']}")
    if summary.get("not_compared"):
        lines.append(f"  not compared: {summary['not_compared']} rows whose tensor file is missing or unreadable "
                     "(warnings naming the file)")
    if summary.get("not_judged"):
        lines.append(f"  not judged: {summary['not_judged']} rows that no verdict rule judged (their Result says N/A: "
                     "the rule's plugin is turned off)")
    fd = summary["first_divergence"]
    if fd:
        where = f" [{fd['rank']}]" if fd["rank"] else ""
        lines.append(f"  first divergence{where}: {fd['node']}")
        lines.append(f"    row {short_name(fd['row'])}: {fd['reason']}")
        if fd.get("verdict") == "pass":
            lines.append("    (its verdict is pass: past the first-divergence thresholds, below every rule of the result "
                         "table; docs/results.md#first-divergence)")
        if fd.get("carried"):
            lines.append(f"    {fd['carried']}")
        lines.extend(format_path(fd))
        from .next_dump import console_lines

        lines.extend(console_lines(summary))
    elif (summary.get("unpaired") or {}).get("below"):
        lines.append(f"  first divergence: none found among the {summary['matched']} matched rows (most rows had no "
                     "counterpart: see above)")
    else:
        why = "no error verdict, no dtype or shape drift, no metric past its threshold"
        if any("only in form" in n.get("text", "") for n in summary.get("notes") or ()):
            why = "no row past these rules but rows that differ only in form, below"
        lines.append(f"  first divergence: none found ({why})")
    if summary.get("modules"):
        from .modules import console_lines as module_lines
        from .modules import rank_modules

        lines.extend(module_lines(rank_modules(summary["modules"])))
    if summary.get("steps"):
        from .steps_view import steps_lines

        lines.extend(steps_lines(summary["steps"]))
    worst = summary["worst_rows"]
    if worst:
        metric = summary.get("worst_rows_metric") or worst_rows_metric(worst)
        header = f"worst rows by {metric}" if metric else "worst rows"
        lines.append(f"  {header}{' (target vs golden)' if metric == MD5_METRIC else ''}:")
        names = [short_name(w["name"]) for w in worst]
        values = [worst_row_value(w, metric) for w in worst]
        width = max(len(n) for n in names)
        vwidth = max(10, *(len(v) for v in values))
        rwidth = max(len(w["rank"]) for w in worst)
        for k, (w, name, value) in enumerate(zip(worst, names, values), 1):
            rank = f"{w['rank']:<{rwidth}}  " if rwidth else ""
            lines.append(f"    {k:>2}. {rank}{name:<{width}}  {value:<{vwidth}}  {w['result']:<7}  {w['reason']}")
    for note in summary.get("notes") or ():
        lines.append(f"  {note['rank'] + ': ' if note['rank'] else ''}{note['text']}")
    unknown = summary.get("unrecognised") or []
    if unknown:
        kinds: dict[str, int] = {}
        for r in unknown:
            kinds[r["kind"]] = kinds.get(r["kind"], 0) + int(r["count"])
        lines.append("  not understood in the dumps (not compared, named in the warnings above): "
                     + ", ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in kinds.items()))
    if summary["files"]:
        lines.append("  files:")
        lines.extend(f"    {f}" for f in summary["files"])
    return "\n".join(lines)


def worst_row_value(row: Mapping[str, Any], metric: str) -> str:
    """A worst row's value as the console and the page show it: rounded, with its column when not ``metric``."""
    return row["text"] if row["metric"] == metric else f"{row['text']} ({row['metric']})"


def gate_failures(summary: dict[str, Any], fail_on: str) -> int:
    """How many rows have the verdict ``fail_on`` or worse."""
    level = VERDICT_LEVEL[fail_on]
    return sum(n for k, n in summary["verdicts"].items() if VERDICT_LEVEL[k] >= level)


def write_json_summary(summary: dict[str, Any], path: Path) -> Path:
    """Write the summary as JSON, atomically."""
    from msprobe_core.plugin import TEXT_ERRORS, OutputError, atomic_path

    path = Path(path)
    try:
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8",
                           errors=TEXT_ERRORS)
    except OSError as exc:
        raise OutputError(f"cannot write summary ({exc.strerror or exc})", path=path) from None
    return path
