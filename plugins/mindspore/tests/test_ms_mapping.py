"""MindSpore name mapping (-am/-cm/-dm/-lm) against msprobe's own outputs, plus unit tests.

Corpus tests: for every cross-framework MindSpore case and every oracle variant, rows are
built from the two dump.json files (test-only helper ``tests/mapping_rows.py``),
keys come from :mod:`msprobe_mindspore.mapping`, rows are joined on equal keys, and the
(NPU Name, Bench Name) pairs must equal the oracle's first two columns row for row.
26.2.0 oracles (csv) live in ``mindspore/<case>/oracle/<variant>``; 8.3.3 oracles (xlsx, the
legacy CLI) in ``legacy/<case>/<variant>``. Corpora: ``corpora/`` of the shared folder
(``$MSPROBE_SHARED``, default ``../shared``); the corpus tests are skipped when it is absent.

Run: ``bash scripts/test.sh plugins/mindspore/tests/test_ms_mapping.py``
"""

from __future__ import annotations

import csv
import json
import logging
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from msprobe_mindspore import mapping as M

from msprobe_core.errors import InputError, MappingError
from tests import mapping_rows as R
from tests.conftest import corpora_dir, no_corpora_reason

CORPORA = corpora_dir()
MS = CORPORA / "mindspore"
LEGACY = CORPORA / "legacy"

needs_corpora = pytest.mark.skipif(not MS.is_dir(), reason=no_corpora_reason())

Pairs = list[tuple[str, str]]


# --------------------------------------------------------------------------------------------
# harness
# --------------------------------------------------------------------------------------------


@dataclass
class Options:
    """The mapping options of one msprobe command line."""

    am: str | bool = False
    cm: str | bool = False
    dm: str | None = None
    lm: str | bool = False


def _parse_cmd(argv: Sequence[str]) -> Options:
    opts = Options()
    i = 0
    while i < len(argv):
        flag = argv[i]
        value = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("-") else None
        if flag in ("-am", "-cm", "-lm"):
            setattr(opts, flag[1:], value if value is not None else True)
        elif flag == "-dm":
            opts.dm = value
        i += 2 if value is not None and flag in ("-am", "-cm", "-lm", "-dm") else 1
    return opts


def _cmd_argv(cmd_txt: Path) -> list[str]:
    line = next(x for x in cmd_txt.read_text().splitlines() if "msprobe" in x and not x.startswith("#"))
    return shlex.split(line)


