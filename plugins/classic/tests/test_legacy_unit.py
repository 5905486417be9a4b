"""Unit tests of the classic interface: parsing, batches, highlighting past the sheet limit, CLI and API forms."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import openpyxl
import pytest
from msprobe_classic import compare, compare_distributed
from msprobe_classic import xlsx as legacy_xlsx
from msprobe_classic.advisor import advice_for
from msprobe_classic.cli import is_classic
from msprobe_classic.highlight import RED, YELLOW, api_batches, find_rows
from msprobe_classic.matching import fuzzy_match, rename_api
from msprobe_classic.table import header
from msprobe_classic.tensor import ZERO_D_MSG, accuracy, metrics

from msprobe_core.cli.main import main
from msprobe_core.text.strtod import pandas_strtod
from tests.conftest import corpus_mark

C01 = "pytorch/c01/{side}/step0/rank0/{file}"


def test_pandas_strtod_matches_pandas_2_0():
    # pandas 2.0's precise_xstrtod keeps 17 digits and scales once: not always Python's float()
    assert pandas_strtod("1.8872188329696655") != float("1.8872188329696655")
    assert abs(pandas_strtod("1.8872188329696655") - 1.8872188329696655) < 1e-15
    assert pandas_strtod("57") == 57.0
    assert pandas_strtod("-0.25") == -0.25
    assert pandas_strtod("1e-05") == 1e-05
    assert pandas_strtod("inf") == float("inf")
    assert pandas_strtod("-inf") == float("-inf")
    for text in ("Nan", "None", "True", "[0, 1]", "", "1.5x"):
        assert pandas_strtod(text) is None


def test_api_batches_follow_833():
    keys = ["A.0.forward"] * 4 + ["B.0.forward"] * 2 + ["Module.m.M.parameters_grad"]
    states = ["input", "input", "parameters", "output", "output", "output", "parameters_grad"]
    assert api_batches(keys, states) == [(0, 3, 4, 4), (4, 5, 6, 6), (6, 7, 7, 7)]
    # a key without .forward./.backward. that is a substring of the current batch's key joins it
    assert api_batches(["Functional.x.0.forward", "x.0.forward"], ["input", "output"]) == [(0, 1, 2, 2)]


def test_rename_and_fuzzy_pairs_shifted_calls():
    assert rename_api("Tensor.__add__.3.forward.output.0") == "Tensor.__add__.forward.output.0"
    names_t = ["T.add.0.forward.input.0", "T.add.1.forward.input.0", "T.mul.0.forward.input.0"]
    names_g = ["T.add.0.forward.input.0", "T.mul.0.forward.input.0"]
    shapes = ["[2]"] * 3
    match = fuzzy_match(names_t, shapes, names_g, shapes[:2])
    assert list(zip(match.target, match.golden)) == [(0, 0), (1, -1), (2, 1)]


def test_metrics_messages():
    cells, msg = metrics(np.array(1.5, dtype=np.float32), np.array(1.0, dtype=np.float32))
    assert cells[0] == "unsupported" and cells[2] == 0.5 and msg == ZERO_D_MSG * 16
    cells, msg = metrics(np.array([2.0]), np.array([2.0]))
    assert cells[0] == "unsupported" and msg == "This is a 1-d tensor of length 1."
    cells, msg = metrics(np.zeros(3), np.array([1.0, 2.0, 3.0]))
    assert cells[0] == "Nan" and "All the data is Zero in npu dump data." in msg
    cells, msg = metrics(np.array([1.0, np.inf]), np.array([1.0, 2.0]))
    assert cells == ["N/A"] * 6
    assert accuracy(cells[0], cells[2]) == "No"
    assert accuracy("shape unmatched", "shape unmatched") == "Unmatched"
    assert accuracy("unsupported", "unsupported") == "None"
    assert accuracy(0.999999, 0.0001) == "Yes"


def test_advice_texts():
    assert advice_for("Torch.matmul.0.forward.output.0").startswith("This torch api may be uncertainty")
    assert advice_for("Functional.relu.0.forward.output.0").startswith("This is a forward API computation error")
    assert advice_for("Functional.relu.0.forward.input.0").startswith("1. Analyze the model")
    assert advice_for("Functional.relu.0.backward.input.0") == "Check whether the forward computation result is affected."


def _synthetic(n_apis: int) -> tuple[list[str], dict[str, list], list[str], list[str]]:
    """A statistics-mode classic table of ``n_apis`` APIs (an input and an output row each): columns, cells, keys, states."""
    cols = header("statistics", False)
    data = {c: [] for c in cols}
    keys, states = [], []
    for a in range(n_apis):
        for state, rel in (("input", "0.5%"), ("output", "70.0%")):
            row = {c: "" for c in cols}
            row.update({"NPU Name": f"Functional.f.{a}.forward.{state}.0", "Max diff": 0.5, "NPU max": 1.0,
                        "NPU min": -1.0, "Bench max": 1.0, "MaxRelativeErr": rel, "Requires_grad Consistent": True})
            for c in cols:
                data[c].append(row[c])
            keys.append(f"Functional.f.{a}.forward")
            states.append(state)
    return cols, data, keys, states


def test_highlight_continues_past_the_sheet_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(legacy_xlsx, "MAX_SHEET_ROWS", 7)
    cols, data, keys, states = _synthetic(10)
    hl = find_rows("statistics", data, keys, states)
    assert (hl.colour[1::2] == RED).all() and (hl.colour[0::2] == 0).all()
    rows = zip(*(data[c] for c in cols))
    path = legacy_xlsx.write_workbook(tmp_path / "r.xlsx", cols, rows, len(keys), hl.colour, True)
    wb = openpyxl.load_workbook(path)
    assert wb.sheetnames == ["part_0", "part_1", "part_2"]
    coloured = []
    for ws in wb.worksheets:
        for row in list(ws.iter_rows())[1:]:
            coloured.append({c.fill.fgColor.rgb for c in row if c.fill.fill_type})
    assert len(coloured) == 20
    assert all(c == {"FFFF0000"} for c in coloured[1::2]) and all(not c for c in coloured[0::2])


def test_yellow_rows_and_requires_grad(tmp_path):
    _, data, keys, states = _synthetic(1)
    data["MaxRelativeErr"][1] = "20.0%"
    data["Requires_grad Consistent"][0] = False
    hl = find_rows("statistics", data, keys, states)
    assert hl.colour.tolist() == [YELLOW, YELLOW]
    assert hl.messages[0] == ["requires_grad is inconsistent"]
    assert hl.messages[1] == ["The output's maximum relative error exceeds 0.1, while the input/parameter's is below 0.01"]


def test_is_classic():
    assert is_classic(["-f", "pytorch", "compare", "-i", "x.json"])
    assert is_classic(["compare", "-i", "x.json"])
    assert not is_classic(["compare", "-tp", "a", "-gp", "b"])


def _compare_json(tmp_path: Path, doc: dict) -> Path:
    p = tmp_path / "compare.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


@pytest.mark.parametrize(
    "doc,message",
    [
        ({"bench_path": "x"}, "Missing npu_path in input configuration file, please check!"),
        ({"npu_path": "x"}, "Missing bench_path in input configuration file, please check!"),
        ([1, 2], "input_param should be dict, please check!"),
    ],
)
def test_compare_json_errors(tmp_path, capsys, doc, message):
    cfg = _compare_json(tmp_path, doc)
    rc = main(["-f", "pytorch", "compare", "-i", str(cfg), "-o", str(tmp_path / "o")])
    assert rc != 0
    err = capsys.readouterr().err.strip()
    assert message in err
    assert err == f"msprobe: error: {cfg}: {message}"  # one line naming the compare.json


def test_mixed_file_and_dir_is_refused(corpora, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(corpora)
    cfg = _compare_json(tmp_path, {"npu_path": C01.format(side="target", file="dump.json"),
                                   "bench_path": "pytorch/c01/golden/step0"})
    assert main(["-f", "pytorch", "compare", "-i", str(cfg), "-o", str(tmp_path / "o")]) != 0
    err = capsys.readouterr().err.strip()
    assert "The npu_path and bench_path need to be of the same type." in err
    assert f"{cfg}: " in err and len(err.splitlines()) == 1
    assert f"npu_path {C01.format(side='target', file='dump.json')} is a file, " \
           "bench_path pytorch/c01/golden/step0 is a directory" in err


def test_unknown_framework(tmp_path, capsys):
    assert main(["-f", "tensorflow", "compare", "-i", "x.json"]) == 2


def test_api_positional_flags_and_bool_check(corpora, tmp_path, monkeypatch):
    monkeypatch.chdir(corpora)
    param = {"npu_json_path": C01.format(side="target", file="dump.json"),
             "bench_json_path": C01.format(side="golden", file="dump.json"),
             "stack_json_path": C01.format(side="target", file="stack.json"), "is_print_compare_log": False}
    files = compare(param, str(tmp_path), True, False, False)
    assert [p.name.split("_2")[0] for p in files] == ["compare_result"]
    ws = openpyxl.load_workbook(files[0]).worksheets[0]
    assert ws.title == "Sheet" and next(ws.iter_rows(values_only=True))[-1] == "NPU_Stack_Info"
    from msprobe_core.errors import UsageError

    with pytest.raises(UsageError, match="stack_mode which should be only bool type"):
        compare(param, str(tmp_path), stack_mode="yes")
    with pytest.raises(UsageError, match="suffix"):
        compare_distributed("pytorch/c09a/target/step0", "pytorch/c09a/golden/step0", str(tmp_path), suffix="_x")


@corpus_mark("mindspore/kernel_l2_bug_2steps/oracle/rank0_step0")
def test_kernel_form_of_compare_json(corpora, oracle_diff, tmp_path, monkeypatch):
    """``rank_id``/``step_id`` in compare.json: the kernel compare, named compare_result_{rank}_{step}_{ts}.xlsx."""
    from tests.conftest import agree

    case = corpora / "mindspore" / "kernel_l2_bug_2steps"
    monkeypatch.chdir(case)
    cfg = _compare_json(tmp_path, {"npu_path": "target", "bench_path": "golden", "rank_id": [0], "step_id": [0]})
    assert main(["-f", "mindspore", "compare", "-i", str(cfg), "-o", str(tmp_path / "o")]) == 0
    ours = list((tmp_path / "o").glob("compare_result_0_0_*.xlsx"))
    assert len(ours) == 1
    code, report = agree(oracle_diff, ours[0], case / "oracle/rank0_step0/compare_result_0_0.csv",
                         extra=("--strip", "^.*/(target|golden)/"))
    assert code == 0, report


@pytest.mark.parametrize(("flags", "named"), [
    (["-f"], "-f/--fuzzy_match does nothing"),
    (["-am", "-da"], "-am/--api_mapping and -da/--diff_analyze do nothing"),
])
def test_kernel_form_refuses_options_that_do_nothing(corpora, tmp_path, run_cli, flags, named):
    """A kernel compare.json with -f (or -am, -da): one line in the classic flags' names, exit 2, nothing written."""
    case = corpora / "mindspore" / "kernel_native_fp16"
    if not case.is_dir():
        pytest.skip("kernel corpus not present")
    cfg = _compare_json(tmp_path, {"npu_path": str(case / "target"), "bench_path": str(case / "golden"),
                                   "rank_id": [0], "step_id": [0]})
    out = tmp_path / "o"
    proc = run_cli("-f", "mindspore", "compare", "-i", cfg, "-o", out, *flags)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"msprobe: error: {case / 'target'}: {named} in a compare of kernel dumps, which "
                                   f"npu_path/bench_path are; leave {'it' if len(flags) == 1 else 'them'} out")
    assert not out.exists()


