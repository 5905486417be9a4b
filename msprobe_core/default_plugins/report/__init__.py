"""The HTML report (``--report html``) and ``msprobe report``: a default plugin (``-p no:report`` turns it off).

One self-contained page with the summary, plots, the module tree and the table (:mod:`.html`), drawn from a
sample of the rows (:mod:`.sampling`, :mod:`.sample_sink`) when a run is big; ``msprobe report`` draws it from
result files already written (:mod:`.command`, :mod:`.result_files`), and ``--versus`` sets two runs side by side
(:mod:`.versus`). Registering it imports only the command's module: numpy and the page's machinery load when
a page is drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from msprobe_core.plugin import hookimpl

if TYPE_CHECKING:
    import click

    from msprobe_core.plugin import Register


@hookimpl
def msprobe_register_commands(register: Register[click.Command]) -> None:
    """``msprobe report``: the HTML page (or the summary) of result files already written."""
    from .command import report_cmd

    register(report_cmd)