def _arg(argv: Sequence[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def _framework(dump_json: Path) -> str:
    return M.detect_framework(json.loads(dump_json.read_text(encoding="utf-8")))


def _layer_side(dump_json: Path, rows: Sequence[R.Row]) -> M.LayerSide:
    dump = json.loads(dump_json.read_text(encoding="utf-8"))
    stack, construct = M.load_stack_construct(dump_json.parent)
    return M.LayerSide(list(dump["data"]), construct, stack, M.detect_framework(dump), rows)


def compare_pairs(
    npu_json: Path,
    bench_json: Path,
    opts: Options,
    *,
    base: Path,
    legacy: bool = False,
    entries_override: list[M.ApiMappingEntry] | None = None,
) -> tuple[Pairs, dict[str, str] | None]:
    """(NPU, bench) pairs for one compare, and the generated layer data mapping if any.

    ``legacy`` models msprobe 8.3.3: no backward renumbering, shape in the match key,
    exact-only cell rules, ``...parameters_grad.<n>`` keys without rows.
    """
    npu_rows = R.load_rows(npu_json, legacy=legacy)
    bench_rows = R.load_rows(bench_json, legacy=legacy)
    if legacy:
        npu_keys = [r.name for r in npu_rows]
        bench_keys = [r.name for r in bench_rows]
    else:
        npu_keys = R.renumbered_keys(npu_rows)
        bench_keys = R.renumbered_keys(bench_rows)
    cross = _framework(npu_json) == "mindspore" and _framework(bench_json) == "pytorch"

    data_map: dict[str, str] | None = None
    generated: dict[str, str] | None = None
    if opts.lm:
        rules = M.load_layer_mapping_yaml(base / opts.lm) if isinstance(opts.lm, str) else None
        generated = M.layer_mapping(_layer_side(npu_json, npu_rows), _layer_side(bench_json, bench_rows), rules)
        data_map = generated or None
    elif opts.dm:
        data_map = M.load_data_mapping(base / opts.dm)
    data_active = data_map is not None

    mode = M.mapping_precedence(
        api_mapping=bool(opts.am),
        cell_mapping=bool(opts.cm),
        data_mapping=data_active,
        layer_mapping=False,
    )
    if mode == "api":
        entries = entries_override
        if entries is None:
            entries = M.load_api_mapping_yaml(base / opts.am) if isinstance(opts.am, str) else []
        keys = M.api_mapping_keys(npu_rows, npu_keys, M.load_builtin_api_table(), entries, bench_rows=bench_rows)
    elif mode == "cell":
        cell_map = M.load_cell_mapping_yaml(base / opts.cm) if isinstance(opts.cm, str) else None
        keys = M.cell_mapping_keys(npu_rows, npu_keys, cell_map, substring_rules=not legacy)
    elif mode == "data":
        assert data_map is not None
        keys = M.data_mapping_keys(npu_rows, npu_keys, data_map)
    else:
        keys = list(npu_keys)

    gate: Callable[[str, str], bool] | None
    if data_active:
        gate = None
    elif cross:
        gate = R.dtype_gate_cross_framework
    else:
        gate = R.dtype_gate_same_framework
    pairs = R.join(npu_rows, keys, bench_rows, bench_keys, dtype_gate=gate, shape_in_key=legacy and not data_active)
    return pairs, generated


def oracle_csv_pairs(path: Path) -> Pairs:
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        i, j = header.index("NPU Name"), header.index("Bench Name")
        return [(row[i], row[j]) for row in reader]


def oracle_xlsx_pairs(path: Path) -> Pairs:
    openpyxl = pytest.importorskip("openpyxl")
    wb = openpyxl.load_workbook(path, read_only=True)
    try:
        rows = list(wb.active.iter_rows(values_only=True))
    finally:
        wb.close()
    header = list(rows[0])
    i, j = header.index("NPU Name"), header.index("Bench Name")
    return [(str(r[i]), str(r[j])) for r in rows[1:]]


def assert_same_pairs(got: Pairs, expected: Pairs) -> None:
    bad = [(k, g, e) for k, (g, e) in enumerate(zip(got, expected, strict=False)) if g != e]
    lines = [f"row {k}: got {g} expected {e}" for k, g, e in bad[:10]]
    assert len(got) == len(expected) and not bad, (
        f"{len(got)} rows vs oracle {len(expected)}; {len(bad)} differ:\n" + "\n".join(lines)
    )


# --------------------------------------------------------------------------------------------
# corpus: msprobe 26.2.0 (csv oracles)
# --------------------------------------------------------------------------------------------

CROSS_CASES = ("x_l1_stat_am", "x_l0_stat_cm_bug", "x_mix_stat_dm_bug", "x_l0_tensor_lm")


def _variants() -> list[tuple[str, str]]:
    if not MS.is_dir():
        return [("x_l1_stat_am", "am_builtin")]  # reported as skipped
    out = []
    for case in CROSS_CASES:
        for v in sorted(p.name for p in (MS / case / "oracle").iterdir() if p.is_dir()):
            out.append((case, v))
    return out


@needs_corpora
@pytest.mark.parametrize(("case", "variant"), _variants())
def test_oracle_pairs_26(case: str, variant: str) -> None:
    case_dir = MS / case
    vdir = case_dir / "oracle" / variant
    argv = _cmd_argv(vdir / "cmd.txt")
    opts = _parse_cmd(argv)
    npu_json, bench_json = case_dir / _arg(argv, "-tp"), case_dir / _arg(argv, "-gp")
    result = vdir / "compare_result.csv"
    if not result.exists():
        # msprobe crashed (am_yaml_docformat): we accept the documented file format and must
        # give what the equivalent list-format file gives.
        console = (vdir / "console.txt").read_text(encoding="utf-8")
        assert "Traceback" in console or "[exit code 1]" in console
        assert variant == "am_yaml_docformat", f"{variant}: no result and no known reason"
        doc_entries = M.load_api_mapping_yaml(case_dir / str(opts.am))
        list_entries = M.load_api_mapping_yaml(case_dir / "api_mapping.yaml")
        assert doc_entries == list_entries
        pairs, _ = compare_pairs(npu_json, bench_json, opts, base=case_dir, entries_override=doc_entries)
        assert_same_pairs(pairs, oracle_csv_pairs(case_dir / "oracle" / "am_yaml" / "compare_result.csv"))
        return
    pairs, generated = compare_pairs(npu_json, bench_json, opts, base=case_dir)
    assert_same_pairs(pairs, oracle_csv_pairs(result))
    written = vdir / "data_mapping.yaml"
    if opts.lm:
        assert generated is not None
        assert M.data_mapping_yaml_text(generated) == written.read_text(encoding="utf-8")


# --------------------------------------------------------------------------------------------
# corpus: msprobe 8.3.3 legacy CLI (xlsx oracles) — same mappers, legacy engine rules
# --------------------------------------------------------------------------------------------


def _legacy_variants() -> list[tuple[str, str]]:
    if not LEGACY.is_dir():
        return [("c08", "dm_hl")]
    out = []
    for case_dir in sorted(LEGACY.iterdir()):
        if not case_dir.is_dir():
            continue
        for vdir in sorted(p for p in case_dir.iterdir() if p.is_dir()):
            cmd = vdir / "cmd.txt"
            if not cmd.exists() or not (vdir / "compare_result.xlsx").exists():
                continue
            opts = _parse_cmd(_cmd_argv(cmd))
            is_cross = case_dir.name.startswith("x_")
            if is_cross or opts.dm or opts.am or opts.cm or opts.lm:
                out.append((case_dir.name, vdir.name))
    return out


@pytest.mark.skipif(not LEGACY.is_dir(), reason=no_corpora_reason())
@pytest.mark.parametrize(("case", "variant"), _legacy_variants())
def test_oracle_pairs_legacy_833(case: str, variant: str) -> None:
    vdir = LEGACY / case / variant
    argv = _cmd_argv(vdir / "cmd.txt")
    opts = _parse_cmd(argv)
    cfg = json.loads((vdir / "compare.json").read_text(encoding="utf-8"))
    pairs, generated = compare_pairs(
        CORPORA / cfg["npu_path"], CORPORA / cfg["bench_path"], opts, base=CORPORA, legacy=True
    )
    assert_same_pairs(pairs, oracle_xlsx_pairs(vdir / "compare_result.xlsx"))
    if opts.lm:
        written = sorted(vdir.glob("data_mapping_*.yaml"))
        assert generated is not None and len(written) == 1
        assert M.data_mapping_yaml_text(generated) == written[0].read_text(encoding="utf-8")


# --------------------------------------------------------------------------------------------
# behaviour the oracles pin down, asserted directly
# --------------------------------------------------------------------------------------------


@needs_corpora
def test_am_uses_raw_npu_names_not_renumbered() -> None:
    """msprobe keys -am rows from the raw NPU name; the renumbered base pairs backward calls in order."""
    case = MS / "x_l1_stat_am"
    argv = _cmd_argv(case / "oracle" / "am_builtin" / "cmd.txt")
    npu = R.load_rows(case / _arg(argv, "-tp"))
    bench = R.load_rows(case / _arg(argv, "-gp"))
    table = M.load_builtin_api_table()
    nk, bk = R.renumbered_keys(npu), R.renumbered_keys(bench)
    raw = dict(R.join(npu, M.api_mapping_keys(npu, nk, table, bench_rows=bench), bench, bk, dtype_gate=None))
    fixed = dict(
        R.join(
            npu,
            M.api_mapping_keys(npu, nk, table, bench_rows=bench, npu_base="renumbered"),
            bench,
            bk,
            dtype_gate=None,
        )
    )
    assert raw["Mint.add.13.backward.input.0"] == "Torch.add.0.backward.input.0"  # msprobe
    assert fixed["Mint.add.13.backward.input.0"] == "Torch.add.13.backward.input.0"


# --------------------------------------------------------------------------------------------
# unit tests: built-in table, dtype gate
# --------------------------------------------------------------------------------------------


def test_builtin_table() -> None:
    table = M.load_builtin_api_table()
    assert len(table) == 399
    assert table["Functional.dense"] == "Functional.linear"
    assert table["Tensor.swapaxes"] == "Tensor.transpose"
    assert all(k.split(".")[0] in ("Functional", "Tensor") for k in table)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("Mint.add.0.forward.input.0", "Torch.add.0.forward.input.0"),
        ("MintFunctional.linear.3.backward.output.1", "Functional.linear.3.backward.output.1"),
        ("Tensor.swapaxes.0.forward.output.0", "Tensor.transpose.0.forward.output.0"),
        ("Functional.abs.0.forward.input.1", "Torch.abs.0.forward.input.1"),
        ("Functional.dense.2.forward.input.0", "Functional.linear.2.forward.input.0"),
        ("Cell.fc.Dense.forward.0.input.0", "Cell.fc.Dense.forward.0.input.0"),
        ("MintDistributed.all_reduce.0.forward.input.0", "MintDistributed.all_reduce.0.forward.input.0"),
        ("Tensor.reshape.0.forward.input.0", "Tensor.reshape.0.forward.input.0"),
    ],
)
def test_builtin_api_key(name: str, key: str) -> None:
    assert M.builtin_api_key(name, M.load_builtin_api_table()) == key


