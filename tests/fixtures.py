"""Shared fixtures and hooks (registered for every test directory by the root conftest.py): where the reference corpora are, and msprobe-style oracle diffing.

The session loads only the project's own plugins, and tests marked ``exercises_hooks`` must call
those hooks: see ``tests/plugin_session.py``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from .plugin_session import isolate_environment, plugin_session_environment, pytest_configure  # noqa: F401
from .selective_venv import core_and_mindspore, core_and_pytorch, core_only  # noqa: F401  (venvs of msprobe-core with one plugin, none)


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
# The corpora's pairs are far below the size from which a serial run streams a job (pipeline/strategy.py): the suite
# runs them chunk by chunk as it always has, so that the chunked strategy is what most tests exercise (the whole-table
# strategy is pinned to it byte for byte by tests/test_streamed_chunks.py); tests of the default threshold unset it.
os.environ.setdefault("MSPROBE_STREAM_MIN_BYTES", "0")

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


#: the compact corpus shipped in the repository (one small case per scenario, see its README.md)
IN_REPO_CORPUS = REPO / "tests" / "data" / "corpus"
#: every oracle variant of the shared corpora, one relative path a line (written by scripts/build_minicorpus.py)
SHARED_MANIFEST = IN_REPO_CORPUS / "shared_manifest.txt"
#: the copy of the shared folder's oracle_diff.py, used when the shared folder is absent
IN_REPO_ORACLE_DIFF = REPO / "tests" / "tools" / "oracle_diff.py"


def shared_corpora_dir() -> Path:
    """The shared corpora: ``$MSPROBE_CORPORA`` if set, else ``corpora/`` of :func:`shared_dir`."""
    return Path(os.environ.get("MSPROBE_CORPORA") or shared_dir() / "corpora")


def using_in_repo_corpus() -> bool:
    """True when the shared corpora are absent and the tests run on the in-repository corpus."""
    return not shared_corpora_dir().is_dir()


_CORPUS_VIEW: list[Path] = []


def _in_repo_corpus_view() -> Path:
    """The in-repository corpus with its symlinks into ``examples/`` resolved, in a temporary folder.

    Some tests walk a case with ``rglob``/``os.walk``, which do not descend into symlinked folders, so the
    tests see real folders. The view is keyed by the corpus' names, sizes and times: sessions (and
    worktrees) with the same corpus share it, and it is built once, into a fresh folder renamed into place.
    """
    if _CORPUS_VIEW:
        return _CORPUS_VIEW[0]
    digest = hashlib.sha1()
    for path in sorted(IN_REPO_CORPUS.rglob("*")):
        st = path.stat()  # follows the symlinks: a changed example changes the key
        digest.update(f"{path.relative_to(IN_REPO_CORPUS)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    view = Path(tempfile.gettempdir()) / f"msprobe-corpus-{digest.hexdigest()[:16]}"
    if not view.is_dir():
        building = Path(tempfile.mkdtemp(prefix="msprobe-corpus-building-"))
        shutil.copytree(IN_REPO_CORPUS, building / "corpus", symlinks=False)
        try:
            os.rename(building / "corpus", view)
        except OSError:  # another session put it there first: use that one
            shutil.rmtree(building / "corpus", ignore_errors=True)
        shutil.rmtree(building, ignore_errors=True)
    _CORPUS_VIEW.append(view)
    return view


def corpora_dir() -> Path:
    """The reference corpora: the shared ones (:func:`shared_corpora_dir`), else the in-repository corpus.

    The shared corpora are a superset of the in-repository one; tests parametrized over what the corpora
    hold collect fewer cases on the in-repository corpus (:func:`missing_shared_variants` counts them).
    """
    shared = shared_corpora_dir()
    if shared.is_dir() or not IN_REPO_CORPUS.is_dir():
        return shared
    return _in_repo_corpus_view()


def missing_shared_variants() -> list[str]:
    """The shared corpora's oracle variants the corpus in use lacks (empty when the shared one is used)."""
    if not using_in_repo_corpus() or not SHARED_MANIFEST.is_file():
        return []
    root = corpora_dir()
    rels = SHARED_MANIFEST.read_text(encoding="utf-8").split()
    return [rel for rel in rels if not (root / rel).exists()]


