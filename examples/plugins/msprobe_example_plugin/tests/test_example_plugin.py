"""Tests of the example plugin, written as a plugin author writes them: with the ``msprobe_tester`` fixture of
msprobe-testing (``docs/plugins.md``, "Testing your plugin"). Run them with ``pytest`` from this folder."""

from __future__ import annotations

import csv
import json
import math
import warnings

from msprobe_example import plugin


def _rows(out) -> list[dict[str, str]]:
    (result,) = out.glob("compare_result_*.csv")
    with open(result, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_the_host_holds_exactly_this_plugin_and_the_framework_plugins(msprobe_tester):
    host = msprobe_tester.host(plugin)
    names = [name for name, _ in host.pm.list_name_plugin()]
    assert "msprobe_core.builtin" in names and "pytorch" in names
    assert "kernel" not in names and "classic" not in names  # installed, but not named
    assert sum(host.pm.get_plugin(n) is plugin for n in names) == 1


def test_mean_abs_err_is_a_column_of_tensor_mode(msprobe_tester):
    msprobe_tester.host(plugin)
    pair = msprobe_tester.dump_pair("tensor")
    out = msprobe_tester.path / "out"
    result = msprobe_tester.run_cli("compare", *pair.args, "-o", out, "-q", "--mean_abs_err")
    assert result.exit_code == 0, result.stderr
    rows = {r["NPU Name"]: r for r in _rows(out)}
    assert float(rows["Functional.linear.0.forward.input.0"]["MeanAbsErr"]) == 0.0  # the same input
    assert float(rows["Functional.linear.0.forward.output.0"]["MeanAbsErr"]) > 0.0  # the diverging call


def test_mean_abs_err_of_masked_scores_says_nan_and_warns_nothing(msprobe_tester):
    msprobe_tester.host(plugin)
    pair = msprobe_tester.dump_pair("tensor", nonfinite=True)  # -inf on both sides: inf - inf
    out = msprobe_tester.path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy RuntimeWarning would land on the user's console
        result = msprobe_tester.run_cli("compare", *pair.args, "-o", out, "-q", "--mean_abs_err")
    assert result.exit_code == 0, result.stderr
    assert "RuntimeWarning" not in result.stderr
    rows = {r["NPU Name"]: r for r in _rows(out)}
    assert rows["Tensor.masked_fill.0.forward.output.0"]["MeanAbsErr"] == "Nan"


def test_the_json_writer_writes_every_row_of_each_mode(msprobe_tester):
    msprobe_tester.host(plugin)
    for mode in ("statistics", "md5"):
        pair = msprobe_tester.dump_pair(mode)
        out = msprobe_tester.path / f"out-{mode}"
        result = msprobe_tester.run_cli("compare", *pair.args, "-o", out, "-q", "--output_format", "json")
        assert result.exit_code == 0, result.stderr
        (written,) = out.glob("compare_result_*.json")
        doc = json.loads(written.read_text(encoding="utf-8"))
        assert doc["mode"] == mode and len(doc["rows"]) > 0
        if mode == "statistics":  # statistics-mode metric cells reach a writer as msprobe's text
            max_diff = doc["columns"].index("Max diff")
            assert all(isinstance(row[max_diff], str) for row in doc["rows"])
            assert any(not math.isclose(float(row[max_diff]), 0.0) for row in doc["rows"])


def test_rename_target_pairs_renamed_rows(msprobe_tester):
    msprobe_tester.host(plugin)
    pair = msprobe_tester.dump_pair("statistics", diverge=False)
    out = msprobe_tester.path / "out"
    result = msprobe_tester.run_cli("compare", *pair.args, "-o", out, "-q",
                                    "--rename_target", r"^Functional\.relu\.=Functional.gelu.")
    assert result.exit_code == 0, result.stderr
    rows = _rows(out)
    assert [r["Bench Name"] for r in rows if r["NPU Name"].startswith("Functional.relu.")] == ["N/A"] * 4


def test_a_bad_option_value_is_one_line_and_exit_2(msprobe_tester):
    msprobe_tester.host(plugin)
    pair = msprobe_tester.dump_pair()
    result = msprobe_tester.run_cli("compare", *pair.args, "-o", msprobe_tester.path / "out", "--rename_target", "(x=y")
    assert result.exit_code == 2
    assert result.stderr.startswith("msprobe: error: --rename_target: '(x' is not a regular expression")
    assert len(result.stderr.splitlines()) == 1
