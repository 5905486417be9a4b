"""MindSpore static-graph kernel compare (plugins/kernel): oracle agreement and unit tests.

Oracle tests run the engine on every ``mindspore/kernel_*`` case of the corpora
(``corpora/`` of the shared folder: ``$MSPROBE_SHARED``, default ``../shared``) with the rank/step of
each oracle's ``cmd.txt`` and require 100 % agreement with msprobe 26.2.0's csv
through ``tools/oracle_diff.py`` (names compared after the dump root).
"""

from __future__ import annotations

import csv
import importlib.util
import io
import logging
import os
import re
import shlex
import shutil
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from msprobe_kernel.engine import (
    MSG_COS_NPU_ZERO,
    MSG_DTYPE,
    MSG_EMPTY,
    MSG_INF_NAN,
    MSG_NOT_NDARRAY,
    MSG_ONE_ELEMENT,
    MSG_READ_FAILED,
    MSG_SCALAR,
    MSG_SHAPE,
    NPY_COLUMNS,
    STATISTIC_COLUMNS,
    PairMetrics,
    compare_kernel_dumps,
)
from msprobe_kernel.layout import (
    parse_id_list,
    parse_kernel_file_name,
    rank_step_of,
    read_npy_records,
)

from msprobe_core.cli.main import main
from msprobe_core.default_plugins.plugins_command.listing import describe_plugins
from msprobe_core.errors import UsageError
from msprobe_core.host.registry import PluginHost
from msprobe_core.plugin import hookimpl
from msprobe_core.text.cells import numpy_float_text
from tests.conftest import corpora_dir, no_corpora_reason, no_oracle_diff_reason, oracle_diff_path
from tests.dumps import same_text_or_blas_rounding

CORPORA = corpora_dir()
ORACLE_DIFF = oracle_diff_path()
STRIP = r"^.*/(target|golden)/"
KERNEL_CASES = sorted(CORPORA.glob("mindspore/kernel_*")) if CORPORA.is_dir() else []


def _oracle_variants() -> list[tuple[Path, Path]]:
    return [(case, v) for case in KERNEL_CASES for v in sorted((case / "oracle").iterdir()) if v.is_dir()]


def _load_oracle_diff():
    if not ORACLE_DIFF.is_file():
        pytest.skip(no_oracle_diff_reason())
    spec = importlib.util.spec_from_file_location("oracle_diff", ORACLE_DIFF)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _parse_cmd(variant: Path) -> dict[str, str | None]:
    """-tp/-gp/--rank/--step of the msprobe command in cmd.txt (a flag without value -> "")."""
    line = next(ln for ln in (variant / "cmd.txt").read_text().splitlines() if "msprobe compare" in ln)
    tokens = shlex.split(line)
    opts: dict[str, str | None] = {"-tp": None, "-gp": None, "--rank": None, "--step": None}
    for i, tok in enumerate(tokens):
        if tok in opts:
            nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
            opts[tok] = "" if nxt.startswith("-") else nxt
    return opts


def _oracle_files(variant: Path) -> dict[tuple[int, int], Path]:
    files = {}
    for p in variant.glob("compare_result_*.csv"):
        m = re.fullmatch(r"compare_result_(\d+)_(\d+)\.csv", p.name)
        if m:
            files[(int(m.group(1)), int(m.group(2)))] = p
    return files


def _run_variant(case: Path, variant: Path, out: Path, target: Path | None = None, golden: Path | None = None,
                 leave_out: tuple[str, ...] = ()):
    opts = _parse_cmd(variant)
    tp = target or case / str(opts["-tp"])
    gp = golden or case / str(opts["-gp"])
    args = ["compare", "-tp", str(tp), "-gp", str(gp), "-o", str(out)]
    for flag in ("--rank", "--step"):
        if opts[flag] is not None and flag not in leave_out:
            args += [flag, opts[flag]] if opts[flag] else [flag]
    assert main(args) == 0
    found = {}
    for p in out.glob("compare_result_*.csv"):
        m = re.fullmatch(r"compare_result_(\d+)_(\d+)_\d{14}\.csv", p.name)
        assert m, p.name
        found[(int(m.group(1)), int(m.group(2)))] = p
    return found


def _assert_agrees(ours: dict[tuple[int, int], Path], variant: Path) -> None:
    oracle_diff = _load_oracle_diff()
    expected = _oracle_files(variant)
    assert sorted(ours) == sorted(expected), f"(rank, step) tables: ours {sorted(ours)}, oracle {sorted(expected)}"
    for key, ref in expected.items():
        buf = io.StringIO()
        with redirect_stdout(buf):
            rc = oracle_diff.main([str(ours[key]), str(ref), "--strip", STRIP])
        report = buf.getvalue()
        assert rc == 0, f"{variant.parent.parent.name}/{variant.name} rank/step {key}:\n{report}"
        assert "rows " in report and "(100.00%)" in report


@pytest.mark.skipif(not KERNEL_CASES, reason=no_corpora_reason() if not CORPORA.is_dir() else f"no kernel cases under {CORPORA}")
@pytest.mark.parametrize(
    ("case", "variant"),
    [pytest.param(c, v, id=f"{c.name}/{v.name}") for c, v in _oracle_variants()],
)
def test_oracle_agreement(case: Path, variant: Path, tmp_path: Path) -> None:
    """Our table agrees 100 % with msprobe's, cell by cell (numbers within rtol 1e-5)."""
    _assert_agrees(_run_variant(case, variant, tmp_path), variant)


