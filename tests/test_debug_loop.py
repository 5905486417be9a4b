"""The debugging loop of docs/scenarios/debugging-loop.md on the bundled examples/debug_loop dumps (made with
msprobe 26.2.0's real dumper): compare → the next dump's config → the narrower compare → after the fix, before and
after."""

from __future__ import annotations

import json
from pathlib import Path

LOOP = Path(__file__).parent.parent / "examples" / "debug_loop"


def _compare(run_cli, target: Path, golden: Path, out: Path) -> dict:
    summary = out.with_suffix(".json")
    proc = run_cli("compare", "-tp", target, "-gp", golden, "-o", out, "--json-summary", summary, "-q")
    assert proc.returncode == 0, proc.stderr
    return json.loads(summary.read_text())


def test_the_loop_names_the_fault_narrows_to_it_and_sees_it_gone(run_cli, tmp_path):
    before = _compare(run_cli, LOOP / "target/step0", LOOP / "golden/step0", tmp_path / "before")
    first = before["first_divergence"]
    assert first["node"] == "Functional.linear.3.forward" and first["row"].endswith(".input.1")
    config = json.loads(Path(before["next_dump_config"]).read_text())
    assert config["task"] == "tensor" and config["level"] == "mix"
    assert config["tensor"]["list"] == ["Module.blocks.1.fc_out.Linear.", "Functional.linear.3."]
    # the bundled narrower dumps are what that config gives (msprobe's list entries match by substring)
    narrow_target = next((LOOP / "narrow/target/step0").iterdir()) / "dump.json"
    names = json.loads(narrow_target.read_text())["data"]
    assert names and all(any(e in n for e in config["tensor"]["list"]) for n in names)
    narrow = _compare(run_cli, LOOP / "narrow/target/step0", LOOP / "narrow/golden/step0", tmp_path / "narrow")
    assert narrow["modes"] == ["tensor"]
    assert narrow["first_divergence"]["node"] == first["node"]
    assert narrow["first_divergence"]["row"] == first["row"]  # the weight, with its input identical
    after_dir = tmp_path / "after"
    _compare(run_cli, LOOP / "golden/step0", LOOP / "golden/step0", after_dir)
    versus = tmp_path / "versus.json"
    proc = run_cli("report", tmp_path / "before", after_dir, "--json-summary", versus, "-q")
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(versus.read_text())
    assert answer["first_divergence"]["change"] == "gone" and answer["worse"] == []
    assert any(e["name"] == first["row"] for e in answer["better"])
