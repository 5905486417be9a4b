"""Classic interface: colours the seed documents promise and msprobe 8.3.3 does not give (issue 13 §5).

* red rule 3: a NaN in the NPU max or min is red, like ±inf (8.3.3 writes a NaN statistic as ``Nan``
  and then looks for lower-case ``nan``, so it never fires for NaN);
* yellow rule 3 in tensor mode too: an output whose MaxRelativeErr is above 0.1 while an input's is
  below 0.01 (8.3.3 applies it in statistics mode only).

Against 8.3.3's own outputs: plugins/classic/tests/test_legacy_oracles.py (``TENSOR_REL_YELLOW``); docs/differences.md.
"""

from __future__ import annotations

import math
from pathlib import Path

import openpyxl
import pytest
from msprobe_classic import compare
from msprobe_classic.highlight import MSG_OVERFLOW, MSG_REL_YELLOW, RED, YELLOW, find_rows
from msprobe_classic.table import header

from tests.dumps import api, tensor, write_dump


def _classic(tmp_path: Path, target: dict, golden: dict) -> dict[str, tuple[str | None, str]]:
    """Run the classic compare on two statistics dumps; ``{NPU Name: (fill colour, Err_message)}``."""
    t = write_dump(tmp_path / "t", target, framework="pytorch")
    g = write_dump(tmp_path / "g", golden, framework="pytorch")
    out = tmp_path / "out"
    out.mkdir()
    compare({"npu_json_path": str(t), "bench_json_path": str(g)}, str(out), auto_analyze=False)
    (xlsx,) = out.glob("compare_result_*.xlsx")
    rows = list(openpyxl.load_workbook(xlsx).worksheets[0].iter_rows())
    head = [c.value for c in rows[0]]
    name, err = head.index("NPU Name"), head.index("Err_message")
    found = {}
    for row in rows[1:]:
        fills = {c.fill.fgColor.rgb for c in row if c.fill.fill_type}
        assert len(fills) <= 1
        found[row[name].value] = (next(iter(fills), None), row[err].value or "")
    return found


@pytest.mark.parametrize("field", ["Max", "Min"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_or_inf_in_npu_max_or_min_is_red(tmp_path, field, bad):
    leaf = tensor()
    leaf[field] = bad
    target = {"Functional.relu.0.forward": api([tensor()], [leaf])}
    golden = {"Functional.relu.0.forward": api([tensor()], [tensor()])}
    rows = _classic(tmp_path, target, golden)
    colour, message = rows["Functional.relu.0.forward.output.0"]
    assert colour == "FFFF0000"
    assert MSG_OVERFLOW in message.split("\n")
    assert rows["Functional.relu.0.forward.input.0"][0] is None


def test_nan_in_bench_only_is_not_red(tmp_path):
    """The rule looks at the NPU side only, as the seed says."""
    leaf = tensor()
    leaf["Max"] = math.nan
    rows = _classic(tmp_path, {"Functional.relu.0.forward": api([tensor()], [tensor()])},
                    {"Functional.relu.0.forward": api([tensor()], [leaf])})
    assert rows["Functional.relu.0.forward.output.0"][0] != "FFFF0000"
    assert MSG_OVERFLOW not in rows["Functional.relu.0.forward.output.0"][1]


def _tensor_table(rel_in: object, rel_out: object, cos_out: float = 1.0) -> dict[str, list]:
    """The columns of a two-row tensor-mode classic table: one input row, one output row of one API."""
    cols = header("tensor", False)
    data: dict[str, list] = {c: [] for c in cols}
    for state, rel, cos in (("input", rel_in, 1.0), ("output", rel_out, cos_out)):
        row = {c: "" for c in cols}
        row.update({"NPU Name": f"Functional.f.0.forward.{state}.0", "NPU max": 1.0, "NPU min": -1.0,
                    "Bench max": 1.0, "MaxAbsErr": 0.01, "MaxRelativeErr": rel, "Cosine": cos,
                    "One Thousandth Err Ratio": 1.0, "Requires_grad Consistent": True})
        for c in cols:
            data[c].append(row[c])
    return data


def _find(data: dict[str, list]):
    return find_rows("tensor", data, ["Functional.f.0.forward"] * 2, ["input", "output"])


@pytest.mark.parametrize(("rel_in", "rel_out", "yellow"), [
    (0.001, 0.2, True),
    (0.001, 0.1, False),  # not above 0.1
    (0.01, 0.2, False),  # the input is not below 0.01
    ("unsupported", 0.2, False),  # a cell that is not a number makes the rule skip
    (0.001, "N/A", False),
])
def test_tensor_mode_yellow_rule_3(rel_in, rel_out, yellow):
    hl = _find(_tensor_table(rel_in, rel_out))
    assert hl.colour.tolist() == [0, YELLOW if yellow else 0]
    assert hl.messages.get(1, []) == ([MSG_REL_YELLOW] if yellow else [])


def test_tensor_mode_rule_3_follows_the_other_yellow_rules():
    """Messages come in rule order: the cosine drop before the relative-error rise; red rows get no yellow sentence."""
    hl = _find(_tensor_table(0.001, 0.2, cos_out=0.5))
    assert hl.colour.tolist() == [0, YELLOW]
    assert hl.messages[1] == ["The output's cosine decreases by more than 0.1 compared to the input/parameter's",
                              MSG_REL_YELLOW]
    data = _tensor_table(0.001, 0.2)
    data["NPU max"][1] = "Nan"
    hl = _find(data)
    assert hl.colour.tolist() == [0, RED]
    assert hl.messages[1] == [MSG_OVERFLOW]
