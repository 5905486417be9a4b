r"""What a finished compare says, in a few lines: verdict counts, worst rows, first divergence, files.

:func:`summarize` works on :class:`~msprobe_core.report.views.ResultView`\ s — result tables as
their cells are written — so a summary made right after a compare and one made later from the
result files (``msprobe report``) are identical. The same summary feeds the console block printed
after every compare, ``--json-summary``, the HTML report and the ``--fail-on`` gate.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .divergence import first_divergence
from .views import VERDICT_LEVEL, VERDICTS, ResultView
from .worst import MD5_METRIC, worst_rows, worst_rows_metric


def summarize(
    views: Sequence[ResultView],
    *,
    files: Iterable[Path | str] = (),
    analysis: Any = None,
    errors: Iterable[str] = (),
    unrecognised: Iterable[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The summary of a run as a JSON-ready dict (also what the console block and the report show).

    ``unrecognised``: records ``{"file", "kind", "name", "count", "first"}`` of what the dumps held
    that the loader did not understand (see :mod:`msprobe_core.load.dialects`); listed under that key.
    """
    counts = dict.fromkeys(VERDICTS, 0)
    total = unmatched = 0
    parts = []
    modes: list[str] = []
    compared_as: list[str] = []
    frameworks: list[dict[str, str]] = []
    for view in views:
        vc = dict.fromkeys(VERDICTS, 0)
        for v in view.verdicts():
            vc[v] += 1
        um = sum(view.unmatched())
        for k in VERDICTS:
            counts[k] += vc[k]
        total += len(view)
        unmatched += um
        dump_mode = view.dump_mode or view.mode
        if dump_mode not in modes:
            modes.append(dump_mode)
        if view.mode not in compared_as:
            compared_as.append(view.mode)
        fw = {"target": view.frameworks[0], "golden": view.frameworks[1]} if view.frameworks else None
        if fw and fw not in frameworks:
            frameworks.append(fw)
        parts.append({
            "rank": view.label,
            "mode": dump_mode,
            "compared_as": view.mode,
            "rows": len(view),
            "matched": len(view) - um,
            "unmatched": um,
            "verdicts": vc,
            "files": [str(Path(f).resolve()) for f in view.files],
        })
    chosen, per_view = first_divergence(views, analysis)
    all_files = [str(Path(f).resolve()) for v in views for f in v.files]
    for f in files:
        s = str(Path(f).resolve())
        if s not in all_files:
            all_files.append(s)
    worst_level = max((VERDICT_LEVEL[k] for k in VERDICTS if counts[k]), default=0)
    worst = worst_rows(views)
    return {
        "schema": "msprobe-core/summary/1",
        "modes": modes,
        "compared_as": compared_as,
        "frameworks": frameworks,
        "rows": total,
        "matched": total - unmatched,
        "unmatched": unmatched,
        "verdicts": counts,
        "worst_verdict": VERDICTS[worst_level] if total else None,
        "first_divergence": chosen.as_dict() if chosen else None,
        "first_divergence_by_rank": [d.as_dict() for d in per_view],
        "worst_rows": worst,
        "worst_rows_metric": worst_rows_metric(worst),
        "ranks": parts,
        "files": all_files,
        "errors": list(errors),
        "unrecognised": [dict(r) for r in unrecognised],
    }


def short_name(name: str, limit: int = 96) -> str:
    """A row name for the console: the file name of a kernel path, middle-elided past ``limit``."""
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
    lines = ["", "Compare summary"]
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
    fd = summary["first_divergence"]
    if fd:
        where = f" [{fd['rank']}]" if fd["rank"] else ""
        lines.append(f"  first divergence{where}: {fd['node']}")
        lines.append(f"    row {short_name(fd['row'])}: {fd['reason']}")
    else:
        lines.append("  first divergence: none found (no error verdict, no dtype or shape drift, no metric past its threshold)")
    worst = summary["worst_rows"]
    if worst:
        metric = summary.get("worst_rows_metric") or worst_rows_metric(worst)
        header = f"worst rows by {metric}" if metric else "worst rows"
        lines.append(f"  {header}{' (target vs golden)' if metric == MD5_METRIC else ''}:")
        names = [short_name(w["name"]) for w in worst]
        values = [w["value"] if w["metric"] == metric else f"{w['value']} ({w['metric']})" for w in worst]
        width = max(len(n) for n in names)
        vwidth = max(22, *(len(v) for v in values))
        rwidth = max(len(w["rank"]) for w in worst)
        for k, (w, name, value) in enumerate(zip(worst, names, values), 1):
            rank = f"{w['rank']:<{rwidth}}  " if rwidth else ""
            lines.append(f"    {k:>2}. {rank}{name:<{width}}  {value:<{vwidth}} {w['result']}")
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


def gate_failures(summary: dict[str, Any], fail_on: str) -> int:
    """How many rows have the verdict ``fail_on`` or worse."""
    level = VERDICT_LEVEL[fail_on]
    return sum(n for k, n in summary["verdicts"].items() if VERDICT_LEVEL[k] >= level)


def write_json_summary(summary: dict[str, Any], path: Path) -> Path:
    """Write the summary as JSON, atomically."""
    from ..errors import OutputError
    from ..files.outputs import TEXT_ERRORS
    from ..write.writers import atomic_path

    path = Path(path)
    try:
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8",
                           errors=TEXT_ERRORS)
    except OSError as exc:
        raise OutputError(f"cannot write summary ({exc.strerror or exc})", path=path) from None
    return path
