"""The test command itself: one rule for the shared folder, honoured by every test, and a run that ends
with one line per group of skipped tests and why."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import corpora_dir, oracle_diff_path, shared_dir

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent


def test_every_test_finds_the_shared_folder_through_conftest():
    """No test reads the variables or guesses the folder itself (they used to disagree)."""
    own_rule = re.compile(r"environ[^\n]*MSPROBE_(SHARED|CORPORA)|\"/work/shared|/\s*\"shared\"|shared_dir\(\)\s*/\s*\"corpora\"")
    offenders = [
        f"{path.name}:{n}"
        for path in sorted(TESTS.glob("*.py"))
        if path.name not in ("conftest.py", Path(__file__).name)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if own_rule.search(line)
    ]
    assert not offenders, offenders


def test_corpora_variable_alone_also_finds_the_tools(monkeypatch):
    corpora = corpora_dir()
    if not (corpora.parent / "tools").is_dir():
        pytest.skip(f"no shared folder with tools/ above {corpora}")
    monkeypatch.delenv("MSPROBE_SHARED", raising=False)
    monkeypatch.setenv("MSPROBE_CORPORA", str(corpora))
    assert shared_dir() == corpora.parent
    assert oracle_diff_path().is_file()
    monkeypatch.setenv("MSPROBE_SHARED", "/nonexistent/shared")  # the documented variable wins
    assert corpora_dir() == corpora and shared_dir() == Path("/nonexistent/shared")


def test_run_ends_with_one_line_per_skipped_group(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("MSPROBE_CORPORA",)}
    env["MSPROBE_SHARED"] = str(tmp_path / "no-shared")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_startup.py",
         "tests/test_tensor_metrics.py", "-k", "oracle or corpus or startup"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    lines = proc.stdout.strip().splitlines()
    header = next(i for i, line in enumerate(lines) if "skipped tests, by reason" in line)
    groups = lines[header + 1:-1]  # the last line is pytest's count
    assert len(groups) == 1, groups
    assert re.fullmatch(
        r"\s*\d+ skipped \(test_startup\.py, test_tensor_metrics\.py\): reference corpora not found at "
        + re.escape(str(tmp_path / "no-shared" / "corpora")) + r" \(set MSPROBE_SHARED to the shared folder\)",
        groups[0],
    ), groups[0]
    assert re.search(r"\d+ passed, \d+ skipped", lines[-1]), lines[-1]
