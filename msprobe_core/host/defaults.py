"""Which default plugins the host registers (:mod:`msprobe_core.default_plugins`), and which plugins are off.

The list names modules, imported by name when a host is made: the core never imports a feature itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

#: ``(name, module)`` of every default plugin, in registration order; the name is what ``-p no:NAME`` and
#: ``MSPROBE_DISABLE_PLUGINS`` take and what ``msprobe plugins`` shows
DEFAULT_PLUGINS: tuple[tuple[str, str], ...] = (
    # in the order their options were the core's (-da, -tensor_log, --step), so that --help and the messages that
    # list options keep their order; fuzzy's -fm came after the core's options already
    ("diff_analyze", "msprobe_core.default_plugins.diff_analyze"),
    ("tensor_log", "msprobe_core.default_plugins.tensor_log"),
    ("steps", "msprobe_core.default_plugins.steps"),
    ("fuzzy", "msprobe_core.default_plugins.fuzzy"),
    ("automap", "msprobe_core.default_plugins.automap"),
    ("data_mapping", "msprobe_core.default_plugins.data_mapping"),
    ("xlsx", "msprobe_core.default_plugins.xlsx"),
    ("tensor_metrics", "msprobe_core.default_plugins.tensor_metrics"),
    # the metric sets of statistics and md5 mode, and msprobe's verdict rule
    ("statistics_metrics", "msprobe_core.default_plugins.statistics_metrics"),
    ("msprobe_verdicts", "msprobe_core.default_plugins.msprobe_verdicts"),
    ("progress", "msprobe_core.default_plugins.progress"),
    ("local_executor", "msprobe_core.default_plugins.local_executor"),
    ("parallel_jobs", "msprobe_core.default_plugins.parallel_jobs"),
    # work shared with a watched forked child (the CSV writer's second half; chunked's and pair_loading's children)
    ("forking", "msprobe_core.default_plugins.forking"),
    ("chunked", "msprobe_core.default_plugins.chunked"),
    # the load's accelerators (the core's loader is the pure-Python one)
    ("pair_loading", "msprobe_core.default_plugins.pair_loading"),
    ("fast_scan", "msprobe_core.default_plugins.fast_scan"),
    # where in the model a call is (construct.json, stack.json): the summary's paths, the report's tree
    ("hierarchy", "msprobe_core.default_plugins.hierarchy"),
    # the run-finished hooks (msprobe_core.run.finished): the summary, and what reads it
    ("summary", "msprobe_core.default_plugins.summary.plugin"),
    ("gate", "msprobe_core.default_plugins.summary.gate"),
    ("json_summary", "msprobe_core.default_plugins.summary.json_file"),
    ("report", "msprobe_core.default_plugins.report"),
    ("merge_result", "msprobe_core.default_plugins.merge_result"),
    ("trace", "msprobe_core.default_plugins.trace"),
    # what killed runs left in a run's output directories, removed before it writes there
    ("sweep", "msprobe_core.default_plugins.sweep"),
    # the table of this repository's plugins: install hints, and what 'msprobe plugins' says of the known ones
    ("known_plugins", "msprobe_core.default_plugins.known_plugins.plugin"),
    # 'msprobe plugins', the table of the plugins registered (a command through msprobe_register_commands)
    ("plugins_command", "msprobe_core.default_plugins.plugins_command"),
)

#: the name the built-in plugin (``msprobe_core.builtin``) is registered under
BUILTIN_PLUGIN = "msprobe_core.builtin"
#: the core's own plugins: the built-in one and the default plugins (``msprobe_core.default_plugins``); their
#: registrations are the core's (a failure is a bug, raised), their options come first
CORE_PLUGINS = frozenset({BUILTIN_PLUGIN, *(name for name, _module in DEFAULT_PLUGINS)})


def is_core_plugin(name: str) -> bool:
    """Whether the plugin registered as ``name`` is the core's own (built-in or default), not an installed one."""
    return name in CORE_PLUGINS


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


def turned_off_specs(hook: str, disabled: Iterable[str], *, named: bool = False) -> list:
    """What the default plugins among ``disabled`` would register through the registry hook ``hook`` (their
    module read, nothing registered): a turned-off mapper keeps its place in the chain by name, a missing writer
    or executor is said to be a turned-off plugin's. ``named``: each spec with ``plugin`` set to its plugin's name."""
    import importlib
    from dataclasses import replace

    modules = dict(DEFAULT_PLUGINS)
    found: list = []
    for name in disabled:
        declare = getattr(importlib.import_module(modules[name]), hook, None) if name in modules else None
        if declare is not None:
            mine: list = []
            declare(register=mine.append)
            found += [replace(spec, plugin=name) for spec in mine] if named else mine
    return found


def turned_off_owner(flag: str, disabled: Iterable[str]) -> str | None:
    """The default plugin among ``disabled`` that declares the compare option ``flag`` (``-fm``), else ``None``:
    what a "no such option" says when the option's plugin was turned off."""
    declared = turned_off_specs("msprobe_register_options", disabled, named=True)
    return next((spec.plugin for spec in declared if flag in spec.flags), None)


def turned_off_note(owner: str) -> str:
    """How a message says that something is the turned-off default plugin ``owner``'s."""
    return f"it is the default plugin '{owner}''s, which is turned off by -p no:{owner} or {DISABLE_ENV}"


def register_default_plugins(pm: Any) -> set[str]:
    """Block the plugin names turned off (pytest's ``-p no:NAME``: a blocked name is never registered, default or
    installed) and register every default plugin that is not; the names turned off."""
    import importlib

    disabled = disabled_names()
    for name in disabled:
        pm.set_blocked(name)
    for name, module in DEFAULT_PLUGINS:
        if name not in disabled:
            pm.register(importlib.import_module(module), name=name)
    return disabled


def warn_unknown_disabled(disabled: Iterable[str], found: Iterable[str]) -> None:
    """One warning for each name turned off that is neither a default plugin nor an installed entry point."""
    import logging

    for name in sorted(set(disabled) - set(found) - set(default_plugin_names())):
        logging.getLogger("msprobe").warning("no plugin is named '%s' (turned off by -p no:%s or %s); 'msprobe "
                                             "plugins' lists the names", name, name, DISABLE_ENV)


def turned_off_command_owner(command: str, disabled: Iterable[str]) -> str | None:
    """The default plugin among ``disabled`` that adds the sub-command ``command`` (``report``), else ``None``:
    what a "no such command" says when the command's plugin was turned off."""
    for name in disabled:
        if any(getattr(c, "name", None) == command for c in turned_off_specs("msprobe_register_commands", [name])):
            return name
    return None
