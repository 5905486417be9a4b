"""pytest support for plugin authors: the ``msprobe_tester`` fixture, in the style of pytest's ``pytester``.

pytest loads this module through the ``pytest11`` entry point of the msprobe-testing distribution wherever that
is installed (nothing to add to a ``conftest.py``); ``msprobe`` itself never imports it, and a user who only runs
compares need not install it. In a test::

    from my_plugin import plugin

    def test_my_metric(msprobe_tester):
        msprobe_tester.host(plugin)                      # the built-in plugin, the framework plugins, yours
        pair = msprobe_tester.dump_pair("tensor")
        result = msprobe_tester.run_cli("compare", *pair.args, "-o", msprobe_tester.path / "out")
        assert result.exit_code == 0, result.stderr

Each test gets its own host and temporary directory; the process-wide host and the plugin variables
of the environment are restored after it. ``docs/plugins.md`` ("Testing your plugin") has the whole
story; :mod:`msprobe_testing.hosts` and :mod:`msprobe_testing.dumps` work without pytest.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from msprobe_core.plugin import PluginHost, current_host, reset_host

from .dumps import PAIR_MODES, DumpPair, write_dump_pair
from .hosts import CliResult, PluginNotLoaded, exact_host, framework_distributions, plugin_environment, run_cli

__all__ = ["PAIR_MODES", "CliResult", "DumpPair", "MsprobeTester", "PluginNotLoaded", "exact_host",
           "framework_distributions", "msprobe_tester", "run_cli", "write_dump_pair"]


class MsprobeTester:
    """One test's plugin host, synthetic dumps and in-process ``msprobe`` (the ``msprobe_tester`` fixture)."""

    def __init__(self, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        #: the test's own temporary directory (``tmp_path``): dumps and outputs go here
        self.path = path
        self._monkeypatch = monkeypatch
        self._host: PluginHost | None = None
        self._pairs = 0

    def host(self, *plugins: object, installed: Iterable[str] | None = None, strict: bool = True) -> PluginHost:
        """Make the process-wide host one with exactly the built-in plugin, ``plugins`` and the installed
        plugins of the distributions ``installed`` (default: the framework plugins that are installed, as
        the known plugins' table lists them; ``()``: none), and return it.

        A plugin handed in that is also installed loads once. The plugin variables are set to match for
        the rest of the test, so an ``msprobe`` process the test starts loads the same plugins (modules
        handed in are named in ``MSPROBE_LOAD_PLUGINS``). ``strict=False``: a plugin the host skips is
        no error (to test how a broken plugin is reported).
        """
        installed = framework_distributions() if installed is None else tuple(installed)
        self._host = exact_host(*plugins, installed=installed, strict=strict)
        for name, value in plugin_environment(plugins, installed).items():
            if value is None:
                self._monkeypatch.delenv(name, raising=False)
            else:
                self._monkeypatch.setenv(name, value)
        reset_host(self._host)
        return self._host

    @property
    def current(self) -> PluginHost:
        """The test's host (the one :meth:`host` made; a host of the framework plugins alone before that)."""
        return self._host if self._host is not None else self.host()

    def dump_pair(self, mode: str = "statistics", *, framework: str | None = None, diverge: bool = True,
                  ranks: int = 1, nonfinite: bool = False) -> DumpPair:
        """Write a tiny synthetic target/golden pair of ``mode`` (``statistics``, ``tensor`` or ``md5``) under
        :attr:`path` and return it (see :func:`msprobe_testing.dumps.write_dump_pair`)."""
        self._pairs += 1
        root = self.path / f"pair{self._pairs}-{mode}"
        return write_dump_pair(root, self.current, mode, framework=framework, diverge=diverge, ranks=ranks,
                               nonfinite=nonfinite)

    def run_cli(self, *args: object) -> CliResult:
        """Run ``msprobe ARGS`` in this process with the test's host; its exit code, stdout and stderr."""
        return run_cli(*args, host=self.current)


@pytest.fixture
def msprobe_tester(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MsprobeTester]:
    """A :class:`MsprobeTester`: a plugin host with exactly the plugins the test names, synthetic dump pairs,
    and ``msprobe`` run in-process. The process-wide host is restored after the test."""
    previous = current_host()
    try:
        yield MsprobeTester(tmp_path, monkeypatch)
    finally:
        reset_host(previous)
