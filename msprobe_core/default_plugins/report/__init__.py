"""The HTML report (``--report html``) and ``msprobe report``: a default plugin (``-p no:report`` turns it off).

One self-contained page with the summary, plots, the module tree and the table (:mod:`.html`), drawn from a
sample of the rows (:mod:`.sampling`, :mod:`.sample_sink`) when a run is big; ``msprobe report`` draws it from
result files already written (:mod:`.command`, :mod:`.result_files`), and ``--versus`` sets two runs side by side
(:mod:`.versus`). Registering it imports only the command's module: numpy and the page's machinery load when
a page is drawn.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from msprobe_core.plugin import hookimpl

if TYPE_CHECKING:
    import click

    from msprobe_core.plugin import Register


@hookimpl
def msprobe_register_commands(register: Register[click.Command]) -> None:
    """``msprobe report``: the HTML page (or the summary) of result files already written."""
    from .command import report_cmd

    register(report_cmd)


@hookimpl
def msprobe_write_report(views: list[Any], summary: dict[str, Any], path: Path) -> Path:
    """The Python API's ``CompareResult.write_report(path)``: the HTML page of results held in memory."""
    from .html import write_report

    return write_report(views, summary, path)
