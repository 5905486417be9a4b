"""``--markdown-summary FILE`` and ``--fail-if-diverges OP``, through the run-finished hooks only.

The ``summary`` plugin (a default plugin of msprobe-core) puts the run's summary on ``run.summary`` in its
``tryfirst`` ``msprobe_run_finished``; this plugin reads ``run.summary.data`` (what ``--json-summary`` writes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msprobe_core.plugin import TEXT_ERRORS, FinishedRun, OptionSpec, OutputError, Register, atomic_path, hookimpl


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """The plugin's two options (command line only: ``api=False``)."""
    register(OptionSpec("markdown_summary", ("--markdown-summary",), "Also write the run summary as Markdown.",
                        kind="path", metavar="FILE", api=False))
    register(OptionSpec("fail_if_diverges", ("--fail-if-diverges",), "Exit with status 3 when the first divergence "
                        "or a worst row is a call of OP (a part of its name); repeatable.", metavar="OP",
                        multiple=True, api=False))


def _markdown_path(run: FinishedRun) -> Path | None:
    value = getattr(run.options, "markdown_summary", None)
    return None if value is None else Path(value)


@hookimpl
def msprobe_run_outputs(run: FinishedRun) -> list[Path] | None:
    """The Markdown file, listed among the run's files."""
    path = _markdown_path(run)
    return None if path is None else [path]


def markdown(summary: dict[str, Any]) -> str:
    """The summary as a Markdown page."""
    lines = ["# msprobe compare summary", "", f"{summary['rows']} rows compared.", "",
             "| verdict | rows |", "|---|---|"]
    lines += [f"| {verdict} | {count} |" for verdict, count in summary["verdicts"].items()]
    first = summary.get("first_divergence")
    lines += ["", "## First divergence", ""]
    lines.append(f"`{first['node']}` (row `{first['row']}`): {first.get('reason', '')}" if first else "None.")
    worst = summary.get("worst_rows") or []
    if worst:
        lines += ["", "## Worst rows", "", "| row | verdict |", "|---|---|"]
        lines += [f"| `{w.get('name', '')}` | {w.get('result', '')} |" for w in worst]
    return "\n".join(lines) + "\n"


@hookimpl
def msprobe_run_finished(run: FinishedRun) -> None:
    """Write the Markdown page (nothing without the ``summary`` plugin's summary)."""
    path = _markdown_path(run)
    if path is None or run.summary is None:
        return
    try:
        with atomic_path(path) as tmp:
            tmp.write_text(markdown(run.summary.data), encoding="utf-8", errors=TEXT_ERRORS)
    except OSError as exc:
        raise OutputError(f"cannot write the Markdown summary ({exc.strerror or exc})", path=path) from None


def diverged_ops(summary: dict[str, Any], ops: tuple[str, ...]) -> list[str]:
    """The ops of ``ops`` whose calls are the first divergence or a worst row with an error or a warning."""
    names = []
    first = summary.get("first_divergence")
    if first:
        names.append(str(first.get("row", "")))
    names += [str(w.get("name", "")) for w in summary.get("worst_rows") or [] if w.get("result") in ("error", "warning")]
    return [op for op in ops if any(op in name for name in names)]


@hookimpl
def msprobe_run_gate(run: FinishedRun) -> str | None:
    """``--fail-if-diverges``: the named ops that diverged; a run without a summary cannot be judged and fails."""
    ops = tuple(getattr(run.options, "fail_if_diverges", None) or ())
    if not ops:
        return None
    if run.summary is None:
        return "--fail-if-diverges: the run has no summary to judge"
    hit = diverged_ops(run.summary.data, ops)
    return f"--fail-if-diverges: {', '.join(hit)} diverged" if hit else None
