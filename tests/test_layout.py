"""The core's layout holds: small modules, no import cycle, the layering contracts of pyproject.toml.

* no module of ``msprobe_core`` is over 500 lines;
* the import graph of ``msprobe_core`` has no cycle: an AST scan of every module, imports inside functions
  included (those under ``if TYPE_CHECKING:`` never run and are left out; the C extensions are leaves);
* ``lint-imports`` keeps every contract of ``[tool.importlinter]`` (the layers of docs/architecture.md, the
  stages that stay apart, the command line only the console script imports, no plugin, no torch).
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "msprobe_core"
MAX_LINES = 500
#: compiled modules of the package (setup.py), below it: imported, never importing anything of the core
EXTENSIONS = ("default_plugins.tensor_metrics._fused", "_dumpscan")


def core_modules(root: Path = REPO, package: str = PACKAGE) -> dict[str, Path]:
    """Module name -> source file, for every module of ``package`` under ``root``."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``module`` imports anywhere in its body (``from p import m`` counts ``p.m``
    when that is a module; an import of ``p.m.x`` counts ``p.m``), except under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = {id(node) for block in ast.walk(tree)
                 if isinstance(block, ast.If) and ast.unparse(block.test).endswith("TYPE_CHECKING")
                 for stmt in block.body for node in ast.walk(stmt)}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    named: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                named.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source)
    found = set()
    for name in named:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)
    return found


def import_graph(root: Path = REPO, package: str = PACKAGE) -> dict[str, set[str]]:
    modules = core_modules(root, package)
    known = set(modules) | {f"{package}.{ext}" for ext in EXTENSIONS}
    graph = {m: imports_of(m, p, known) for m, p in modules.items()}
    graph.update({ext: set() for ext in known - set(modules)})
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph) + 100))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_core_module_is_over_500_lines():
    long = {m: n for m, p in core_modules().items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"split these along their seams (docs/architecture.md): {long}"


#: import edges left out of the cycle check, each with its reason (the same as pyproject.toml's acyclic contract):
#: (importing module, prefix of the modules it imports)
KNOWN_EDGES: set[tuple[str, str]] = set()


def test_the_core_has_no_import_cycle():
    graph = import_graph()
    for source, prefix in KNOWN_EDGES:
        graph[source] = {m for m in graph.get(source, set()) if not m.startswith(prefix)}
    assert {f"{PACKAGE}.pipeline.job", f"{PACKAGE}.load.stage", f"{PACKAGE}.host.registry"} <= set(graph)
    assert f"{PACKAGE}.match.stage" in graph[f"{PACKAGE}.pipeline.whole"]
    assert not cycles(graph), "import cycles (function-level imports count):\n" + "\n".join(map(str, cycles(graph)))


def test_the_scan_sees_function_level_imports_and_leaves_out_type_only_ones(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text(textwrap.dedent("""
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from ..c import C
        def late():
            from .. import a
            from pkg._dumpscan import kernel
    """))
    (pkg / "c.py").write_text("from pkg.sub.b import late\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.a"] == {"pkg.sub.b"}
    assert graph["pkg.sub.b"] == {"pkg.a", "pkg._dumpscan"}
    assert graph["pkg.c"] == {"pkg.sub.b"}
    assert cycles(graph) == [["pkg.a", "pkg.sub.b"]]


def test_the_import_contracts_hold():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if lint is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    proc = subprocess.run([lint, "--no-cache", "--no-logo"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " 0 broken" in proc.stdout
