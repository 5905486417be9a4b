"""A real virtual environment in which only some of this repository's distributions are installed.

The test venv has every plugin installed; a user may have msprobe-core with only some of them. The
environment built here is an ordinary venv (its own interpreter, ``site-packages`` and ``msprobe``
script) whose ``site-packages`` holds links to every entry of the test venv's (the third-party
dependencies and msprobe-core's own install, editable or not) except the files of the plugin
distributions left out, as their install records (``RECORD``) list them. So ``importlib.metadata`` and
the import system see only what was "installed", as after ``pip install msprobe-core msprobe-pytorch``;
it takes a second to build, with no network and no build.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest

from .plugin_session import project_distributions


def _top_level_entries(name: str) -> set[str]:
    """The ``site-packages`` entries the install of distribution ``name`` made (``set()`` when not installed).

    Its install record is read from ``site-packages`` itself: an earlier test may have put a source tree on
    ``sys.path`` whose ``*.egg-info`` names the same distribution with other files (the plugin then leaked into
    the venv that should not hold it, in whole-suite runs only).
    """
    from importlib.metadata import distributions

    site = sysconfig.get_paths()["purelib"]
    wanted = name.replace("_", "-").lower()
    found = [d for d in distributions(path=[site]) if (d.metadata["Name"] or "").replace("_", "-").lower() == wanted]
    if not found:
        try:
            found = [distribution(name)]
        except PackageNotFoundError:
            return set()
    files = found[0].files or []
    return {Path(f).parts[0] for f in files if not Path(f).is_absolute() and not str(f).startswith("..")}


def build(root: Path, installed: set[str]) -> Path:
    """A venv at ``root`` with msprobe-core, the third-party packages and, of this repository's plugin
    distributions, only those in ``installed``; returns its ``msprobe`` script."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=600)
    python = root / "bin" / "python"
    target = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True, timeout=600).stdout.strip())
    left_out: set[str] = set()
    for name in project_distributions():
        if name not in installed:
            left_out |= _top_level_entries(name)
    assert left_out, "the plugin distributions of the test venv have no install record: cannot leave them out"
    source = Path(sysconfig.get_paths()["purelib"])
    for entry in source.iterdir():
        if entry.name not in left_out and entry.name != "__pycache__":
            (target / entry.name).symlink_to(entry)
    script = root / "bin" / "msprobe"
    script.write_text(f"#!{python}\nimport sys\nfrom msprobe_core.entry import run\nsys.exit(run())\n",
                      encoding="utf-8")
    script.chmod(0o755)
    return script


@pytest.fixture(scope="session")
def core_and_pytorch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``msprobe`` script of a venv holding msprobe-core and msprobe-pytorch only."""
    return build(tmp_path_factory.mktemp("venv-core-pytorch") / "venv", {"msprobe-pytorch"})


@pytest.fixture(scope="session")
def core_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``msprobe`` script of a venv holding msprobe-core and none of the plugins."""
    return build(tmp_path_factory.mktemp("venv-core") / "venv", set())


def run(script: Path, *args: object, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``script`` (a :func:`build` venv's ``msprobe``) in a real process, with the session's environment."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(script), *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=600)


@pytest.fixture(scope="session")
def core_and_mindspore(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``msprobe`` script of a venv holding msprobe-core and msprobe-mindspore only."""
    return build(tmp_path_factory.mktemp("venv-core-mindspore") / "venv", {"msprobe-mindspore"})