def test_dir_form_accepts_a_proc_dir(corpora, oracle_diff, tmp_path, monkeypatch):
    """8.3.3 refuses step dirs holding anything but rank*; ours also takes one proc<PID> dir per side."""
    import shutil

    from tests.conftest import agree

    for side, proc in (("target", "proc11"), ("golden", "proc22")):
        dst = tmp_path / side / "step0" / proc
        dst.mkdir(parents=True)
        for f in ("dump.json", "stack.json", "construct.json"):
            src = corpora / C01.format(side=side, file=f)
            if src.is_file():
                shutil.copy(src, dst / f)
    cfg = _compare_json(tmp_path, {"npu_path": str(tmp_path / "target/step0"),
                                   "bench_path": str(tmp_path / "golden/step0")})
    assert main(["-f", "pytorch", "compare", "-i", str(cfg), "-o", str(tmp_path / "o"), "-nhl"]) == 0
    ours = list((tmp_path / "o").glob("compare_result_proc11_*.xlsx"))
    assert len(ours) == 1 and list((tmp_path / "o").glob("advisor_proc11_*.txt"))
    # stack.json next to the NPU dump.json turns NPU_Stack_Info on, as -s with stack_path does
    code, report = agree(oracle_diff, ours[0], corpora / "legacy/c01/s/compare_result.xlsx")
    assert code == 0, report


