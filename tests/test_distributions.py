"""No test-only code ships in a distribution of this repository.

What each ``pyproject.toml`` packages is worked out the way setuptools does it for these configurations
(``[tool.setuptools] packages`` as a list or ``packages.find`` with ``where``/``include``/``exclude``/
``namespaces``, plus ``package-data``); where setuptools is installed the package lists are checked against
its own finder. Then, for every module a wheel would hold:

* its name does not mark it as a test (``test_*``, ``*_test``, ``conftest``, ``tests/``, ``*for_tests*``);
* it imports neither pytest, hypothesis nor the ``tests`` package (but a pytest plugin shipped for users' own
  tests, the module a ``pytest11`` entry point names, imports pytest: msprobe-testing's ``msprobe_testing``);
* some distribution of this repository uses it: it is reachable through imports (lazy ones included) from
  an entry point, a console script, a ``__main__`` module or a top-level package. A module only the tests
  (or nothing) import is test-only or dead code; a deliberate exception is listed in
  :data:`SHIPPED_FOR_USERS` with its reason.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib.util
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from msprobe_core.host.defaults import DEFAULT_PLUGINS

from .plugin_session import REPO, project_pyprojects, read_pyproject

PYPROJECTS = [REPO / "pyproject.toml", *project_pyprojects()]

#: shipped modules no code of the repository's distributions imports, on purpose: module -> why it ships
SHIPPED_FOR_USERS: dict[str, str] = {
    "msprobe_core.legacy": "the old home of the classic Python API: importing it raises an ImportError that names "
    "the new one (msprobe_classic) without importing the plugin",
}

TEST_NAME = re.compile(r"^(test_.*|.*_test|conftest|tests?|.*for_tests?.*)$")
TEST_IMPORTS = ("pytest", "_pytest", "hypothesis", "tests")
#: [tool.setuptools] keys this check understands
KNOWN_SETUPTOOLS_KEYS = {"packages", "package-data", "include-package-data", "zip-safe", "license-files"}


@dataclass
class Distribution:
    """What one ``pyproject.toml`` packages."""

    name: str
    root: Path
    packages: list[str]
    data_patterns: dict[str, list[str]]
    entry_modules: list[str] = field(default_factory=list)

    def package_dir(self, package: str) -> Path:
        return self.root / Path(*package.split("."))

    def modules(self) -> dict[str, Path]:
        """Module name -> source file, for every ``.py`` file the wheel holds."""
        out: dict[str, Path] = {}
        for package in self.packages:
            for path in sorted(self.package_dir(package).glob("*.py")):
                name = package if path.stem == "__init__" else f"{package}.{path.stem}"
                out[name] = path
        return out

    def data_files(self) -> list[Path]:
        """Non-Python files the wheel holds through ``package-data``."""
        out: list[Path] = []
        for package in self.packages:
            for pattern in self.data_patterns.get(package, []) + self.data_patterns.get("*", []):
                out.extend(p for p in self.package_dir(package).glob(pattern) if p.is_file() and p.suffix != ".py")
        return sorted(set(out))


#: what setuptools' package finders leave out whatever the configuration says
ALWAYS_EXCLUDED = ("ez_setup", "*__pycache__")


def _find_packages(where: Path, include: list[str], exclude: list[str], namespaces: bool) -> list[str]:
    """setuptools' ``find_packages``/``find_namespace_packages`` (setuptools.discovery.PackageFinder)."""
    exclude = [*ALWAYS_EXCLUDED, *exclude]
    found: list[str] = []
    for root, dirs, _files in os.walk(where, followlinks=True):
        candidates, dirs[:] = dirs[:], []
        for name in candidates:
            full = Path(root) / name
            package = ".".join(full.relative_to(where).parts)
            if "." in name or not (namespaces or (full / "__init__.py").is_file()):
                continue
            if any(fnmatch.fnmatchcase(package, p) for p in include) and not any(
                fnmatch.fnmatchcase(package, p) for p in exclude
            ):
                found.append(package)
            dirs.append(name)
    return sorted(found)