@pytest.mark.parametrize(
    ("dtype", "kind"),
    [
        ("Int32", "int"),
        ("UInt8", "int"),
        ("torch.int64", "int"),
        ("torch.uint8", "int"),
        ("Float16", "float"),
        ("BFloat16", "float"),
        ("torch.bfloat16", "float"),
        ("torch.float64", "float"),
        ("Bool", "bool"),
        ("torch.bool", "bool"),
        ("Complex64", "complex"),
        ("torch.complex128", "complex"),
        ("<class 'int'>", "<class 'int'>"),
        ("", ""),
    ],
)
def test_dtype_kind(dtype: str, kind: str) -> None:
    assert M.dtype_kind(dtype) == kind


def test_dtypes_match() -> None:
    assert M.dtypes_match("Float32", "torch.bfloat16", cross_framework=True)
    assert M.dtypes_match("Int32", "torch.int64", cross_framework=True)
    assert not M.dtypes_match("Int32", "torch.float32", cross_framework=True)
    assert not M.dtypes_match("Float32", "torch.float32", cross_framework=False)
    assert M.dtypes_match("torch.float16", "torch.float32", cross_framework=False)
    assert not M.dtypes_match("torch.int32", "torch.int64", cross_framework=False)
    assert M.dtypes_match("Float64", "BFloat16", cross_framework=False)


