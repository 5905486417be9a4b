"""The summary of a run (what ``msprobe compare`` prints and ``--json-summary`` writes).

``write_report(views, summary, path)`` (the HTML page that ``--report html`` writes) is the ``report`` default
plugin's (:mod:`msprobe_core.default_plugins.report.html`); it is reached from here until the summary's wiring
after a run listens to a hook (issue 33).
"""

from __future__ import annotations

from typing import Any

__all__ = ["build_payload", "render_html", "write_report"]


def __getattr__(name: str) -> Any:
    # lazy: importing this package must not import numpy
    if name in __all__:
        from msprobe_core.default_plugins.report import html

        return getattr(html, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
