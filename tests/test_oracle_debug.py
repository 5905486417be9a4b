"""Debug-save compare (``debug.json``, compare-modes §7) against msprobe 26.2.0, PyTorch and MindSpore.

* ``pytorch/c11``: every oracle variant (step dirs csv/xlsx, file form) re-run
  with its command from ``oracle/cmd.txt`` and diffed cell for cell.
* MindSpore ``.npy`` debug dumps have no msprobe oracle; the same tensors as
  c11 step0, re-saved as a MindSpore debug dump (``.npy`` files, MindSpore dtype
  names, a ``proc<PID>`` dir), must give c11's oracle numbers cell for cell
  (the metrics do not depend on the framework), and msprobe's file name
  ``debug_compare_result_proc<PID>_{timestamp}.csv``.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from msprobe_core.cli.main import main

from .conftest import agree, corpora_dir

TIMESTAMP = re.compile(r"_\d{14}")
CASE = "c11"


def _strip_ts(name: str) -> str:
    return TIMESTAMP.sub("", name)


def _commands() -> dict[str, list[str]]:
    """``{variant: args after 'msprobe'}`` from c11's ``oracle/cmd.txt``."""
    cmd = corpora_dir() / "pytorch" / CASE / "oracle" / "cmd.txt"
    if not cmd.is_file():
        return {}
    out = {}
    for line in cmd.read_text().splitlines():
        m = re.match(r"^\[(\w+)\]\s+(msprobe .*)$", line.strip())
        if m:
            argv = shlex.split(m.group(2))
            out[m.group(1)] = argv[1:]
    return out


def _variants():
    commands = _commands()
    if not commands:
        return [pytest.param("-", [], id="no-corpora")]
    return [pytest.param(name, args, id=name) for name, args in sorted(commands.items())]


@pytest.mark.parametrize("variant,args", _variants())
def test_debug_compare_agrees_with_msprobe(corpora, oracle_diff, tmp_path, monkeypatch, variant, args):
    pytest.importorskip("msprobe_pytorch.pt_reader")
    case = corpora / "pytorch" / CASE
    oracle = case / "oracle" / variant
    args = list(args)
    args[args.index("-o") + 1] = str(tmp_path)
    monkeypatch.chdir(case)
    assert main(args) == 0
    refs = {p.name: p for p in oracle.iterdir() if p.suffix in (".csv", ".xlsx")}
    ours = {_strip_ts(p.name): p for p in tmp_path.iterdir() if not p.name.startswith("next_dump_config_")}
    assert refs and sorted(ours) == sorted(refs)
    for name, ref in refs.items():
        assert name.startswith("debug_compare_result")
        code, report = agree(oracle_diff, ours[name], ref)
        assert code == 0, f"{variant}/{name} disagrees:\n{report}"


_MS_DTYPE = {"torch.float32": "Float32", "torch.bfloat16": "BFloat16", "torch.float16": "Float16", "torch.int64": "Int64"}


def _to_mindspore(value, tensors: Path, out_dir: Path, read_pt):
    """Rewrite one debug.json value as the MindSpore dumper writes it, saving each tensor as ``.npy``."""
    if isinstance(value, list):
        return [_to_mindspore(v, tensors, out_dir, read_pt) for v in value]
    if not isinstance(value, dict):
        return value
    if value.get("type") == "torch.Tensor":
        leaf = dict(value)
        leaf["type"] = "mindspore.Tensor"
        leaf["dtype"] = _MS_DTYPE[value["dtype"]]
        if "data_name" in leaf:
            array = np.asarray(read_pt(tensors / value["data_name"]))
            leaf["data_name"] = value["data_name"][: -len(".pt")] + ".npy"
            np.save(out_dir / leaf["data_name"], array.astype(np.float32) if array.dtype.kind == "f" else array)
        return leaf
    if isinstance(value.get("type"), str):
        return dict(value)
    return {k: _to_mindspore(v, tensors, out_dir, read_pt) for k, v in value.items()}


