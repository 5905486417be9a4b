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
        if path.name not in ("conftest.py", "fixtures.py", Path(__file__).name)
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
    """A fresh clone (no shared folder): the differential test runs on the in-repository corpus, the skips
    are grouped by reason, and the last lines say how many of the shared corpora's cases were left out."""
    env = {k: v for k, v in os.environ.items() if k not in ("MSPROBE_CORPORA",)}
    env["MSPROBE_SHARED"] = str(tmp_path / "no-shared")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_test_setup.py",
         "tests/test_oracle_pytorch.py", "tests/test_diff_analyze.py",
         "-k", "corpora_variable_alone or c06b-compare or test_where_msprobe_is_right"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    lines = proc.stdout.strip().splitlines()
    header = next(i for i, line in enumerate(lines) if "skipped tests, by reason" in line)
    assert re.fullmatch(r"\s*1 skipped \(test_test_setup\.py\): no shared folder with tools/ above \S+", lines[header + 1])
    assert "differential cases not collected" in lines[header + 2]
    shared = len((TESTS / "data" / "corpus" / "shared_manifest.txt").read_text(encoding="utf-8").split())
    assert re.fullmatch(
        rf"\s*\d+ of the shared corpora's {shared} oracle variants are not in the in-repository corpus "
        r"\(tests/data/corpus\): their tests were not collected \(\d+ tests of absent cases deselected\); the shared "
        r"folder \(corpora/, tools/\) adds them: put it at \S+ or set MSPROBE_SHARED to it",
        lines[header + 3],
    ), lines[header + 3]
    # c06b's differential test and the -da tests of c09a ran; those of c03 and c06b (no -da oracle) were left out
    assert re.search(r"2 passed, 1 skipped, \d+ deselected", lines[-1]), lines[-1]


def test_with_the_shared_folder_nothing_is_left_out():
    """The shared corpora, when present, are used as they are: a superset of the in-repository corpus."""
    if not (shared_dir() / "corpora").is_dir():
        pytest.skip(f"no shared folder at {shared_dir()}")
    assert corpora_dir() == shared_dir() / "corpora" or os.environ.get("MSPROBE_CORPORA")
    root = corpora_dir()
    inrepo = TESTS / "data" / "corpus"
    for case in inrepo.glob("*/*/oracle/*"):
        rel = case.relative_to(inrepo)
        if not rel.parts[1].startswith("kernel_l2_bug_trimmed"):  # made for the trimmed example: in-repo only
            assert (root / rel).exists(), rel
