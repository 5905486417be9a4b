"""What the plugin authors' synthetic diverging pair gives (``msprobe_tester.dump_pair``), as docs/plugins.md says:
a plugin's test may expect these verdicts and this first divergence."""

from __future__ import annotations

import json

import pytest
from msprobe_testing.dumps import write_dump_pair
from msprobe_testing.hosts import exact_host

EXPECTED = {  # mode: (verdicts, the reason's start)
    "statistics": ({"pass": 13, "warning": 2, "error": 0}, "NormRelativeErr 14.83% > 1%"),
    "tensor": ({"pass": 13, "warning": 1, "error": 1}, "Cosine 0.595701 < 0.9"),
    "md5": ({"pass": 7, "warning": 0, "error": 8}, "Result error: The CRC-32 value of NPU differs"),
}


@pytest.mark.parametrize("mode", sorted(EXPECTED))
def test_the_diverging_synthetic_pair_gives_the_documented_verdicts(tmp_path, run_cli, mode):
    pair = write_dump_pair(tmp_path / "pair", exact_host(), mode)
    summary = tmp_path / "s.json"
    proc = run_cli("compare", *pair.args, "-o", tmp_path / "out", "--json-summary", summary, "-q")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(summary.read_text())
    verdicts, reason = EXPECTED[mode]
    assert data["verdicts"] == verdicts
    first = data["first_divergence"]
    assert first["node"] == "Functional.linear.0.forward" and first["row"] == "Functional.linear.0.forward.output.0"
    assert first["reason"].startswith(reason)
