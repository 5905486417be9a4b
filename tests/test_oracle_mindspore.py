"""Differential tests: our compare of every MindSpore corpus case against msprobe 26.2.0's own output.

Every oracle variant under ``corpora/mindspore/<case>/oracle/`` (kernel dumps
excepted: ``tests/test_kernel_compare.py``) is re-run with the exact command of
its ``cmd.txt``, in-process, from the case folder, and every table it wrote
must agree cell for cell (``oracle_diff``); the ``data_mapping_{ts}.yaml`` that
``-lm`` writes must be byte-identical.

One documented difference (``docs/differences.md``, "Cross-framework dtype"):
msprobe flags every MindSpore-vs-PyTorch row as a dtype error because
``Float32`` != ``torch.float32``; we compare canonical dtype names. For such
tables ``Result``/``Err_message`` are left out of the cell diff and checked
separately: ours must equal msprobe's once its dtype message is removed (and
``Result`` recomputed from the remaining messages).

One crash msprobe has and we do not: ``am_yaml_docformat`` (the api_mapping.yaml
format of the user docs) must give exactly what ``am_yaml`` gives.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from msprobe_core.cli import main
from msprobe_core.verdicts import MSG_DTYPE

from .conftest import agree, corpora_dir

TIMESTAMP = re.compile(r"_\d{14}")
TABLE_SUFFIXES = (".csv", ".xlsx")
ORACLE_META = {"cmd.txt", "console.txt", "files.txt", "renames.txt"}


def _strip_ts(name: str) -> str:
    return TIMESTAMP.sub("", name)


def _cmd_args(oracle: Path) -> list[str]:
    """The arguments after ``msprobe`` of the oracle's command line."""
    line = next(x for x in (oracle / "cmd.txt").read_text().splitlines() if "msprobe" in x and not x.startswith("#"))
    argv = shlex.split(line)
    return argv[argv.index("msprobe") + 1 :]


def _with_output(args: list[str], out: Path) -> list[str]:
    args = list(args)
    i = args.index("-o")
    args[i + 1] = str(out)
    return args


def _variants():
    root = corpora_dir() / "mindspore"
    if not root.is_dir():
        return [pytest.param("-", "-", id="no-corpora")]
    out = []
    for case in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("kernel_")):
        for oracle in sorted(p for p in (case / "oracle").iterdir() if p.is_dir()):
            marks = ()
            if oracle.name == "diff_analyze":  # msprobe ignores -da for MindSpore and writes a plain compare
                marks = pytest.mark.skip(reason="-da analyses MindSpore dumps (docs/differences.md); "
                                                "see tests/test_diff_analyze.py")
            out.append(pytest.param(case.name, oracle.name, id=f"{case.name}-{oracle.name}", marks=marks))
    return out


def _is_cross_framework(case: Path, args: list[str]) -> bool:
    golden = case / args[args.index("-gp") + 1]
    dump = golden if golden.is_file() else next(golden.rglob("dump.json"))
    return json.loads(dump.read_text(encoding="utf-8")).get("framework") == "pytorch"


def _result_level(messages: list[str]) -> str:
    if any(m.startswith("error") for m in messages):
        return "error"
    if any(m.startswith("warning") for m in messages):
        return "warning"
    return "pass"


def _read_rows(path: Path) -> list[dict[str, str]]:
    import csv

    if path.suffix == ".xlsx":
        from openpyxl import load_workbook

        ws = load_workbook(path, read_only=True).worksheets[0]
        rows = list(ws.iter_rows(values_only=True))
        header = [str(h) for h in rows[0]]
        return [dict(zip(header, ("" if v is None else str(v) for v in r))) for r in rows[1:]]
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _same_dtype(npu: str, bench: str) -> bool:
    """MindSpore and torch spell the same dtype differently: ``Float32`` / ``torch.float32``."""
    return npu.lower() == bench.lower().removeprefix("torch.")


def assert_verdicts_without_dtype_message(ours: Path, ref: Path) -> int:
    """Our Result/Err_message equal msprobe's with its dtype message removed where both dtypes are the same.

    Returns how many rows lost the message (rows whose dtypes really differ, e.g.
    ``Int32`` vs ``torch.int64``, keep it).
    """
    mine, theirs = _read_rows(ours), _read_rows(ref)
    assert len(mine) == len(theirs)
    removed = 0
    bad = []
    for k, (a, b) in enumerate(zip(mine, theirs)):
        messages = json.loads(b["Err_message"])
        kept = messages
        if _same_dtype(b["NPU Dtype"], b["Bench Dtype"]):
            kept = [m for m in messages if m != MSG_DTYPE]
        expected_result = b["Result"] if kept == messages else _result_level(kept)
        removed += kept != messages
        if json.loads(a["Err_message"]) != kept or a["Result"] != expected_result:
            bad.append(f"row {k} {a['NPU Name']}: ours {a['Result']} {a['Err_message']}, "
                       f"expected {expected_result} {json.dumps(kept)}")
    assert not bad, "\n".join(bad[:10])
    return removed