def read_distribution(pyproject: Path) -> Distribution:
    """The packages, data and entry modules of one ``pyproject.toml``."""
    doc = read_pyproject(pyproject)
    config = doc.get("tool", {}).get("setuptools", {})
    unknown = sorted(set(config) - KNOWN_SETUPTOOLS_KEYS)
    assert not unknown, f"{pyproject}: this check does not understand [tool.setuptools] {unknown}; extend it"
    packages = config.get("packages")
    assert packages is not None, f"{pyproject}: declare [tool.setuptools] packages (this check needs them)"
    if isinstance(packages, list):
        names = sorted(packages)
    else:
        find = packages["find"]
        names = []
        for where in find.get("where", ["."]):
            names += _find_packages(pyproject.parent / where, find.get("include", ["*"]), find.get("exclude", []),
                                    find.get("namespaces", True))
            assert where == ".", f"{pyproject}: packages.find.where other than '.' is not handled here"
    project = doc["project"]
    entries = [value.split(":")[0].strip() for group in project.get("entry-points", {}).values()
               for value in group.values()]
    entries += [value.split(":")[0].strip() for value in project.get("scripts", {}).values()]
    return Distribution(project["name"], pyproject.parent, names, config.get("package-data", {}), entries)


DISTRIBUTIONS = [read_distribution(p) for p in PYPROJECTS]


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    """Modules of ``known`` that ``module`` imports anywhere in its body (lazy imports and import_module too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    named: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            named.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) if node.level else (
                node.module or "")
            named.add(base)
            named.update(f"{base}.{a.name}" for a in node.names)
        elif (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module") and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            named.add(node.args[0].value)
    out: set[str] = set()
    for name in named:
        parts = name.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in known)
    return out


def _all_modules() -> dict[str, tuple[str, Path]]:
    return {m: (d.name, p) for d in DISTRIBUTIONS for m, p in d.modules().items()}


def _reachable() -> set[str]:
    modules = _all_modules()
    known = set(modules)
    roots = {m for d in DISTRIBUTIONS for m in d.entry_modules}
    # the default plugins are imported by name (msprobe_core.host.defaults), as an entry point's module is
    roots |= {module for _name, module in DEFAULT_PLUGINS}
    roots |= {m for m in known if "." not in m or m.endswith(".__main__")}
    seen: set[str] = set()
    stack = [m for m in roots if m in known]
    while stack:
        module = stack.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        stack.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # importing a.b runs a/__init__ first
        stack.extend(_imports(module, modules[module][1], known))
    return seen


def _imported_by_tests() -> set[str]:
    known = set(_all_modules())
    out: set[str] = set()
    for tests in [REPO / "tests", *(REPO / "plugins").glob("*/tests")]:  # the core's tests and each plugin's
        for path in tests.rglob("*.py"):
            out |= _imports(f"tests.{path.stem}", path, known)
    return out


# --------------------------------------------------------------------------- the checks
def test_every_distribution_is_read():
    names = {d.name for d in DISTRIBUTIONS}
    assert {"msprobe-core", "msprobe-pytorch", "msprobe-mindspore", "msprobe-kernel", "msprobe-dask",
            "msprobe-classic", "msprobe-testing", "msprobe-example-plugin"} <= names
    for d in DISTRIBUTIONS:
        assert d.modules(), f"{d.name}: no module found: the package discovery here is wrong"
    core = next(d for d in DISTRIBUTIONS if d.name == "msprobe-core")
    assert {"msprobe_core", "msprobe_core.host.registry", "msprobe_core.builtin"} <= set(core.modules())
    classic = next(d for d in DISTRIBUTIONS if d.name == "msprobe-classic")
    assert {"msprobe_classic", "msprobe_classic.plugin"} <= set(classic.modules())
    mindspore = next(d for d in DISTRIBUTIONS if d.name == "msprobe-mindspore")
    assert sorted(p.name for p in mindspore.data_files()) == ["ms_primitive_to_pt.yaml", "ms_to_pt_api.yaml"]


def test_the_package_lists_are_those_setuptools_finds():
    discovery = pytest.importorskip("setuptools.discovery")
    for pyproject, dist in zip(PYPROJECTS, DISTRIBUTIONS):
        find = read_pyproject(pyproject)["tool"]["setuptools"]["packages"]
        if isinstance(find, list):
            continue
        find = find["find"]
        finder = discovery.PEP420PackageFinder if find.get("namespaces", True) else discovery.PackageFinder
        expected = finder.find(str(pyproject.parent), exclude=find.get("exclude", ()), include=find.get("include", ("*",)))
        assert dist.packages == sorted(expected), dist.name


@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=lambda d: d.name)
def test_no_shipped_file_is_named_as_a_test(dist):
    shipped = [*dist.modules().values(), *dist.data_files()]
    named = [p.relative_to(dist.root).as_posix() for p in shipped
             if any(TEST_NAME.match(Path(part).stem) for part in p.relative_to(dist.root).parts)]
    assert not named, f"{dist.name} ships test files {named}: move them under tests/"


def pytest_plugin_modules(pyproject: Path) -> set[str]:
    """The modules a distribution's ``pytest11`` entry points name: pytest plugins for its users' tests."""
    group = read_pyproject(pyproject)["project"].get("entry-points", {}).get("pytest11", {})
    return {value.split(":")[0].strip() for value in group.values()}


@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=lambda d: d.name)
def test_no_shipped_module_imports_test_tools(dist):
    bad = {}
    plugins = pytest_plugin_modules(dist.root / "pyproject.toml")
    for module, path in dist.modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level}
        hits = sorted(n for n in names if n.split(".")[0] in TEST_IMPORTS and not (module in plugins and n == "pytest"))
        if hits:
            bad[module] = hits
    assert not bad, f"{dist.name} ships modules that import test tools: {bad}; move them under tests/"


def test_every_shipped_module_is_used_by_a_distribution():
    modules = _all_modules()
    unused = sorted(set(modules) - _reachable() - set(SHIPPED_FOR_USERS))
    by_tests = _imported_by_tests()
    problems = [
        f"{m} ({modules[m][0]}): " + ("only tests/ imports it: move it under tests/" if m in by_tests else
                                      "nothing imports it: delete it")
        for m in unused
    ]
    assert not problems, (
        "modules ship that no distribution of this repository uses (if one is public API meant for users, list it "
        "in SHIPPED_FOR_USERS of tests/test_distributions.py with the reason):\n" + "\n".join(problems)
    )


def test_the_exceptions_are_still_needed():
    reachable = _reachable()
    modules = _all_modules()
    stale = sorted(m for m in SHIPPED_FOR_USERS if m not in modules or m in reachable)
    assert not stale, f"remove {stale} from SHIPPED_FOR_USERS: no longer shipped, or used by a distribution now"


def test_the_reachability_check_finds_a_test_only_module(tmp_path):
    """What the check would have said about msprobe_mindspore/_rows_for_tests.py before it moved under tests/."""
    known = {"pkg", "pkg.plugin", "pkg.helper", "pkg._rows_for_tests"}
    (tmp_path / "plugin.py").write_text("from . import helper\n\ndef f():\n    from .helper import x\n")
    assert _imports("pkg.plugin", tmp_path / "plugin.py", known) == {"pkg", "pkg.helper"}
    (tmp_path / "test_mapping.py").write_text("from pkg import _rows_for_tests as R\n")
    assert _imports("tests.test_mapping", tmp_path / "test_mapping.py", known) == {"pkg", "pkg._rows_for_tests"}
    assert TEST_NAME.match("_rows_for_tests")
