"""Which default plugins the host registers (:mod:`msprobe_core.default_plugins`), and which plugins are off.

The list names modules, imported by name when a host is made: the core never imports a feature itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

#: ``(name, module)`` of every default plugin, in registration order; the name is what ``-p no:NAME`` and
#: ``MSPROBE_DISABLE_PLUGINS`` take and what ``msprobe plugins`` shows
DEFAULT_PLUGINS: tuple[tuple[str, str], ...] = (
    ("fuzzy", "msprobe_core.default_plugins.fuzzy"),
    # the run-finished hooks (msprobe_core.run.finished): the summary, and what reads it
    ("summary", "msprobe_core.default_plugins.summary.plugin"),
    ("gate", "msprobe_core.default_plugins.summary.gate"),
    ("json_summary", "msprobe_core.default_plugins.summary.json_file"),
)

#: the variable naming plugins (default ones or installed ones, by their registered names) not to load
DISABLE_ENV = "MSPROBE_DISABLE_PLUGINS"

#: the names ``-p no:NAME`` gave on this process's command line (read by the next plugin host made)
_disabled_on_command_line: set[str] = set()


def default_plugin_names() -> list[str]:
    """The names of the default plugins, in registration order."""
    return [name for name, _module in DEFAULT_PLUGINS]


def disabled_names() -> set[str]:
    """The plugin names turned off for this process: ``MSPROBE_DISABLE_PLUGINS`` and ``-p no:NAME``."""
    names = {n.strip() for n in os.environ.get(DISABLE_ENV, "").split(",") if n.strip()}
    return names | _disabled_on_command_line


def disable_on_command_line(names: Iterable[str]) -> None:
    """Remember the names ``-p no:NAME`` turned off (the command line's; replaces an earlier call's)."""
    _disabled_on_command_line.clear()
    _disabled_on_command_line.update(names)


def turned_off_owner(flag: str, disabled: Iterable[str]) -> str | None:
    """The default plugin among ``disabled`` that declares the compare option ``flag`` (``-fm``), else ``None``:
    what a "no such option" says when the option's plugin was turned off."""
    import importlib

    modules = dict(DEFAULT_PLUGINS)
    for name in disabled:
        if name not in modules:
            continue
        declare = getattr(importlib.import_module(modules[name]), "msprobe_register_options", None)
        if declare is None:
            continue
        declared: list = []
        declare(register=declared.append)
        if any(flag in spec.flags for spec in declared):
            return name
    return None
