"""A first divergence the result table's own rules pass says so (one signal, not a silent contradiction between a
named divergence and an all-pass table)."""

from __future__ import annotations

import json
from pathlib import Path

MULTIRANK = Path(__file__).parent.parent / "examples" / "pytorch_multirank"
TENSOR = Path(__file__).parent.parent / "examples" / "pytorch_tensor"


def _run(run_cli, tmp_path, example):
    summary = tmp_path / "s.json"
    proc = run_cli("compare", "-tp", example / "target/step0", "-gp", example / "golden/step0", "-o", tmp_path / "o",
                   "--json-summary", summary)
    assert proc.returncode == 0, proc.stderr
    return json.loads(summary.read_text()), proc.stdout


def test_a_divergence_below_every_rule_of_the_table_says_its_verdict_is_pass(run_cli, tmp_path):
    summary, out = _run(run_cli, tmp_path, MULTIRANK)
    first = summary["first_divergence"]
    assert first["verdict"] == "pass" and first["reason"] == "NormRelativeErr 3.025% > 1%"
    assert "(its verdict is pass: past the first-divergence thresholds, below every rule" in out


def test_an_error_row_named_first_says_nothing_more(run_cli, tmp_path):
    summary, out = _run(run_cli, tmp_path, TENSOR)
    assert summary["first_divergence"]["verdict"] == "error"
    assert "its verdict is pass" not in out
