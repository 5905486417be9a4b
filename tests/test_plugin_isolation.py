"""The test session loads only this repository's plugins, whatever else is installed (MSPROBE_PLUGIN_DISTRIBUTIONS).

A foreign plugin is a real distribution: a ``*.dist-info`` with an ``entry_points.txt`` in the
``msprobe_core.plugins`` group, on ``sys.path`` / ``PYTHONPATH``, exactly as pip would leave it. Its module
notes on disk that it was imported and registers a ``foreign`` writer, so both its import and its effect
on a run can be seen.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

import pytest

from msprobe_core.default_plugins.plugins_command.listing import describe_plugins
from msprobe_core.host.registry import DISTRIBUTIONS_ENV, PluginHost

from .dumps import api, tensor, write_dump
from .plugin_session import FOREIGN_PLUGIN_VARIABLES, project_distributions

FOREIGN_MODULE = '''
from pathlib import Path

from msprobe_core import hookimpl
from msprobe_core.host.registry import WriterSpec
from msprobe_core.write.writers import atomic_path

Path(__file__).with_suffix(".imported").touch()


def write(table, path):
    with atomic_path(Path(path)) as tmp:
        tmp.write_text("foreign\\n")
    return [Path(path)]


@hookimpl
def msprobe_register_writers(register):
    register(WriterSpec("foreign", ".foreign", write))
'''


def _foreign_plugin(root: Path, name: str) -> Path:
    """Install the plugin distribution ``name`` under ``root``; returns the file its import creates."""
    root.mkdir(parents=True, exist_ok=True)
    info = root / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[msprobe_core.plugins]\n{name} = {name}_plugin\n")
    (root / f"{name}_plugin.py").write_text(FOREIGN_MODULE)
    return root / f"{name}_plugin.imported"


def _installed_project_plugins() -> set[str]:
    """Entry-point names of this repository's plugin distributions that are installed here."""
    names = set()
    for dist_name in project_distributions():
        try:
            dist = distribution(dist_name)
        except Exception:  # not installed (the example plugin before its fixture ran)
            continue
        names |= {ep.name for ep in dist.entry_points if ep.group == "msprobe_core.plugins"}
    return names


def test_the_session_names_exactly_the_repository_plugin_distributions():
    allowed = os.environ[DISTRIBUTIONS_ENV].split(",")
    assert sorted(allowed) == sorted(project_distributions())
    assert {"msprobe-pytorch", "msprobe-mindspore", "msprobe-kernel", "msprobe-dask",
            "msprobe-example-plugin"} <= set(allowed)
    assert not any(os.environ.get(v) for v in FOREIGN_PLUGIN_VARIABLES)


def test_a_foreign_plugin_is_not_loaded_in_the_session_but_is_in_a_normal_run(tmp_path, monkeypatch):
    imported = _foreign_plugin(tmp_path / "site", "foreignwriter")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))

    session = PluginHost()
    names = {d["name"] for d in describe_plugins(session)}
    assert "foreignwriter" not in names and "foreign" not in session.writers
    assert not imported.exists()  # not even imported
    assert _installed_project_plugins() <= names and {"pytorch", "mindspore", "kernel"} <= names
    assert {d["distribution"] for d in describe_plugins(session)} <= {*project_distributions(), "msprobe-core"}

    monkeypatch.delenv(DISTRIBUTIONS_ENV)  # what a user's run does
    normal = PluginHost()
    assert "foreignwriter" in {d["name"] for d in describe_plugins(normal)} and "foreign" in normal.writers
    assert imported.exists()


def test_a_cli_run_of_the_session_does_not_load_it(tmp_path, run_cli):
    imported = _foreign_plugin(tmp_path / "site", "foreigncli")
    dump = write_dump(tmp_path / "dump", {"Torch.add.0.forward": api([tensor()], [tensor()])})
    args = ["compare", "-tp", dump, "-gp", dump, "--output_format", "foreign", "-q"]

    proc = run_cli(*args, "-o", tmp_path / "session", env={"PYTHONPATH": str(tmp_path / "site")})
    assert proc.returncode == 2 and "unknown output format 'foreign'" in proc.stderr
    assert not imported.exists()

    env = {k: v for k, v in os.environ.items() if k != DISTRIBUTIONS_ENV}
    env["PYTHONPATH"] = str(tmp_path / "site")
    proc = subprocess.run([sys.executable, "-m", "msprobe_core", *map(str, args), "-o", str(tmp_path / "normal")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert imported.exists()
    (result,) = (tmp_path / "normal").glob("*.foreign")
    assert result.read_text() == "foreign\n"


@pytest.mark.parametrize(
    ("value", "loaded"),
    [
        ("msprobe-pytorch", {"pytorch"}),
        ("Msprobe_PyTorch, msprobe.kernel", {"pytorch", "kernel"}),
        ("", set()),
        ("no-such-distribution", set()),
    ],
)
def test_only_the_distributions_named_load(monkeypatch, value, loaded):
    monkeypatch.setenv(DISTRIBUTIONS_ENV, value)
    names = {d["name"] for d in describe_plugins(PluginHost()) if not d.get("default")} - {"msprobe_core.builtin"}
    assert names == loaded


def test_modules_named_explicitly_still_load(tmp_path, monkeypatch):
    imported = _foreign_plugin(tmp_path / "site", "explicitwriter")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("MSPROBE_LOAD_PLUGINS", "explicitwriter_plugin")
    host = PluginHost()
    assert "foreign" in host.writers and imported.exists()
    assert "explicitwriter" not in {d["name"] for d in describe_plugins(host)}  # its entry point stayed unloaded
