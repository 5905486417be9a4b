"""A plugin host with exactly the plugins a test names, and ``msprobe`` run in-process with it.

:class:`~msprobe_core.plugin.PluginHost` loads every installed plugin (or those of
``MSPROBE_PLUGIN_DISTRIBUTIONS``) and the modules of ``MSPROBE_LOAD_PLUGINS``: a test of one plugin
would also run whatever else the developer's environment holds. :func:`exact_host` builds a host from
the built-in plugin, the plugin objects handed in, and the entry points of the distributions named,
nothing else; a plugin handed in that is also installed loads once. No pytest here: the fixture of
:mod:`msprobe_testing` wraps these. Like a third party's code, this module uses only ``msprobe_core.plugin`` and
the documented plugin variables of the environment.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import types
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from packaging.utils import canonicalize_name

from msprobe_core.plugin import PluginHost, UsageError, current_host, reset_host

#: the variable naming the only distributions whose entry-point plugins load (docs/plugins.md)
DISTRIBUTIONS_ENV = "MSPROBE_PLUGIN_DISTRIBUTIONS"
#: the variable naming plugin modules to import and register by name
LOAD_ENV = "MSPROBE_LOAD_PLUGINS"
#: the variable that switches the entry points off (cleared while an exact host is built)
DISABLE_ENV = "MSPROBE_DISABLE_PLUGIN_AUTOLOAD"


class PluginNotLoaded(UsageError):
    """A plugin handed to :func:`exact_host` was skipped by the host (its message says why)."""


def framework_distributions() -> tuple[str, ...]:
    """The installed first-party plugins that bring a framework (PyTorch's, MindSpore's): a host without them
    compares no ``dump.json``."""
    with _environment({DISTRIBUTIONS_ENV: None, LOAD_ENV: None, DISABLE_ENV: None}):
        host = PluginHost(autoload=True)
    found = {canonicalize_name(host.distribution_of(f.plugin)) for f in host.frameworks}
    return tuple(d for d in host.first_party if d in found)


def plugin_environment(plugins: Sequence[object], installed: Iterable[str]) -> dict[str, str | None]:
    """The plugin variables that make a fresh host (a child ``msprobe`` process, a spawned worker) load what
    :func:`exact_host` loads: only the distributions ``installed``, and the plugins handed in that are
    importable modules (``None``: the variable is unset)."""
    modules = [p.__name__ for p in plugins if isinstance(p, types.ModuleType)]
    return {DISTRIBUTIONS_ENV: ",".join(canonicalize_name(d) for d in installed), LOAD_ENV: ",".join(modules) or None,
            DISABLE_ENV: None}


@contextlib.contextmanager
def _environment(values: dict[str, str | None]) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in values}
    try:
        _set(values)
        yield
    finally:
        _set(before)


def _set(values: dict[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def exact_host(*plugins: object, installed: Iterable[str] | None = None, strict: bool = True) -> PluginHost:
    """A host of the built-in plugin, ``plugins`` (modules or objects with ``@hookimpl`` functions) and the
    entry-point plugins of the distributions ``installed`` (default: :func:`framework_distributions`).

    ``strict``: a plugin handed in that the host skips (a misspelt hook, a registry hook that raised) is a
    :class:`PluginNotLoaded` error naming why; ``strict=False`` keeps the host as it is, to test that
    failure (``host.broken``, ``host.failed_hooks``).
    """
    installed = framework_distributions() if installed is None else tuple(installed)
    # the handed-in plugins are registered as objects, not imported again by name
    with _environment({**plugin_environment((), installed), LOAD_ENV: None}):
        host = PluginHost(autoload=True, extra_plugins=plugins)
    if strict:
        for plugin in plugins:
            name = host.pm.get_name(plugin) if host.pm.is_registered(plugin) else _label(plugin)
            why = host.broken.get(name) or host.failed_hooks.get(name)
            if why or not host.pm.is_registered(plugin):
                raise PluginNotLoaded(f"plugin '{name}' was not loaded: {why or 'pluggy refused it'}")
    return host


def _label(plugin: object) -> str:
    return getattr(plugin, "__name__", None) or type(plugin).__name__


@dataclass(frozen=True)
class CliResult:
    """What one in-process ``msprobe`` run gave: its exit code and everything it printed."""

    exit_code: int
    stdout: str
    stderr: str

    @property
    def ret(self) -> int:
        """The exit code (pytester's name for it)."""
        return self.exit_code


def run_cli(*args: object, host: PluginHost | None = None) -> CliResult:
    """Run ``msprobe ARGS`` in this process, with ``host`` as the process-wide host for the run (default: the
    current one), and return its exit code and output. The previous host, the ``msprobe`` logger and the
    standard streams are as they were afterwards.
    """
    from msprobe_core.plugin import main  # the command line (click, the commands) only when a test runs it

    logger = logging.getLogger("msprobe")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    previous = current_host()
    out, err = io.StringIO(), io.StringIO()
    if host is not None:
        reset_host(host)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([str(a) for a in args])
            except SystemExit as exc:  # click's --help/--version inside a plugin's command
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        if host is not None:
            reset_host(previous)
        logger.handlers[:] = saved[0]
        logger.setLevel(saved[1])
        logger.propagate = saved[2]
    return CliResult(code, out.getvalue(), err.getvalue())
