"""``-dm data_mapping.yaml`` on PyTorch dumps: rows pair exactly as the file says, forward and backward.

msprobe 26.2.0 joins the mapped (raw) target names with *backward-re-numbered* golden names, so a
backward entry meets whichever golden call ranks at that number in file order (issue 13 §4,
docs/differences.md "Mappings … pair backward rows by the names they give"). The pair below makes
that visible: the golden run makes one extra ``linear`` call first, so target call ``k`` is golden
call ``k + 1``, and every call carries its own statistics. (msprobe 26.2.0 run on this pair pairs
the entry for ``Functional.linear.2.backward`` with golden ``Functional.linear.0.backward``, and the
unlisted ``Functional.relu.2.backward`` with ``Functional.relu.0.backward``.)
"""

from __future__ import annotations

import json
from pathlib import Path

from msprobe_core.cli.main import main

from .dumps import api, only_result, read_csv, tensor, write_dump

N_CALLS = 3


def _leaf(call: int, side: str) -> dict:
    """Statistics that name the call and the side: a row paired with another call shows a diff."""
    base = 10.0 * (call + 1) + (0.5 if side == "output" else 0.0)
    return tensor(mx=base, mn=-base, mean=base / 10, norm=base * 2)


def _dump(directory: Path, first_linear: int) -> Path:
    """Forward ``linear`` + ``relu`` calls, then their backward calls in reverse, as autograd runs them."""
    data: dict = {}
    calls = range(first_linear, first_linear + N_CALLS)
    if first_linear:  # the golden run's extra leading call (no partner in the target)
        data["Functional.linear.0.forward"] = api([_leaf(99, "input")], [_leaf(99, "output")])
    for k, c in enumerate(calls):
        data[f"Functional.linear.{c}.forward"] = api([_leaf(k, "input")], [_leaf(k, "output")])
        data[f"Functional.relu.{k}.forward"] = api([_leaf(k + 50, "input")], [_leaf(k + 50, "output")])
    for k, c in reversed(list(enumerate(calls))):
        data[f"Functional.relu.{k}.backward"] = api([_leaf(k + 70, "input")], [_leaf(k + 70, "output")])
        data[f"Functional.linear.{c}.backward"] = api([_leaf(k + 20, "input")], [_leaf(k + 20, "output")])
    if first_linear:
        data["Functional.linear.0.backward"] = api([_leaf(98, "input")], [_leaf(98, "output")])
    return write_dump(directory, data, framework="pytorch")


def _mapping() -> dict[str, str]:
    out = {}
    for k in range(N_CALLS):
        for direction in ("forward", "backward"):
            for side in ("input", "output"):
                out[f"Functional.linear.{k}.{direction}.{side}.0"] = f"Functional.linear.{k + 1}.{direction}.{side}.0"
    return out


def _run(tmp_path: Path, *extra: str) -> dict[str, dict[str, str]]:
    target, golden = _dump(tmp_path / "t", 0), _dump(tmp_path / "g", 1)
    out = tmp_path / "out"
    assert main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out), "-q", *extra]) == 0
    return {r["NPU Name"]: r for r in read_csv(only_result(out))}


def test_dm_pairs_backward_rows_exactly_as_the_yaml_says(tmp_path):
    dm = tmp_path / "data_mapping.yaml"
    mapping = _mapping()
    dm.write_text("".join(f"{a}: {b}\n" for a, b in mapping.items()))
    rows = _run(tmp_path, "-dm", str(dm))
    for npu, bench in mapping.items():
        row = rows[npu]
        assert row["Bench Name"] == bench, (npu, row["Bench Name"])
        assert [float(row[c]) for c in ("Max diff", "Min diff", "Mean diff", "L2norm diff")] == [0.0] * 4, npu
    # unlisted rows meet the golden row of their own name, backward calls too
    for k in range(N_CALLS):
        for direction in ("forward", "backward"):
            name = f"Functional.relu.{k}.{direction}.input.0"
            assert rows[name]["Bench Name"] == name
            assert float(rows[name]["Max diff"]) == 0.0, name
    assert all(json.loads(r["Err_message"]) == [] for r in rows.values())


def test_without_mapping_backward_calls_are_paired_by_rank(tmp_path):
    """No mapping: msprobe's re-numbering stays (k-th backward meets k-th backward), so the yaml test is not vacuous."""
    rows = _run(tmp_path)
    # target linear.2 is the first backward of linear in file order; so is golden linear.3
    assert rows["Functional.linear.2.backward.input.0"]["Bench Name"] == "Functional.linear.3.backward.input.0"
    assert rows["Functional.linear.0.forward.input.0"]["Bench Name"] == "Functional.linear.0.forward.input.0"
    assert float(rows["Functional.linear.0.forward.input.0"]["Max diff"]) != 0.0  # the extra golden call


def test_classic_dm_pairs_the_same_rows(tmp_path):
    """The classic interface (msprobe 8.3.3's matching, which msprobe gets right) pairs the same rows."""
    from msprobe_classic import compare as legacy_compare
    from openpyxl import load_workbook

    dm = tmp_path / "data_mapping.yaml"
    mapping = _mapping()
    dm.write_text("".join(f"{a}: {b}\n" for a, b in mapping.items()))
    ours = _run(tmp_path, "-dm", str(dm))
    out = tmp_path / "classic"
    out.mkdir()
    params = {"npu_json_path": str(tmp_path / "t" / "dump.json"), "bench_json_path": str(tmp_path / "g" / "dump.json")}
    legacy_compare(params, str(out), auto_analyze=False, data_mapping=str(dm))
    (xlsx,) = out.glob("compare_result_*.xlsx")
    sheet = load_workbook(xlsx, read_only=True).worksheets[0]
    table = list(sheet.iter_rows(values_only=True))
    npu, bench = table[0].index("NPU Name"), table[0].index("Bench Name")
    classic = {r[npu]: r[bench] for r in table[1:]}
    assert classic == {name: row["Bench Name"] for name, row in ours.items()}
