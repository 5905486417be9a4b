"""Start-up stays light: heavy modules are imported only by the commands that need them (no timing here)."""

from __future__ import annotations

import os
import subprocess
import sys

from .conftest import corpora_dir, no_corpora_reason

HEAVY_FOR_HELP = {"numpy", "pandas", "openpyxl", "pydantic", "yaml", "dask", "distributed", "torch", "mindspore"}
# pydantic checks only what is wrong with a dump header (msprobe_core.files.schemas); well-formed dumps never need it
HEAVY_FOR_STATS_COMPARE = {"pandas", "openpyxl", "pydantic", "dask", "distributed", "torch", "mindspore"}


def _imported(*args: str) -> set[str]:
    """Top-level modules imported by ``python -m msprobe_core ARGS`` (from ``-X importtime``)."""
    env = dict(os.environ, MSPROBE_NO_PROGRESS="1")
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "msprobe_core", *args],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


def test_help_imports_nothing_heavy():
    assert not _imported("--help") & HEAVY_FOR_HELP


def test_statistics_compare_does_not_import_pandas_pydantic_or_dask(tmp_path):
    case = corpora_dir() / "pytorch" / "c01"
    if not case.is_dir():
        import pytest

        pytest.skip(no_corpora_reason())
    heavy = _imported("compare", "-tp", str(case / "target/step0/rank0/dump.json"),
                      "-gp", str(case / "golden/step0/rank0/dump.json"), "-o", str(tmp_path), "-q")
    assert not heavy & HEAVY_FOR_STATS_COMPARE