def test_api_data_mapping_as_dict(corpora, oracle_diff, tmp_path, monkeypatch):
    """``data_mapping`` may be a dict (8.3.3 accepts dict or yaml path); no temporary file is left behind."""
    import yaml

    from tests.conftest import agree

    monkeypatch.chdir(corpora)
    mapping = yaml.safe_load((corpora / "legacy/c08/dm_hl/data_mapping.yaml").read_text(encoding="utf-8"))
    param = {"npu_json_path": "pytorch/c08/target/step0/rank0/dump.json",
             "bench_json_path": "pytorch/c08/golden/step0/rank0/dump.json",
             "stack_json_path": "pytorch/c08/target/step0/rank0/stack.json"}
    files = compare(param, str(tmp_path), data_mapping=mapping)
    assert sorted(p.name.split("_2")[0] for p in files) == ["advisor", "compare_result"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in files)
    code, report = agree(oracle_diff, files[0], corpora / "legacy/c08/dm_hl/compare_result.xlsx")
    assert code == 0, report


@pytest.mark.parametrize("order", [["-f", "-dm", "{dm}"], ["-dm", "{dm}", "--fuzzy_match"]])
def test_cli_data_mapping_with_fuzzy_match_is_refused(corpora, tmp_path, run_cli, order):
    """The seed documents say -dm does not support -f: one line naming the mapping file, exit 2, nothing written."""
    case = corpora / "legacy/c08/dm_hl"
    out = tmp_path / "out"
    dm = case / "data_mapping.yaml"
    proc = run_cli("-f", "pytorch", "compare", "-i", case / "compare.json", "-o", out,
                   *(a.format(dm=dm) for a in order), cwd=corpora)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        f"msprobe: error: {dm}: -dm/--data_mapping cannot be used together with -f/--fuzzy_match: fuzzy matching is "
        "not supported with a data mapping (its file says which rows pair); leave one of them out"), proc.stderr
    assert not out.exists()


