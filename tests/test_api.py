"""The Python API: its signature and docstring, errors that name parameters, the CompareResult it returns."""

from __future__ import annotations

import csv
import json
import pydoc
import warnings
from pathlib import Path

import pandas as pd
import pytest

import msprobe_core
from msprobe_core.api import CompareResult
from msprobe_core.errors import InputError, OptionError, UsageError

from .dumps import api, only_result, tensor, write_dump

REPO = Path(__file__).resolve().parents[1]
STATS = REPO / "examples" / "pytorch_stats"
MULTI = REPO / "examples" / "pytorch_multirank"


def test_help_shows_the_signature_and_every_option():
    text = pydoc.render_doc(msprobe_core.compare, renderer=pydoc.plaintext)
    head = text.split("\n\n", 1)[1].splitlines()[0]
    assert head.startswith("compare(target: 'str | os.PathLike', golden: 'str | os.PathLike', output_dir: ")
    # the default plugins' options (xlsx, fuzzy) after the core's own, before the installed plugins'
    assert "xlsx: 'bool' = False," in head and "fuzzy_match: 'bool' = False," in head and "-> 'CompareResult'" in head
    assert head.index("*, workers") < head.index("diff_analyze") < head.index("fuzzy_match") < head.index("xlsx") \
        < head.index("rank:")
    for name, line in [("fuzzy_match", "Match APIs whose call numbers differ."),
                       ("api_mapping", "Cross-framework API mapping [yaml]."),
                       ("rank", "Kernel dump ranks (1,2,3); alone: all.")]:
        assert f"{name}: " in text and line in text
    assert "Options from msprobe-mindspore:" in text and "Options from msprobe-kernel:" in text
    assert "(*args, **kwargs)" not in text


@pytest.mark.exercises_hooks("msprobe_summarize", "msprobe_write_report")
def test_compare_returns_a_result_object(tmp_path):
    t, g = STATS / "target/step0", STATS / "golden/step0"
    result = msprobe_core.compare(t, g, tmp_path / "out")
    assert isinstance(result, CompareResult) and isinstance(result.table, pd.DataFrame)
    assert result.files == [only_result(tmp_path / "out")]
    with open(result.files[0], newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert list(result.table.columns) == rows[0] and len(result.table) == len(rows) - 1 == len(result)
    assert list(result.table["NPU Name"]) == [r[0] for r in rows[1:]]
    summary = result.summary
    assert summary["rows"] == len(result.table) and sum(summary["verdicts"].values()) == len(result.table)
    assert summary["files"] == [str(result.files[0].resolve())]
    assert result.first_divergence == summary["first_divergence"]
    assert result.first_divergence["node"] == "Functional.linear.0.forward"
    report = result.write_report(tmp_path / "report.html")
    html = report.read_text(encoding="utf-8")
    assert report == tmp_path / "report.html" and html.startswith("<!DOCTYPE html>") and "Functional.linear" in html


def test_without_output_dir_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = msprobe_core.compare(STATS / "target/step0/rank0/dump.json", STATS / "golden/step0/rank0/dump.json")
    assert result.files == [] and len(result.table) > 0 and result.summary["files"] == []
    assert list(tmp_path.iterdir()) == []


def test_several_ranks_are_joined_with_a_rank_column(tmp_path):
    result = msprobe_core.compare_distributed(MULTI / "target/step0", MULTI / "golden/step0", tmp_path)
    assert list(result.table.columns)[0] == "Rank" and set(result.table["Rank"]) == {"rank0", "rank1"}
    assert len(result.files) == 2 and [p["rank"] for p in result.summary["ranks"]] == ["rank0", "rank1"]


def test_the_dataframe_of_version_0_1_still_works_with_a_warning():
    result = msprobe_core.compare(STATS / "target/step0", STATS / "golden/step0")
    with pytest.warns(DeprecationWarning, match="use result.table"):
        names = list(result["NPU Name"])
    assert names == list(result.table["NPU Name"])
    with pytest.warns(DeprecationWarning):
        assert list(result.columns) == list(result.table.columns)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(result) == len(result.table)  # the row count is not deprecated


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fuzzy": True}, "compare() got an unexpected keyword argument 'fuzzy' (did you mean 'fuzzy_match'?)"),
        ({"workers": "2"}, "workers must be an integer, not '2'"),
        ({"fuzzy_match": "yes"}, "fuzzy_match must be True or False, not 'yes'"),
        ({"rank": "x"}, "rank: expects comma-separated non-negative integers, got 'x' in 'x'"),
        ({"output_format": 3}, "output_format must be a string, not 3"),
        ({"extra": [1]}, "extra must be a dict, not [1]"),
        ({"report": "html"}, "compare() got an unexpected keyword argument 'report'"),
    ],
)
def test_bad_options_are_named_as_parameters(kwargs, message):
    with pytest.raises(OptionError) as info:
        msprobe_core.compare(STATS / "target/step0", STATS / "golden/step0", **kwargs)
    assert str(info.value) == message
    assert isinstance(info.value, TypeError) and isinstance(info.value, UsageError)


