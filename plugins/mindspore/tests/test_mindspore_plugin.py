"""Unit tests of the msprobe-mindspore plugin: MindSpore dump rows, dtype rules, mappers, .npy reading.

Small synthetic dumps written like the MindSpore dumper writes them (``mindspore.Tensor``
leaves, ``Float32``-style dtype names, no ``requires_grad``) exercise what the
corpus cases do not: every MindSpore dtype name, ``Cell``/``Mint``/``MintFunctional``
keys and their backward re-numbering, the mapper precedence and the data-mapping
join rules, and hostile ``.npy`` files.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from msprobe_core.cli.main import main
from msprobe_core.errors import TensorReadError
from msprobe_core.host.registry import PluginHost
from tests.dumps import api, only_result, read_csv, write_dump

msprobe_mindspore = pytest.importorskip("msprobe_mindspore")

from msprobe_mindspore import plugin as ms_plugin  # noqa: E402
from msprobe_mindspore.npy_reader import read_npy  # noqa: E402
from msprobe_mindspore.numparse import pandas_precise_xstrtod, reference_precise_xstrtod  # noqa: E402


def ms_tensor(dtype: str = "Float32", shape=(2, 3), mx=1.0, mn=-1.0, mean=0.1, norm=2.0, **extra) -> dict:
    """A MindSpore statistics leaf: no ``requires_grad``, MindSpore dtype name."""
    leaf = {"type": "mindspore.Tensor", "dtype": dtype, "shape": list(shape), "Max": mx, "Min": mn, "Mean": mean,
            "Norm": norm}
    leaf.update(extra)
    return leaf


def pt_tensor(dtype: str = "torch.float32", shape=(2, 3), mx=1.0, mn=-1.0, mean=0.1, norm=2.0) -> dict:
    return {"type": "torch.Tensor", "dtype": dtype, "shape": list(shape), "Max": mx, "Min": mn, "Mean": mean,
            "Norm": norm, "requires_grad": False}


def compare(tmp_path: Path, target: Path, golden: Path, *extra: str) -> list[dict[str, str]]:
    out = tmp_path / "out"
    rc = main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out), *extra])
    assert rc == 0
    return read_csv(only_result(out))


def by_name(rows: list[dict[str, str]]) -> dict[str, dict[str, str]]:
    return {r["NPU Name"]: r for r in rows}


# --------------------------------------------------------------------------------------------
# the framework spec
# --------------------------------------------------------------------------------------------


@pytest.mark.exercises_hooks("msprobe_register_frameworks")
def test_framework_is_registered_with_its_aliases():
    host = PluginHost()
    spec = host.framework("mindspore")
    assert spec is not None and spec is host.framework("mindtorch")
    assert spec.golden_frameworks == ("pytorch", "mindspore")
    assert spec.tensor_suffix == ".npy"
    assert spec.float_dtypes == {"Float16", "Float32", "Float64", "BFloat16"}
    assert {m.name for m in host.mappers} >= {"api-mapping", "cell-mapping", "layer-mapping", "data-mapping"}


@pytest.mark.parametrize(
    ("dtype", "canonical"),
    [("Float32", "float32"), ("BFloat16", "bfloat16"), ("Int64", "int64"), ("UInt8", "uint8"), ("Bool", "bool"),
     ("Complex128", "complex128"), ("mindspore.float16", "float16"), ("<class 'int'>", "<class 'int'>")],
)
def test_canonical_dtype(dtype, canonical):
    assert ms_plugin.canonical_dtype(dtype) == canonical


# --------------------------------------------------------------------------------------------
# MindSpore rows
# --------------------------------------------------------------------------------------------


def test_mindspore_names_dtypes_and_missing_requires_grad(tmp_path):
    data = {
        "Cell.blocks.0.attn.Attention.forward.0": api(
            [ms_tensor("Float16"), ms_tensor("BFloat16")], [ms_tensor()], parameters={"scale": ms_tensor("Float64")}),
        "Mint.add.0.forward": api([ms_tensor("Int64"), {"type": "int", "value": 2}], [ms_tensor("Int64")]),
        "MintFunctional.linear.0.forward": api([ms_tensor("UInt8"), ms_tensor("Bool", mx=True, mn=False)],
                                              [ms_tensor("Complex64")]),
        "Mint.add.7.backward": {"input": [ms_tensor()], "output": [ms_tensor(), None]},
        "Cell.blocks.0.attn.qkv.Dense.parameters_grad": {"weight": [ms_tensor()]},
        "Mint.add.0": api([ms_tensor()]),  # no direction: skipped, as by msprobe
    }
    target = write_dump(tmp_path / "t", data, framework="mindspore")
    golden = write_dump(tmp_path / "g", data, framework="mindspore")
    rows = compare(tmp_path, target, golden)
    names = [r["NPU Name"] for r in rows]
    assert names == [
        "Cell.blocks.0.attn.Attention.forward.0.input.0",
        "Cell.blocks.0.attn.Attention.forward.0.input.1",
        "Cell.blocks.0.attn.Attention.forward.0.parameters.scale",
        "Cell.blocks.0.attn.Attention.forward.0.output.0",
        "Mint.add.0.forward.input.0",
        "Mint.add.0.forward.input.1",
        "Mint.add.0.forward.output.0",
        "MintFunctional.linear.0.forward.input.0",
        "MintFunctional.linear.0.forward.input.1",
        "MintFunctional.linear.0.forward.output.0",
        "Mint.add.7.backward.input.0",
        "Mint.add.7.backward.output.0",
        "Mint.add.7.backward.output.1",
        "Cell.blocks.0.attn.qkv.Dense.parameters_grad.weight",
    ]
    assert [r["Bench Name"] for r in rows] == names
    assert [r["NPU Dtype"] for r in rows][:4] == ["Float16", "BFloat16", "Float64", "Float32"]
    assert {r["NPU Dtype"] for r in rows} >= {"Int64", "UInt8", "Bool", "Complex64", "<class 'int'>", "N/A"}
    for r in rows:
        assert (r["NPU Requires_grad"], r["Bench Requires_grad"], r["Requires_grad Consistent"]) == ("N/A", "N/A", "True")
        assert r["Result"] == "pass", r


@pytest.mark.exercises_hooks("msprobe_register_normalizers")
def test_backward_renumbering_per_prefix(tmp_path):
    """The k-th backward call of ``Mint.add`` pairs with the k-th on the other side, whatever its number."""
    t = {"Mint.add.5.backward": {"input": [ms_tensor(mx=1.0)]}, "Mint.add.9.backward": {"input": [ms_tensor(mx=2.0)]}}
    g = {"Mint.add.0.backward": {"input": [ms_tensor(mx=1.0)]}, "Mint.add.1.backward": {"input": [ms_tensor(mx=2.0)]}}
    rows = compare(tmp_path, write_dump(tmp_path / "t", t, framework="mindspore"),
                   write_dump(tmp_path / "g", g, framework="mindspore"))
    assert [(r["NPU Name"], r["Bench Name"], r["Max diff"]) for r in rows] == [
        ("Mint.add.5.backward.input.0", "Mint.add.0.backward.input.0", "0"),
        ("Mint.add.9.backward.input.0", "Mint.add.1.backward.input.0", "0"),
    ]


def test_same_framework_dtype_gate(tmp_path):
    """Float16/Float32/BFloat16 pair (dtype error), Int32 vs Int64 does not pair (bench side N/A)."""
    t = {"Mint.mul.0.forward": api([ms_tensor("Float16"), ms_tensor("Int32")], [ms_tensor("BFloat16")])}
    g = {"Mint.mul.0.forward": api([ms_tensor("Float32"), ms_tensor("Int64")], [ms_tensor("Float32")])}
    rows = by_name(compare(tmp_path, write_dump(tmp_path / "t", t, framework="mindspore"),
                           write_dump(tmp_path / "g", g, framework="mindspore")))
    assert rows["Mint.mul.0.forward.input.0"]["Bench Name"] == "Mint.mul.0.forward.input.0"
    assert "dtype of NPU and Bench are inconsistent" in rows["Mint.mul.0.forward.input.0"]["Err_message"]
    assert rows["Mint.mul.0.forward.input.1"]["Bench Name"] == "N/A"
    assert rows["Mint.mul.0.forward.output.0"]["Result"] == "error"


@pytest.mark.exercises_hooks("msprobe_register_frameworks", "msprobe_load_dump")
def test_cross_framework_gate_and_dtype_check(tmp_path):
    """MS vs PT: dtypes pair by kind; the same dtype, an integer width or an unknown requires_grad is no
    error, a real dtype difference or a known requires_grad difference still is (docs/differences.md)."""
    t = {"Functional.linear.0.forward": api([ms_tensor("Float32"), ms_tensor("Int32"), ms_tensor("Float32"),
                                            ms_tensor("UInt8"), ms_tensor("Float32", requires_grad=True)],
                                           [ms_tensor("Float16")])}
    g = {"Functional.linear.0.forward": api([pt_tensor("torch.float32"), pt_tensor("torch.int64"),
                                            pt_tensor("torch.int64"), pt_tensor("torch.int64"),
                                            pt_tensor("torch.float32")],
                                           [pt_tensor("torch.float32")])}
    rows = by_name(compare(tmp_path, write_dump(tmp_path / "t", t, framework="mindspore"),
                           write_dump(tmp_path / "g", g, framework="pytorch")))
    same = rows["Functional.linear.0.forward.input.0"]
    assert (same["NPU Requires_grad"], same["Bench Requires_grad"]) == ("N/A", "False")
    assert same["Requires_grad Consistent"] == "False"  # msprobe's cell: the flags are not equal
    assert (same["Result"], json.loads(same["Err_message"])) == ("pass", [])  # ...but unknown is no error
    for name in ("Functional.linear.0.forward.input.1", "Functional.linear.0.forward.input.3"):  # Int32/UInt8 vs int64
        assert (rows[name]["Result"], json.loads(rows[name]["Err_message"])) == ("pass", []), name
    assert rows["Functional.linear.0.forward.input.2"]["Bench Name"] == "N/A"  # float vs int: gated
    known = json.loads(rows["Functional.linear.0.forward.input.4"]["Err_message"])
    assert known == ["error: The Required_Grad of NPU and Bench are inconsistent"]  # True vs False
    half = json.loads(rows["Functional.linear.0.forward.output.0"]["Err_message"])
    assert half == ["error: The dtype of NPU and Bench are inconsistent."]


def test_same_framework_dtype_check_is_msprobes(tmp_path):
    """Within one framework the DType checker compares the strings, as msprobe does: Int32 vs Int64 is an error
    (paired through ``-dm``: the same-framework dtype gate would not pair them)."""
    t = {"Functional.gather.0.forward": api([ms_tensor("Int32"), ms_tensor("Float32")])}
    g = {"Functional.gather.0.forward": api([ms_tensor("Int64"), ms_tensor("Float32")])}
    dm = tmp_path / "dm.yaml"
    dm.write_text("Functional.gather.0.forward.input.0: Functional.gather.0.forward.input.0\n")
    rows = by_name(compare(tmp_path, write_dump(tmp_path / "t", t, framework="mindspore"),
                           write_dump(tmp_path / "g", g, framework="mindspore"), "-dm", str(dm)))
    ints = rows["Functional.gather.0.forward.input.0"]
    assert (ints["Result"], json.loads(ints["Err_message"])) == ("error", ["error: The dtype of NPU and Bench are inconsistent."])
    assert json.loads(rows["Functional.gather.0.forward.input.1"]["Err_message"]) == []


def test_pytorch_target_with_mindspore_golden_is_refused(tmp_path, capsys):
    t = write_dump(tmp_path / "t", {"Functional.relu.0.forward": api([pt_tensor()])}, framework="pytorch")
    g = write_dump(tmp_path / "g", {"Functional.relu.0.forward": api([ms_tensor()])}, framework="mindspore")
    rc = main(["compare", "-tp", str(t), "-gp", str(g), "-o", str(tmp_path / "out")])
    assert rc == 2
    assert "cannot compare a pytorch target with a mindspore golden dump" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# mappers
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "mapper"),
    [
        ({}, "exact"),
        ({"data_mapping": "dm.yaml"}, "data-mapping"),
        ({"layer_mapping": True, "data_mapping": "dm.yaml"}, "layer-mapping"),
        ({"cell_mapping": True, "layer_mapping": "lm.yaml", "data_mapping": "dm.yaml"}, "cell-mapping"),
        ({"api_mapping": True, "cell_mapping": "cm.yaml", "layer_mapping": True}, "api-mapping"),
    ],
)
def test_mapper_precedence(options, mapper):
    host = PluginHost()
    assert host.mapper_for(host.compare_options(**options)).name == mapper


def _cross_pair(tmp_path: Path) -> tuple[Path, Path]:
    t = {"Mint.add.0.forward": api([ms_tensor("Int32"), ms_tensor("Float32")], [ms_tensor("Float32")]),
         "Mint.add.4.backward": {"input": [ms_tensor("Float32", mx=3.0)]}}
    g = {"Torch.add.0.forward": api([pt_tensor("torch.float32"), pt_tensor("torch.float32")], [pt_tensor("torch.float32")]),
         "Torch.add.0.backward": {"input": [pt_tensor("torch.float32", mx=3.0)]}}
    return write_dump(tmp_path / "t", t, framework="mindspore"), write_dump(tmp_path / "g", g, framework="pytorch")


@pytest.mark.exercises_hooks("msprobe_register_mappers")
def test_api_mapping_keeps_the_dtype_gate_but_data_mapping_lifts_it(tmp_path):
    target, golden = _cross_pair(tmp_path)
    gated = by_name(compare(tmp_path / "a", target, golden, "-am"))
    assert gated["Mint.add.0.forward.input.0"]["Bench Name"] == "N/A"  # Int32 vs torch.float32
    assert gated["Mint.add.0.forward.input.1"]["Bench Name"] == "Torch.add.0.forward.input.1"
    # raw NPU name: Mint.add.4.backward -> Torch.add.4.backward, which the renumbered golden side lacks
    assert gated["Mint.add.4.backward.input.0"]["Bench Name"] == "N/A"
    dm = tmp_path / "dm.yaml"
    dm.write_text("Nothing.0.forward.input.0: Nothing.0.forward.input.0\n")
    joined = by_name(compare(tmp_path / "b", target, golden, "-am", "-dm", str(dm)))
    assert joined["Mint.add.0.forward.input.0"]["Bench Name"] == "Torch.add.0.forward.input.0"


def test_am_yaml_entries_and_doc_format(tmp_path):
    target, golden = _cross_pair(tmp_path)
    listed = tmp_path / "am_list.yaml"
    listed.write_text("- ms_api: Mint.add\n  pt_api: Torch.add\n  ms_args: [1]\n  pt_args: [0]\n  ms_output: [0]\n  pt_output: [0]\n")
    documented = tmp_path / "am_doc.yaml"
    documented.write_text("ms_api: Mint.add\npt_api: Torch.add\nms_args: [1]\npt_args: [0]\nms_outputs: [0]\npt_outputs: [0]\n")
    a = compare(tmp_path / "a", target, golden, "-am", str(listed))
    b = compare(tmp_path / "b", target, golden, "-am", str(documented))
    assert [(r["NPU Name"], r["Bench Name"]) for r in a] == [(r["NPU Name"], r["Bench Name"]) for r in b]
    pairs = dict((r["NPU Name"], r["Bench Name"]) for r in a)
    assert pairs["Mint.add.0.forward.input.0"] == "N/A"  # position 0 not listed: abandoned
    assert pairs["Mint.add.0.forward.input.1"] == "Torch.add.0.forward.input.0"


def test_malformed_mapping_files_are_one_line_errors(tmp_path, capsys):
    target, golden = _cross_pair(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text("- ms_api: [unclosed\n")
    for flag in ("-am", "-cm", "-lm"):
        rc = main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(tmp_path / "o"), flag, str(bad)])
        err = capsys.readouterr().err
        assert rc == 2 and "bad.yaml" in err and "Traceback" not in err, (flag, err)


def _layer_dumps(tmp_path: Path, *, with_construct: bool = True) -> tuple[Path, Path]:
    t = {"Cell.fc.Dense.forward.0": api([ms_tensor()], [ms_tensor()]),
         "Functional.relu.0.forward": api([ms_tensor()], [ms_tensor()])}
    g = {"Module.proj.Linear.forward.0": api([pt_tensor()], [pt_tensor()]),
         "Functional.relu.0.forward": api([pt_tensor()], [pt_tensor()])}
    paths = []
    for side, data, fw in (("t", t, "mindspore"), ("g", g, "pytorch")):
        stack = {"0": [list(data), ["File model.py, line 1, in construct, \n y = f(x)"]]}
        p = write_dump(tmp_path / side, data, framework=fw, level="mix", stack=stack)
        if with_construct:
            (p.parent / "construct.json").write_text(json.dumps({k: None for k in data}))
        paths.append(p)
    return paths[0], paths[1]


def test_layer_mapping_writes_the_generated_mapping_next_to_the_result(tmp_path):
    target, golden = _layer_dumps(tmp_path)
    rules = tmp_path / "lm.yaml"
    rules.write_text("Cell:\n  fc: proj\n")
    out = tmp_path / "out"
    assert main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out), "-lm", str(rules)]) == 0
    (result,) = out.glob("compare_result_*.csv")
    (generated,) = out.glob("data_mapping_*.yaml")
    assert generated.name == "data_mapping_" + result.name.removeprefix("compare_result_").removesuffix(".csv") + ".yaml"
    mapping = __import__("yaml").safe_load(generated.read_text())
    assert mapping["Cell.fc.Dense.forward.0.input.0"] == "Module.proj.Linear.forward.0.input.0"
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp files left
    rows = by_name(read_csv(result))
    assert rows["Cell.fc.Dense.forward.0.output.0"]["Bench Name"] == "Module.proj.Linear.forward.0.output.0"


def test_layer_mapping_without_stack_and_construct_is_a_plain_compare(tmp_path):
    target, golden = _layer_dumps(tmp_path)
    for p in (target, golden):
        (p.parent / "stack.json").unlink()
        (p.parent / "construct.json").unlink()
    out = tmp_path / "out"
    assert main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out), "-lm"]) == 0
    (generated,) = out.glob("data_mapping_*.yaml")
    assert generated.read_text() == "{}\n"
    rows = by_name(read_csv(only_result(out, ".csv")))
    assert rows["Cell.fc.Dense.forward.0.input.0"]["Bench Name"] == "N/A"
    assert rows["Functional.relu.0.forward.input.0"]["Bench Name"] == "Functional.relu.0.forward.input.0"


def test_layer_mapping_with_only_one_of_stack_and_construct_fails_cleanly(tmp_path, capsys):
    target, golden = _layer_dumps(tmp_path, with_construct=False)
    rc = main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(tmp_path / "out"), "-lm"])
    err = capsys.readouterr().err
    assert rc == 2 and "construct.json" in err and "Traceback" not in err


def test_layer_mapping_is_ignored_for_pytorch_targets(tmp_path):
    data = {"Functional.relu.0.forward": api([pt_tensor()], [pt_tensor()])}
    t = write_dump(tmp_path / "t", data, framework="pytorch", stack={})
    g = write_dump(tmp_path / "g", data, framework="pytorch", stack={})
    out = tmp_path / "out"
    assert main(["compare", "-tp", str(t), "-gp", str(g), "-o", str(out), "-lm"]) == 0
    assert [p.suffix for p in out.iterdir()] == [".csv"]


def test_python_api_without_output_dir_writes_nothing(tmp_path, monkeypatch):
    from msprobe_core import compare as api_compare

    target, golden = _layer_dumps(tmp_path)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    df = api_compare(target, golden, layer_mapping=True)
    assert len(df) == 4
    assert not list(work.iterdir())


# --------------------------------------------------------------------------------------------
# .npy reading
# --------------------------------------------------------------------------------------------


def test_read_npy_roundtrip(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.arange(12, dtype=np.float16).reshape(3, 4))
    out = read_npy(path)
    assert out.dtype == np.float16 and out.shape == (3, 4)


@pytest.mark.parametrize("case", ["truncated", "object", "pickle", "structured", "not_npy", "npz", "missing", "dir", "huge"])
def test_read_npy_rejects(tmp_path, case):
    path = tmp_path / "x.npy"
    if case == "truncated":
        np.save(path, np.zeros(1000, dtype=np.float32))
        path.write_bytes(path.read_bytes()[:-10])
    elif case in ("object", "pickle"):
        np.save(path, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    elif case == "structured":
        np.save(path, np.zeros(3, dtype=[("a", "<f4"), ("b", "<i4")]))
    elif case == "not_npy":
        path.write_bytes(b"hello world, not numpy at all")
    elif case == "npz":
        np.savez(tmp_path / "x.npz", a=np.zeros(3))
        (tmp_path / "x.npz").rename(path)
    elif case == "dir":
        path.mkdir()
    elif case == "huge":
        header = "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }"
        header = header + " " * (63 - len(header) % 64) + "\n"
        path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\0" * 64)
    with pytest.raises(TensorReadError):
        read_npy(path)


def test_unreadable_tensor_makes_only_its_row_unsupported(tmp_path):
    rows = []
    for side in ("t", "g"):
        d = tmp_path / side / "dump_tensor_data"
        d.mkdir(parents=True)
        np.save(d / "Mint.abs.0.forward.input.0.npy", np.arange(6, dtype=np.float32))
        np.save(d / "Mint.abs.0.forward.output.0.npy", np.arange(6, dtype=np.float32))
        rows.append(d)
    (rows[1] / "Mint.abs.0.forward.output.0.npy").write_bytes(b"\x93NUMPY broken")
    data = {"Mint.abs.0.forward": api([ms_tensor(shape=(6,), data_name="Mint.abs.0.forward.input.0.npy")],
                                      [ms_tensor(shape=(6,), data_name="Mint.abs.0.forward.output.0.npy")])}
    t = write_dump(tmp_path / "t", data, task="tensor", framework="mindspore")
    g = write_dump(tmp_path / "g", data, task="tensor", framework="mindspore")
    out = by_name(compare(tmp_path, t, g))
    assert out["Mint.abs.0.forward.input.0"]["Cosine"] == "1.0"
    assert out["Mint.abs.0.forward.output.0"]["Cosine"] == "unsupported"


# --------------------------------------------------------------------------------------------
# statistic parsing of the MindSpore reference runs
# --------------------------------------------------------------------------------------------


def test_precise_xstrtod_matches_the_reference_numbers():
    """From ms_l0_stat_bug_2steps: msprobe's Max diff is 0.19757199287414595, not the exact 0.1975719928741455."""
    n, b = pandas_precise_xstrtod("2.2279882431030273"), pandas_precise_xstrtod("2.030416250228882")
    assert n - b == 0.19757199287414595
    assert 2.2279882431030273 - 2.030416250228882 == 0.1975719928741455


