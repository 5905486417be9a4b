"""Shared fixtures: where the reference corpora are, and msprobe-style oracle diffing.

The session loads only the project's own plugins, and tests marked ``exercises_hooks`` must call
those hooks: see ``tests/plugin_session.py``.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .plugin_session import isolate_environment, plugin_session_environment, pytest_configure  # noqa: F401

isolate_environment()  # before any test module builds a plugin host: only the project's plugins load

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    """``../shared`` next to the checkout (override with MSPROBE_SHARED)."""
    return Path(os.environ.get("MSPROBE_SHARED", REPO.parent / "shared"))


def corpora_dir() -> Path:
    """The reference corpora (override with MSPROBE_CORPORA)."""
    return Path(os.environ.get("MSPROBE_CORPORA", shared_dir() / "corpora"))


@pytest.fixture(scope="session")
def corpora() -> Path:
    path = corpora_dir()
    if not path.is_dir():
        pytest.skip(f"reference corpora not found at {path}")
    return path


@pytest.fixture(scope="session")
def oracle_diff():
    """The shared oracle_diff tool as a module (its ``main`` returns 0 on full agreement)."""
    tool = shared_dir() / "tools" / "oracle_diff.py"
    if not tool.is_file():
        pytest.skip(f"oracle_diff.py not found at {tool}")
    spec = importlib.util.spec_from_file_location("oracle_diff", tool)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def run_cli():
    """Run ``python -m msprobe_core ARGS`` in a real process; returns CompletedProcess."""

    def run(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
        full_env = dict(os.environ)
        full_env.update(env or {})
        return subprocess.run(
            [sys.executable, "-m", "msprobe_core", *map(str, args)],
            capture_output=True,
            text=True,
            cwd=cwd,
            env=full_env,
            timeout=600,
        )

    return run


def agree(oracle_diff, ours: Path, ref: Path, capsys=None, extra: tuple[str, ...] = ()) -> tuple[int, str]:
    """Run oracle_diff on two tables; returns (exit code, its report)."""
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = oracle_diff.main([str(ours), str(ref), *extra])
    return rc, buf.getvalue()