def test_api_data_mapping_with_fuzzy_match_is_refused(corpora, tmp_path, monkeypatch):
    """The Python API refuses the pair too, before a dict mapping is written out as a yaml file."""
    from msprobe_core.errors import UsageError

    monkeypatch.chdir(corpora)
    param = {"npu_json_path": "pytorch/c08/target/step0/rank0/dump.json",
             "bench_json_path": "pytorch/c08/golden/step0/rank0/dump.json"}
    with pytest.raises(UsageError, match=r"^data_mapping cannot be used together with fuzzy_match=True"):
        compare(param, str(tmp_path / "out"), fuzzy_match=True, data_mapping={"a": "b"})
    assert not (tmp_path / "out").exists()


CLASSIC_HOOKS = ("msprobe_claim_command_line", "msprobe_load_dump", "msprobe_register_normalizers",
                 "msprobe_register_mappers", "msprobe_register_metrics", "msprobe_register_verdicts",
                 "msprobe_register_writers")


@pytest.mark.exercises_hooks(*CLASSIC_HOOKS)
def test_the_classic_command_line_runs_through_the_core_hooks(tmp_path):
    """msprobe-classic claims the command line and brings 8.3.3's stages as hooks of the core engine."""
    import os

    from msprobe_classic.table import ACCURACY

    from tests.dumps import api, tensor, write_dump
    from tests.plugin_session import traced_calls

    t = write_dump(tmp_path / "t", {"Functional.relu.0.forward": api([tensor()], [tensor(mx=3.0, norm=9.0)])})
    g = write_dump(tmp_path / "g", {"Functional.relu.0.forward": api([tensor()], [tensor()])})
    cfg = _compare_json(tmp_path, {"npu_path": str(t), "bench_path": str(g)})
    assert main(["-f", "pytorch", "compare", "-i", str(cfg), "-o", str(tmp_path / "o")]) == 0
    (xlsx,) = (tmp_path / "o").glob("compare_result_*.xlsx")
    (advisor,) = (tmp_path / "o").glob("advisor_*.txt")
    assert xlsx.name.split("_")[-1] == advisor.name.split("_")[-1].replace(".txt", ".xlsx")  # one timestamp
    rows = list(openpyxl.load_workbook(xlsx).worksheets[0].iter_rows(values_only=True))
    assert list(rows[0]) == header("statistics", False) and ACCURACY not in rows[0]
    result = rows[0].index("Result")
    assert [r[result] for r in rows[1:]] == [None, "Warning"]  # 8.3.3's verdict, not the core's pass/error
    assert advisor.read_text().splitlines()[1] == "Suspect Nodes: Functional.relu.0.forward.output.0"
    by_classic = {c["hook"] for c in traced_calls(Path(os.environ["MSPROBE_TRACE_HOOKS"])) if c["plugin"] == "classic"}
    assert set(CLASSIC_HOOKS) <= by_classic


