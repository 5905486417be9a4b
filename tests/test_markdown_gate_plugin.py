"""The example plugin examples/plugins/msprobe_markdown_gate, pip-installed as its own distribution, adds a report
format (``--markdown-summary``) and a gate (``--fail-if-diverges``) through the run-finished hooks only; each case
runs the real console script in a fresh process."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "examples" / "plugins" / "msprobe_markdown_gate"
EXAMPLE = REPO / "examples" / "pytorch_stats"
SIDES = ("-tp", EXAMPLE / "target" / "step0", "-gp", EXAMPLE / "golden" / "step0")


@pytest.fixture(scope="module", autouse=True)
def markdown_gate() -> Iterator[None]:
    """``pip install examples/plugins/msprobe_markdown_gate`` for this module's tests, uninstalled after them."""
    base = [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--disable-pip-version-check", str(PLUGIN)]
    try:
        proc = subprocess.run([*base, "--no-build-isolation", "--no-index"], capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            proc = subprocess.run(base, capture_output=True, text=True, timeout=600)
    finally:
        shutil.rmtree(PLUGIN / "build", ignore_errors=True)
        for egg in PLUGIN.glob("*.egg-info"):
            shutil.rmtree(egg, ignore_errors=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot pip-install the example plugin here: {proc.stderr.strip().splitlines()[-1:]}")
    yield
    subprocess.run([sys.executable, "-m", "pip", "uninstall", "--yes", "--quiet", "msprobe-markdown-gate"],
                   capture_output=True, text=True, timeout=600)


def test_listed_with_the_run_finished_hooks_it_implements(run_cli):
    proc = run_cli("plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    entry = {p["name"]: p for p in json.loads(proc.stdout)}["markdown_gate"]
    assert entry["distribution"] == "msprobe-markdown-gate"
    assert entry["hooks"] == ["msprobe_register_options", "msprobe_run_finished", "msprobe_run_gate",
                              "msprobe_run_outputs"]


@pytest.mark.exercises_hooks("msprobe_register_partials", "msprobe_run_outputs", "msprobe_run_finished",
                             "msprobe_run_terminal_summary")
def test_markdown_summary_is_written_beside_the_results_and_listed_among_the_files(run_cli, tmp_path):
    md, js = tmp_path / "out" / "summary.md", tmp_path / "s.json"
    proc = run_cli("compare", *SIDES, "-o", tmp_path / "out", "-q", "--markdown-summary", md, "--json-summary", js)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(js.read_text())
    assert str(md) in summary["files"] and str(js) in summary["files"]
    text = md.read_text(encoding="utf-8")
    assert text.startswith("# msprobe compare summary\n\n339 rows compared.\n")
    assert f"| error | {summary['verdicts']['error']} |" in text
    first = summary["first_divergence"]
    assert f"`{first['node']}` (row `{first['row']}`)" in text


@pytest.mark.exercises_hooks("msprobe_run_gate")
def test_the_gate_fails_a_run_whose_named_op_diverges_with_status_3(run_cli, tmp_path):
    hit = run_cli("compare", *SIDES, "-o", tmp_path / "hit", "-q", "--fail-if-diverges", "Functional.linear",
                  "--fail-if-diverges", "No.such.op")
    assert hit.returncode == 3
    assert hit.stderr.strip().splitlines()[-1] == "msprobe: error: --fail-if-diverges: Functional.linear diverged"
    assert list((tmp_path / "hit").glob("compare_result_*.csv"))  # the result is written all the same
    miss = run_cli("compare", *SIDES, "-o", tmp_path / "miss", "-q", "--fail-if-diverges", "No.such.op")
    assert miss.returncode == 0, miss.stderr


def test_two_gates_failing_both_say_why(run_cli, tmp_path):
    proc = run_cli("compare", *SIDES, "-o", tmp_path / "out", "-q", "--fail-on", "error",
                   "--fail-if-diverges", "Functional.linear")
    assert proc.returncode == 3
    assert proc.stderr.strip().splitlines()[-1] == (
        "msprobe: error: --fail-on error: 91 of 339 rows have the verdict error; "
        "--fail-if-diverges: Functional.linear diverged")


def test_the_plugin_uses_only_the_public_plugin_api():
    source = (PLUGIN / "msprobe_markdown_gate" / "plugin.py").read_text(encoding="utf-8")
    imports = [line for line in source.splitlines() if line.startswith(("from msprobe_core", "import msprobe_core"))]
    assert imports and all(line.startswith("from msprobe_core.plugin import ") for line in imports)