def test_path_errors_name_the_parameter(tmp_path):
    t = write_dump(tmp_path / "t", {"Torch.a.0.forward": api([tensor()])})
    with pytest.raises(InputError, match="golden path does not exist") as info:
        msprobe_core.compare(t, tmp_path / "missing")
    assert "-gp" not in str(info.value)
    with pytest.raises(UsageError, match="^target and golden must both be files or both be directories: ") as info:
        msprobe_core.compare(t, tmp_path)
    # which is which, named as the Python caller names them
    assert str(info.value).endswith(f"target {t} is a file, golden {tmp_path} is a directory")
    assert "-tp" not in str(info.value)
    with pytest.raises(OptionError, match="^golden must be a path"):
        msprobe_core.compare(t, 3)
    with pytest.raises(OptionError, match="^compare\\(\\): missing a required argument: 'golden'"):
        msprobe_core.compare(t)
    with pytest.raises(OptionError, match="too many positional arguments"):
        msprobe_core.compare(t, t, tmp_path, True)


def test_bad_output_format_fails_before_any_work(tmp_path):
    with pytest.raises(UsageError, match="unknown output format 'parquet'"):
        msprobe_core.compare(STATS / "target/step0", STATS / "golden/step0", tmp_path / "o", output_format="parquet")
    assert not (tmp_path / "o").exists()


def test_older_keyword_spellings_and_xlsx(tmp_path):
    result = msprobe_core.compare(STATS / "target/step0", STATS / "golden/step0", tmp_path, xlsx=True,
                                  is_print_compare_log=False, first_diff_analyze=False)
    assert [f.suffix for f in result.files] == [".xlsx"]
    with pytest.raises(OptionError, match="got 'tensor_log' twice"):
        msprobe_core.compare(STATS / "target/step0", STATS / "golden/step0", tensor_log=True, is_print_compare_log=True)


def _t(v: float, shape=(4,)) -> dict:
    return tensor(shape=shape, mx=v, mn=-v, mean=v / 10, norm=2 * v)


def test_extra_carries_the_diff_analyze_config(tmp_path):
    from msprobe_core.default_plugins.diff_analyze.config import DiffAnalyzeConfig

    t = write_dump(tmp_path / "t" / "step0" / "rank0", {
        "Functional.linear.0.forward": api([_t(1.0)], [_t(1.001)]),
        "Functional.linear.1.forward": api([_t(1.0)], [_t(1.0, shape=(5,))])})
    g = write_dump(tmp_path / "g" / "step0" / "rank0", {
        "Functional.linear.0.forward": api([_t(1.0)], [_t(1.0)]),
        "Functional.linear.1.forward": api([_t(1.0)], [_t(1.0, shape=(4,))])})

    def first_node(out: Path, **kwargs) -> str:
        result = msprobe_core.compare(t.parent.parent, g.parent.parent, out, diff_analyze=True, **kwargs)
        analysis = next(f for f in result.files if f.name.startswith("diff_analyze_"))
        return json.loads(analysis.read_text())["rank_0"][0]["op_name"]

    assert first_node(tmp_path / "default") == "Functional.linear.0.forward"
    loose = DiffAnalyzeConfig(base_tolerance=0.01, exact_input_tolerance=0.01)
    assert first_node(tmp_path / "loose", extra={"diff_analyze_config": loose}) == "Functional.linear.1.forward"
