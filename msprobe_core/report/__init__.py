"""The HTML report: one self-contained file with the summary, plots, heat map and the full table.

``write_report(views, summary, path)`` is what ``msprobe compare --report html``
and ``msprobe report`` call; see :mod:`msprobe_core.report.html`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["build_payload", "render_html", "write_report"]


def __getattr__(name: str) -> Any:
    # lazy: importing this package (``msprobe --help`` registers ``msprobe report``) must not import numpy
    if name in __all__:
        from . import html

        return getattr(html, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