@pytest.mark.skipif(not KERNEL_CASES, reason=no_corpora_reason() if not CORPORA.is_dir() else f"no kernel cases under {CORPORA}")
@pytest.mark.parametrize(
    ("case", "variant"),
    [pytest.param(c, v, id=f"{c.name}/{v.name}") for c, v in _oracle_variants()],
)
def test_oracle_text_identical(case: Path, variant: Path, tmp_path: Path) -> None:
    """Stricter: every cell has msprobe's exact text (float spelling, quoting of multi-line messages)."""
    ours = _run_variant(case, variant, tmp_path)
    strip = re.compile(STRIP)
    for key, ref in _oracle_files(variant).items():
        with ours[key].open(newline="") as fa, ref.open(newline="") as fb:
            a = [[strip.sub("", c) for c in row] for row in csv.reader(fa)]
            b = [[strip.sub("", c) for c in row] for row in csv.reader(fb)]
        diffs = [  # BLAS-summed cells: msprobe's own last digits depend on the CPU it ran on (tests/dumps.py)
            (i, b[0][j], x, y) for i, (ra, rb) in enumerate(zip(a, b)) for j, (x, y) in enumerate(zip(ra, rb))
            if not same_text_or_blas_rounding(b[0][j], x, y)
        ]
        assert len(a) == len(b)
        assert not diffs, diffs[:5]


def _selects_everything(case: Path, variant: Path) -> bool:
    """Whether the variant's ``--rank``/``--step`` pick every rank and step of the case (no ``--step``)."""
    opts = _parse_cmd(variant)
    ranks = {int(d.name[5:]) for d in (case / str(opts["-tp"])).iterdir() if re.fullmatch(r"rank_\d+", d.name)}
    return opts["--step"] is None and set(parse_id_list(opts["--rank"] or "")) in (set(), ranks)


@pytest.mark.skipif(not KERNEL_CASES, reason=no_corpora_reason() if not CORPORA.is_dir() else f"no kernel cases under {CORPORA}")
@pytest.mark.parametrize(
    ("case", "variant"),
    [pytest.param(c, v, id=f"{c.name}/{v.name}") for c, v in _oracle_variants() if _selects_everything(c, v)],
)
def test_oracle_agreement_without_rank(case: Path, variant: Path, tmp_path: Path) -> None:
    """Kernel dump roots are recognised without ``--rank``: left out, it means every rank (msprobe needs it)."""
    _assert_agrees(_run_variant(case, variant, tmp_path, leave_out=("--rank",)), variant)


@pytest.mark.skipif(not KERNEL_CASES, reason=no_corpora_reason() if not CORPORA.is_dir() else f"no kernel cases under {CORPORA}")
def test_dotted_directory_names(tmp_path: Path) -> None:
    """msprobe drops every file below a directory with a dot in its name; we must not."""
    case = min(KERNEL_CASES, key=lambda c: sum(f.stat().st_size for f in c.rglob("*.npy")))
    variant = _oracle_variants()[[c for c, _ in _oracle_variants()].index(case)][1]
    root = tmp_path / "run.v1.0" / "dump.2026"
    for side in ("target", "golden"):
        shutil.copytree(case / side, root / side)
    ours = _run_variant(case, variant, tmp_path / "out.d", target=root / "target", golden=root / "golden")
    _assert_agrees(ours, variant)


# --------------------------------------------------------------------------------------------------
# file names

NAME = "MatMul.Default_network-MatMul-op1.5.2.1795984718724446.output.0.DefaultFormat.Float32.npy"


def test_parse_standard_name() -> None:
    p = parse_kernel_file_name(NAME)
    assert p is not None
    assert (p.op_type, p.op_name, p.task_id, p.stream_id) == ("MatMul", "Default_network-MatMul-op1", "5", "2")
    assert (p.timestamp, p.io, p.slot, p.format, p.dtype) == (
        1795984718724446,
        "output",
        "0",
        "DefaultFormat",
        "Float32",
    )
    assert p.compare_key == "Default_network-MatMul-op1.5.output.0"


@pytest.mark.parametrize(
    ("name", "op_name", "io", "slot", "fmt", "dtype"),
    [
        (
            "Add.Default.net.v1.Add-op3.0.0.17.input.1.NCHW.Float16.npy",
            "Default.net.v1.Add-op3",
            "input",
            "1",
            "NCHW",
            "Float16",
        ),
        ("Add.a.output.b.1.2.3.input.0.NCHW.Float16.npy", "a.output.b", "input", "0", "NCHW", "Float16"),
        ("Add.x.9.1.2.3.output.0.ND.Int64.npy", "x.9", "output", "0", "ND", "Int64"),
        ("Conv2D.Default_conv-op1.5.2.17000.input.1.NC1HWC0.npy", "Default_conv-op1", "input", "1", "NC1HWC0", None),
        (
            "Split.s-op0.0.0.99.output.0.2.DefaultFormat.Float32.npy",
            "s-op0",
            "output.0",
            "2",
            "DefaultFormat",
            "Float32",
        ),
    ],
)
def test_parse_dotted_and_variant_names(
    name: str, op_name: str, io: str, slot: str, fmt: str, dtype: str | None
) -> None:
    p = parse_kernel_file_name(name)
    assert p is not None
    assert (p.op_name, p.io, p.slot, p.format, p.dtype) == (op_name, io, slot, fmt, dtype)