def test_mapping_precedence() -> None:
    kw = {"api_mapping": False, "cell_mapping": False, "data_mapping": False, "layer_mapping": False}
    assert M.mapping_precedence(**kw) == "none"
    assert M.mapping_precedence(**{**kw, "api_mapping": True, "cell_mapping": True}) == "api"
    assert M.mapping_precedence(**{**kw, "cell_mapping": True, "data_mapping": True}) == "cell"
    assert M.mapping_precedence(**{**kw, "layer_mapping": True}) == "data"


# --------------------------------------------------------------------------------------------
# unit tests: user API mapping
# --------------------------------------------------------------------------------------------


def _rows(*specs: tuple[str, str, str]) -> list[R.Row]:
    """Rows from (api, suffix, state) triples, dtype Float32."""
    return [R.Row(api, api + suffix, state, "Float32") for api, suffix, state in specs]


ABS_ROWS = _rows(
    ("Functional.abs.0.forward", ".input.0", "input"),
    ("Functional.abs.0.forward", ".input.1", "input"),
    ("Functional.abs.0.forward", ".input.1.0", "input"),
    ("Functional.abs.0.forward", ".input.out", "input"),
    ("Functional.abs.0.forward", ".output.0", "output"),
    ("Functional.abs.0.forward", ".output.1", "output"),
)
ABS_BENCH = _rows(("Torch.abs.0.forward", ".input.0", "input"))


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_user_api_mapping_spec_example(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        "am.yaml",
        "- ms_api: Functional.abs\n  pt_api: Torch.abs\n  ms_args: [1, out]\n  pt_args: [0, input]\n"
        "  ms_output: [0]\n  pt_output: [0]\n",
    )
    entries = M.load_api_mapping_yaml(p)
    keys = M.api_mapping_keys(ABS_ROWS, None, {}, entries, bench_rows=ABS_BENCH)
    assert keys == [
        "Torch.abs.0.forward.input.0abandoned",
        "Torch.abs.0.forward.input.0",
        "Torch.abs.0.forward.input.1.0abandoned",
        "Torch.abs.0.forward.input.input",
        "Torch.abs.0.forward.output.0",
        "Torch.abs.0.forward.output.1abandoned",
    ]


