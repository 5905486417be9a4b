"""The hook surface is complete: every hook spec is documented, implemented and exercised by a test.

Generic over ``msprobe_core/host/hookspecs.py`` and the hooks the default plugins declare (``msprobe_add_hookspecs``):
a hook added there is checked here without editing this file.
For every hook spec:

* the spec has a docstring (the contract) saying since which version it exists (``.. versionadded::``), and
  every version it names is one the package has had (none past ``msprobe_core.__version__``);
* the spec and its docstring name only public homes: ``msprobe_core.plugin.X``, never the module a name lives in;
* ``docs/plugins.md`` lists it in the table of "The hooks" with its arguments, and another section of the
  page shows it in code together with each of its arguments (an example implementation, or the hook and
  its arguments named in backticks);
* a built-in plugin (a module of ``msprobe_core`` with ``@hookimpl`` functions), a plugin of ``plugins/*``
  or the example plugin implements it;
* a test carries ``@pytest.mark.exercises_hooks("<hook>")``; when that test runs, ``tests/plugin_session.py``
  fails it unless a plugin's implementation of the hook was really called through the plugin host.

Hooks that miss one of these today are strict ``xfail``s in :data:`KNOWN_GAPS`: when the gap is closed the
test XPASSes, which fails the run until the entry is removed.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pluggy
import pytest

import msprobe_core
from msprobe_core.host import hookspecs
from msprobe_core.host.registry import ENTRY_POINT_GROUP, PluginHost

from .plugin_session import MARKER, REPO, hook_specs, marked_tests, project_pyprojects, read_pyproject

DOC = REPO / "docs" / "plugins.md"
HOOKS_SECTION = "The hooks"
#: every hook spec by name: the core's and those the default plugins declare (msprobe_add_hookspecs)
HOOK_SPECS = hook_specs()
HOOKS = sorted(HOOK_SPECS)

#: (check, hook) -> why it fails on this branch today
KNOWN_GAPS: dict[tuple[str, str], str] = {
}


def _each_hook(check: str) -> list:
    """The hooks as parameters of one check, today's known gaps as strict xfails."""
    return [
        pytest.param(h, id=h, marks=pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[(check, h)]))
        if (check, h) in KNOWN_GAPS
        else pytest.param(h, id=h)
        for h in HOOKS
    ]


def spec_arguments(hook: str) -> list[str]:
    """The argument names of a hook spec, in order."""
    return list(inspect.signature(HOOK_SPECS[hook]).parameters)


# --------------------------------------------------------------------------- the page
def doc_sections() -> dict[str, str]:
    """``docs/plugins.md`` by ``## `` section: heading -> text (``###`` subsections stay in their section)."""
    sections: dict[str, list[str]] = {"": []}
    current, fenced = "", False
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            current = line[3:].strip()
            sections[current] = []
        else:
            sections[current].append(line)
    return {heading: "\n".join(lines) for heading, lines in sections.items()}


def code_of(text: str) -> str:
    """What a section shows as code: its fenced blocks and its inline `code` spans."""
    parts: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            parts.append(line)
        else:
            parts.extend(re.findall(r"`([^`]+)`", line))
    return "\n".join(parts)


def hooks_table() -> dict[str, list[str]]:
    """The hooks table: hook -> the arguments its row shows (``| `msprobe_x(a, b)` | … |``)."""
    rows: dict[str, list[str]] = {}
    for m in re.finditer(r"^\|\s*`(\w+)\(([^)]*)\)`\s*\|", doc_sections().get(HOOKS_SECTION, ""), re.MULTILINE):
        rows[m.group(1)] = [a.strip() for a in m.group(2).split(",") if a.strip()]
    return rows