@pytest.mark.parametrize(
    "name",
    [
        "MatMul.op1.5.2.17.output.0.DefaultFormat.Float32.pt",  # wrong suffix
        "MatMul.op1.5.2.17.output.DefaultFormat.Float32.npy",  # no slot
        "MatMul.op1.x.2.17.output.0.DefaultFormat.Float32.npy",  # task id not an integer
        "MatMul.5.2.17.output.0.DefaultFormat.Float32.npy",  # no op name
        "MatMul.op1.5.2.17.0.DefaultFormat.Float32.npy",  # no input/output
        "MatMul..op1.5.2.17.output.0.DefaultFormat.Float32.npy",  # empty part
        "MatMul.op1.5.2.17.output.0.A.B.C.npy",  # too many trailing parts
        "statistic.npy",
        "sub/dir.op1.5.2.17.output.0.DefaultFormat.Float32.npy",
    ],
)
def test_parse_malformed_names(name: str) -> None:
    assert parse_kernel_file_name(name) is None


def test_malformed_files_skipped_with_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    np.save(tmp_path / NAME, np.ones(3, np.float32))
    np.save(tmp_path / "garbage.npy", np.ones(3, np.float32))
    with caplog.at_level(logging.WARNING, logger="msprobe_kernel"):
        records = read_npy_records(tmp_path)
    assert [Path(r.name).name for r in records] == [NAME]
    assert any("garbage.npy" in m for m in caplog.messages)


def test_mapping_csv_is_applied(tmp_path: Path) -> None:
    np.save(tmp_path / "1.npy", np.ones(3, np.float32))
    (tmp_path / "mapping.csv").write_text(f"File Name,Origin Name\n1.npy,{NAME}\n")
    (record,) = read_npy_records(tmp_path)
    assert record.name == str(tmp_path / "1.npy")
    assert record.compare_key == "Default_network-MatMul-op1.5.output.0"


# --------------------------------------------------------------------------------------------------
# --rank / --step and directories


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, []),
        ("", []),
        ("  ", []),
        ("1,2,3", [1, 2, 3]),
        (" 3 , 1 ", [1, 3]),
        ("1,,2,", [1, 2]),
        ("0", [0]),
        ([2, 1, 2], [1, 2]),
    ],
)
def test_parse_id_list(value: object, expected: list[int]) -> None:
    assert parse_id_list(value) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["a", "1,b", "-1", "1.5", [-1]])
def test_parse_id_list_rejects(value: object) -> None:
    with pytest.raises(UsageError):
        parse_id_list(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/x/rank_3/Net/0/7", (3, 7)),
        ("/x/a.b/rank_0/Net.v1/1/2", (0, 2)),
        ("/home/rank_tests/d/2/Net/0/5", (2, 5)),
        ("/x/2/Net/0/5", (2, 5)),
        ("/x/rank_0/execution_order", None),
        ("/x/rank_0/Net/0/last", None),
    ],
)
def test_rank_step_of(path: str, expected: tuple[int, int] | None) -> None:
    assert rank_step_of(path) == expected


def _kernel_name(op: str, ts: int, slot: int = 0, dtype: str = "Float32", io: str = "output") -> str:
    return f"Op.{op}.0.0.{ts}.{io}.{slot}.DefaultFormat.{dtype}.npy"


def _make_dump(root: Path, ranks=(0,), steps=(0,), arrays=None) -> None:
    arrays = arrays or {"Default_a-op0": np.arange(4, dtype=np.float32)}
    for r in ranks:
        for s in steps:
            d = root / f"rank_{r}" / "Net" / "0" / str(s)
            d.mkdir(parents=True)
            for i, (op, arr) in enumerate(arrays.items()):
                np.save(d / _kernel_name(op, 100 + i), arr)


def test_rank_without_value_means_all(tmp_path: Path) -> None:
    for side in ("t", "g"):
        _make_dump(tmp_path / side, ranks=(0, 1), steps=(0, 1))
    everything = compare_kernel_dumps(tmp_path / "t", tmp_path / "g", "", None)
    assert [(r, s) for r, s, _ in everything] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    some = compare_kernel_dumps(tmp_path / "t", tmp_path / "g", "1", "0")
    assert [(r, s) for r, s, _ in some] == [(1, 0)]
    assert compare_kernel_dumps(tmp_path / "t", tmp_path / "g", [0], "1,7")[0][:2] == (0, 1)


def _cli_tables(out: Path) -> list[tuple[int, int]]:
    found = []
    for p in sorted(out.iterdir()):
        m = re.fullmatch(r"compare_result_(\d+)_(\d+)_\d{14}\.csv", p.name)
        assert m, p.name
        found.append((int(m.group(1)), int(m.group(2))))
    return sorted(found)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ([], [(0, 0), (0, 1), (1, 0), (1, 1)]),
        (["--rank"], [(0, 0), (0, 1), (1, 0), (1, 1)]),
        (["--step", "1"], [(0, 1), (1, 1)]),
        (["--rank", "1"], [(1, 0), (1, 1)]),
        (["--rank", "0", "--step", "0,1"], [(0, 0), (0, 1)]),
    ],
)
def test_cli_rank_and_step_default_to_all(tmp_path: Path, flags: list[str], expected: list[tuple[int, int]]) -> None:
    """``--rank``/``--step`` left out mean every rank/step; either works alone (seed: default empty = all)."""
    for side in ("t", "g"):
        _make_dump(tmp_path / side, ranks=(0, 1), steps=(0, 1))
    out = tmp_path / "out"
    assert main(["compare", "-tp", str(tmp_path / "t"), "-gp", str(tmp_path / "g"), "-o", str(out), "-q", *flags]) == 0
    assert _cli_tables(out) == expected


