"""Session fixture: the example plugin pip-installed into the running interpreter's environment."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "examples" / "plugins" / "msprobe_example_plugin"


def _clean_build_dirs() -> None:
    shutil.rmtree(PLUGIN / "build", ignore_errors=True)
    for egg in PLUGIN.glob("*.egg-info"):
        shutil.rmtree(egg, ignore_errors=True)


@pytest.fixture(scope="session")
def example_plugin() -> Iterator[None]:
    """``pip install examples/plugins/msprobe_example_plugin`` into this interpreter's environment, for the session.

    It is uninstalled when the session ends: an installed copy would be loaded by every later
    session's tests, and a stale one (its source changed since) would break them.
    """
    base = [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--disable-pip-version-check", str(PLUGIN)]
    try:
        # offline first (needs setuptools and wheel in the venv), then with pip's isolated build
        proc = subprocess.run([*base, "--no-build-isolation", "--no-index"], capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            proc = subprocess.run(base, capture_output=True, text=True, timeout=600)
    finally:
        _clean_build_dirs()
    if proc.returncode != 0:
        pytest.skip(f"cannot pip-install the example plugin here: {proc.stderr.strip().splitlines()[-1:]}")
    yield
    subprocess.run([sys.executable, "-m", "pip", "uninstall", "--yes", "--quiet", "msprobe-example-plugin"],
                   capture_output=True, text=True, timeout=600)


