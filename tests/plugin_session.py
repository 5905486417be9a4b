"""What every test session does about plugins (``tests/fixtures.py`` imports this).

* **Only the project's own plugins load.** ``MSPROBE_PLUGIN_DISTRIBUTIONS`` is set to the distributions
  of ``plugins/*/`` and ``examples/plugins/*/`` (read from their ``pyproject.toml``), so a plugin some
  other package installed into the environment is never loaded, in this process or in the ``msprobe``
  processes the tests start (they inherit the environment). Plugin variables a developer may have
  exported (``MSPROBE_LOAD_PLUGINS``, ``MSPROBE_DISABLE_PLUGIN_AUTOLOAD``, ``MSPROBE_TRACE_HOOKS``,
  ``MSPROBE_TRACE_PLUGINS``)
  are cleared. A test that writes a plugin distribution of its own on purpose allows it with
  :func:`allow_distribution`, for that test only.
* **A test that says it exercises a hook must call it.** ``@pytest.mark.exercises_hooks("msprobe_x")``
  runs the test with ``MSPROBE_TRACE_HOOKS`` pointing at a fresh file; after the test every hook it
  names must have been called, through the plugin host, with at least one plugin's implementation
  (in this process or in one the test started). ``tests/test_hook_surface.py`` checks that every
  hook spec has such a test.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from msprobe_core.default_plugins.trace import TRACE_HOOKS_ENV as TRACE_ENV
from msprobe_core.host import hookspecs
from msprobe_core.host.registry import DISTRIBUTIONS_ENV, reset_host

REPO = Path(__file__).resolve().parents[1]
#: the marker a test carries to say which hooks it exercises
MARKER = "exercises_hooks"
#: variables that change which plugins load, from the developer's shell; a test session never inherits them
FOREIGN_PLUGIN_VARIABLES = ("MSPROBE_LOAD_PLUGINS", "MSPROBE_DISABLE_PLUGIN_AUTOLOAD", TRACE_ENV, "MSPROBE_TRACE_PLUGINS")


def project_pyprojects() -> list[Path]:
    """The ``pyproject.toml`` of every plugin distribution of this repository (example plugin included)."""
    return sorted([*REPO.glob("plugins/*/pyproject.toml"), *REPO.glob("examples/plugins/*/pyproject.toml")])


def read_pyproject(path: Path) -> dict:
    """A ``pyproject.toml`` as a dict."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def project_distributions() -> list[str]:
    """The names of this repository's plugin distributions (``msprobe-pytorch``, …, ``msprobe-example-plugin``)."""
    return [read_pyproject(p)["project"]["name"] for p in project_pyprojects()]


def hook_specs() -> dict[str, Callable[..., Any]]:
    """Every hook spec by name: those of ``msprobe_core/host/hookspecs.py`` and those the default plugins declare
    (``msprobe_add_hookspecs``, as the plugin host has them)."""
    import importlib

    import pluggy

    from msprobe_core.host.defaults import DEFAULT_PLUGINS

    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.hook.msprobe_add_hookspecs.call_historic(kwargs={"pluginmanager": pm})
    for name, module in DEFAULT_PLUGINS:
        pm.register(importlib.import_module(module), name=name)
    return {name: caller.spec.function for name, caller in vars(pm.hook).items() if caller.spec is not None}


def hook_names() -> list[str]:
    """The name of every hook spec (:func:`hook_specs`)."""
    return sorted(hook_specs())


def isolate_environment() -> None:
    """Load only the project's plugins from now on (see the module docstring)."""
    for name in FOREIGN_PLUGIN_VARIABLES:
        os.environ.pop(name, None)
    os.environ[DISTRIBUTIONS_ENV] = ",".join(project_distributions())


def allow_distribution(name: str) -> None:
    """Let the plugin distribution ``name`` load too, until the end of the current test."""
    if DISTRIBUTIONS_ENV in os.environ:  # unset, every distribution loads already
        os.environ[DISTRIBUTIONS_ENV] = ",".join(filter(None, [os.environ[DISTRIBUTIONS_ENV], name]))