@pytest.mark.parametrize("text", ["0.5", "-3", "1e-05", "123.25", "6.103515625e-05", "1.5E+3", " 7 "])
def test_precise_xstrtod_is_exact_on_short_numbers(text):
    assert pandas_precise_xstrtod(text) == float(text)


@pytest.mark.parametrize("text", ["", "-", "inf", "nan", "1.5x", "e5", "1e", "1e999"])
def test_precise_xstrtod_rejects(text):
    assert pandas_precise_xstrtod(text) is None


def test_precise_xstrtod_fast_path_equals_the_transcription():
    rng = np.random.default_rng(7)
    texts = [repr(float(x)) for x in rng.standard_normal(3000).astype(np.float32) * 10.0 ** rng.integers(-12, 12, 3000)]
    texts += [repr(float(x)) for x in rng.standard_normal(2000) * 10.0 ** rng.integers(-320, 300, 2000)]
    texts += [str(int(x)) for x in rng.integers(-(10**18), 10**18, 1000)]
    texts += ["0", "-0.0", "5e-324", "1.7976931348623157e+308", "00000000000000000000001.5", "1" * 40 + ".25",
              "0.000000000000000000000000012345678901234567890", "1e+", "+3", ".5", "5.", "1e400", "-1e-400"]
    for text in texts:
        fast, ref = pandas_precise_xstrtod(text), reference_precise_xstrtod(text)
        assert (fast is None and ref is None) or repr(fast) == repr(ref), text