def test_user_api_mapping_docformat_and_outputs_spelling(tmp_path: Path) -> None:
    doc = _write(
        tmp_path,
        "doc.yaml",
        "ms_api: Functional.abs\npt_api: Torch.abs\nms_args: [1]\npt_args: [0]\nms_outputs: [1]\npt_outputs: [0]\n",
    )
    (entry,) = M.load_api_mapping_yaml(doc)
    assert entry.ms_outputs == (1,) and entry.pt_outputs == (0,) and entry.ms_parameters == ()
    keys = M.api_mapping_keys(ABS_ROWS, None, {}, [entry], bench_rows=ABS_BENCH)
    assert keys[4] == "Torch.abs.0.forward.output.0abandoned"
    assert keys[5] == "Torch.abs.0.forward.output.0"


def test_user_api_mapping_skips(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    table = {"Functional.abs": "Torch.abs"}
    unequal = _write(
        tmp_path, "bad.yaml", "- {ms_api: Functional.abs, pt_api: Torch.abs, ms_args: [0, 1], pt_args: [0]}\n"
    )
    with caplog.at_level(logging.WARNING, logger="msprobe_mindspore.mapping"):
        entries = M.load_api_mapping_yaml(unequal)
    assert entries[0].problem and "bad.yaml" in caplog.text and "ms_args" in caplog.text
    builtin_only = M.api_mapping_keys(ABS_ROWS, None, table, [])
    assert M.api_mapping_keys(ABS_ROWS, None, table, entries, bench_rows=ABS_BENCH) == builtin_only
    # pt_api absent from the bench dump: entry skipped, built-in keys stay
    ok = M.load_api_mapping_yaml(_write(tmp_path, "ok.yaml", "- {ms_api: Functional.abs, pt_api: Torch.abs}\n"))
    other_bench = _rows(("Torch.neg.0.forward", ".input.0", "input"))
    assert M.api_mapping_keys(ABS_ROWS, None, table, ok, bench_rows=other_bench) == builtin_only
    assert all(k.endswith("abandoned") for k in M.api_mapping_keys(ABS_ROWS, None, table, ok, bench_rows=ABS_BENCH))


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "empty"),
        ("- ms_api: [unclosed\n", "malformed YAML"),
        ("42\n", "list of entries"),
        ("- just a string\n", "entry 1"),
        ("- {pt_api: Torch.abs}\n", "'ms_api' is missing"),
        ("- {ms_api: Functional.abs.0.forward, pt_api: Torch.abs}\n", "without call index"),
        ("- {ms_api: Functional.abs, pt_api: Torch.abs, ms_args: [{a: 1}], pt_args: [0]}\n", "'ms_args'"),
        ("- {ms_api: Functional.abs, pt_api: Torch.abs, ms_args: [0, 0], pt_args: [0, 1]}\n", "twice"),
    ],
)
def test_api_mapping_errors(tmp_path: Path, text: str, needle: str) -> None:
    p = _write(tmp_path, "am.yaml", text)
    with pytest.raises(MappingError) as exc:
        M.load_api_mapping_yaml(p)
    assert needle in str(exc.value) and "am.yaml" in str(exc.value)


def test_missing_mapping_file(tmp_path: Path) -> None:
    for loader in (M.load_api_mapping_yaml, M.load_cell_mapping_yaml, M.load_data_mapping, M.load_layer_mapping_yaml):
        with pytest.raises(MappingError, match="does not exist"):
            loader(tmp_path / "nope.yaml")


# --------------------------------------------------------------------------------------------
# unit tests: cell and data mapping
# --------------------------------------------------------------------------------------------


def test_cell_mapping_spec_example() -> None:
    cm = {
        "fc2.Dense": "fc2.Linear",
        "conv1.Conv2d": "conv3.Conv2d",
        "MindSpeedTELayerNormColumnParallelLinear": "TELayerNormColumnParallelLinear",
        "RowParallelLinear": "TERowParallelLinear",
    }
    cases = {
        "Cell.fc2.Dense.forward.0.input.0": "Module.fc2.Linear.forward.0.input.0",
        "Cell.fc2.Dense.parameters_grad.weight": "Module.fc2.Linear.parameters_grad.weight",
        "Cell.conv1.Conv2d.backward.0.output.0": "Module.conv3.Conv2d.backward.0.output.0",
        "Cell.block.MindSpeedTELayerNormColumnParallelLinear.forward.0.input.0": (
            "Module.block.TELayerNormColumnParallelLinear.forward.0.input.0"
        ),
        "Cell.RowParallelLinear.RowParallelLinear.forward.0.input.0": (
            "Module.TERowParallelLinear.RowParallelLinear.forward.0.input.0"
        ),
        "Cell.x.Y.parameters_grad.0.weight": "Module.x.Y.parameters_grad.0.weight",
        "Cell.x.Y.debug": "N/A",
        "": "N/A",
    }
    for name, key in cases.items():
        assert M.cell_mapping_key(name, cm) == key, name
    assert M.cell_mapping_key("Cell.fc2.Dense.forward.0.input.0", None) == "Module.fc2.Dense.forward.0.input.0"
    exact_only = M.cell_mapping_key("Cell.block.RowParallelLinear.forward.0.input.0", cm, substring_rules=False)
    assert exact_only == "Module.block.RowParallelLinear.forward.0.input.0"


