"""The column registry: msprobe's headers come out of it, every module reads names from it, plugins declare theirs."""

from __future__ import annotations

import ast
import csv
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from msprobe_core import hookimpl
from msprobe_core import result_columns as C
from msprobe_core.default_plugins.summary.views import detect_mode, plot_metrics, view_from_table
from msprobe_core.host.registry import PluginHost, current_host, reset_host
from msprobe_core.host.specs import MetricSpec, TensorMetricSpec
from msprobe_core.model import MODE_MD5, MODE_STATISTICS, MODE_TENSOR
from msprobe_core.result import ResultTable, result_columns

from .conftest import corpora_dir, no_corpora_reason

# what these tests read of results (columns, modes, summaries) they read as a run does (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("as_in_a_run")

REPO = Path(__file__).resolve().parents[1]
#: the kernel plugin's mode (the core does not name it)
MODE_KERNEL = "kernel"


def _oracle_headers() -> dict[tuple[str, ...], Path]:
    """Every distinct header of msprobe's own result CSVs in the corpora, with one file that has it."""
    root = corpora_dir()
    if not root.is_dir():
        pytest.skip(no_corpora_reason())
    found: dict[tuple[str, ...], Path] = {}
    for path in sorted(root.rglob("oracle/**/*.csv")):
        with open(path, newline="", encoding="utf-8-sig") as fh:
            header = next(csv.reader(fh), None)
        if header and header[0] == C.NPU_NAME:
            found.setdefault(tuple(header), path)
    return found


def test_every_header_msprobe_wrote_is_a_layout_of_the_registry():
    from msprobe_kernel.columns import NPY_COLUMNS

    headers = _oracle_headers()
    assert len(headers) >= 4  # statistics, tensor with and without stack, md5, kernel npy
    for header, path in headers.items():
        mode = detect_mode(header)
        if mode == MODE_KERNEL:
            assert list(header) == NPY_COLUMNS, path
            continue
        with_stack = C.STACK_INFO in header
        assert list(header) == result_columns(mode, with_stack), path


def test_layouts_of_each_mode():
    base = [C.NPU_NAME, C.BENCH_NAME, C.NPU_DTYPE, C.BENCH_DTYPE, C.NPU_SHAPE, C.BENCH_SHAPE,
            C.NPU_REQUIRES_GRAD, C.BENCH_REQUIRES_GRAD]
    tail = [C.REQUIRES_GRAD_CONSISTENT, C.RESULT, C.ERR_MESSAGE]
    assert result_columns(MODE_MD5, False) == base + [C.NPU_MD5, C.BENCH_MD5] + tail
    assert result_columns(MODE_STATISTICS, True) == base + C.STATS_METRIC_COLUMNS + C.STAT_VALUE_COLUMNS + tail + [
        C.STACK_INFO]
    # a plugin tensor metric goes right after the six built-in metrics
    assert result_columns(MODE_TENSOR, False, ["MeanAbsErr"]) == (
        base + C.TENSOR_METRIC_COLUMNS + ["MeanAbsErr"] + C.STAT_VALUE_COLUMNS + tail + [C.DATA_NAME])
    # a mode of a plugin's own (not whole-table): the names, its declared columns, the verdicts
    reg = C.CORE_COLUMNS.copy()
    reg.add(C.ColumnSpec("Zeta", C.METRIC, ("zeta",), plugin="p"))
    assert result_columns("zeta", True, columns=reg) == base + ["Zeta"] + tail + [C.STACK_INFO]


def test_ranking_and_plotting_roles():
    assert C.CORE_COLUMNS.main_metric(MODE_TENSOR) == (C.COSINE, False)
    assert C.CORE_COLUMNS.main_metric(MODE_KERNEL) is None  # the kernel plugin declares its own (below)
    assert C.CORE_COLUMNS.main_metric(MODE_STATISTICS) == (C.NORM_RELATIVE_ERR, True)
    assert C.CORE_COLUMNS.main_metric(MODE_MD5) is None
    assert C.CORE_COLUMNS.plot_metrics(MODE_TENSOR) == (C.COSINE, C.MAX_RELATIVE_ERR)
    assert C.CORE_COLUMNS.plot_metrics(MODE_STATISTICS) == (C.NORM_RELATIVE_ERR, C.MAX_DIFF)
    assert C.CORE_COLUMNS.plot_metrics(MODE_MD5) == ()
    assert C.CORE_COLUMNS.stand_in(C.NORM_RELATIVE_ERR) == C.L2NORM_DIFF
    assert C.CORE_COLUMNS.twin(C.BENCH_MAX) == C.NPU_MAX and C.CORE_COLUMNS.twin(C.BENCH_MD5) == C.NPU_MD5
    assert C.stat_column(C.BENCH, "l2norm") == C.BENCH_L2NORM