def _mindspore_debug_dump(src_rank: Path, dst_step: Path, read_pt) -> None:
    doc = json.loads((src_rank / "debug.json").read_text(encoding="utf-8"))
    rank = dst_step / "proc4242"
    data_dir = rank / "dump_tensor_data"
    data_dir.mkdir(parents=True)
    doc["framework"] = "mindspore"
    doc["dump_data_dir"] = str(data_dir)
    doc["data"] = {k: _to_mindspore(v, src_rank / "dump_tensor_data", data_dir, read_pt) for k, v in doc["data"].items()}
    (rank / "debug.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")


def test_mindspore_npy_debug_compare_matches_the_pytorch_oracle(corpora, oracle_diff, tmp_path):
    reader = pytest.importorskip("msprobe_pytorch.pt_reader")
    case = corpora / "pytorch" / CASE
    for side in ("target", "golden"):
        _mindspore_debug_dump(case / side / "step0" / "rank0", tmp_path / side / "step0", reader.read_pt)
    out = tmp_path / "out"
    assert main(["compare", "-tp", str(tmp_path / "target/step0"), "-gp", str(tmp_path / "golden/step0"), "-o", str(out)]) == 0
    (ours,) = out.iterdir()
    assert re.fullmatch(r"debug_compare_result_proc4242_\d{14}\.csv", ours.name)
    ref = case / "oracle" / "compare_step0" / "debug_compare_result_rank0.csv"
    code, report = agree(oracle_diff, ours, ref, extra=("--ignore", "NPU Dtype", "Bench Dtype", "Data_name"))
    assert code == 0, report
    import csv

    with open(ours, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    with open(ref, newline="", encoding="utf-8") as fh:
        ref_rows = list(csv.DictReader(fh))
    for mine, theirs in zip(rows, ref_rows):
        assert mine["Data_name"] == theirs["Data_name"].replace(".pt'", ".npy'")
        assert mine["NPU Dtype"] == _MS_DTYPE.get(theirs["NPU Dtype"], theirs["NPU Dtype"])
        assert mine["Bench Dtype"] == _MS_DTYPE.get(theirs["Bench Dtype"], theirs["Bench Dtype"])


def test_mindspore_debug_nested_names_and_file_pair(tmp_path):
    """Nested debug values are flattened like an argument list (§7): ``y.0.debug.0``, ``y.0.debug.1.k``, ``y.0.debug.1.s``."""
    from .dumps import read_csv

    def tensor(value: np.ndarray, name: str, data_dir: Path) -> dict:
        np.save(data_dir / name, value)
        return {"type": "mindspore.Tensor", "dtype": "Float32", "shape": list(value.shape), "Max": float(value.max()),
                "Min": float(value.min()), "Mean": float(value.mean()), "Norm": float(np.linalg.norm(value)),
                "data_name": name}

    paths = []
    for side, scale in (("target", 1.0), ("golden", 2.0)):
        rank = tmp_path / side
        data_dir = rank / "dump_tensor_data"
        data_dir.mkdir(parents=True)
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        data = {"y.0.debug": [tensor(a * scale, "y.0.debug.0.npy", data_dir),
                              {"k": tensor(a + 1, "y.0.debug.1.k.npy", data_dir), "s": {"type": "int", "value": 3}}]}
        doc = {"task": "tensor", "level": "debug", "framework": "mindspore", "dump_data_dir": str(data_dir), "data": data}
        (rank / "debug.json").write_text(json.dumps(doc), encoding="utf-8")
        paths.append(rank / "debug.json")
    out = tmp_path / "out"
    assert main(["compare", "-tp", str(paths[0]), "-gp", str(paths[1]), "-o", str(out)]) == 0
    (result,) = out.iterdir()
    assert re.fullmatch(r"debug_compare_result_\d{14}\.csv", result.name)
    rows = {r["NPU Name"]: r for r in read_csv(result)}
    assert list(rows) == ["y.0.debug.0", "y.0.debug.1.k", "y.0.debug.1.s"]
    scaled, same, scalar = rows["y.0.debug.0"], rows["y.0.debug.1.k"], rows["y.0.debug.1.s"]
    assert float(scaled["Cosine"]) == 1.0 and float(scaled["MaxAbsErr"]) == 5.0
    assert (same["Cosine"], same["EucDist"], same["MaxAbsErr"]) == ("1.0", "0.0", "0.0")
    assert scalar["Cosine"] == "unsupported" and scalar["NPU Dtype"] == "<class 'int'>"
    assert scalar["Data_name"] == "['-1', '-1']"
