"""A third party's mode gets what the kernel plugin's gets, from the same declarations and nothing else.

A made-up plugin declares a mode ``probe`` whose rows are files named ``<call>.<order>.bin`` (sorted by name in its
table), a verdict column of its own, a result header it recognises, and relative-error judging: the summary, the
first divergence, the report's payload and ``msprobe report``'s mode detection follow those declarations.
"""

from __future__ import annotations

import pytest

from msprobe_core import hookimpl
from msprobe_core import result_columns as C
from msprobe_core.default_plugins.report.html import build_payload
from msprobe_core.default_plugins.summary.summary import summarize
from msprobe_core.default_plugins.summary.views import detect_mode, node_of, view_from_table, view_grammar
from msprobe_core.host.registry import PluginHost, current_host, reset_host
from msprobe_core.host.specs import MetricSpec, RowNames
from msprobe_core.result import ResultTable

# what these tests read of results (columns, modes, summaries) they read as a run does (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("as_in_a_run")

MODE = "probe"
VERDICT = C.ColumnSpec("Probe Verdict", C.VERDICT, (MODE,), levels=(("bad", "error"), ("odd", "warning")))
GRAMMAR = RowNames(r"^(?P<node>[A-Za-z]+)\.(?P<order>\d+)\.bin$", readable="{node} #{order}", backward=("grad",),
                   suffix=".bin")


class _ProbePlugin:
    def __init__(self, relative: bool = True) -> None:
        self.relative = relative

    @hookimpl
    def msprobe_register_metrics(self, register):
        register(MetricSpec(MODE, lambda ctx: {}, whole_table=True,
                            columns=(C.ColumnSpec(C.COSINE, C.METRIC, (MODE,), ranks=(MODE,), plots=(MODE,)), VERDICT),
                            row_names=GRAMMAR, recognizes=lambda cols: VERDICT.name in cols,
                            relative_errors=self.relative))


def _host(plugin: _ProbePlugin):
    before = current_host()
    host = PluginHost(autoload=False, extra_plugins=[plugin])
    reset_host(host)
    return before, host


@pytest.fixture()
def probe_host():
    before, host = _host(_ProbePlugin())
    yield host
    reset_host(before)


def _table(cosine: str = "0.5") -> ResultTable:
    # sorted by name, as a file-per-row dump lists them: execution order is 3 (Matmul), 1 (Add), 2 (gradAdd)
    names = ["/run/Add.2.bin", "/run/Matmul.1.bin", "/run/gradAdd.3.bin"]
    cols = [C.NPU_NAME, C.BENCH_NAME, C.COSINE, C.MAX_ABS_ERR, VERDICT.name]
    data = {C.NPU_NAME: names, C.BENCH_NAME: names, C.COSINE: ["1.0", cosine, "1.0"], C.MAX_ABS_ERR: ["0", "2", "0"],
            VERDICT.name: ["odd", "bad", "ok"]}
    return ResultTable(MODE, cols, data, [0, 0, 0])


def test_the_summary_follows_the_declarations(probe_host):
    view = view_from_table(_table())
    assert view.mode == MODE
    assert view.order() == [1, 0, 2]  # by the order group of the file names
    assert view.verdicts() == ["warning", "error", "pass"]  # by the verdict column's levels
    grammar = view_grammar(view)
    assert node_of(view.names[2], grammar) == ("gradAdd", "backward")
    assert node_of("Functional.add.0.forward.input.0", grammar) == ("Functional.add.0.forward", "forward")
    summary = summarize([view])
    assert summary["verdicts"] == {"pass": 1, "warning": 1, "error": 1}
    fd = summary["first_divergence"]
    assert (fd["node"], fd["index"]) == ("Matmul", 0) and "Cosine 0.5 < 0.9" in fd["reason"]


@pytest.mark.parametrize(("relative", "source", "reason"), [
    (False, "threshold", "MaxAbsErr 2 > 1"),  # the absolute floor of tensor rows
    (True, "verdict", "Probe Verdict is bad"),  # no floor: the mode's own error verdict names it, as a fallback
])
def test_relative_errors_replace_the_absolute_floor(relative, source, reason):
    before, _ = _host(_ProbePlugin(relative))
    try:
        fd = summarize([view_from_table(_table(cosine="1.0"))])["first_divergence"]
    finally:
        reset_host(before)
    assert fd["node"] == "Matmul" and fd["source"] == source and reason in fd["reason"], fd


def test_the_report_and_read_back_results_follow_the_declarations(probe_host):
    view = view_from_table(_table())
    payload = build_payload([view], summarize([view]))
    assert payload["verdictColumns"] == [VERDICT.name]
    assert payload["rowNames"] == {MODE: {"pattern": r"^(?<node>[A-Za-z]+)\.(?<order>\d+)\.bin$",
                                          "readable": "{node} #{order}"}}
    assert payload["parts"][0]["order"] == [1, 0, 2] and payload["parts"][0]["plot"] == [C.COSINE]
    assert detect_mode([C.NPU_NAME, C.COSINE, VERDICT.name]) == MODE
    assert detect_mode([C.NPU_NAME, C.COSINE]) == "tensor"


def test_without_the_plugin_the_core_knows_none_of_it():
    before = current_host()
    reset_host(PluginHost(autoload=False))
    try:
        view = view_from_table(_table())
        assert view.order() == [0, 1, 2] and view.verdicts() == ["pass", "pass", "pass"]
        assert node_of(view.names[0], view_grammar(view)) == ("/run/Add.2.bin", "-")
    finally:
        reset_host(before)
