"""The HTML report: one self-contained file with the summary, plots, heat map and the full table.

``write_report(views, summary, path)`` is what ``msprobe compare --report html``
and ``msprobe report`` call; see :mod:`msprobe_core.report.html`.
"""

from __future__ import annotations

from .html import build_payload, render_html, write_report

__all__ = ["build_payload", "render_html", "write_report"]