def _run(case: Path, args: list[str], out: Path, monkeypatch) -> int:
    monkeypatch.chdir(case)
    return main(_with_output(args, out))


@pytest.mark.parametrize("case,variant", _variants())
def test_agrees_with_msprobe(corpora, oracle_diff, tmp_path, monkeypatch, case, variant):
    case_dir = corpora / "mindspore" / case
    oracle = case_dir / "oracle" / variant
    args = _cmd_args(oracle)
    out = tmp_path / "out"
    refs = {p.name: p for p in oracle.iterdir() if p.is_file() and p.name not in ORACLE_META}
    if not refs:
        # msprobe crashed; the only such variant is the documented api_mapping format (see module doc)
        assert variant == "am_yaml_docformat", f"{case}/{variant}: oracle has no output and no known reason"
        assert _run(case_dir, args, out, monkeypatch) == 0
        refs = {p.name: p for p in (case_dir / "oracle" / "am_yaml").glob("*.csv")}
    else:
        assert _run(case_dir, args, out, monkeypatch) == 0
    ours = {_strip_ts(p.name): p for p in out.rglob("*") if p.is_file()}
    assert sorted(ours) == sorted(refs)
    cross = _is_cross_framework(case_dir, args)
    for name, ref in refs.items():
        if ref.suffix == ".yaml":
            assert ours[name].read_text(encoding="utf-8") == ref.read_text(encoding="utf-8"), name
            continue
        assert ref.suffix in TABLE_SUFFIXES
        dtype_flagged = MSG_DTYPE in ref.read_text(encoding="utf-8", errors="replace") if ref.suffix == ".csv" else True
        if cross and dtype_flagged:
            code, report = agree(oracle_diff, ours[name], ref, extra=("--ignore", "Result", "Err_message"))
            assert code == 0, f"{case}/{variant}/{name} disagrees:\n{report}"
            assert assert_verdicts_without_dtype_message(ours[name], ref) > 0
        else:
            code, report = agree(oracle_diff, ours[name], ref)
            assert code == 0, f"{case}/{variant}/{name} disagrees:\n{report}"


def test_cross_framework_dtype_check_still_flags_different_dtypes(corpora, monkeypatch, tmp_path):
    """Only the spelling is forgiven: MindSpore Int32 vs torch.int64 is still a dtype error, Float32 vs torch.float32 is not."""
    case_dir = corpora / "mindspore" / "x_l0_stat_cm_bug"
    assert _run(case_dir, _cmd_args(case_dir / "oracle" / "cm_yaml"), tmp_path, monkeypatch) == 0
    (ours,) = tmp_path.glob("compare_result_*.csv")
    rows = {r["NPU Name"]: r for r in _read_rows(ours)}
    ids = rows["Cell.embed.Embedding.forward.0.input.0"]
    assert (ids["NPU Dtype"], ids["Bench Dtype"]) == ("Int32", "torch.int64")
    assert MSG_DTYPE in json.loads(ids["Err_message"])
    weight = rows["Cell.embed.Embedding.forward.0.parameters.weight"]
    assert (weight["NPU Dtype"], weight["Bench Dtype"]) == ("Float32", "torch.float32")
    assert MSG_DTYPE not in json.loads(weight["Err_message"])


@pytest.mark.parametrize("variant", ["am_builtin", "am_yaml"])
def test_am_with_pytorch_target_is_a_usage_error(corpora, tmp_path, capsys, variant):
    """msprobe: 'Argument -am is not supported in PyTorch framework' — one line, exit 2, nothing written."""
    case = corpora / "pytorch" / "c01"
    extra = ["-am"] if variant == "am_builtin" else ["-am", str(corpora / "mindspore" / "x_l1_stat_am" / "api_mapping.yaml")]
    rc = main(["compare", "-tp", str(case / "target/step0/rank0/dump.json"), "-gp",
               str(case / "golden/step0/rank0/dump.json"), "-o", str(tmp_path), *extra])
    assert rc == 2
    err = capsys.readouterr().err
    assert "-am is not supported in pytorch framework" in err
    assert "Traceback" not in err
    assert not list(tmp_path.iterdir())


def test_am_with_pytorch_step_dirs_is_a_usage_error_too(corpora, tmp_path, capsys):
    """msprobe silently ignores -am for PyTorch step directories; we refuse it there as for file pairs."""
    case = corpora / "pytorch" / "c01"
    rc = main(["compare", "-tp", str(case / "target/step0"), "-gp", str(case / "golden/step0"), "-o", str(tmp_path), "-am"])
    assert rc == 2
    assert "-am is not supported in pytorch framework" in capsys.readouterr().err
    assert not list(tmp_path.rglob("*.csv"))
