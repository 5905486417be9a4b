"""FrameworkSpec is the only source of dtype knowledge: the specs answer, and the core asks them."""

from __future__ import annotations

from pathlib import Path

import pytest

from msprobe_core.default_plugins.msprobe_verdicts.rules import dtype_equal_column
from msprobe_core.host.registry import get_host
from msprobe_core.host.specs import DTYPE_FAMILIES, DtypeInfo, FrameworkSpec
from msprobe_core.match.frameworks import dtype_compat
from msprobe_core.result_columns import BENCH_DTYPE, NPU_DTYPE

from .test_result_columns import _modules, _string_constants

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def specs() -> tuple[FrameworkSpec, FrameworkSpec]:
    host = get_host()
    return host.framework("pytorch"), host.framework("mindspore")


@pytest.mark.parametrize(("framework", "dtype", "canonical", "family", "read"), [
    ("pytorch", "torch.float32", "float32", "float", "float32"),
    ("pytorch", "torch.bfloat16", "bfloat16", "float", "float32"),
    ("pytorch", "torch.float8_e4m3fn", "float8_e4m3fn", "float", "float32"),
    ("pytorch", "torch.int64", "int64", "int", "int64"),
    ("pytorch", "torch.uint8", "uint8", "int", "uint8"),
    ("pytorch", "torch.bool", "bool", "bool", "bool"),
    ("pytorch", "torch.complex64", "complex64", "complex", "complex64"),
    ("pytorch", "torch.long", "int64", "int", "int64"),
    ("pytorch", "torch.Size", "size", None, "size"),
    ("pytorch", "<class 'int'>", "<class 'int'>", None, "<class 'int'>"),
    ("mindspore", "Float32", "float32", "float", "float32"),
    ("mindspore", "BFloat16", "bfloat16", "float", "float32"),
    ("mindspore", "Int32", "int32", "int", "int32"),
    ("mindspore", "UInt64", "uint64", "int", "uint64"),
    ("mindspore", "Bool", "bool", "bool", "bool"),
    ("mindspore", "Complex128", "complex128", "complex", "complex128"),
    ("mindspore", "torch.int64", "int64", "int", "int64"),  # a MindTorch dump spells dtypes as torch does
    ("mindspore", "mindspore.float32", "float32", None, "float32"),
])
def test_each_spec_describes_its_dtypes(specs, framework, dtype, canonical, family, read):
    spec = specs[0] if framework == "pytorch" else specs[1]
    assert spec.canonical(dtype) == canonical
    assert spec.dtype_family(dtype) == family
    assert spec.is_integer(dtype) == (family == "int")
    assert spec.read_dtype(dtype) == read
    assert (spec.dtype_info(dtype) is not None) == (family is not None)


def test_every_described_dtype_is_well_formed(specs):
    for spec in specs:
        assert spec.dtypes
        for name, info in spec.dtypes.items():
            assert info.family in DTYPE_FAMILIES, name
            assert (info.eps > 0) <= (info.family == "float"), name
        # msprobe's same-framework gate group is a subset of the spec's float dtypes
        assert all(spec.dtype_family(d) == "float" for d in spec.float_dtypes)
    with pytest.raises(ValueError, match="family"):
        DtypeInfo("float32", "real")


@pytest.mark.parametrize(("npu", "bench", "same"), [
    ("Float32", "torch.float32", True),
    ("BFloat16", "torch.bfloat16", True),
    ("Int32", "torch.int64", True),  # integer widths do not count across frameworks (docs/differences.md)
    ("UInt8", "torch.int64", True),
    ("Float16", "torch.float32", False),
    ("Bool", "torch.uint8", False),
    ("Complex64", "torch.complex128", False),
    ("<class 'int'>", "<class 'int'>", True),
    ("<class 'int'>", "<class 'float'>", False),
])
def test_same_dtype_across_frameworks(specs, npu, bench, same):
    pt, ms = specs
    assert ms.same_dtype(npu, pt, bench) is same
    cells = {NPU_DTYPE: [npu, "N/A"], BENCH_DTYPE: [bench, "torch.float32"]}
    assert dtype_equal_column(cells, (ms, pt)) == [npu == bench or same, False]


def test_integer_widths_count_within_one_framework(specs):
    pt, _ = specs
    assert not pt.same_dtype("torch.int32", pt, "torch.int64")
    assert dtype_equal_column({NPU_DTYPE: ["torch.int32"], BENCH_DTYPE: ["torch.int64"]}, (pt, pt)) is None


def test_the_dtype_gate_asks_the_specs(specs):
    pt, ms = specs
    same = dtype_compat(pt, pt)
    assert same("torch.float16", "torch.bfloat16") and not same("torch.float32", "torch.int64")
    assert not same("torch.float8_e4m3fn", "torch.float32")  # msprobe's float group has the four only
    cross = dtype_compat(ms, pt)
    assert cross("Float16", "torch.float32") and cross("Int32", "torch.int64") and cross("Bool", "torch.bool")
    assert not cross("Float32", "torch.int64") and not cross("<class 'int'>", "torch.int64")


def test_the_analysis_tolerance_grows_with_the_spec_eps(specs):
    from msprobe_core.default_plugins.diff_analyze.config import DiffAnalyzeConfig

    pt, ms = specs
    config = DiffAnalyzeConfig()
    assert config.tolerance(pt.dtype_info("torch.float32").eps) == config.base_tolerance
    assert config.tolerance(ms.dtype_info("BFloat16").eps) == config.eps_factor * 2.0**-7
    assert config.tolerance(pt.dtype_info("torch.float16").eps, pt.dtype_info("torch.float32").eps) == (
        config.eps_factor * 2.0**-10)


def test_the_core_names_no_framework_dtype(specs):
    names: set[str] = set()
    for spec in specs:
        names |= set(spec.dtypes) | {i.canonical for i in spec.dtypes.values()} | set(spec.float_dtypes)
    names -= set(DTYPE_FAMILIES)  # "bool" is a family name as well as a dtype
    core = [p for p in _modules() if p.relative_to(REPO).parts[0] == "msprobe_core"]
    spelled = [f"{p.relative_to(REPO)}:{line}: {text!r}" for p in core for line, text in _string_constants(p)
               if text in names]
    assert not spelled, "dtype knowledge belongs to the framework specs:\n" + "\n".join(spelled)
