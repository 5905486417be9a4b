"""``msprobe plugins``: one installed plugin per row, its hooks wrapped to the terminal width; then what the
known plugins give a user, and those of them that are not loaded with the command that installs each."""

from __future__ import annotations

import shutil
import textwrap
from typing import Any

from ..known_plugins import KNOWN_PLUGINS, by_distribution, install_command, is_present, missing_hint

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


def with_known_plugins(described: list[dict[str, Any]], loaded: set[str]) -> list[dict[str, Any]]:
    """The plugins of :meth:`PluginHost.describe`, each with ``gives`` (what it gives a user; ``None`` for a
    plugin the table of known plugins does not list) and ``loaded``; then every known plugin not among them
    (``loaded`` false, ``install``: the command that installs it, ``None`` when it is installed but was not
    loaded; ``hint``: what to do, in one line).

    ``loaded``: the normalised names of the distributions whose plugins the host loaded.
    """
    out: list[dict[str, Any]] = []
    listed: set[str] = set()
    for entry in described:
        known = by_distribution(entry.get("distribution") or "") or next(
            (p for p in KNOWN_PLUGINS if entry.get("distribution") is None and p.entry_point == entry.get("name")),
            None)
        if known is not None:
            listed.add(known.distribution)
        failed_import = entry.get("distribution") is None and bool(entry.get("error"))
        out.append({**entry, "gives": known.gives if known else None, "loaded": not failed_import})
    for plugin in KNOWN_PLUGINS:
        if plugin.distribution in listed:
            continue
        present = is_present(plugin.distribution)
        out.append({"name": plugin.entry_point, "version": None, "distribution": plugin.distribution, "hooks": [],
                    "gives": plugin.gives, "loaded": False,
                    "install": None if present else install_command(plugin, loaded),
                    "hint": missing_hint(plugin, loaded)})
    return out


def plugins_text(entries: list[dict[str, Any]], width: int | None = None) -> str:
    """:func:`with_known_plugins`' list as text: the table of the installed plugins, what the known ones give,
    and the known plugins that are not loaded, each with its install command (never wrapped: it is copied)."""
    width = width or shutil.get_terminal_size((80, 24)).columns
    installed = [e for e in entries if "hint" not in e]
    lines = [plugin_table(installed, width)]
    gives = [(str(e["distribution"]), str(e["gives"])) for e in installed if e.get("gives") and e.get("loaded")]
    missing = [e for e in entries if "hint" in e]
    name_width = max([len(n) for n, _ in gives] + [len(str(e["distribution"])) for e in missing] + [0])
    wrap = max(30, width - name_width - 5)
    if gives:
        lines += ["", "What they give:"]
        for name, text in gives:
            wrapped = textwrap.wrap(text, wrap, break_on_hyphens=False)
            lines.append(f"  {name.ljust(name_width)}  {wrapped[0]}")
            lines.extend(" " * (name_width + 4) + more for more in wrapped[1:])
    if missing:
        lines += ["", "Known plugins not loaded:"]
        for entry in missing:
            wrapped = textwrap.wrap(str(entry["gives"]), wrap, break_on_hyphens=False)
            lines.append(f"  {str(entry['distribution']).ljust(name_width)}  {wrapped[0]}")
            lines.extend(" " * (name_width + 4) + more for more in [*wrapped[1:], entry["hint"]])
    return "\n".join(lines)