def has_corpus(*rels: str) -> bool:
    """True when the corpora in use hold every one of ``rels`` (paths or glob patterns relative to them)."""
    root = corpora_dir()
    return all(next(root.glob(rel), None) is not None if "*" in rel else (root / rel).exists() for rel in rels)


def corpus_mark(*rels: str) -> pytest.MarkDecorator:
    """Mark a test that needs these corpus paths: where the corpora lack one it is not collected (deselected).

    A fresh clone runs on the in-repository corpus, which holds one case per scenario; a test of a case it
    lacks is left out rather than skipped, and the run's last lines count the cases left out.
    """
    return pytest.mark.corpus(*rels)


def _shared_case_names() -> frozenset[str]:
    """The case names of the shared corpora (``c02``, ``ms_l1_tensor_bug``…), from the manifest."""
    if not SHARED_MANIFEST.is_file():
        return frozenset()
    return frozenset(rel.split("/")[1] for rel in SHARED_MANIFEST.read_text(encoding="utf-8").split())


def _lacks_param_case(item: pytest.Item, names: frozenset[str]) -> bool:
    """True when a parameter of ``item`` names a corpus case or path that the corpora in use lack.

    Tests parametrized over a fixed list of case names (``"c02"``) or corpus paths (``"legacy/c02/plain"``)
    would fail on the in-repository corpus; they are left out like the cases a folder walk does not find.
    """
    root = corpora_dir()
    for value in getattr(getattr(item, "callspec", None), "params", {}).values():
        if not isinstance(value, str):
            continue
        if value.split("/", 1)[0] in ("pytorch", "mindspore", "legacy") and "/" in value:
            if not (root / value).exists():
                return True
        elif value in names and not any((root / kind / value).is_dir() for kind in ("pytorch", "mindspore")):
            return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tests whose corpus cases the corpora in use lack (:func:`corpus_mark`, case parameters)."""
    names = _shared_case_names() if using_in_repo_corpus() else frozenset()
    keep, drop = [], []
    for item in items:
        rels = [rel for mark in item.iter_markers("corpus") for rel in mark.args]
        lacking = (rels and not has_corpus(*rels)) or (names and _lacks_param_case(item, names))
        (drop if lacking else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
        _NOT_COLLECTED.extend(drop)


_NOT_COLLECTED: list[pytest.Item] = []


def no_corpora_reason() -> str:
    """The one skip reason of every test that needs the reference corpora (so they count as one group)."""
    return f"reference corpora not found at {corpora_dir()} (set MSPROBE_SHARED to the shared folder)"


def oracle_diff_path() -> Path:
    """``tools/oracle_diff.py`` of the shared folder, else the repository's copy of it."""
    shared = shared_dir() / "tools" / "oracle_diff.py"
    return shared if shared.is_file() or not IN_REPO_ORACLE_DIFF.is_file() else IN_REPO_ORACLE_DIFF


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
    # one sentence a group: a reason's first line, never ending on the colon that introduced what followed it
    reason = (reason.splitlines() or [""])[0].rstrip(" :")
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
    if groups:
        terminalreporter.write_sep("-", "skipped tests, by reason")
        for reason, files in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            unique = sorted(set(files))
            terminalreporter.write_line(f"{len(files):>5} skipped ({_file_list(unique)}): {reason}")
    missing = missing_shared_variants()
    if missing:
        # a fresh clone: the differential tests ran on the in-repository corpus only
        total = len(SHARED_MANIFEST.read_text(encoding="utf-8").split())
        terminalreporter.write_sep("-", "differential cases not collected")
        terminalreporter.write_line(
            f"{len(missing):>5} of the shared corpora's {total} oracle variants are not in the in-repository corpus "
            f"({IN_REPO_CORPUS.relative_to(REPO)}): their tests were not collected ({len(_NOT_COLLECTED)} tests of "
            f"absent cases deselected); the shared folder (corpora/, tools/) adds them: put it at "
            f"{REPO.parent / 'shared'} or set MSPROBE_SHARED to it"
        )


@pytest.fixture(scope="module")
def as_in_a_run():
    """The process's plugin host as the run's for a whole module whose tests call the summary's and the report's
    functions directly, as a run's jobs and its summary do (outside a run they know the core alone:
    :mod:`msprobe_core.running`)."""
    from msprobe_core.host.registry import get_host
    from msprobe_core.running import running_with

    with running_with(loaded_by=get_host):  # whatever host the test made last, as the test's own runs have
        yield
