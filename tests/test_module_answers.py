"""Per-module answers outside the HTML page: ``modules`` in ``--json-summary`` and the worst modules on the
console, from real dumps with a module hierarchy (construct.json) and with calling code only (stack.json)."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).parent.parent
CELL = REPO / "examples" / "mindspore_cell"  # MindSpore L0 cells, softmax-scale fault in block 1's attention
TENSOR = REPO / "examples" / "pytorch_tensor"  # PyTorch L1 (stack.json only), fault in block 1's attention


def _compare(run_cli, tmp_path: Path, example: Path) -> tuple[dict, str]:
    summary = tmp_path / "s.json"
    proc = run_cli("compare", "-tp", example / "target/step0", "-gp", example / "golden/step0", "-o",
                   tmp_path / "out", "--json-summary", summary)
    assert proc.returncode == 0, proc.stderr
    return json.loads(summary.read_text()), proc.stdout


def test_a_module_dump_lists_every_module_with_its_counts_and_the_console_the_worst(run_cli, tmp_path):
    summary, out = _compare(run_cli, tmp_path, CELL)
    answers = summary["modules"]
    assert "note" not in answers and answers["sources"] == ["construct.json"]
    modules = answers["modules"]
    by_leaf = {m["path"][-1]: m for m in modules}
    for m in modules:
        assert m["rows"] == sum(m["verdicts"].values()) > 0
        assert m["worst_verdict"] in ("pass", "warning", "error")
    # a module's counts are its subtree's: the parent holds at least what each child holds
    for m in modules:
        if len(m["path"]) > 1 and m["path"][-2] in by_leaf:
            parent = by_leaf[m["path"][-2]]
            assert all(parent["verdicts"][k] >= m["verdicts"][k] for k in m["verdicts"])
    first = summary["first_divergence"]
    assert first and first["path"][-1] == first["node"]
    # the worst module printed first is the faulty one: block 1's attention (its forward or backward call)
    lines = out.splitlines()
    head = lines.index("  worst modules:")
    first_listed = lines[head + 1].split("- ", 1)[1].split(":", 1)[0]
    assert first_listed.startswith("Cell.blocks.1.attn.Attention."), out
    assert "Cell.blocks.1.attn.Attention.forward.0" in first["path"]


def test_an_api_dump_keeps_each_blocks_frames_apart_and_says_a_mix_dump_names_modules(run_cli, tmp_path):
    summary, out = _compare(run_cli, tmp_path, TENSOR)
    answers = summary["modules"]
    assert answers["sources"] == ["stack.json"] and "mix-level dump" in answers["note"]
    paths = [tuple(m["path"]) for m in answers["modules"]]
    # block 0's and block 1's attention: the same code frame, two nodes
    attn = [p for p in paths if p[-1].startswith("forward (common.py:94)")]
    assert [p[-1] for p in attn] == ["forward (common.py:94)", "forward (common.py:94) #2"]
    counts = {tuple(m["path"]): m for m in answers["modules"]}
    assert counts[attn[0]]["rows"] == counts[attn[1]]["rows"]  # the same code, the same calls
    assert counts[attn[0]]["verdicts"]["error"] == 0 and counts[attn[1]]["verdicts"]["error"] == 2
    # the first divergence's path runs through block 1's node, and the console says where module names come from
    assert "forward (common.py:94) #2" in summary["first_divergence"]["path"]
    assert "worst modules (code frames):" in out and "mix-level dump" in out
    worst = out.split("worst modules (code frames):", 1)[1].splitlines()[1]
    assert "forward (common.py:94) #2" in worst


def test_backward_calls_sit_with_their_forward_calls_frames(run_cli, tmp_path):
    summary, _ = _compare(run_cli, tmp_path, TENSOR)
    block1 = [m for m in summary["modules"]["modules"] if m["path"][-1] == "forward (common.py:94) #2"][0]
    worst_row = block1["worst"]["row"]
    assert ".backward." in worst_row or ".forward." in worst_row
    # no node of the tree is a backward-only visit: every frame numbered #2 is block 1's, none #3
    assert not any(p.endswith("#3") for m in summary["modules"]["modules"] for p in m["path"])
