"""Before and after: two compares of the same model set side by side (``msprobe report OLD NEW``).

After a fix, or between two framework versions, the question is which rows got better or worse and whether the
first divergence moved or went away. Each side is a compare's results (a folder, or result files); rows are paired
by their result (rank, step) and their name (``NPU Name``, or ``Bench Name`` where the target had none), and a
pair is

* **worse** / **better** when its verdict moved (``pass`` → ``warning`` → ``error``), or, with the same verdict,
  when its distance from a perfect value of the result's main metric (``|Cosine - 1|``, ``|NormRelativeErr|`` …)
  grew or shrank by more than :data:`FACTOR` times and by more than :data:`ABS_MIN` (rounding noise moves neither);
* **appeared** / **disappeared** when only the new / only the old compare has it.

The first divergence of each side is the summary's (the same rule as ``msprobe compare``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from msprobe_core.plugin import result_columns as C

from .seams import VERDICT_LEVEL, ResultView, main_metric

#: A row's metric must move by this factor (its distance from perfect doubled, or halved) to count.
FACTOR = 2.0
#: ... and by more than this much (distances below it are rounding noise on every metric).
ABS_MIN = 1e-6
_NO_NAME = ("", "N/A", "NaN", "nan")

SCHEMA = "msprobe-core/versus/1"


@dataclass(frozen=True)
class Row:
    """One row of one side: its verdict and its main metric's value (``None``: not a number)."""

    label: str
    name: str
    verdict: str
    metric: str
    value: float | None
    distance: float | None

    def as_dict(self) -> dict[str, Any]:
        return {"result": self.verdict, "metric": self.metric, "value": self.value}


def side_rows(views: Iterable[ResultView]) -> dict[tuple[str, str], Row]:
    """Every row of one side's results, keyed by (result label, row name)."""

    rows: dict[tuple[str, str], Row] = {}
    for view in views:
        metric = main_metric(view.mode)
        name_col, values = metric or ("", False), None
        best = C.known_columns().best(name_col[0]) if metric else None
        if metric is not None:
            values = view.numbers(metric[0])
        npu, bench = view.names, view.column(C.BENCH_NAME) or [""] * len(view)
        verdicts = view.verdicts()
        for i in range(len(view)):
            name = npu[i] if npu[i] not in _NO_NAME else f"(golden) {bench[i]}"
            value = values[i] if values is not None else None
            if value is not None and not math.isfinite(value):
                value = None
            distance = None if value is None else abs(value - best) if best is not None else abs(value)
            rows.setdefault((view.label, name), Row(view.label, name, verdicts[i], name_col[0], value, distance))
    return rows


def change(old: Row, new: Row) -> int:
    """+1 when ``new`` is worse than ``old``, -1 when better, 0 when neither (see the module's rule)."""
    lo, ln = VERDICT_LEVEL.get(old.verdict, 0), VERDICT_LEVEL.get(new.verdict, 0)
    if lo != ln:
        return 1 if ln > lo else -1
    if old.metric != new.metric or old.distance is None or new.distance is None:
        return 0
    if abs(new.distance - old.distance) <= ABS_MIN:
        return 0
    if new.distance > old.distance * FACTOR:
        return 1
    if new.distance * FACTOR < old.distance:
        return -1
    return 0


def _entry(old: Row | None, new: Row | None) -> dict[str, Any]:
    some = new or old
    assert some is not None
    return {"rank": some.label, "name": some.name, "before": old.as_dict() if old else None,
            "after": new.as_dict() if new else None}


def _severity(entry: dict[str, Any]) -> tuple[int, float]:
    """Sort key: verdict jumps first, then the ratio of the distances."""
    before, after = entry["before"], entry["after"]
    jump = abs(VERDICT_LEVEL.get(after["result"], 0) - VERDICT_LEVEL.get(before["result"], 0))
    b, a = before.get("value"), after.get("value")
    ratio = 0.0
    if isinstance(a, float) and isinstance(b, float):
        ratio = abs(a - b)
    return (-jump, -ratio)


