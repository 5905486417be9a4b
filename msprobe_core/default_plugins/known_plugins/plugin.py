"""The default plugin ``known_plugins``: what the table of this repository's plugins (:mod:`.table`) tells the core.

The core imports no plugin and names none; through these hooks it learns the install hint for what a user asked
for that no loaded plugin handles (a framework, an option, a sub-command, an executor, a dump layout, a command line,
a module where a plugin's Python API used to be), what ``msprobe plugins`` and ``msprobe --help`` say of the known
plugins, which distributions are this repository's (their options are settled before a third party's), and the
options that pair a framework's names with another's. Turned off (``-p no:known_plugins``), every compare and every
error still works, only without naming the plugin to install.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from msprobe_core.plugin import hookimpl

from .table import (
    KNOWN_PLUGINS,
    bringing,
    command_line_of,
    command_line_usage,
    default_framework_plugin,
    hint_for,
    install_command,
    layout_of,
    missing_hint,
)


def _unloaded_layout(path: str, loaded: set[str]) -> str | None:
    """What a directory no loaded plugin understood is, when a known plugin that is not loaded claims its layout."""
    found = layout_of(Path(path)) if path and Path(path).is_dir() else None
    if found is None:
        return None
    plugin, layout = found
    if plugin.distribution in loaded:  # loaded, yet it left the directory: not the layout after all
        return None
    return f"this is {layout.what}, which no loaded plugin compares ({missing_hint(plugin, loaded)})"


def _unavailable_command_line(line: str, loaded: set[str]) -> str | None:
    """What a command line no plugin claimed is, when its form is a known plugin's that is not loaded."""
    found = command_line_of(shlex.split(line))
    if found is None:
        return None
    plugin, form = found
    if plugin.distribution in loaded:
        return None
    return f"{form.what} is not available ({missing_hint(plugin, loaded)})"


def _moved_module(module: str) -> str | None:
    """Where the Python API that ``module`` of the core used to hold went, and how to install it."""
    plugin = bringing("module", module)
    if plugin is None:
        return None
    return (f"{module} is now the {plugin.distribution} plugin: use 'from {plugin.package} import "
            f"{', '.join(plugin.python_api)}' ({install_command(plugin)})")


@hookimpl
def msprobe_install_hint(kind: str, value: str, loaded: set[str]) -> str | None:
    """The install hint of the known plugin that brings ``value`` of ``kind`` (see the hook's contract)."""
    if kind == "layout":
        return _unloaded_layout(value, loaded)
    if kind == "command_line":
        return _unavailable_command_line(value, loaded)
    if kind == "module":
        return _moved_module(value)
    if kind == "framework" and not value:  # a dump naming no framework: the default framework's plugin
        default = default_framework_plugin()
        return hint_for("framework", default.frameworks[0], loaded) if default is not None else None
    return hint_for(kind, value, loaded)


@hookimpl
def msprobe_command_line_usage() -> list[str]:
    """The usage of the known plugins' command-line forms (the classic interface's), for ``msprobe --help``."""
    return command_line_usage()


@hookimpl
def msprobe_option_help(name: str, text: str) -> str | None:
    """``--executor``'s help names the executors the known plugins add, each with its distribution."""
    if name != "executor":
        return None
    executors = ", ".join(f"{executor} from {p.distribution}" for p in KNOWN_PLUGINS for executor in p.executors)
    return f"{text.removesuffix('.')} ({executors})." if executors else None


@hookimpl(optionalhook=True)  # the default plugin plugins_command's hook: absent with that plugin off
def msprobe_list_plugins(described: list[dict[str, Any]], loaded: set[str]) -> list[dict[str, Any]]:
    """The plugins with what each gives, then the known plugins not loaded (:func:`.listing.with_known_plugins`)."""
    from .listing import with_known_plugins

    return with_known_plugins(described, loaded)


@hookimpl
def msprobe_first_party_distributions() -> list[str]:
    """The distributions of this repository's plugins."""
    return [plugin.distribution for plugin in KNOWN_PLUGINS]
