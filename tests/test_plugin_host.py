"""The plugin host: built-ins registered through the hooks, entry-point discovery, broken plugins."""

from __future__ import annotations

import json

from msprobe_core import hookimpl
from msprobe_core.registry import MapperSpec, PluginHost, WriterSpec

from .dumps import api, tensor, write_dump
from .plugin_session import allow_distribution


def _dist(tmp_path, name: str, module_source: str) -> None:
    """A minimal installed distribution (dist-info + module) under ``tmp_path``, found through PYTHONPATH.

    The test session loads only the project's plugins; this one is allowed too, for the calling test.
    """
    allow_distribution(name)
    info = tmp_path / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[msprobe_core.plugins]\n{name} = {name}_mod\n")
    (tmp_path / f"{name}_mod.py").write_text(module_source)


def test_builtins_are_registered_through_the_hooks():
    host = PluginHost(autoload=False)
    assert {m.name for m in host.mappers} >= {"exact", "data-mapping"}
    assert set(host.writers) >= {"csv", "xlsx"}
    builtin = next(d for d in host.describe() if d["name"] == "msprobe_core.builtin")
    assert "msprobe_register_mappers" in builtin["hooks"] and "msprobe_load_dump" in builtin["hooks"]


def test_third_party_mapper_overrides_by_priority_and_writer_is_added():
    class Plugin:
        @hookimpl
        def msprobe_register_mappers(self, register):
            register(MapperSpec("reverse", lambda ctx: None, applies=lambda o: o.extra.get("reverse", False), priority=99))

        @hookimpl
        def msprobe_register_writers(self, register):
            register(WriterSpec("tsv", ".tsv", lambda table, path: [path]))

    host = PluginHost(autoload=False, extra_plugins=[Plugin()])
    from msprobe_core.model import CompareOptions

    assert host.mapper_for(CompareOptions(extra={"reverse": True})).name == "reverse"
    assert host.mapper_for(CompareOptions()).name == "exact"
    assert host.writer("tsv").suffix == ".tsv"


def test_entry_point_plugins_are_listed(tmp_path, run_cli):
    _dist(
        tmp_path,
        "tsvwriter",
        "from msprobe_core import hookimpl\nfrom msprobe_core.registry import WriterSpec\n"
        "@hookimpl\ndef msprobe_register_writers(register):\n"
        "    register(WriterSpec('tsv', '.tsv', lambda t, p: [p]))\n",
    )
    proc = run_cli("plugins", env={"PYTHONPATH": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    listed = {p["name"]: p for p in json.loads(proc.stdout)}
    assert listed["tsvwriter"]["distribution"] == "tsvwriter"
    assert listed["tsvwriter"]["hooks"] == ["msprobe_register_writers"]
    assert "msprobe_core.builtin" in listed


def test_a_broken_plugin_is_skipped_with_a_warning(tmp_path, run_cli):
    _dist(tmp_path, "brokenplug", "raise ImportError('needs a package that is not installed')\n")
    t = write_dump(tmp_path / "t", {"Torch.a.0.forward": api([tensor()])})
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", t, "-gp", t, "-o", out, env={"PYTHONPATH": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert "plugin 'brokenplug'" in proc.stdout + proc.stderr and "is skipped" in proc.stdout + proc.stderr
    assert len(list(out.glob("compare_result_*.csv"))) == 1
    listed = json.loads(run_cli("plugins", env={"PYTHONPATH": str(tmp_path)}).stdout)
    assert any(p["name"] == "brokenplug" and "ImportError" in p["error"] for p in listed)


def test_autoload_can_be_disabled(tmp_path, run_cli):
    _dist(tmp_path, "tsvwriter2", "raise SystemError('must not be imported')\n")
    proc = run_cli("plugins", env={"PYTHONPATH": str(tmp_path), "MSPROBE_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert proc.returncode == 0
    assert [p["name"] for p in json.loads(proc.stdout)] == ["msprobe_core.builtin"]
