"""Kernel dumps read as a person reads them: a failed row's "why" names the metrics behind the plugin's verdict,
and the console names files, not absolute paths."""

from __future__ import annotations

import json
from pathlib import Path

KERNEL = Path(__file__).resolve().parents[3] / "examples" / "mindspore_kernel"


def test_a_kernel_rows_why_names_its_metrics_and_the_worst_modules_their_files(run_cli, tmp_path):
    summary_file = tmp_path / "s.json"
    proc = run_cli("compare", "-tp", KERNEL / "target", "-gp", KERNEL / "golden", "-o", tmp_path / "o",
                   "--json-summary", summary_file)
    assert proc.returncode == 0, proc.stderr
    worst = json.loads(summary_file.read_text())["worst_rows"]
    failed = [w for w in worst if w["result"] == "error"]
    assert failed
    for w in failed:
        assert w["reason"].startswith("Accuracy Reached or Not is No (Cosine "), w["reason"]
        assert ", MaxAbsErr " in w["reason"]
    block = proc.stdout.split("worst modules:", 1)[1].split("worst rows", 1)[0]
    assert block.strip() and str(KERNEL) not in block and "/rank_0/" not in block