def test_a_second_declaration_only_adds_modes():
    reg = C.CORE_COLUMNS.copy()
    reg.add(C.ColumnSpec(C.COSINE, C.VERDICT, ("mine",), worse=C.HIGHER))
    held = reg.get(C.COSINE)
    assert held.kind == C.METRIC and held.worse == C.LOWER and held.modes[-1] == "mine"
    assert C.CORE_COLUMNS.get(C.COSINE).modes == (MODE_TENSOR,)  # the copy changed, not the core's
    reg.add(C.ColumnSpec(C.COSINE, C.METRIC, ("mine",), ranks=("mine",), plots=("mine",)))
    assert reg.main_metric("mine") == (C.COSINE, False) and reg.plot_metrics("mine") == (C.COSINE,)
    with pytest.raises(ValueError, match="kind"):
        C.ColumnSpec("X", "colour")


# --------------------------------------------------------------------------- plugins declare their columns
def _median_abs(npu: np.ndarray, bench: np.ndarray) -> float:
    return float(np.median(np.abs(np.asarray(npu, float) - np.asarray(bench, float))))


class _Plugin:
    """A plugin with one plotted tensor metric and a metric set of its own."""

    @hookimpl
    def msprobe_register_metrics(self, register):
        register(TensorMetricSpec("MedianAbsErr", _median_abs, worse=C.HIGHER, plot=True))
        register(MetricSpec("zeta", lambda ctx: {}, columns=(C.NPU_NAME, C.ColumnSpec("Zeta", C.METRIC, worse=C.LOWER))))


@pytest.fixture()
def host_with_plugin():
    before = current_host()
    host = PluginHost(autoload=False, extra_plugins=[_Plugin()])
    reset_host(host)
    yield host
    reset_host(before)


def test_plugin_columns_are_known_to_the_host_summary_and_report(host_with_plugin):
    cols = host_with_plugin.columns
    spec = cols.get("MedianAbsErr")
    assert (spec.kind, spec.modes, spec.worse, spec.plots) == (C.METRIC, (MODE_TENSOR,), C.HIGHER, (MODE_TENSOR,))
    assert spec.plugin and cols.get("Zeta").modes == ("zeta",) and "zeta" in cols.get(C.NPU_NAME).modes
    assert "MedianAbsErr" not in C.CORE_COLUMNS  # the core's own registry is left as it was
    assert C.known_columns() is cols
    assert plot_metrics(MODE_TENSOR) == (C.COSINE, C.MAX_RELATIVE_ERR, "MedianAbsErr")

    from msprobe_core.default_plugins.report.html import build_payload

    names = result_columns(MODE_TENSOR, False, ["MedianAbsErr"])
    data = {c: ["Functional.a.0.forward.output.0" if "Name" in c else "1.0"] for c in names}
    table = ResultTable(MODE_TENSOR, names, data, [0])
    view = view_from_table(table)
    payload = build_payload([view], {"first_divergence": None, "first_divergence_by_rank": []})
    assert payload["parts"][0]["plot"] == [C.COSINE, C.MAX_RELATIVE_ERR, "MedianAbsErr"]


def test_kernel_metric_set_declares_its_own_columns():
    from msprobe_core.host.registry import get_host

    cols = get_host().columns
    csv_file = cols.get("NPU CSV File")
    assert csv_file is not None and csv_file.modes == (MODE_KERNEL,) and csv_file.plugin
    assert cols.twin("Bench CSV File") == "NPU CSV File"
    # its ranked and plotted metrics, and its verdict column with the cells that are errors and warnings
    assert cols.main_metric(MODE_KERNEL) == (C.COSINE, False)
    assert cols.plot_metrics(MODE_KERNEL) == (C.COSINE, C.MAX_RELATIVE_ERR)
    verdict = cols.get("Accuracy Reached or Not")
    assert verdict is not None and MODE_KERNEL in verdict.modes and dict(verdict.levels) == {
        "No": "error", "Unmatched": "warning"}


# --------------------------------------------------------------------------- one place spells the names
def _string_constants(path: Path) -> list[tuple[int, str]]:
    """(line, text) of the string literals of a module that are not docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def _plugin_sources() -> list[Path]:
    """The first-party plugins' modules, not their tests (``plugins/<name>/tests/``)."""
    return [p for p in sorted((REPO / "plugins").rglob("*.py")) if p.relative_to(REPO / "plugins").parts[1] != "tests"]