def test_cli_a_rank_dir_is_a_kernel_dump_root(tmp_path: Path) -> None:
    for side in ("t", "g"):
        _make_dump(tmp_path / side, ranks=(0, 1), steps=(0,))
    out = tmp_path / "out"
    assert main(["compare", "-tp", str(tmp_path / "t" / "rank_1"), "-gp", str(tmp_path / "g" / "rank_1"),
                 "-o", str(out), "-q"]) == 0
    assert _cli_tables(out) == [(1, 0)]


def test_cli_selection_found_nowhere_says_what_is_there(tmp_path: Path, capsys) -> None:
    for side in ("t", "g"):
        _make_dump(tmp_path / side, ranks=(0,), steps=(0, 1))
    assert main(["compare", "-tp", str(tmp_path / "t"), "-gp", str(tmp_path / "g"), "-o", str(tmp_path / "o"),
                 "--step", "7"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("msprobe: error: ") and "\n" not in err
    assert "for --step 7" in err and "target: rank 0 steps 0,1; golden: rank 0 steps 0,1" in err


REPO = Path(__file__).resolve().parents[3]
PT_STEP = str(REPO / "examples" / "pytorch_stats" / "{side}" / "step0")


@pytest.mark.parametrize(
    ("flags", "paths", "fragment"),
    [
        (["--rank", "1"], "dirs", "--rank is an option of MindSpore kernel dump compares"),
        (["--rank"], "dirs", "--rank is an option of MindSpore kernel dump compares"),
        (["--step", "1"], "dirs", "--step selects the step<N> directories of two dump roots (or the steps a "
                                  "dump format's plugin reads) and -tp holds no step<N> directory; leave it out (this is one step "
                                  "directory)"),
        (["--rank", "0", "--step", "1"], "dirs", "--rank is an option of MindSpore kernel dump compares"),
        (["--rank", "1"], "files", "(a pair of files is one compare)"),
    ],
)
def test_cli_kernel_options_on_a_pytorch_dump_are_explained(tmp_path: Path, capsys, flags, paths, fragment) -> None:
    tp, gp = (PT_STEP.format(side=s) for s in ("target", "golden"))
    if paths == "files":
        tp, gp = f"{tp}/rank0/dump.json", f"{gp}/rank0/dump.json"
    out = tmp_path / "o"
    assert main(["compare", "-tp", tp, "-gp", gp, "-o", str(out), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("msprobe: error: ") and "\n" not in err, err
    # --step is the core's (it also selects step<N> directories): its message says what it selects
    assert fragment in err and ("this is not a kernel dump" in err or flags == ["--step", "1"]), err
    assert not out.exists() or not any(out.iterdir())


def test_cli_kernel_dump_against_another_layout_is_refused(tmp_path: Path, capsys) -> None:
    _make_dump(tmp_path / "t")
    assert main(["compare", "-tp", str(tmp_path / "t"), "-gp", PT_STEP.format(side="golden"),
                 "-o", str(tmp_path / "o")]) == 2
    assert "-tp is a kernel dump (rank_<r>/<net>/<graph>/<step>/) but -gp is not" in capsys.readouterr().err


def test_kernel_dump_without_the_plugin_names_it(tmp_path: Path, run_cli) -> None:
    for side in ("t", "g"):
        _make_dump(tmp_path / side)
    proc = run_cli("compare", "-tp", tmp_path / "t", "-gp", tmp_path / "g", "-o", tmp_path / "o",
                   env={"MSPROBE_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert proc.returncode == 2, proc.stderr
    # installed, only not loaded: the hint says so rather than asking for an install
    not_loaded = "(the msprobe-kernel plugin is installed but was not loaded; "
    assert proc.stderr.count("\n") == 1 and "this is a MindSpore kernel dump (rank_<r> directories), which no " \
        "loaded plugin compares " + not_loaded in proc.stderr, proc.stderr
    # --rank is the kernel plugin's option: without the plugin there is no such option
    proc = run_cli("compare", "-tp", tmp_path / "t", "-gp", tmp_path / "g", "-o", tmp_path / "o", "--rank", "0",
                   env={"MSPROBE_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("msprobe: error: no such option '--rank' " + not_loaded), proc.stderr


def test_one_sided_rank_step_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _make_dump(tmp_path / "t", ranks=(0, 1))
    _make_dump(tmp_path / "g", ranks=(0,))
    with caplog.at_level(logging.WARNING, logger="msprobe_kernel"):
        results = compare_kernel_dumps(tmp_path / "t", tmp_path / "g", "")
    assert [(r, s) for r, s, _ in results] == [(0, 0)]
    assert any("only in the target" in m for m in caplog.messages)


# --------------------------------------------------------------------------------------------------
# rows


def _one_table(tmp_path: Path, npu: dict[str, np.ndarray], bench: dict[str, np.ndarray]):
    _make_dump(tmp_path / "t", arrays=npu)
    _make_dump(tmp_path / "g", arrays=bench)
    ((_, _, df),) = compare_kernel_dumps(tmp_path / "t", tmp_path / "g", "0", "0")
    assert list(df.columns) == NPY_COLUMNS
    return df


def _row(df, op: str):
    hits = df[df["NPU Name"].str.contains(op, regex=False) | df["Bench Name"].str.contains(op, regex=False)]
    assert len(hits) == 1
    return hits.iloc[0]


def test_row_checks_and_messages(tmp_path: Path) -> None:
    f32 = np.float32
    npu = {
        "Default_scalar-op0": np.array(3, f32),
        "Default_one-op0": np.array([2], f32),
        "Default_dtype-op0": np.ones(4, np.float16),
        "Default_shape-op0": np.ones((2, 2), f32),
        "Default_infnan-op0": np.array([1, np.inf, 2], f32),
        "Default_infok-op0": np.array([1, np.inf, np.nan, 4], f32),
        "Default_zero-op0": np.zeros(4, f32),
        "Default_empty-op0": np.zeros((0, 3), f32),
        "Default_only-npu-op0": np.ones(2, f32),
        "Default_same-op0": np.linspace(-1, 1, 8, dtype=f32),
        "Default_far-op0": np.array([1, 2, 3, 4], f32),
    }
    bench = {k: v.copy() for k, v in npu.items() if "only-npu" not in k}
    bench["Default_dtype-op0"] = np.ones(4, f32)
    bench["Default_shape-op0"] = np.ones(4, f32)
    bench["Default_infnan-op0"] = np.array([1, 2, np.inf], f32)
    bench["Default_zero-op0"] = np.ones(4, f32) * 0.5
    bench["Default_far-op0"] = np.array([4, 3, 2, 1], f32)
    df = _one_table(tmp_path, npu, bench)

    r = _row(df, "scalar")
    assert (r["NPU Tensor Shape"], r["Err_message"], r["Cosine"], r["Accuracy Reached or Not"]) == (
        "[]",
        MSG_SCALAR,
        "",
        "",
    )
    r = _row(df, "Default_one-")
    assert r["NPU Tensor Shape"] == "[1,]" and r["Cosine"] == "unsupported" and r["Err_message"] == MSG_ONE_ELEMENT
    assert r["Accuracy Reached or Not"] == "None" and r["MaxAbsErr"] == 0.0
    assert _row(df, "dtype")["Err_message"] == MSG_DTYPE
    assert _row(df, "shape")["Err_message"] == MSG_SHAPE
    assert _row(df, "infnan")["Err_message"] == MSG_INF_NAN
    r = _row(df, "infok")
    assert r["Err_message"] == "" and r["Cosine"] == 1.0 and r["Accuracy Reached or Not"] == "Yes"
    r = _row(df, "zero")
    assert r["Cosine"] == "Nan" and r["Err_message"] == MSG_COS_NPU_ZERO
    assert r["Accuracy Reached or Not"] == "Yes"  # msprobe quirk kept: float("Nan") passes every threshold
    assert _row(df, "empty")["Err_message"] == MSG_EMPTY
    r = _row(df, "only-npu")
    assert r["Bench Name"] == "" and r["Bench Dtype"] == "" and r["Err_message"] == MSG_NOT_NDARRAY
    r = _row(df, "same")
    assert (r["Cosine"], r["EucDist"], r["MaxAbsErr"], r["Accuracy Reached or Not"]) == (1.0, 0.0, 0.0, "Yes")
    assert _row(df, "far")["Accuracy Reached or Not"] == "No"
    assert all(Path(n).is_absolute() for n in df["NPU Name"] if n)


def test_rows_sorted_by_key_and_paired_by_time(tmp_path: Path) -> None:
    for side in ("t", "g"):
        d = tmp_path / side / "rank_0" / "Net" / "0" / "0"
        d.mkdir(parents=True)
        for ts, val in ((300, 3.0), (100, 1.0), (200, 2.0)):  # same key three times
            np.save(d / f"Op.Default_b-op1.0.0.{ts}.output.0.DefaultFormat.Float32.npy", np.full(3, val, np.float32))
        np.save(d / "Op.Default_a-op10.0.0.50.output.0.DefaultFormat.Float32.npy", np.ones(2, np.float32))
        np.save(d / "Op.Default_a-op1.0.0.60.output.0.DefaultFormat.Float32.npy", np.ones(2, np.float32))
    ((_, _, df),) = compare_kernel_dumps(tmp_path / "t", tmp_path / "g", "0", "0")
    names = [Path(n).name.split(".")[1] + "@" + Path(n).name.split(".")[4] for n in df["NPU Name"]]
    assert names == [
        "Default_a-op1@60",
        "Default_a-op10@50",
        "Default_b-op1@100",
        "Default_b-op1@200",
        "Default_b-op1@300",
    ]
    assert [Path(n).name.split(".")[4] for n in df["Bench Name"]][2:] == ["100", "200", "300"]


def test_file_outside_root_refused(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    outside = tmp_path / "outside.npy"
    np.save(outside, np.ones(3, np.float32))
    for side in ("t", "g"):
        _make_dump(tmp_path / side)
    link = next((tmp_path / "t").rglob("*.npy"))
    link.unlink()
    link.symlink_to(outside)
    with caplog.at_level(logging.WARNING, logger="msprobe_kernel"):
        ((_, _, df),) = compare_kernel_dumps(tmp_path / "t", tmp_path / "g", "0", "0")
    assert df.iloc[0]["Err_message"] == MSG_READ_FAILED and df.iloc[0]["NPU Dtype"] == ""
    assert any("outside the dump root" in m for m in caplog.messages)


def test_pickled_npy_not_loaded(tmp_path: Path) -> None:
    for side in ("t", "g"):
        _make_dump(tmp_path / side)
    target = next((tmp_path / "t").rglob("*.npy"))
    np.save(target, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    ((_, _, df),) = compare_kernel_dumps(tmp_path / "t", tmp_path / "g", "0", "0")
    assert df.iloc[0]["Err_message"] == MSG_READ_FAILED


# --------------------------------------------------------------------------------------------------
# statistics mode (statistic.csv), spec example of compare-modes.md §5

STAT_HEADER = "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,Min Value,Avg Value,L2Norm Value\n"


def test_statistic_mode_spec_example(tmp_path: Path) -> None:
    for side, mx in (("t", 5), ("g", 4)):
        d = tmp_path / side / "rank_0" / "Net" / "0" / "0"
        d.mkdir(parents=True)
        (d / "statistic.csv").write_text(
            STAT_HEADER + f'MatMul,Default/network-MatMul-op1,5,2,17000,input,0,24,float32,"(2,3)",{mx},0,null,True\n'
        )
    ((_, _, df),) = compare_kernel_dumps(tmp_path / "t", tmp_path / "g", "0", "0")
    assert list(df.columns) == STATISTIC_COLUMNS
    r = df.iloc[0]
    assert r["NPU Name"] == "Default/network-MatMul-op1.5.input.0" and r["NPU Tensor Shape"] == "[2,3]"
    assert (float(r["NPU mean"]), float(r["NPU l2norm"]), float(r["Max diff"])) == (0.0, 1.0, 1.0)
    assert (r["MaxRelativeErr"], r["MinRelativeErr"], r["Accuracy Reached or Not"]) == ("25.0%", "N/A", "Yes")
    assert r["NPU CSV File"].endswith("statistic.csv") and Path(r["NPU CSV File"]).is_absolute()


# --------------------------------------------------------------------------------------------------
# output


def test_cli_writes_atomically_and_names_by_rank_and_step(tmp_path: Path) -> None:
    npu = {"Default_a-op0": np.array([1, np.inf], np.float32)}
    _one_table(tmp_path, npu, {k: v.copy() for k, v in npu.items()})
    out = tmp_path / "out" / "nested"
    assert main(["compare", "-tp", str(tmp_path / "t"), "-gp", str(tmp_path / "g"), "--rank", "0", "-o", str(out)]) == 0
    (path,) = list(out.iterdir())  # no temp file left behind
    assert re.fullmatch(r"compare_result_0_\d+_\d{14}\.csv", path.name)
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[0]["NPU max"] == " inf"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (np.float16(36860), "36860.0"),
        (np.float16(3.02), "3.02"),
        (np.float32(3.0211627), "3.0211627"),
        (np.float32(7.450581e-09), "7.450581e-09"),
        (np.float32(1e20), "1e+20"),
        (np.float32(12345678), "12345678.0"),
        (np.float64(0.1), "0.1"),
        (0.1071651428937912, "0.1071651428937912"),
    ],
)
def test_float_text(value: object, text: str) -> None:
    assert numpy_float_text(value) == text  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# the plugin goes through the ordinary hooks


def test_kernel_compare_is_expressed_through_the_hooks(tmp_path: Path) -> None:
    from msprobe_core.host.registry import get_host
    from msprobe_core.host.specs import CompareJob
    from msprobe_core.pipeline.job import compare_job

    host = get_host()
    kernel = next(d for d in describe_plugins(host) if d["name"] == "kernel")
    assert kernel["hooks"] == ["msprobe_discover_jobs", "msprobe_load_dump", "msprobe_register_hierarchies",
                               "msprobe_register_mappers", "msprobe_register_metrics", "msprobe_register_options"]
    assert "runner" not in CompareJob.__dataclass_fields__
    assert host.metrics["kernel"].whole_table and [m.name for m in host.mappers if "kernel" in m.kinds] == [
        "kernel-records"]
    npu = {"Default_a-op0": np.array([1, 2], np.float32), "Default_b-op1": np.array([3, 4], np.float32)}
    bench = {"Default_a-op0": np.array([1, 2.5], np.float32), "Default_c-op2": np.array([5], np.float32)}
    df = _one_table(tmp_path, npu, bench)
    options = host.compare_options(rank="0")
    (job,) = host.discover_jobs(tmp_path / "t", tmp_path / "g", options)
    table = compare_job(job, options, host)
    assert table is not None and table.mode == "kernel" and table.columns == NPY_COLUMNS
    assert {c: list(table.data[c]) for c in table.columns} == {c: df[c].tolist() for c in df.columns}
    assert table.data["NPU Name"][-1] == "" and table.data["Bench Name"][-1].endswith(".npy")  # golden-only row


def _csv_rows(out: Path) -> list[list[str]]:
    """The rows of the tables in ``out``, by (rank, step), each header once."""
    rows: list[list[str]] = []
    for path in sorted(out.iterdir()):
        with path.open(newline="") as fh:
            header, *body = list(csv.reader(fh))
        rows += ([header] if not rows else []) + body
    return rows


@pytest.mark.exercises_hooks("msprobe_compare_tensors")
def test_tensor_metrics_turned_off_writes_the_kernel_table_with_na_metric_cells_and_one_warning(
        tmp_path: Path, run_cli) -> None:
    """The six metrics of a kernel pair are the default plugin ``tensor_metrics``'s (``msprobe_compare_tensors``):
    turned off, the tables are still written, the same but for those cells (``N/A``) and the verdict that judges
    them (``None``: not judged), and each table says once why (as a tensor-mode table does)."""
    npu = {"Default_a-op0": np.array([1, 2, 3], np.float32), "Default_b-op1": np.array([3, 4], np.float32),
           "Default_c-op2": np.array([5, 6], np.float32)}
    bench = {"Default_a-op0": np.array([1, 2.5, 3], np.float32), "Default_b-op1": np.array([3, 4], np.float32),
             "Default_d-op3": np.array([7], np.float32)}
    _make_dump(tmp_path / "t", ranks=(0, 1), arrays=npu)
    _make_dump(tmp_path / "g", ranks=(0, 1), arrays=bench)
    sides = ("-tp", tmp_path / "t", "-gp", tmp_path / "g", "--rank", "0,1")
    on = run_cli("compare", *sides, "-o", tmp_path / "on")
    off = run_cli("-p", "no:tensor_metrics", "compare", *sides, "-o", tmp_path / "off")
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    header, *computed = _csv_rows(tmp_path / "on")
    off_header, *left = _csv_rows(tmp_path / "off")
    assert off_header == header and len(left) == len(computed) == 8
    metrics = [header.index(name) for name in ("Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr",
                                               "One Thousandth Err Ratio", "Five Thousandths Err Ratio")]
    verdict = header.index("Accuracy Reached or Not")
    compared = [k for k, row in enumerate(computed) if row[verdict] in ("Yes", "No")]
    assert len(compared) == 4 and computed[compared[0]][metrics[0]] not in ("", "N/A")  # on: computed and judged
    assert [[left[k][m] for m in metrics] + [left[k][verdict]] for k in compared] == [["N/A"] * 6 + ["None"]] * 4
    kept = [k for k in range(len(header)) if k not in [*metrics, verdict]]
    assert [[row[k] for k in kept] for row in left] == [[row[k] for k in kept] for row in computed]
    assert [row[verdict] for k, row in enumerate(left) if k not in compared] == \
        [row[verdict] for k, row in enumerate(computed) if k not in compared]  # unpaired rows: as before
    warned = [line.split("[WARNING] ", 1)[-1] for line in (off.stdout + off.stderr).splitlines()
              if "metric cells are not computed" in line]
    assert sorted(warned) == [
        f"{tmp_path / 't' / f'rank_{rank}' / 'Net' / '0' / '0'}: the kernel table's metric cells are not computed: "
        "each says N/A and Accuracy Reached or Not says None (no plugin answers msprobe_compare_tensors; the default "
        "plugin 'tensor_metrics' does, turned off by -p no:tensor_metrics or MSPROBE_DISABLE_PLUGINS)"
        for rank in (0, 1)], off.stdout + off.stderr
    assert "metric cells are not computed" not in on.stdout + on.stderr


#: a third party's answer to msprobe_compare_tensors: fixed cells for a 3-element pair, a malformed answer for others
FIXED_CELLS_PLUGIN = """
from msprobe_core.plugin import hookimpl


@hookimpl(optionalhook=True)  # the default plugin tensor_metrics' own hook
def msprobe_compare_tensors(npu, bench):
    return (0.5, 1.25, 2.0, 3.0, 0.25, 0.75) if npu.size == 3 else (1.0,)
"""


class _OptionalCells:
    """Answers ``msprobe_compare_tensors`` as an optional implementation (the hook is tensor_metrics')."""

    @hookimpl(optionalhook=True)
    def msprobe_compare_tensors(self, npu, bench):
        return (0.5,) * 6


def test_with_tensor_metrics_off_there_is_no_hook_to_ask_and_a_pair_has_no_cells(monkeypatch) -> None:
    """``tensor_metrics`` declares ``msprobe_compare_tensors``: turned off, the kernel plugin finds no hook (not an
    AttributeError), and an optional implementation left without its spec is not asked (it would answer a list)."""
    monkeypatch.setenv("MSPROBE_DISABLE_PLUGINS", "tensor_metrics")
    host = PluginHost(extra_plugins=[_OptionalCells()])
    assert host.pm.hook.msprobe_compare_tensors.spec is None and not host.broken
    metrics = PairMetrics(host)
    assert metrics(np.ones(3, np.float32), np.ones(3, np.float32)) is None and metrics.missing
    monkeypatch.delenv("MSPROBE_DISABLE_PLUGINS")
    on = PairMetrics(PluginHost(extra_plugins=[_OptionalCells()]))
    assert on(np.ones(3, np.float32), np.ones(3, np.float32)) is not None and not on.missing


def test_a_plugin_answering_msprobe_compare_tensors_gives_the_kernel_cells(tmp_path: Path, run_cli) -> None:
    """The kernel table's metric cells are whatever answers ``msprobe_compare_tensors`` first (here a plugin loaded
    after the default ones); an answer that is not six cells fails only its row (``unsupported``, a warning)."""
    (tmp_path / "fixed_cells.py").write_text(FIXED_CELLS_PLUGIN, encoding="utf-8")
    _make_dump(tmp_path / "t", arrays={"Default_a-op0": np.array([1, 2, 3], np.float32),
                                       "Default_b-op1": np.array([3, 4], np.float32)})
    _make_dump(tmp_path / "g", arrays={"Default_a-op0": np.array([1, 2, 3], np.float32),
                                       "Default_b-op1": np.array([3, 4], np.float32)})
    proc = run_cli("compare", "-tp", tmp_path / "t", "-gp", tmp_path / "g", "-o", tmp_path / "o",
                   env={"MSPROBE_LOAD_PLUGINS": "fixed_cells",
                        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])})
    assert proc.returncode == 0, proc.stderr
    header, *rows = _csv_rows(tmp_path / "o")
    at = [header.index(name) for name in ("Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr",
                                          "One Thousandth Err Ratio", "Five Thousandths Err Ratio",
                                          "Accuracy Reached or Not")]
    assert [[row[k] for k in at] for row in rows] == [
        ["0.5", "1.25", "2.0", "3.0", "0.25", "0.75", "No"],  # identical arrays: the plugin's cells, not tensor mode's
        ["unsupported"] * 6 + ["None"]]
    assert "msprobe_compare_tensors answered 1 cells, not 6" in proc.stdout + proc.stderr


@pytest.mark.skipif(not KERNEL_CASES, reason=no_corpora_reason() if not CORPORA.is_dir() else f"no kernel cases under {CORPORA}")
def test_a_kernel_result_read_back_names_the_frameworks_the_plugin_declares(monkeypatch: pytest.MonkeyPatch) -> None:
    """``msprobe report`` of a kernel result file: the frameworks come from the kernel plugin's metric set
    (``MetricSpec.frameworks``), not from anything the core knows about kernel dumps."""
    from dataclasses import replace

    from msprobe_core.default_plugins.summary.result_files import read_files_as_view
    from msprobe_core.host.registry import get_host
    from msprobe_core.running import running_with

    result = min(KERNEL_CASES[0].glob("oracle/*/compare_result_*.csv"))
    host = get_host()
    with running_with(host):  # as msprobe report runs
        assert read_files_as_view([result], "").frameworks == ("mindspore", "mindspore")
        monkeypatch.setitem(host.metrics, "kernel", replace(host.metrics["kernel"], frameworks=("a", "b")))
        assert read_files_as_view([result], "").frameworks == ("a", "b")
        monkeypatch.setitem(host.metrics, "kernel", replace(host.metrics["kernel"], frameworks=None))
        assert read_files_as_view([result], "").frameworks != ("mindspore", "mindspore")


# --------------------------------------------------------------------------------------------------
# options that do nothing on kernel dumps say so (issue 21 §4)

SMALL_KERNEL = min(KERNEL_CASES, key=lambda c: sum(f.stat().st_size for f in c.rglob("*.npy"))) if KERNEL_CASES else None
needs_kernel_corpus = pytest.mark.skipif(
    not KERNEL_CASES, reason=no_corpora_reason() if not CORPORA.is_dir() else f"no kernel cases under {CORPORA}")


@needs_kernel_corpus
@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["-fm"], "-fm/--fuzzy_match does nothing"),
        (["-am"], "-am/--api_mapping does nothing"),
        (["-cm", "{yaml}"], "-cm/--cell_mapping does nothing"),
        (["-dm", "{yaml}"], "-dm/--data_mapping does nothing"),
        (["-fm", "-tensor_log", "-da", "-lm"],
         "-da/--diff_analyze, -tensor_log/--is_print_compare_log, -fm/--fuzzy_match and -lm/--layer_mapping do nothing"),
    ],
)
def test_cli_options_that_do_nothing_on_kernel_dumps_are_refused(tmp_path: Path, run_cli, flags, named) -> None:
    """Mappings, fuzzy matching, -tensor_log and -da change nothing in a kernel compare (msprobe ignores them
    silently): one line naming them, exit 2, nothing written (as --rank on other dumps)."""
    yaml = tmp_path / "mapping.yaml"
    yaml.write_text("a: b\n")
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", SMALL_KERNEL / "target", "-gp", SMALL_KERNEL / "golden", "-o", out,
                   *(f.format(yaml=yaml) for f in flags))
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip()
    assert err.startswith("msprobe: error: ") and "\n" not in err, err
    assert f"{SMALL_KERNEL / 'target'}: " in err and named in err, err
    assert "in a compare of kernel dumps, which -tp/-gp are; leave" in err, err
    assert not out.exists()


@needs_kernel_corpus
def test_api_options_that_do_nothing_on_kernel_dumps_are_refused(tmp_path: Path) -> None:
    import msprobe_core

    with pytest.raises(UsageError, match=r"fuzzy_match does nothing in a compare of kernel dumps, which target/golden"):
        msprobe_core.compare(SMALL_KERNEL / "target", SMALL_KERNEL / "golden", tmp_path / "out", fuzzy_match=True)
    assert not (tmp_path / "out").exists()


@needs_kernel_corpus
def test_cli_requested_ranks_and_steps_neither_dump_has_are_named(tmp_path: Path, run_cli) -> None:
    """``--rank 0,1`` where no side has rank 1: rank 0 is compared and rank 1 named, in one warning line."""
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", SMALL_KERNEL / "target", "-gp", SMALL_KERNEL / "golden", "-o", out,
                   "--rank", "0,1,3", "--step", "0,7")
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "in neither dump" in ln]
    assert len(lines) == 1, proc.stderr
    assert lines[0].endswith("[WARNING] --rank 1,3 and --step 7: in neither dump, not compared "
                             "(target: rank 0 step 0; golden: rank 0 step 0)."), lines
    assert _cli_tables(out) == [(0, 0)]


def test_ranks_on_one_side_only_are_not_called_absent(tmp_path: Path, run_cli) -> None:
    """A rank only one dump has is skipped with its own warning; it is not "in neither dump"."""
    _make_dump(tmp_path / "t", ranks=(0, 1), steps=(0, 1))
    _make_dump(tmp_path / "g", ranks=(0,), steps=(0,))
    proc = run_cli("compare", "-tp", tmp_path / "t", "-gp", tmp_path / "g", "-o", tmp_path / "o",
                   "--rank", "0,1", "--step", "0,1")
    assert proc.returncode == 0, proc.stderr
    err = proc.stdout + proc.stderr  # log lines go to stdout, errors to stderr
    assert "in neither dump" not in err and err.count("exists only in the target dump, skipped.") == 3, err
