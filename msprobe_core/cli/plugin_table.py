"""``msprobe plugins`` as a table: one plugin per row, its hooks wrapped to the terminal width."""

from __future__ import annotations

import shutil
import textwrap
from typing import Any

HEADERS = ("PLUGIN", "VERSION", "DISTRIBUTION", "HOOKS")
_HOOK_PREFIX = "msprobe_"


def _hooks_text(entry: dict[str, Any]) -> str:
    if entry.get("error"):
        return f"failed to load: {entry['error']}"
    hooks = [h[len(_HOOK_PREFIX):] if h.startswith(_HOOK_PREFIX) else h for h in entry.get("hooks") or []]
    return ", ".join(hooks) or "-"


def plugin_table(described: list[dict[str, Any]], width: int | None = None) -> str:
    """The plugins of :meth:`PluginHost.describe` as an aligned text table.

    Hook names lose their ``msprobe_`` prefix; a plugin that failed to load says so in the
    hooks column. ``width`` defaults to the terminal's (80 when unknown).
    """
    if not described:
        return "no plugins installed"
    width = width or shutil.get_terminal_size((80, 24)).columns
    rows = [(str(e.get("name") or "-"), str(e.get("version") or "-"), str(e.get("distribution") or "-"),
             _hooks_text(e)) for e in described]
    widths = [max(len(HEADERS[i]), *(len(r[i]) for r in rows)) for i in range(3)]
    indent = sum(widths) + 2 * 3
    hook_width = max(30, width - indent - 1)
    lines = ["  ".join(h.ljust(w) for h, w in zip(HEADERS, widths)) + "  " + HEADERS[3]]
    for row in rows:
        head = "  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  "
        wrapped = textwrap.wrap(row[3], hook_width, break_on_hyphens=False) or ["-"]
        lines.append(head + wrapped[0])
        lines.extend(" " * indent + more for more in wrapped[1:])
    return "\n".join(lines)