def compare_sides(before: dict[tuple[str, str], Row], after: dict[tuple[str, str], Row]) -> dict[str, list]:
    """The ``better``, ``worse``, ``appeared`` and ``disappeared`` rows of two sides (in the new side's order)."""
    better, worse, appeared, disappeared = [], [], [], []
    for key, new in after.items():
        old = before.get(key)
        if old is None:
            appeared.append(_entry(None, new))
            continue
        moved = change(old, new)
        if moved > 0:
            worse.append(_entry(old, new))
        elif moved < 0:
            better.append(_entry(old, new))
    disappeared = [_entry(old, None) for key, old in before.items() if key not in after]
    worse.sort(key=_severity)
    better.sort(key=_severity)
    return {"worse": worse, "better": better, "appeared": appeared, "disappeared": disappeared}


def divergence_change(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    """How the first divergence changed: ``same``, ``moved``, ``gone``, ``new`` or ``none``."""
    if not before and not after:
        return "none"
    if before and not after:
        return "gone"
    if after and not before:
        return "new"
    assert before is not None and after is not None
    same = (before.get("rank"), before.get("node")) == (after.get("rank"), after.get("node"))
    return "same" if same else "moved"


def versus_summary(old_views: Sequence[ResultView], new_views: Sequence[ResultView],
                   old_paths: Sequence[Path], new_paths: Sequence[Path]) -> dict[str, Any]:
    """The JSON-ready answer of ``msprobe report OLD NEW``."""
    from .seams import summarize

    sides = {}
    for key, views, paths in (("before", old_views, old_paths), ("after", new_views, new_paths)):
        s = summarize(views)
        sides[key] = {"paths": [str(Path(p).resolve()) for p in paths], "rows": s["rows"],
                      "verdicts": s["verdicts"], "first_divergence": s["first_divergence"]}
    rows = compare_sides(side_rows(old_views), side_rows(new_views))
    fd_before, fd_after = sides["before"]["first_divergence"], sides["after"]["first_divergence"]
    return {
        "schema": SCHEMA,
        "before": sides["before"],
        "after": sides["after"],
        "first_divergence": {"change": divergence_change(fd_before, fd_after), "before": fd_before,
                             "after": fd_after},
        "counts": {k: len(v) for k, v in rows.items()},
        **rows,
        "rule": {"factor": FACTOR, "abs_min": ABS_MIN},
    }


def _fd_text(fd: dict[str, Any] | None) -> str:
    if not fd:
        return "none found"
    where = f"[{fd['rank']}] " if fd.get("rank") else ""
    return f"{where}{fd['node']} ({fd['reason']})"


_CHANGE_WORDS = {
    "same": "the same call in both",
    "moved": "moved",
    "gone": "gone: the new compare finds none",
    "new": "new: the old compare found none",
    "none": "none in either compare",
}


def _row_text(e: dict[str, Any]) -> str:
    def side(s: dict[str, Any] | None) -> str:
        if s is None:
            return "-"
        value = "" if s["value"] is None else f" {s['metric']} {s['value']:.6g}"
        return f"{s['result']}{value}"

    rank = f"{e['rank']}  " if e["rank"] else ""
    return f"{rank}{e['name']}: {side(e['before'])} -> {side(e['after'])}"


def format_versus(summary: dict[str, Any], limit: int = 10) -> str:
    """The console block of ``msprobe report OLD NEW``."""
    b, a, c = summary["before"], summary["after"], summary["counts"]
    fd = summary["first_divergence"]
    vb, va = b["verdicts"], a["verdicts"]
    lines = ["", "Before and after",
             f"  before: {', '.join(b['paths'])}", f"  after:  {', '.join(a['paths'])}",
             f"  verdicts: pass {vb['pass']} -> {va['pass']}, warning {vb['warning']} -> {va['warning']}, "
             f"error {vb['error']} -> {va['error']}",
             f"  first divergence: {_CHANGE_WORDS[fd['change']]}",
             f"    before: {_fd_text(fd['before'])}", f"    after:  {_fd_text(fd['after'])}",
             f"  rows: {c['worse']} worse, {c['better']} better, {c['appeared']} appeared, "
             f"{c['disappeared']} disappeared"]
    for key in ("worse", "better"):
        if summary[key]:
            lines.append(f"  {key}{' (first ' + str(limit) + ')' if len(summary[key]) > limit else ''}:")
            lines.extend(f"    {_row_text(e)}" for e in summary[key][:limit])
    return "\n".join(lines)
