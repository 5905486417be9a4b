"""Older dumpers' shapes of dump.json, and the rule that nothing in a dump is dropped silently.

Each old shape (``msprobe_core.load.dialects``) on a small real file: it loads into the rows the engine
knows, through the C scanner's fall-back as through the Python walk. Anything the loader does not
understand is counted and named: in the table's account, on the console and in the JSON summary.
The differential tests against each dumper version's own compare are in ``test_dumper_versions.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msprobe_core.cli.main import main
from msprobe_core.default_plugins.fast_scan import scan as dumpscan
from msprobe_core.load.dialects import ARGUMENT_MEMBERS, ENTRY_METADATA, LEAF_FIELDS, records_of
from msprobe_core.load.document import split_api_key
from msprobe_core.load.dumpjson import load_dump_file
from msprobe_core.model import MODE_MD5

from .dumps import api, only_result, read_csv, tensor, write_dump
from .test_loader_properties import ARG, api_key, count_leaves, tensor_leaf

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))


def load_both(path: Path):
    """The table of the default loader and of the Python walk alone; they must agree."""
    fast = load_dump_file(path)
    os.environ[dumpscan.ENV_PYTHON_LOADER] = "1"
    try:
        slow = load_dump_file(path)
    finally:
        del os.environ[dumpscan.ENV_PYTHON_LOADER]
    for col in ("name", "state", "dtype", "md5", "data_name"):
        assert list(getattr(fast, col)) == list(getattr(slow, col)), col
    assert records_of(fast) == records_of(slow)
    return fast


def compare(tmp_path: Path, target: dict, golden: dict, *args: str, **kw) -> list[dict[str, str]]:
    t = write_dump(tmp_path / "t", target, **kw)
    g = write_dump(tmp_path / "g", golden, **kw)
    out = tmp_path / "out"
    assert main(["compare", "-tp", str(t), "-gp", str(g), "-o", str(out), *args]) == 0
    return read_csv(only_result(out))


# ----------------------------------------------------------------------------- 1.0.1: grad_input / grad_output
def test_grad_output_and_grad_input_are_the_backward_input_and_output(tmp_path: Path) -> None:
    """1.0.1 named backward data after the hook's arguments: grad_output is what the backward takes in,
    grad_input (the gradients of the forward's inputs) what it puts out; its tensor files say so."""
    data = {"Torch.mul.0.backward": {
        "grad_input": [tensor(data_name="Torch.mul.0.backward.output.0.pt"), None],
        "grad_output": [tensor(data_name="Torch.mul.0.backward.input.0.pt")],
    }}
    table = load_both(write_dump(tmp_path / "tensor", data, task="tensor"))
    assert list(table.name) == ["Torch.mul.0.backward.input.0", "Torch.mul.0.backward.output.0",
                                "Torch.mul.0.backward.output.1"]
    assert list(table.state) == ["input", "output", "output"]
    assert list(table.data_name) == ["Torch.mul.0.backward.input.0.pt", "Torch.mul.0.backward.output.0.pt", "-1"]
    assert records_of(table) == []
    for leaf in (*data["Torch.mul.0.backward"]["grad_input"], *data["Torch.mul.0.backward"]["grad_output"]):
        if leaf:
            del leaf["data_name"]
    stats = load_both(write_dump(tmp_path / "stats", data))
    assert list(stats.name) == list(table.name) and list(stats.state) == list(table.state)


def test_a_1_0_1_backward_pairs_with_a_current_backward(tmp_path: Path) -> None:
    old = {"Torch.mul.0.backward": {"grad_input": [tensor(mx=2.0)], "grad_output": [tensor(mx=3.0)]}}
    new = {"Torch.mul.0.backward": {"input": [tensor(mx=3.0)], "output": [tensor(mx=2.0)]}}
    rows = compare(tmp_path, old, new)
    assert [(r["NPU Name"], r["Bench Name"], r["Max diff"]) for r in rows] == [
        ("Torch.mul.0.backward.input.0", "Torch.mul.0.backward.input.0", "0"),
        ("Torch.mul.0.backward.output.0", "Torch.mul.0.backward.output.0", "0"),
    ]


# ----------------------------------------------------------------------------- fields no compare reads
def test_metadata_members_and_fields_are_understood_and_not_counted(tmp_path: Path) -> None:
    leaf = tensor(Max_except_inf_nan=1.0, Min_except_inf_nan=-1.0, layout={"Partial": []}, hsdp_shard_size=2,
                  device_mesh=[0, 1], placements=[{"Shard": 0}])
    data = {"Module.fc.Linear.forward.0": api([leaf], [tensor()], is_recompute=False),
            "Torch.empty.0.forward": api([{"type": "torch.memory_format", "format": "contiguous_format"}])}
    table = load_both(write_dump(tmp_path, data))
    assert len(table) == 3 and records_of(table) == []


# ----------------------------------------------------------------------------- the account of the unknown
def test_what_the_loader_does_not_understand_is_counted_and_named(tmp_path: Path) -> None:
    data = {
        "Torch.a.0.forward": api([tensor(Std=0.5)], [tensor(Std=0.1)], mystery=[tensor()]),
        "Torch.b.0.forward": api([tensor()], mystery=[tensor()]),
        "no_call_here": api([tensor()]),
    }
    table = load_both(write_dump(tmp_path, data))
    assert len(table) == 3  # the rows of the known members are all there
    got = {(r["kind"], r["name"]): (r["count"], r["first"]) for r in records_of(table)}
    assert got == {
        ("leaf field", "Std"): (2, "Torch.a.0.forward.input.0"),
        ("entry member", "mystery"): (2, "Torch.a.0.forward"),
        ("data key", "no_call_here"): (1, "$.data"),
    }
    assert {r["file"] for r in records_of(table)} == {str(tmp_path / "dump.json")}


def test_the_unknown_is_named_on_the_console_and_in_the_json_summary(tmp_path: Path, run_cli) -> None:
    data = {"Torch.a.0.forward": api([tensor()], [tensor()], mystery=[tensor()]), "Torch.extra": api([tensor()])}
    t = write_dump(tmp_path / "t", data)
    g = write_dump(tmp_path / "g", {"Torch.a.0.forward": api([tensor()], [tensor()])})
    summary = tmp_path / "summary.json"
    proc = run_cli("compare", "-tp", t, "-gp", g, "-o", tmp_path / "out", "--json-summary", summary)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "[WARNING]" in text and "mystery (1x, first in Torch.a.0.forward)" in text
    assert "Torch.extra" in text and "data keys that name no forward/backward" in text
    assert "not understood in the dumps (not compared, named in the warnings above): 1 entry member, 1 data key" \
        in text
    records = json.loads(summary.read_text())["unrecognised"]
    assert {(r["kind"], r["name"], r["count"]) for r in records} == {("entry member", "mystery", 1),
                                                                     ("data key", "Torch.extra", 1)}
    assert {r["file"] for r in records} == {str(t)}


def test_a_current_dump_has_nothing_unrecognised(tmp_path: Path, run_cli) -> None:
    data = {"Torch.a.0.forward": api([tensor()], [tensor()])}
    t, g = write_dump(tmp_path / "t", data), write_dump(tmp_path / "g", data)
    summary = tmp_path / "summary.json"
    proc = run_cli("compare", "-tp", t, "-gp", g, "-o", tmp_path / "out", "--json-summary", summary)
    assert proc.returncode == 0, proc.stderr
    assert "not understood" not in proc.stdout and "[WARNING]" not in proc.stdout
    assert json.loads(summary.read_text())["unrecognised"] == []


def test_many_names_of_one_kind_are_capped_and_still_counted(tmp_path: Path) -> None:
    data = {"Torch.a.0.forward": api([tensor(**{f"f{i}": 1 for i in range(30)})])}
    records = records_of(load_both(write_dump(tmp_path, data)))
    assert len(records) == 21 and records[-1]["name"] == "…" and records[-1]["count"] == 10
    assert sum(r["count"] for r in records) == 30


# ----------------------------------------------------------------------------- md5 as 26.x xor checksums give it
@pytest.mark.parametrize("md5, cell", [
    ("0x00ff00ff00ff00ff", "0x00ff00ff00ff00ff"),  # the xor checksum of a tensor
    (1.2051223516464233, "1.2051223516464233"),  # the xor checksum of a 0-d tensor is its value
    (1.0, "1.0"),
    (1e16, "1e+16"),
    (float("inf"), " inf"),  # spelled as any float cell of msprobe's CSV
    (float("nan"), "N/A"),  # msprobe fills it as a missing cell: N/A equals N/A
    (0.0, "00000000"),  # empty to msprobe: the crc32 of the empty text stands in
    ("", "00000000"),
    (0, "00000000"),
    (True, "True"),
])
def test_md5_values_are_spelled_as_msprobe_spells_them(md5: object, cell: str, tmp_path: Path) -> None:
    """Cells and verdicts as msprobe 26.2.0 gives them for these md5 values (checked by running it)."""
    data = {"Torch.a.0.forward": api([], [tensor(md5=md5)])}
    table = load_both(write_dump(tmp_path / "d", data))
    assert table.mode == MODE_MD5
    rows = compare(tmp_path, data, data)
    assert rows[0]["NPU MD5"] == cell and rows[0]["BENCH MD5"] == cell and rows[0]["Result"] == "pass"


def test_an_xor_checksum_and_a_different_one_are_an_error(tmp_path: Path) -> None:
    target = {"Torch.a.0.forward": api([tensor(md5=1.5)], [tensor(md5="0x01")])}
    golden = {"Torch.a.0.forward": api([tensor(md5=1.25)], [tensor(md5="0x02")])}
    rows = compare(tmp_path, target, golden)
    assert [(r["NPU MD5"], r["BENCH MD5"], r["Result"]) for r in rows] == [
        ("1.5", "1.25", "error"), ("0x01", "0x02", "error")]


def test_an_md5_of_a_non_tensor_argument_that_is_empty_falls_back_to_its_value(tmp_path: Path) -> None:
    data = {"Torch.a.0.forward": api([{"type": "int", "value": 1, "md5": ""}], [tensor(md5="0x1")])}
    table = load_both(write_dump(tmp_path, data))
    assert list(table.md5) == ["83dcefb7", "0x1"]  # crc32 of "1"


# ----------------------------------------------------------------------------- nothing dropped silently
EXTRA_NAMES = st.text(alphabet="abcxyz_", min_size=1, max_size=6).filter(
    lambda s: s not in LEAF_FIELDS and s not in ENTRY_METADATA and s not in {m[0] for m in ARGUMENT_MEMBERS})


@st.composite
def any_dialect_doc(draw: st.DrawFn) -> tuple[dict, set, int]:
    """A dump mixing every dumper's members, unknown members, unknown fields and keys no compare reads.

    Returns the document, the (kind, name) pairs the loader must account for, and the rows it must make.
    """
    data: dict = {}
    expected: set = set()
    rows = 0
    for _ in range(draw(st.integers(1, 6))):
        key = draw(api_key() | st.text(alphabet="abc.", min_size=1, max_size=8))
        split = split_api_key(key, False)
        if key in data or (split is not None and split[2] == "parameters_grad"):
            continue  # parameters_grad entries are walked whole, as dicts of parameter names
        entry: dict = {}
        for member, *_ in ARGUMENT_MEMBERS:
            if draw(st.integers(0, 3)) == 0:
                entry[member] = draw(st.lists(ARG, max_size=3))
        if draw(st.booleans()):
            entry["is_recompute"] = draw(st.booleans())
        unknown_members = draw(st.lists(EXTRA_NAMES, max_size=2, unique=True))
        for name in unknown_members:
            entry[name] = [draw(tensor_leaf())]
        field = draw(st.none() | EXTRA_NAMES)
        if field is not None:
            leaf = draw(tensor_leaf())
            leaf[field] = 1
            entry.setdefault("output", []).append(leaf)
        data[key] = entry
        if split is None:  # not read at all: the key is what is counted
            expected.add(("data key", key))
            continue
        expected.update(("entry member", name) for name in unknown_members)
        if field is not None:
            expected.add(("leaf field", field))
        rows += sum(count_leaves(entry[m]) for m, *_ in ARGUMENT_MEMBERS if m in entry)
    return {"task": "statistics", "level": "L1", "framework": "pytorch", "data": data}, expected, rows


@SETTINGS
@given(case=any_dialect_doc())
def test_every_entry_is_rows_or_counted(case: tuple[dict, set, int], tmp_path_factory: pytest.TempPathFactory) -> None:
    """Row accounting: the rows are exactly the leaves of the argument members of the compared keys, and
    every key, member and field outside what the loader knows is in the account."""
    doc, expected, rows = case
    path = tmp_path_factory.mktemp("dialects") / "dump.json"
    path.write_text(json.dumps(doc, allow_nan=True), encoding="utf-8")
    table = load_both(path)
    assert len(table) == rows
    assert {(r["kind"], r["name"]) for r in records_of(table)} == expected


# ----------------------------------------------------------------------------- no framework field (before 1.3.0)
def ms_tensor(dtype: str = "Float32", **kw) -> dict:
    return dict(tensor(dtype=dtype, **kw), type="mindspore.Tensor")


def test_a_dump_without_framework_whose_dtypes_are_mindspores_is_compared_as_mindspore(tmp_path: Path,
                                                                                      run_cli) -> None:
    """Dumpers before 1.3.0 wrote no framework; the MindSpore ones were compared with ``-f mindspore``,
    whose dtype gate pairs Float16 with Float32 (PyTorch's does not know these spellings)."""
    target = {"Functional.add.0.forward": api([ms_tensor("Float16")], [ms_tensor("Float16")])}
    golden = {"Functional.add.0.forward": api([ms_tensor("Float32")], [ms_tensor("Float32")])}
    t = write_dump(tmp_path / "t", target, framework=None)
    g = write_dump(tmp_path / "g", golden, framework=None)
    proc = run_cli("compare", "-tp", t, "-gp", g, "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert "its dtypes are spelled as mindspore spells them, compared as mindspore" in proc.stdout
    rows = read_csv(only_result(tmp_path / "out"))
    assert [r["Bench Name"] for r in rows] == ["Functional.add.0.forward.input.0", "Functional.add.0.forward.output.0"]


def test_a_dump_without_framework_and_torch_dtypes_is_pytorch_as_msprobe_defaults(tmp_path: Path, run_cli) -> None:
    data = {"Functional.add.0.forward": api([tensor()], [tensor()])}
    t, g = write_dump(tmp_path / "t", data, framework=None), write_dump(tmp_path / "g", data, framework=None)
    proc = run_cli("compare", "-tp", t, "-gp", g, "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert "default setting is pytorch" in proc.stdout


@pytest.mark.parametrize("workers", ["1", "2"])
def test_every_ranks_unknown_reaches_the_summary(tmp_path: Path, run_cli, workers: str) -> None:
    """Rank pairs run one by one or as worker tasks: each rank's account reaches the run's summary."""
    for side in ("t", "g"):
        for rank in ("rank0", "rank1"):
            data = {"Torch.a.0.forward": api([tensor()], [tensor()], **({f"odd_{rank}": []} if side == "t" else {}))}
            write_dump(tmp_path / side / rank, data)
    summary = tmp_path / "summary.json"
    proc = run_cli("compare", "-tp", tmp_path / "t", "-gp", tmp_path / "g", "-o", tmp_path / "out",
                   "--workers", workers, "--json-summary", summary)
    assert proc.returncode == 0, proc.stderr
    records = json.loads(summary.read_text())["unrecognised"]
    assert sorted((Path(r["file"]).parent.name, r["name"]) for r in records) == [
        ("rank0", "odd_rank0"), ("rank1", "odd_rank1")]
    assert "odd_rank0 (1x" in proc.stdout and "odd_rank1 (1x" in proc.stdout


def test_the_classic_interface_reads_old_shapes_and_names_the_unknown(tmp_path: Path, capsys) -> None:
    """``msprobe -f pytorch compare -i``: 1.0.1's backward rows are there, an unknown member is named."""
    data = {"Torch.mul.0.forward": api([tensor()], [tensor()], mystery=[tensor()]),
            "Torch.mul.0.backward": {"grad_input": [tensor()], "grad_output": [tensor()]}}
    t, g = write_dump(tmp_path / "t", data, framework=None), write_dump(tmp_path / "g", data, framework=None)
    spec = tmp_path / "compare.json"
    spec.write_text(json.dumps({"npu_path": str(t), "bench_path": str(g)}), encoding="utf-8")
    assert main(["-f", "pytorch", "compare", "-i", str(spec), "-o", str(tmp_path / "out")]) == 0
    assert "mystery (1x, first in Torch.mul.0.forward)" in capsys.readouterr().out
    import openpyxl

    sheet = openpyxl.load_workbook(only_result(tmp_path / "out", ".xlsx")).worksheets[0]
    names = [row[0] for row in sheet.iter_rows(min_row=2, values_only=True)]
    assert names == ["Torch.mul.0.forward.input.0", "Torch.mul.0.forward.output.0",
                     "Torch.mul.0.backward.input.0", "Torch.mul.0.backward.output.0"]


def test_first_divergence_analysis_names_the_unknown_too(tmp_path: Path, run_cli) -> None:
    data = {"Torch.a.0.forward": api([tensor()], [tensor()], mystery=[tensor()])}
    write_dump(tmp_path / "t" / "rank0", data), write_dump(tmp_path / "g" / "rank0", data)
    summary = tmp_path / "summary.json"
    proc = run_cli("compare", "-tp", tmp_path / "t", "-gp", tmp_path / "g", "-o", tmp_path / "out", "-da",
                   "--json-summary", summary)
    assert proc.returncode == 0, proc.stderr
    assert "mystery (1x, first in Torch.a.0.forward)" in proc.stdout
    records = json.loads(summary.read_text())["unrecognised"]
    assert sorted((Path(r["file"]).parts[-3], r["name"]) for r in records) == [("g", "mystery"), ("t", "mystery")]