@pytest.mark.parametrize("kernel", [False, True])
def test_without_the_xlsx_plugin_one_line_before_any_work(tmp_path, run_cli, kernel):
    """The classic workbook is the xlsx format's (the default plugin ``xlsx`` gives it: ``open_sheets``): with
    that plugin turned off, a classic compare says so in one line, exit 2, and writes nothing (a kernel
    compare.json too, whose results the core writes in that format)."""
    from tests.dumps import api, tensor, write_dump

    t = write_dump(tmp_path / "t", {"Functional.relu.0.forward": api([tensor()], [tensor(mx=3.0, norm=9.0)])})
    g = write_dump(tmp_path / "g", {"Functional.relu.0.forward": api([tensor()], [tensor()])})
    doc = {"npu_path": str(t.parent), "bench_path": str(g.parent), "rank_id": [0]} if kernel else \
        {"npu_path": str(t), "bench_path": str(g)}
    cfg = _compare_json(tmp_path, doc)
    if not kernel:  # with it: the workbook
        on = run_cli("-f", "pytorch", "compare", "-i", cfg, "-o", tmp_path / "on")
        assert on.returncode == 0 and len(list((tmp_path / "on").glob("compare_result_*.xlsx"))) == 1, on.stderr
    for off in (("-p", "no:xlsx"), ()):
        out = tmp_path / f"off{len(off)}"
        proc = run_cli(*off, "-f", "pytorch", "compare", "-i", cfg, "-o", out,
                       env={} if off else {"MSPROBE_DISABLE_PLUGINS": "xlsx"})
        assert proc.returncode == 2, proc.stderr
        # one line; the formats listed are the installed ones (a plugin installed beside may add its own)
        assert re.fullmatch(
            r"msprobe: error: the classic interface writes xlsx workbooks: unknown output format 'xlsx' \(installed: "
            r"classic-xlsx, csv(, [\w-]+)*; it is the default plugin 'xlsx''s, which is turned off by -p no:xlsx or "
            r"MSPROBE_DISABLE_PLUGINS\)", proc.stderr.rstrip("\n")), proc.stderr
        assert not out.exists()


def test_the_python_api_brings_its_plugin_into_a_host_without_it(corpora, tmp_path, monkeypatch):
    """A process-wide host built without msprobe-classic (autoload off): the API still compares the 8.3.3 way."""
    from msprobe_pytorch import plugin as pytorch_plugin

    from msprobe_core.host.registry import PluginHost, reset_host

    monkeypatch.chdir(corpora)
    param = {"npu_json_path": C01.format(side="target", file="dump.json"),
             "bench_json_path": C01.format(side="golden", file="dump.json")}
    reset_host(PluginHost(autoload=False, extra_plugins=[pytorch_plugin]))
    try:
        files = compare(param, str(tmp_path), auto_analyze=False)
    finally:
        reset_host(None)
    rows = list(openpyxl.load_workbook(files[0]).worksheets[0].iter_rows(values_only=True))
    assert list(rows[0]) == header("statistics", True)
