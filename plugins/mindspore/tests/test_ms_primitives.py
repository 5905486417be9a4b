"""``-am`` carries MindSpore primitives to the PyTorch API each computes (issue 30 item 3).

Model libraries such as mindformers call primitives (``self.matmul = P.MatMul()``), which msprobe's MindSpore
dumper records as ``Primitive.<cell attribute>.<Class>.<n>.<direction>``; msprobe's own table
(``ms_to_pt_api.yaml``) has no entry for them, so ``-am`` leaves every such row unpaired against a PyTorch
golden run. The plugin's ``ms_primitive_to_pt.yaml`` keys them by their PyTorch API, where that takes no row's
pair away (docs/differences.md, "-am: MindSpore primitives are paired with their PyTorch API").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from msprobe_mindspore import mapping as M

from tests import mapping_rows as R


def _rows(*names: str) -> list[R.Row]:
    return [R.Row(n.split(".input.")[0].split(".output.")[0], n, "input" if ".input." in n else "output", "Float32")
            for n in names]


@pytest.mark.parametrize(("name", "key"), [
    ("Primitive.matmul.MatMul.3.forward.input.0", "Torch.matmul.3.forward.input.0"),
    ("Primitive.add.Add.0.backward.output.1", "Torch.add.0.backward.output.1"),
    ("Primitive.act.SiLU.1.forward.output.0", "Functional.silu.1.forward.output.0"),
    ("Primitive.gather.Gather.0.forward.input.0", None),  # arguments in another order than any torch API's
    ("Primitive.norm.LayerNorm.0.forward.input.0", None),
    ("Functional.add.0.forward.input.0", None),
])
def test_primitive_key(name: str, key: str | None) -> None:
    assert M.primitive_api_key(name, M.load_primitive_table()) == key


def test_am_keys_pair_primitives_with_a_pytorch_golden() -> None:
    npu = _rows("Primitive.matmul.MatMul.0.forward.input.0", "Primitive.matmul.MatMul.0.forward.output.0",
                "Mint.add.0.forward.input.0", "Primitive.add.Add.0.forward.input.0",
                "Primitive.add.Add.1.forward.input.0")
    bench = _rows("Torch.matmul.0.forward.input.0", "Torch.add.0.forward.input.0", "Torch.add.1.forward.input.0")
    table = M.load_builtin_api_table()
    keys = M.api_mapping_keys(npu, None, table, bench_rows=bench, primitives=M.load_primitive_table())
    assert keys == [
        "Torch.matmul.0.forward.input.0", "Torch.matmul.0.forward.output.0",
        "Torch.add.0.forward.input.0",  # msprobe's own pair stays
        "Primitive.add.Add.0.forward.input.0",  # its torch key is taken: keeps its name, as msprobe leaves it
        "Torch.add.1.forward.input.0",
    ]
    # without the primitive table: msprobe's keys, the primitives unpaired
    assert M.api_mapping_keys(npu, None, table, bench_rows=bench)[0] == "Primitive.matmul.MatMul.0.forward.input.0"


def test_a_golden_with_the_same_primitive_pairs_it_by_name() -> None:
    npu = _rows("Primitive.matmul.MatMul.0.forward.input.0")
    keys = M.api_mapping_keys(npu, None, M.load_builtin_api_table(), bench_rows=npu,
                              primitives=M.load_primitive_table())
    assert keys == ["Primitive.matmul.MatMul.0.forward.input.0"]


def test_am_says_when_it_paired_under_half(run_cli, tmp_path: Path) -> None:
    """A real MindSpore twin (other cell names, tests/data/automap) against its PyTorch golden: ``-am`` pairs
    147 of 444 rows; the summary says so and names the calls left, where msprobe says nothing."""
    dumps = Path(__file__).resolve().parents[3] / "tests" / "data" / "automap" / "dumps"
    summary = tmp_path / "s.json"
    proc = run_cli("compare", "-tp", dumps / "ms_mix" / "dump.json", "-gp", dumps / "golden_mix" / "dump.json",
                   "-o", tmp_path / "o", "-am", "--json-summary", summary)
    assert proc.returncode == 0, proc.stderr
    notes = [n["text"] for n in json.loads(summary.read_text(encoding="utf-8")).get("notes", ())]
    assert len(notes) == 1 and notes[0].startswith("-am paired only 147 of 444 target rows with a golden row; "
                                                   "rows no mapping carried, by call: Cell Dense (104), "), notes
    assert notes[0] in proc.stdout