def test_data_mapping_keys(tmp_path: Path) -> None:
    p = _write(tmp_path, "dm.yaml", "Functional.gather.0.forward.input.0: Functional.embedding.0.forward.input.1\n")
    dm = M.load_data_mapping(p)
    rows = _rows(
        ("Functional.gather.0.forward", ".input.0", "input"), ("Functional.gather.0.forward", ".output.0", "output")
    )
    assert M.data_mapping_keys(rows, None, dm) == [
        "Functional.embedding.0.forward.input.1",
        "Functional.gather.0.forward.output.0",
    ]
    with pytest.raises(MappingError, match="must be a name"):
        M.load_data_mapping(_write(tmp_path, "bad.yaml", "a.b: [1]\n"))
    with pytest.raises(MappingError, match="mapping of 'name: name'"):
        M.load_data_mapping(_write(tmp_path, "list.yaml", "- a\n"))


# --------------------------------------------------------------------------------------------
# unit tests: layer mapping (compare-modes §4.4 worked example, synthetic)
# --------------------------------------------------------------------------------------------

_MS_KEYS = {
    "Cell.network_with_loss.model.ParallelTransformer.forward.0": None,
    "Cell.network_with_loss.model.layers.5.ParallelTransformerLayer.forward.0": (
        "Cell.network_with_loss.model.ParallelTransformer.forward.0"
    ),
    "Cell.network_with_loss.model.layers.5.attention.ParallelAttention.forward.0": (
        "Cell.network_with_loss.model.layers.5.ParallelTransformerLayer.forward.0"
    ),
    "Cell.network_with_loss.model.layers.5.attention.qkv_proj.Dense.forward.0": (
        "Cell.network_with_loss.model.layers.5.attention.ParallelAttention.forward.0"
    ),
    "Functional.matmul.0.forward": "Cell.network_with_loss.model.layers.5.attention.qkv_proj.Dense.forward.0",
    "Functional.matmul.1.forward": "Cell.network_with_loss.model.layers.5.attention.qkv_proj.Dense.forward.0",
    "Cell.network_with_loss.model.layers.6.ParallelTransformerLayer.forward.0": (
        "Cell.network_with_loss.model.ParallelTransformer.forward.0"
    ),
    "Cell.network_with_loss.model.layers.6.attention.ParallelAttention.forward.0": (
        "Cell.network_with_loss.model.layers.6.ParallelTransformerLayer.forward.0"
    ),
    "Functional.softmax.0.forward": "Cell.network_with_loss.model.layers.6.attention.ParallelAttention.forward.0",
    "Functional.softmax.0.backward": "Cell.network_with_loss.model.layers.6.attention.ParallelAttention.backward.0",
}
_PT_KEYS = {
    "Module.module.model.ParallelTransformer.forward.0": None,
    "Module.module.model.layers.0.ParallelTransformerLayer.forward.0": "Module.module.model.ParallelTransformer.forward.0",
    "Module.module.model.layers.0.self_attention.ParallelAttention.forward.0": (
        "Module.module.model.layers.0.ParallelTransformerLayer.forward.0"
    ),
    "Module.module.model.layers.0.self_attention.query_key_value.ColumnParallelLinear.forward.0": (
        "Module.module.model.layers.0.self_attention.ParallelAttention.forward.0"
    ),
    "Torch.matmul.0.forward": "Module.module.model.layers.0.self_attention.query_key_value.ColumnParallelLinear.forward.0",
    "Torch.matmul.1.forward": "Module.module.model.layers.0.self_attention.query_key_value.ColumnParallelLinear.forward.0",
    "Module.module.model.layers.1.ParallelTransformerLayer.forward.0": "Module.module.model.ParallelTransformer.forward.0",
    "Module.module.model.layers.1.self_attention.ParallelAttention.forward.0": (
        "Module.module.model.layers.1.ParallelTransformerLayer.forward.0"
    ),
    "Functional.softmax.0.forward": "Module.module.model.layers.1.self_attention.ParallelAttention.forward.0",
    "Functional.softmax.0.backward": "Module.module.model.layers.1.self_attention.ParallelAttention.backward.0",
}
_RULES_YAML = """\
Cell:
  network_with_loss: module
ParallelTransformerLayer:
  attention: self_attention
ParallelAttention:
  qkv_proj: query_key_value(ColumnParallelLinear)
"""