def _modules() -> list[Path]:
    """The core's and the plugins' modules; the classic interface (msprobe_core/legacy) is folded in later."""
    paths = sorted((REPO / "msprobe_core").rglob("*.py")) + _plugin_sources()
    return [p for p in paths if "legacy" not in p.relative_to(REPO).parts]


def test_column_names_are_spelled_only_where_they_are_declared():
    from msprobe_classic import vocabulary as classic_vocabulary
    from msprobe_kernel import columns as kernel_columns

    names = {s.name for s in C.CORE_COLUMNS} | {kernel_columns.NPU_CSV_FILE.name, kernel_columns.BENCH_CSV_FILE.name,
                                                 kernel_columns.ACCURACY_REACHED.name}
    declared = {Path(C.__file__).resolve(), Path(kernel_columns.__file__).resolve()}
    # the kernel and the classic plugins each declare their own 'Accuracy Reached or Not' (neither needs the other)
    also = {(Path(classic_vocabulary.__file__).resolve(), classic_vocabulary.ACCURACY)}
    spelled = [f"{p.relative_to(REPO)}:{line}: {text!r}" for p in _modules() if p.resolve() not in declared
               for line, text in _string_constants(p) if text in names and (p.resolve(), text) not in also]
    assert not spelled, "use the names of msprobe_core.result_columns:\n" + "\n".join(spelled)


def test_the_checker_sees_a_spelled_name(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""Doc naming MaxRelativeErr."""\nX = {"MaxRelativeErr": 1}\n')
    assert _string_constants(module) == [(2, "MaxRelativeErr")]


def test_view_of_a_plain_namespace_table_reads_registry_modes():
    # a table whose mode is not one the summary knows is detected from its header
    table = SimpleNamespace(columns=[C.NPU_NAME, C.MAX_DIFF], data={C.NPU_NAME: ["a"], C.MAX_DIFF: ["0.0"]},
                            mode="custom", meta={}, pairs=None)
    assert view_from_table(table).mode == MODE_STATISTICS


# --------------------------------------------------------------------------- the public surface
#: what a plugin may import from the core: the public module, and ``hookimpl`` from the package
PUBLIC_MODULES = {"msprobe_core", "msprobe_core.plugin"}
#: what this repository's own plugins may import: the same (msprobe_core.unstable, their former extra, is gone)
FIRST_PARTY_MODULES = PUBLIC_MODULES


def _core_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every msprobe_core module a file imports (``from msprobe_core import x`` counts ``x``
    when it is a module or package of the core)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "msprobe_core":
            for alias in node.names:
                sub = REPO / Path(*f"{node.module}.{alias.name}".split("."))
                is_module = sub.with_suffix(".py").is_file() or (sub / "__init__.py").is_file()
                out.append((node.lineno, f"{node.module}.{alias.name}" if is_module else node.module))
        elif isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "msprobe_core")
    return out


def test_the_scan_sees_a_module_imported_from_the_package(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from msprobe_core import result_columns as C\nfrom msprobe_core import hookimpl\n"
                      "def f():\n    from msprobe_core.load.dumpjson import load_stack\n")
    assert _core_imports(module) == [(1, "msprobe_core.result_columns"), (2, "msprobe_core"),
                                     (4, "msprobe_core.load.dumpjson")]


def _imported_names(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) of every name a file takes from ``msprobe_core`` or its plugin module."""
    return [(node.lineno, node.module, alias.name) for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ImportFrom) and node.module in FIRST_PARTY_MODULES for alias in node.names]


def test_plugins_import_only_the_public_module():
    first_party = _plugin_sources()
    example = sorted((REPO / "examples" / "plugins").rglob("*.py"))
    outside = [f"{p.relative_to(REPO)}:{line}: {module}" for files, allowed in
               ((first_party, FIRST_PARTY_MODULES), (example, PUBLIC_MODULES))
               for p in files for line, module in _core_imports(p) if module not in allowed]
    assert not outside, ("plugins import the core through msprobe_core.plugin (docs/plugins.md):\n"
                         + "\n".join(outside))
    # and only names those modules have: ``hookimpl`` from the package, what ``__all__`` lists from the others
    import msprobe_core.plugin as public

    given = {"msprobe_core": {"hookimpl"}, "msprobe_core.plugin": set(public.__all__)}
    unknown = [f"{p.relative_to(REPO)}:{line}: {module}.{name}" for p in first_party + example
               for line, module, name in _imported_names(p) if name not in given[module]]
    assert not unknown, "not in msprobe_core.plugin:\n" + "\n".join(unknown)