# --------------------------------------------------------------------------- the plugins
def _core_plugin_modules() -> list[str]:
    """Modules of ``msprobe_core`` that define ``@hookimpl`` functions (the built-in plugins)."""
    out = []
    for path in sorted((REPO / "msprobe_core").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        decorators = (d.func if isinstance(d, ast.Call) else d for n in ast.walk(tree)
                      if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for d in n.decorator_list)
        if any(ast.unparse(d).split(".")[-1] == "hookimpl" for d in decorators):
            out.append(".".join(path.relative_to(REPO).with_suffix("").parts))
    return out


def _project_entry_points() -> list[tuple[Path, str]]:
    """(project directory, module) for every ``msprobe_core.plugins`` entry point of the repository's plugins."""
    out = []
    for pyproject in project_pyprojects():
        group = read_pyproject(pyproject)["project"].get("entry-points", {}).get(ENTRY_POINT_GROUP, {})
        out.extend((pyproject.parent, value.split(":")[0].strip()) for value in group.values())
    return out


@pytest.fixture(scope="module")
def project_plugins() -> dict[str, ModuleType]:
    """Every plugin module of this repository, imported from the checkout when it is not installed."""
    modules = {name: importlib.import_module(name) for name in _core_plugin_modules()}
    with pytest.MonkeyPatch.context() as mp:
        for project, module in _project_entry_points():
            if importlib.util.find_spec(module.split(".")[0]) is None:
                mp.syspath_prepend(str(project))
            modules[module] = importlib.import_module(module)
    return modules


@pytest.fixture(scope="module")
def project_manager(project_plugins) -> pluggy.PluginManager:
    """A plugin manager holding the hook specs and every plugin of this repository (validated by pluggy)."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.hook.msprobe_add_hookspecs.call_historic(kwargs={"pluginmanager": pm})  # the default plugins' own hooks
    for name, module in project_plugins.items():
        pm.register(module, name=name)
    pm.check_pending()
    return pm


# --------------------------------------------------------------------------- the checks
def test_the_hooks_checked_are_those_the_host_knows():
    host_hooks = sorted(vars(PluginHost(autoload=False).pm.hook))
    assert HOOKS and HOOKS == host_hooks


@pytest.mark.parametrize("hook", _each_hook("docstring"))
def test_hook_spec_has_a_docstring(hook):
    doc = inspect.getdoc(HOOK_SPECS[hook]) or ""
    assert len(doc.split()) >= 5, f"msprobe_core/host/hookspecs.py: write the contract of {hook} in its docstring"
    assert ".. versionadded::" in doc, f"msprobe_core/host/hookspecs.py: add '.. versionadded:: X.Y' to {hook}'s docstring"
    future = _versions_past(doc, msprobe_core.__version__)
    assert not future, f"{hook}: versions {future} are past the package's {msprobe_core.__version__}"
    internal = [m for m in re.findall(r"msprobe_core\.[\w.]+", doc) if m.split(".")[1] not in ("plugin", "compare")]
    assert not internal, f"{hook}'s docstring names internal homes {internal}: name msprobe_core.plugin.X"


def _versions_past(doc: str, released: str) -> list[str]:
    """The versions a docstring's ``versionadded``/``versionchanged`` markers name that are past ``released``."""
    def key(text: str) -> tuple[int, ...]:
        return tuple(int(p) for p in text.strip(".").split("."))

    return [v for v in re.findall(r"\.\. version(?:added|changed):: ([0-9.]+)", doc) if key(v) > key(released)]


def test_the_version_check_sees_a_version_past_the_package():
    doc = ".. versionadded:: 0.1\n.. versionchanged:: 0.2 ``x`` replaces ``y``\n.. versionadded:: 0.1.0"
    assert _versions_past(doc, "0.1.0") == ["0.2"] and _versions_past(doc, "0.2") == []


@pytest.mark.parametrize("hook", _each_hook("in_table"))
def test_hook_is_in_the_hooks_table(hook):
    args = spec_arguments(hook)
    row = hooks_table().get(hook)
    signature = f"`{hook}({', '.join(args)})`"
    assert row is not None, (
        f"docs/plugins.md, section '{HOOKS_SECTION}': add a row '| {signature} | kind | called | you provide |'"
    )
    assert row == args, f"docs/plugins.md, section '{HOOKS_SECTION}': the row of {hook} shows ({', '.join(row)}); " \
                        f"msprobe_core/host/hookspecs.py has {signature}"


def test_the_hooks_table_lists_only_hooks_that_exist():
    stale = sorted(set(hooks_table()) - set(HOOKS))
    assert not stale, f"docs/plugins.md, section '{HOOKS_SECTION}': remove the rows of {stale} (no such hook spec)"


@pytest.mark.parametrize("hook", _each_hook("in_section"))
def test_hook_is_shown_with_its_arguments_in_a_section(hook):
    args = spec_arguments(hook)
    partial = {}
    for heading, text in doc_sections().items():
        if heading == HOOKS_SECTION:
            continue
        code = code_of(text)
        if re.search(rf"\b{hook}\b", code):
            missing = [a for a in args if not re.search(rf"\b{a}\b", code)]
            if not missing:
                return
            partial[heading] = missing
    where = "; ".join(f"section '{h}' names it but not {', '.join(f'`{a}`' for a in m)}" for h, m in partial.items())
    pytest.fail(
        f"docs/plugins.md: no section shows {hook} with its arguments ({', '.join(args)}). Add a section with an "
        f"example `@hookimpl def {hook}({', '.join(args)}): ...` or that names the hook and each argument in "
        f"backticks{' (' + where + ')' if where else ''}.",
        pytrace=False,
    )


@pytest.mark.parametrize("hook", _each_hook("implemented"))
def test_hook_is_implemented_by_a_plugin_of_this_repository(hook, project_manager):
    implementers = [impl.plugin_name for impl in getattr(project_manager.hook, hook).get_hookimpls()]
    assert implementers, (
        f"no plugin of this repository implements {hook}: implement it in msprobe_core/builtin.py, in a plugin "
        "under plugins/ or in examples/plugins/msprobe_example_plugin (and show it in docs/plugins.md)"
    )


@pytest.mark.parametrize("hook", _each_hook("exercised"))
def test_hook_is_exercised_by_a_marked_test(hook):
    tests = marked_tests().get(hook, [])
    assert tests, (
        f"no test exercises {hook}: mark a test that calls it through a real plugin (a PluginHost or an msprobe "
        f"run) with @pytest.mark.{MARKER}('{hook}'); tests/plugin_session.py then checks the call happens"
    )


def test_every_marker_names_a_hook():
    unknown = {hook: tests for hook, tests in marked_tests().items() if hook not in HOOKS}
    assert not unknown, f"@pytest.mark.{MARKER} names hooks hookspecs.py does not have: {unknown}"


def test_the_plugin_modules_found_include_every_kind(project_plugins):
    """The implementation check looks at the built-in plugin, the framework plugins and the example."""
    assert {"msprobe_core.builtin", "msprobe_pytorch.plugin", "msprobe_mindspore.plugin", "msprobe_kernel.plugin",
            "msprobe_dask.plugin", "msprobe_classic.plugin", "msprobe_example.plugin"} <= set(project_plugins)


# --------------------------------------------------------------------------- the marker itself
PROBE = '''
import subprocess, sys
import pytest
from msprobe_core.host.registry import PluginHost
from tests.dumps import api, tensor, write_dump


@pytest.mark.exercises_hooks("msprobe_register_writers")
def test_calls_it():
    assert "csv" in PluginHost(autoload=False).writers


@pytest.mark.exercises_hooks("msprobe_register_writers")
def test_never_calls_it():
    assert True


@pytest.mark.exercises_hooks("msprobe_discover_jobs")
def test_builds_a_host_but_never_runs_a_compare():
    PluginHost(autoload=False)


@pytest.mark.exercises_hooks("msprobe_no_such_hook")
def test_names_no_hook():
    PluginHost(autoload=False)


@pytest.mark.exercises_hooks()
def test_names_nothing():
    PluginHost(autoload=False)


@pytest.mark.exercises_hooks("msprobe_discover_jobs", "msprobe_load_dump")
def test_calls_them_in_a_child_process(tmp_path):
    t = write_dump(tmp_path / "t", {"Torch.a.0.forward": api([tensor()])})
    proc = subprocess.run([sys.executable, "-m", "msprobe_core", "compare", "-tp", str(t), "-gp", str(t),
                           "-o", str(tmp_path / "out")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
'''


def test_a_marked_test_fails_unless_its_hooks_are_called(tmp_path):
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(REPO)!r})\n"
        "from tests.plugin_session import isolate_environment, plugin_session_environment, pytest_configure\n"
        "isolate_environment()\n"
    )
    (tmp_path / "test_probe.py").write_text(PROBE)
    report = tmp_path / "report.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
    )
    outcomes: dict[str, list[str]] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        # the message is cut at a length (pytest's junitxml); the element's text holds the whole report
        outcomes[case.get("name")] = [f"{child.tag}: {child.get('message', '')}\n{child.text or ''}" for child in case
                                      if child.tag in ("failure", "error", "skipped")]
    assert outcomes["test_calls_it"] == [], proc.stdout
    assert outcomes["test_calls_them_in_a_child_process"] == [], proc.stdout
    (never,) = outcomes["test_never_calls_it"]
    assert never.startswith("error:") and "no plugin implementation of it was called" in never
    assert "hooks called: none" in never
    (dispatch,) = outcomes["test_builds_a_host_but_never_runs_a_compare"]
    assert "msprobe_discover_jobs" in dispatch and "msprobe_register_writers" in dispatch  # what was called instead
    (unknown,) = outcomes["test_names_no_hook"]
    assert "msprobe_no_such_hook is not one" in unknown
    (nothing,) = outcomes["test_names_nothing"]
    assert "it names none" in nothing