def _side(keys: dict[str, str | None], framework: str, drop: str | None = None) -> M.LayerSide:
    keys = {k: v for k, v in keys.items() if not (drop and k.endswith(drop))}
    rows: list[R.Row] = []
    for api in keys:
        rows += _rows((api, ".input.0", "input"), (api, ".output.0", "output"))
    stack = {"0": [[next(iter(keys))], ["File a.py, line 1, in f, \n x"]]}  # grouped format: no frame scope
    return M.LayerSide(list(keys), dict(keys), stack, framework, rows)


def test_layer_mapping_worked_example(tmp_path: Path) -> None:
    rules = M.load_layer_mapping_yaml(_write(tmp_path, "lm.yaml", _RULES_YAML))
    assert rules["ParallelAttention"]["qkv_proj"] == "query_key_value"  # "(...)" dropped
    dm = M.layer_mapping(_side(_MS_KEYS, "mindspore"), _side(_PT_KEYS, "pytorch"), rules)
    assert dm["Functional.matmul.1.forward.input.0"] == "Torch.matmul.1.forward.input.0"
    assert dm["Functional.matmul.0.forward.output.0"] == "Torch.matmul.0.forward.output.0"
    assert (
        dm["Cell.network_with_loss.model.layers.6.attention.ParallelAttention.forward.0.output.0"]
        == "Module.module.model.layers.1.self_attention.ParallelAttention.forward.0.output.0"
    )
    assert dm["Functional.softmax.0.backward.input.0"] == "Functional.softmax.0.backward.input.0"
    assert list(dm)[:2] == [
        "Cell.network_with_loss.model.ParallelTransformer.forward.0.input.0",
        "Cell.network_with_loss.model.ParallelTransformer.forward.0.output.0",
    ]
    # without rules the root children differ (network_with_loss vs module): all N/A
    assert set(M.layer_mapping(_side(_MS_KEYS, "mindspore"), _side(_PT_KEYS, "pytorch"), None).values()) == {"N/A"}
    text = M.data_mapping_yaml_text(dm)
    assert yaml.safe_load(text) == dm and text.splitlines()[0].startswith("Cell.network_with_loss.model.")


def test_layer_mapping_unquoted_layer_indices(tmp_path: Path) -> None:
    """No ParallelTransformer item → no renumbering; ``layers: {5: 0, 6: 1}`` (unquoted) does it."""
    rules = M.load_layer_mapping_yaml(_write(tmp_path, "lm.yaml", _RULES_YAML + "layers:\n  5: 0\n  6: 1\n"))
    assert rules["layers"] == {"5": "0", "6": "1"}
    npu = _side(_MS_KEYS, "mindspore", drop="ParallelTransformer.forward.0")
    bench = _side(_PT_KEYS, "pytorch", drop="ParallelTransformer.forward.0")
    dm = M.layer_mapping(npu, bench, rules)
    assert dm["Functional.matmul.1.forward.input.0"] == "Torch.matmul.1.forward.input.0"
    assert dm["Functional.softmax.0.forward.output.0"] == "Functional.softmax.0.forward.output.0"
    without = M.layer_mapping(npu, bench, M.load_layer_mapping_yaml(_write(tmp_path, "l2.yaml", _RULES_YAML)))
    assert without["Functional.matmul.1.forward.input.0"] == "N/A"


