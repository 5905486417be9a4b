"""The default plugin ``hierarchy`` (``construct.json`` and ``stack.json`` as hierarchy sources) turned off.

The compare still reads the target's ``stack.json`` for the result's stack column, so the result files are the
same byte for byte; what goes is the first divergence's path (the node alone, with a note saying why), the model
tree's modules and what the next-dump advice takes from ``construct.json``. Each run is the real console script
in a fresh process on a corpus case, the plugin turned off as a user turns it off.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from msprobe_core.default_plugins.summary.hierarchy import NO_SOURCE
from msprobe_core.host.defaults import DISABLE_ENV

from .conftest import corpora_dir


def _case(rel: str) -> Path:
    case = corpora_dir() / rel
    if not case.is_dir():
        pytest.skip(f"corpus case {rel} not found")
    return case


def _compare(case: Path, out: Path, *extra: str, off: bool, env: dict[str, str] | None = None) -> dict:
    """One compare of ``case``'s step0 pair into ``out`` (``off``: with ``-p no:hierarchy``); its JSON summary."""
    full_env = {k: v for k, v in os.environ.items() if k != DISABLE_ENV} | (env or {})
    before = ["-p", "no:hierarchy"] if off else []
    proc = subprocess.run(
        [sys.executable, "-m", "msprobe_core", *before, "compare", "-tp", str(case / "target" / "step0"), "-gp",
         str(case / "golden" / "step0"), "-o", str(out), "--json-summary", str(out / "summary.json"), *extra],
        capture_output=True, text=True, env=full_env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    return {"summary": json.loads((out / "summary.json").read_text()), "console": proc.stdout + proc.stderr}


def _file(out: Path, prefix: str) -> bytes:
    [found] = out.glob(f"{prefix}*")
    return found.read_bytes()


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_turned_off_the_result_keeps_its_stack_column_and_the_path_says_why(tmp_path, streamed):
    """c01 (L1): the path is calling code from stack.json with the plugin, the node alone without it; the CSV, stack
    column included, is the same byte for byte, on whole tables and chunk by chunk."""
    case = _case("pytorch/c01")
    env = {"MSPROBE_STREAM_MIN_BYTES": "0" if streamed else str(1 << 40)}
    on = _compare(case, tmp_path / "on", off=False, env=env)
    off = _compare(case, tmp_path / "off", off=True, env=env)
    table = _file(tmp_path / "on", "compare_result_")
    assert _file(tmp_path / "off", "compare_result_") == table
    assert b"NPU_Stack_Info" in table.partition(b"\n")[0] and b"File " in table  # the stack column, filled

    fd_on, fd_off = on["summary"]["first_divergence"], off["summary"]["first_divergence"]
    assert fd_on["node"] == fd_off["node"] and fd_on["path_source"] == "stack.json" and len(fd_on["path"]) > 2
    assert fd_off["path"] == [fd_off["node"]] and fd_off["path_source"] is None
    assert fd_off["path_note"] == NO_SOURCE
    assert f"path: {fd_off['node']} ({NO_SOURCE})" in off["console"]
    # the counts and the worst rows are the run's, not the hierarchy's
    kept = ("rows", "matched", "unmatched", "verdicts", "not_compared", "worst_verdict", "worst_rows")
    assert {k: off["summary"][k] for k in kept} == {k: on["summary"][k] for k in kept}


def test_turned_off_da_and_the_report_still_write_their_files(tmp_path):
    """c05 (mix, construct.json) with -da and --report html: -da's files are the same, the report is written, and
    the first divergence's path is the node alone with the note."""
    case = _case("pytorch/c05")
    runs = {label: _compare(case, tmp_path / label, "-da", "--report", "html", off=label == "off")
            for label in ("on", "off")}
    for prefix in ("compare_result_", "diff_analyze_"):
        assert _file(tmp_path / "off", prefix) == _file(tmp_path / "on", prefix)
    assert _file(tmp_path / "off", "compare_report_").startswith(b"<!DOCTYPE html>")
    fd_on, fd_off = (runs[label]["summary"]["first_divergence"] for label in ("on", "off"))
    assert fd_on["path_source"] == "construct.json" and len(fd_on["path"]) > 1
    assert fd_off["path"] == [fd_off["node"]] and fd_off["path_note"] == NO_SOURCE
