"""Shared fixtures: where the reference corpora are, and msprobe-style oracle diffing.

The session loads only the project's own plugins, and tests marked ``exercises_hooks`` must call
those hooks: see ``tests/plugin_session.py``.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .plugin_session import isolate_environment, plugin_session_environment, pytest_configure  # noqa: F401
from .selective_venv import core_and_pytorch, core_only  # noqa: F401  (venvs of msprobe-core with one plugin, none)


def _logger_state(logger: logging.Logger) -> tuple:
    return list(logger.handlers), logger.level, logger.propagate, list(logger.filters)


def _set_logger_state(logger: logging.Logger, state: tuple) -> None:
    logger.handlers[:], logger.filters[:] = state[0], state[3]
    logger.setLevel(state[1])
    logger.propagate = state[2]


#: the ``msprobe`` logger as no run has touched it yet
_PRISTINE_LOGGER = _logger_state(logging.getLogger("msprobe"))


@pytest.fixture(autouse=True)
def _msprobe_logger_restored():
    """Each test starts and ends with the ``msprobe`` logger as no run has touched it.

    A compare run in this process (``main([...])``, also from module-scoped fixtures) points the logger at
    stdout and stops it propagating, which would hide later tests' records from ``caplog`` and make them
    depend on test order.
    """
    logger = logging.getLogger("msprobe")
    _set_logger_state(logger, _PRISTINE_LOGGER)
    yield
    _set_logger_state(logger, _PRISTINE_LOGGER)

isolate_environment()  # before any test module builds a plugin host: only the project's plugins load

REPO = Path(__file__).resolve().parents[1]


def _main_checkout() -> Path | None:
    """The main checkout when this one is a ``git worktree`` (its ``.git`` is a file naming the main repo)."""
    marker = REPO / ".git"
    if not marker.is_file():
        return None
    text = marker.read_text(encoding="utf-8", errors="replace").strip()
    if not text.startswith("gitdir:"):
        return None
    gitdir = Path(text.split(":", 1)[1].strip())  # <main>/.git/worktrees/<name>
    return gitdir.parents[2] if len(gitdir.parents) > 2 and gitdir.parent.name == "worktrees" else None


def shared_dir() -> Path:
    """The shared folder (``corpora/``, ``tools/oracle_diff.py``): ``$MSPROBE_SHARED``, else ``../shared``.

    ``../shared`` is looked for next to this checkout, then next to the main checkout when this is a
    git worktree. When only ``$MSPROBE_CORPORA`` is set and its parent holds ``tools/``, that parent is it.
    """
    env = os.environ.get("MSPROBE_SHARED")
    if env:
        return Path(env)
    corpora = os.environ.get("MSPROBE_CORPORA")
    if corpora and (Path(corpora).parent / "tools").is_dir():
        return Path(corpora).parent
    candidates = [REPO.parent / "shared"]
    main = _main_checkout()
    if main is not None:
        candidates.append(main.parent / "shared")
    return next((c for c in candidates if c.is_dir()), candidates[0])


def corpora_dir() -> Path:
    """The reference corpora: ``$MSPROBE_CORPORA`` if set, else ``corpora/`` of :func:`shared_dir`."""
    return Path(os.environ.get("MSPROBE_CORPORA") or shared_dir() / "corpora")


def no_corpora_reason() -> str:
    """The one skip reason of every test that needs the reference corpora (so they count as one group)."""
    return f"reference corpora not found at {corpora_dir()} (set MSPROBE_SHARED to the shared folder)"


def oracle_diff_path() -> Path:
    """``tools/oracle_diff.py`` of the shared folder."""
    return shared_dir() / "tools" / "oracle_diff.py"


def no_oracle_diff_reason() -> str:
    """The one skip reason of every test that needs ``oracle_diff.py``."""
    return f"oracle_diff.py not found at {oracle_diff_path()} (set MSPROBE_SHARED to the shared folder)"


@pytest.fixture(scope="session")
def corpora() -> Path:
    path = corpora_dir()
    if not path.is_dir():
        pytest.skip(no_corpora_reason())
    return path


@pytest.fixture(scope="session")
def oracle_diff():
    """The shared oracle_diff tool as a module (its ``main`` returns 0 on full agreement)."""
    tool = oracle_diff_path()
    if not tool.is_file():
        pytest.skip(no_oracle_diff_reason())
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


# --------------------------------------------------------------------------- skip summary
_EMPTY_PARAMETER_SET = "got empty parameter set"
_SKIP_PREFIX = re.compile(r"^Skipped:\s*")


def _skip_reason(report: pytest.TestReport) -> str:
    """The reason of one skipped test, as the summary groups it."""
    longrepr = report.longrepr
    reason = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    reason = _SKIP_PREFIX.sub("", reason.strip())
    if reason.startswith(_EMPTY_PARAMETER_SET):
        # a test parametrized over files found at collection time: its folder was missing or empty
        return no_corpora_reason() if not corpora_dir().is_dir() else "no cases to run (empty parameter set)"
    return reason


def _file_list(files: list[str], shown: int = 3) -> str:
    names = [Path(f).name for f in files]
    return ", ".join(names[:shown]) + (f" +{len(names) - shown} more" if len(names) > shown else "")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """End the run with one line per group of skipped tests (same reason) and that reason."""
    groups: dict[str, list[str]] = {}
    for report in terminalreporter.stats.get("skipped", []):
        if getattr(report, "wasxfail", None) is not None:
            continue
        groups.setdefault(_skip_reason(report), []).append(report.location[0] if report.location else "?")
    if not groups:
        return
    terminalreporter.write_sep("-", "skipped tests, by reason")
    for reason, files in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        unique = sorted(set(files))
        terminalreporter.write_line(f"{len(files):>5} skipped ({_file_list(unique)}): {reason}")
