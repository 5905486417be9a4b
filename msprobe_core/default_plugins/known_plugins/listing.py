"""What ``msprobe plugins`` says of the known plugins: what each installed one gives a user, and each that is not
loaded with the command that installs it (``msprobe_list_plugins``)."""

from __future__ import annotations

from typing import Any

from .table import KNOWN_PLUGINS, by_distribution, install_command, is_present, missing_hint


def with_known_plugins(described: list[dict[str, Any]], loaded: set[str]) -> list[dict[str, Any]]:
    """The plugins ``msprobe plugins`` lists (the default plugin ``plugins_command``'s ``describe_plugins``), each
    with ``gives`` (what it gives a user; ``None`` for a plugin the table of known plugins does not list) and
    ``loaded``; then every known plugin not among them (``loaded`` false, ``install``: the command that installs
    it, ``None`` when it is installed but was not loaded; ``hint``: what to do, in one line).

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