def traced_calls(path: Path) -> list[dict[str, str]]:
    """The hook calls ``MSPROBE_TRACE_HOOKS`` recorded in ``path`` (``[]`` when nothing was called)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*hooks): the test calls these msprobe hooks through real plugins; checked at the end of the "
        "test (tests/plugin_session.py) and counted by tests/test_hook_surface.py",
    )


@pytest.fixture(autouse=True)
def plugin_session_environment(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Restore the session's plugin allow-list after each test; trace the hooks of ``exercises_hooks`` tests."""
    allowed = os.environ.get(DISTRIBUTIONS_ENV)
    try:
        yield from _trace_marked_hooks(request, monkeypatch, tmp_path_factory)
    finally:  # undoes allow_distribution
        if allowed is None:
            os.environ.pop(DISTRIBUTIONS_ENV, None)
        else:
            os.environ[DISTRIBUTIONS_ENV] = allowed


def _trace_marked_hooks(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    marker = request.node.get_closest_marker(MARKER)
    if marker is None:
        yield
        return
    hooks = list(marker.args)
    unknown = sorted(set(hooks) - set(hook_names()))
    if not hooks or unknown:
        why = f"{', '.join(unknown)} is not one" if unknown else "it names none"
        pytest.fail(f"@pytest.mark.{MARKER}{tuple(hooks)}: name hooks of msprobe_core/host/hookspecs.py ({why})",
                    pytrace=False)
    trace = tmp_path_factory.mktemp("hook-trace") / "calls.jsonl"
    monkeypatch.setenv(TRACE_ENV, str(trace))
    reset_host(None)  # a host made before this test would not record what it calls
    yield
    reset_host(None)  # nor should this test's traced host serve later tests
    calls = traced_calls(trace)
    missing = [h for h in hooks if not any(c["hook"] == h for c in calls)]
    if missing:
        seen = sorted({c["hook"] for c in calls})
        pytest.fail(
            f"{request.node.nodeid} is marked @pytest.mark.{MARKER} for {', '.join(missing)}, but no plugin "
            f"implementation of {'it' if len(missing) == 1 else 'them'} was called during the test (hooks called: "
            f"{', '.join(seen) or 'none'}). Exercise the hook through a PluginHost (or an msprobe run), "
            "or drop it from the marker.",
            pytrace=False,
        )


def test_dirs() -> list[Path]:
    """The suite's test directories: the core's ``tests/`` and each plugin's ``plugins/<name>/tests/``."""
    return [REPO / "tests", *sorted(p for p in (REPO / "plugins").glob("*/tests") if p.is_dir())]


def marked_tests(tests_dir: Path | None = None) -> dict[str, list[str]]:
    """``hook -> ["tests/test_x.py::test_y", ...]``: every ``exercises_hooks`` marker written in the test files.

    Read from the source rather than from a collection, so it sees every test file whatever subset of
    the suite runs: markers decorating a test function or class, and ``pytestmark = ...`` of a module
    or class.
    """
    found: dict[str, list[str]] = {}
    for path in [p for d in ([tests_dir] if tests_dir is not None else test_dirs()) for p in sorted(d.rglob("*.py"))]:
        where = path.relative_to(REPO).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                marked = [(node.name, d) for d in node.decorator_list]
            else:
                marked = []
            if isinstance(node, (ast.Module, ast.ClassDef)):
                owner = node.name if isinstance(node, ast.ClassDef) else "<module>"
                marked += [(owner, s.value) for s in node.body if isinstance(s, ast.Assign)
                           and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in s.targets)]
            for owner, expr in marked:
                for call in ast.walk(expr):
                    if isinstance(call, ast.Call) and _is_marker(call.func):
                        for arg in call.args:
                            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                                found.setdefault(arg.value, []).append(f"{where}::{owner}")
    return found


def _is_marker(func: ast.AST) -> bool:
    """``pytest.mark.exercises_hooks`` (or ``mark.exercises_hooks``)."""
    return isinstance(func, ast.Attribute) and func.attr == MARKER and ast.unparse(func.value) in ("pytest.mark", "mark")