def test_mindspore_md5_mode(tmp_path):
    t = {"Mint.add.0.forward": api([ms_tensor(md5="0a1b2c3d"), {"type": "int", "value": 1}], [ms_tensor(md5="00000001")])}
    g = {"Mint.add.0.forward": api([ms_tensor(md5="0a1b2c3d"), {"type": "int", "value": 1}], [ms_tensor(md5="00000002")])}
    rows = compare(tmp_path, write_dump(tmp_path / "t", t, framework="mindspore"),
                   write_dump(tmp_path / "g", g, framework="mindspore"))
    assert list(rows[0])[8:10] == ["NPU MD5", "BENCH MD5"]
    assert [(r["NPU MD5"], r["BENCH MD5"], r["Result"]) for r in rows] == [
        ("0a1b2c3d", "0a1b2c3d", "pass"),
        ("83dcefb7", "83dcefb7", "pass"),
        ("00000001", "00000002", "error"),
    ]


@pytest.mark.exercises_hooks("msprobe_discover_jobs")
def test_mindspore_multi_rank_step_dirs(tmp_path):
    for side in ("target", "golden"):
        for rank in (0, 1):
            data = {"Mint.add.0.forward": api([ms_tensor(mx=float(rank))], [ms_tensor()])}
            write_dump(tmp_path / side / "step0" / f"rank{rank}", data, framework="mindspore")
    out = tmp_path / "out"
    assert main(["compare", "-tp", str(tmp_path / "target/step0"), "-gp", str(tmp_path / "golden/step0"), "-o", str(out)]) == 0
    names = sorted(p.name.rsplit("_", 1)[0] for p in out.glob("*.csv"))
    assert names == ["compare_result_rank0", "compare_result_rank1"]
    for path in out.glob("*.csv"):
        assert all(r["Result"] == "pass" for r in read_csv(path))


def test_api_mapping_with_fuzzy_match_fuzzy_matches_the_mapped_keys(tmp_path):
    """msprobe fuzzy-matches on the -am keys: an extra MindSpore call does not shift the pairs."""
    t = {"Mint.add.0.forward": api([ms_tensor(shape=(7,))], [ms_tensor(shape=(7,))]),
         "Mint.add.1.forward": api([ms_tensor()], [ms_tensor()])}
    g = {"Torch.add.0.forward": api([pt_tensor()], [pt_tensor()])}
    target = write_dump(tmp_path / "t", t, framework="mindspore")
    golden = write_dump(tmp_path / "g", g, framework="pytorch")
    plain = dict((r["NPU Name"], r["Bench Name"]) for r in compare(tmp_path / "a", target, golden, "-am"))
    assert plain["Mint.add.1.forward.input.0"] == "N/A"
    fuzzy = dict((r["NPU Name"], r["Bench Name"]) for r in compare(tmp_path / "b", target, golden, "-am", "-fm"))
    assert fuzzy["Mint.add.0.forward.input.0"] == "N/A"
    assert fuzzy["Mint.add.1.forward.input.0"] == "Torch.add.0.forward.input.0"
