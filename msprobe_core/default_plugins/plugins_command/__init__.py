"""The default plugin ``plugins_command``: ``msprobe plugins``, one installed plugin per row, its hooks wrapped to the
terminal width; then what the known plugins give a user, and those of them that are not loaded with the command that
installs each (the entries the default plugin ``known_plugins`` adds through ``msprobe_list_plugins``).

The command arrives through ``msprobe_register_commands``, as ``msprobe report`` does; the plugin declares the hook
it asks what to list through (``msprobe_list_plugins``, :mod:`.hookspecs`). Turned off
(``-p no:plugins_command``), ``msprobe plugins`` is no command and says whose it was; every compare still works.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from typing import TYPE_CHECKING, Any

import click

from msprobe_core.plugin import get_host, hookimpl

if TYPE_CHECKING:
    from msprobe_core.plugin import PluginHost, Register

HEADERS = ("PLUGIN", "VERSION", "DISTRIBUTION", "HOOKS")
_HOOK_PREFIX = "msprobe_"


def _hooks_text(entry: dict[str, Any]) -> str:
    if entry.get("error"):
        return f"failed to load: {entry['error']}"
    hooks = [h[len(_HOOK_PREFIX):] if h.startswith(_HOOK_PREFIX) else h for h in entry.get("hooks") or []]
    return ", ".join(hooks) or "-"


def plugin_table(described: list[dict[str, Any]], width: int | None = None) -> str:
    """The plugins of :func:`.listing.describe_plugins` as an aligned text table.

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


def plugins_text(entries: list[dict[str, Any]], width: int | None = None) -> str:
    """The entries of ``msprobe_list_plugins`` (each plugin of :func:`.listing.describe_plugins`, with ``gives`` and
    ``loaded``, then the known plugins not loaded, each with its ``hint``) as text: the table of the installed
    plugins, what the known ones give, and the known plugins that are not loaded, each with its install command
    (never wrapped: it is copied)."""
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


def listed_plugins(host: PluginHost) -> list[dict[str, Any]]:
    """What ``msprobe plugins`` lists (``msprobe_list_plugins``; :func:`.listing.describe_plugins` when no plugin
    answers)."""
    from .listing import describe_plugins

    described = describe_plugins(host)
    listed = host.pm.hook.msprobe_list_plugins(described=described, loaded=host.loaded_distributions())
    return described if listed is None else listed


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def plugins_cmd(as_json: bool) -> None:
    """List installed plugins, their versions, what they give and the hooks they implement, and the known
    plugins that are not installed with the command that installs each (a table; JSON with --json)."""
    entries = listed_plugins(get_host())
    if as_json:
        click.echo(json.dumps(entries, indent=2))
        return
    click.echo(plugins_text(entries))


@hookimpl
def msprobe_add_hookspecs(pluginmanager: Any) -> None:
    """``msprobe_list_plugins``: what ``msprobe plugins`` lists besides the plugins registered."""
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def msprobe_register_commands(register: Register[click.Command]) -> None:
    """``msprobe plugins``: the table (or the JSON list) of the plugins."""
    register(plugins_cmd)