def test_layer_items_scopes_and_frame_scope() -> None:
    construct = {"Functional.linear.0.forward": "Module.net.fc.MyLinear.forward.0"}
    stack = {
        "Functional.linear.0.forward": [
            "File /x/msprobe/pytorch/hook_module/wrap_functional.py, line 5, in FunctionalOPTemplate.forward, \n y",
            "File /x/site-packages/torch/nn/functional.py, line 9, in linear_impl, \n y",
            "File /x/site-packages/torch/nn/modules/linear.py, line 20, in forward, \n y",
        ]
    }
    keys = [
        "Module.net.fc.MyLinear.forward.0",
        "Functional.linear.0.forward",
        "Module.net.fc.MyLinear.parameters_grad.0",
    ]
    items = {it.data_name: it for it in M.layer_data_items(keys, construct, stack, "pytorch")}
    assert items["Module.net.fc.MyLinear.forward.0"].full_scope == "Module.net.fc"
    assert items["Functional.linear.0.forward"].full_scope == "Module.net.fc.linear_impl.linear"
    # msprobe 26.2.0 keeps the attribute in the scope of '...parameters_grad.<n>' keys
    assert items["Module.net.fc.MyLinear.parameters_grad.0"].full_scope == "Module.net.fc.fc"
    fixed = M.layer_data_items(keys, construct, stack, "pytorch", fix_parameters_grad_scope=True)
    assert fixed[2].full_scope == "Module.net.fc" and fixed[2].state == "parameters_grad"
    assert M.layer_data_items(keys, construct, {}, "pytorch") == []


def test_load_stack_construct(tmp_path: Path) -> None:
    assert M.load_stack_construct(tmp_path) == (None, None)
    (tmp_path / "stack.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InputError, match="construct.json is missing"):
        M.load_stack_construct(tmp_path)
    (tmp_path / "construct.json").write_text('{"a": null}', encoding="utf-8")
    assert M.load_stack_construct(tmp_path) == ({}, {"a": None})


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("- a\n", "must be a mapping"),
        ("Block: [a, b]\n", "'Block' must map"),
        ("Block:\n  attn: [x]\n", "'attn' must map"),
    ],
)
def test_layer_mapping_yaml_errors(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(MappingError, match=needle):
        M.load_layer_mapping_yaml(_write(tmp_path, "lm.yaml", text))


# --------------------------------------------------------------------------------------------
# -am entries listing positions the API does not have (issue 21 §4)
# --------------------------------------------------------------------------------------------


@needs_corpora
def test_cli_am_positions_the_dump_does_not_have_are_named(tmp_path: Path, run_cli) -> None:
    """``ms_args: [0, 1, 7]`` on a 3-argument API: one warning naming the file, the API and each missing
    position (both sides), as for unequal lengths; an entry skipped for unequal lengths gets only its own."""
    case = MS / "x_l1_stat_am"
    argv = _cmd_argv(case / "oracle" / "am_yaml" / "cmd.txt")
    yaml_path = tmp_path / "api_mapping.yaml"
    yaml_path.write_text(
        "- {ms_api: Functional.gather, pt_api: Functional.embedding, ms_args: [0, 1, 7], pt_args: [1, 0, 5],\n"
        "   ms_output: [0], pt_output: [0]}\n"
        "- {ms_api: Mint.add, pt_api: Torch.add, ms_args: [0, 1, 9], pt_args: [0, 1]}\n",
        encoding="utf-8")
    proc = run_cli("compare", "-tp", case / _arg(argv, "-tp"), "-gp", case / _arg(argv, "-gp"), "-o", tmp_path / "o",
                   "-am", yaml_path)
    assert proc.returncode == 0, proc.stderr
    lines = sorted(ln.split("[WARNING] ", 1)[-1] for ln in (proc.stdout + proc.stderr).splitlines()
                   if str(yaml_path) in ln)
    assert lines == [
        f"{yaml_path}: Functional.gather -> Functional.embedding: positions the dump does not have: ms_args 7 "
        "(Functional.gather has input 0,1,2 in the target dump); pt_args 5 (Functional.embedding has input 0,1 "
        "in the golden dump); those items of the entry pair nothing",
        f"{yaml_path}: entry 2 (Mint.add -> Torch.add) is skipped: 'ms_args' has 3 positions but 'pt_args' has 2; "
        "make sure that the number of parameters is equal",
    ], proc.stdout


@needs_corpora
def test_cli_am_positions_all_present_say_nothing(tmp_path: Path, run_cli) -> None:
    case = MS / "x_l1_stat_am"
    argv = _cmd_argv(case / "oracle" / "am_yaml" / "cmd.txt")
    proc = run_cli("compare", "-tp", case / _arg(argv, "-tp"), "-gp", case / _arg(argv, "-gp"), "-o", tmp_path / "o",
                   "-am", case / "api_mapping.yaml")
    assert proc.returncode == 0, proc.stderr
    assert "positions the dump does not have" not in proc.stdout + proc.stderr
