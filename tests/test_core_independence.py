"""The core imports no plugin, so a user may install msprobe-core with any subset of the plugins.

* an AST scan of every module of ``msprobe_core``: no ``import``/``from … import`` of a plugin package of
  this repository, at module level or inside a function, and no ``importlib.import_module``/``__import__``
  of one by name;
* a real ``msprobe`` process of a venv in which only msprobe-core and msprobe-pytorch are installed
  (``tests/selective_venv.py``): ``msprobe compare`` works, and the classic command line, whose plugin is
  missing, fails with one line naming the plugin and the command that installs it.
"""

from __future__ import annotations

import ast
import json
import textwrap

import pytest

from msprobe_core.host.registry import ENTRY_POINT_GROUP

from .dumps import api, read_csv, tensor, write_dump
from .plugin_session import REPO, project_pyprojects, read_pyproject
from .selective_venv import run


def plugin_packages() -> set[str]:
    """The top-level packages of this repository's plugins (each one's entry-point modules)."""
    found = set()
    for pyproject in project_pyprojects():
        group = read_pyproject(pyproject)["project"].get("entry-points", {}).get(ENTRY_POINT_GROUP, {})
        found.update(value.split(":")[0].strip().split(".")[0] for value in group.values())
    return found


def plugin_imports(source: str, packages: set[str]) -> list[str]:
    """``line: what`` for every import of one of ``packages`` in ``source`` (function-level ones and by-name ones too)."""
    hits = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = ast.unparse(node.func)
            if func.split(".")[-1] in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                names = [node.args[0].value]
        hits += [f"{node.lineno}: {name}" for name in names if name.split(".")[0] in packages]
    return hits


def test_the_plugin_packages_are_found():
    assert {"msprobe_pytorch", "msprobe_mindspore", "msprobe_kernel", "msprobe_dask", "msprobe_classic",
            "msprobe_example"} <= plugin_packages()


def test_the_scan_sees_every_kind_of_import():
    source = textwrap.dedent("""
        import msprobe_x.deep
        from msprobe_x import y
        def late():
            from msprobe_x.z import w
            import importlib
            importlib.import_module("msprobe_x.plugin")
            return __import__("msprobe_x")
        from .msprobe_x import relative_is_the_core_own
        import msprobe_core.host.registry
    """)
    assert plugin_imports(source, {"msprobe_x"}) == [
        "2: msprobe_x.deep", "3: msprobe_x", "5: msprobe_x.z", "7: msprobe_x.plugin", "8: msprobe_x"]


def test_the_core_imports_no_plugin():
    packages = plugin_packages()
    found = {}
    for path in sorted((REPO / "msprobe_core").rglob("*.py")):
        hits = plugin_imports(path.read_text(encoding="utf-8"), packages)
        if hits:
            found[path.relative_to(REPO).as_posix()] = hits
    assert not found, f"msprobe_core imports plugins (a core that imports a plugin breaks selective installs): {found}"


def test_compare_works_with_only_the_core_and_the_pytorch_plugin(core_and_pytorch, tmp_path):
    t = write_dump(tmp_path / "t", {"Torch.add.0.forward": api([tensor()], [tensor(mx=2.0)])})
    g = write_dump(tmp_path / "g", {"Torch.add.0.forward": api([tensor()], [tensor()])})
    proc = run(core_and_pytorch, "compare", "-tp", t, "-gp", g, "-o", tmp_path / "out", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (result,) = (tmp_path / "out").glob("compare_result_*.csv")
    rows = read_csv(result)
    assert [r["NPU Name"] for r in rows] == ["Torch.add.0.forward.input.0", "Torch.add.0.forward.output.0"]
    assert rows[1]["Max diff"] == "1.0"
    listed = run(core_and_pytorch, "plugins", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    loaded = {p["distribution"] for p in json.loads(listed.stdout) if p["loaded"]}
    assert loaded == {"msprobe-core", "msprobe-pytorch"}


def test_diff_analyze_works_with_only_the_core_and_the_pytorch_plugin(core_and_pytorch, tmp_path):
    """-da on a two-rank PyTorch pair: the analysis asks no option of an absent plugin (it used to end in
    ``internal error: AttributeError: no compare option 'api_mapping'`` once it had found a divergence)."""
    for side in ("target", "golden"):
        for rank in (0, 1):
            bad = side == "target" and rank == 1  # rank 1's linear diverges in the target run
            write_dump(tmp_path / side / "step0" / f"rank{rank}", {
                "Functional.linear.0.forward": api([tensor()], [tensor(mx=9.0 if bad else 1.0)]),
                "Functional.relu.0.forward": api([tensor(mx=9.0 if bad else 1.0)], [tensor()]),
            })
    out = tmp_path / "out"
    proc = run(core_and_pytorch, "compare", "-tp", tmp_path / "target/step0", "-gp", tmp_path / "golden/step0",
               "-o", out, "-da", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "internal error" not in proc.stderr
    assert sorted(p.name.split("_2")[0] for p in out.glob("compare_result_rank*.json")) == [
        "compare_result_rank0", "compare_result_rank1"]
    (analysis,) = out.glob("diff_analyze_*.json")
    doc = json.loads(analysis.read_text(encoding="utf-8"))
    assert list(doc) == ["rank_1"]
    assert [(n["op_name"], n["role"]) for n in doc["rank_1"]][0] == ("Functional.linear.0.forward", "cause")
    assert f"The analyze result is saved in: {analysis}" in proc.stdout


@pytest.mark.parametrize("form", [["-f", "pytorch", "compare"], ["--framework=mindspore", "compare"], ["compare"]])
def test_the_classic_command_line_without_its_plugin_names_the_distribution(core_and_pytorch, tmp_path, form):
    cfg = tmp_path / "compare.json"
    cfg.write_text('{"npu_path": "a/dump.json", "bench_path": "b/dump.json"}', encoding="utf-8")
    proc = run(core_and_pytorch, *form, "-i", cfg, "-o", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "msprobe: error: the classic interface ('msprobe -f FRAMEWORK compare -i compare.json') is not available "
        f"(install the msprobe-classic plugin: pip install -e {REPO / 'plugins' / 'classic'})"
    ]
    assert not (tmp_path / "out").exists()


def test_the_old_classic_import_path_says_where_it_went():
    with pytest.raises(ImportError, match=r"from msprobe_classic import compare, compare_distributed, ms_compare.*"
                                          r"\(pip install -e .*plugins/classic\)"):
        import msprobe_core.legacy  # noqa: F401
    import msprobe_classic

    assert {"compare", "compare_distributed", "ms_compare", "ms_compare_distributed"} <= set(msprobe_classic.__all__)
