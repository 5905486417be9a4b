"""Lean result columns behave like the lists of cells they stand for; statistics diffs spell as before."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msprobe_core.default_plugins.statistics_metrics.coded import CodedTextColumn
from msprobe_core.default_plugins.statistics_metrics.diffs import stat_diffs
from msprobe_core.model import NA
from msprobe_core.result import _pick
from msprobe_core.text.cells import csv_cell
from msprobe_core.text.columns import ITER_CHUNK, StackColumn

LABELS = ("", "N/A", "Diff", "inf", "-inf", "Nan", "0")


def coded(values: list[float], codes: list[int], suffix: str = "") -> CodedTextColumn:
    return CodedTextColumn(np.array(values, dtype=np.float64), np.array(codes, dtype=np.int8), LABELS, suffix)


def expected(values: list[float], codes: list[int], suffix: str = "") -> list[str]:
    return [LABELS[c] if c else repr(v) + suffix for v, c in zip(values, codes)]


def test_behaves_like_its_list() -> None:
    values, codes = [1.5, -2.0, 0.0, 1e-7, 3e-5, math.nan, 7.0], [0, 0, 1, 0, 0, 0, 6]
    col, ref = coded(values, codes, "%"), expected(values, codes, "%")
    assert len(col) == len(ref)
    assert [col[i] for i in range(-7, 7)] == [ref[i] for i in range(-7, 7)]
    for bad in (7, -8):
        with pytest.raises(IndexError):
            col[bad]
    for s in (slice(None), slice(2, 5), slice(-3, None), slice(5, 2), slice(None, None, 2), slice(None, None, -1)):
        assert col[s] == ref[s]
    assert list(col) == ref and col == ref and ref == col and not (col != ref)
    assert col != ref[:-1] and col != [*ref[:-1], "x"]
    assert col + ["a"] == [*ref, "a"] and ["a"] + col == ["a", *ref]
    assert "N/A" in col and col.index("0") == 6 and col.count("N/A") == 1
    assert np.asarray(col).tolist() == np.asarray(ref).tolist()
    assert pickle.loads(pickle.dumps(col)) == ref
    with pytest.raises(TypeError):
        hash(col)
    numbers = col.numbers()
    assert numbers[0] == 1.5 and math.isnan(numbers[2]) and math.isnan(numbers[6])
    with pytest.raises(ValueError):
        numbers[0] = 3.0  # read-only: the column's cells cannot change under a reader
    assert col.codes.tolist() == codes


def test_iterates_in_chunks_across_the_boundary() -> None:
    n = ITER_CHUNK + 5
    values = np.arange(n, dtype=np.float64) / 8
    codes = np.zeros(n, dtype=np.int8)
    codes[::7] = 1
    col = CodedTextColumn(values, codes, LABELS)
    assert list(col) == expected(values.tolist(), codes.tolist())


def test_rejects_inconsistent_input() -> None:
    with pytest.raises(ValueError):
        CodedTextColumn(np.zeros(2), np.zeros(3, dtype=np.int8), LABELS)
    with pytest.raises(ValueError):
        CodedTextColumn(np.zeros(2), np.array([0, 9], dtype=np.int8), LABELS)


def test_stack_column() -> None:
    lines = ["File a.py, line 1, in f, \n x = 1"]
    col = StackColumn([lines, None, ["b"]])
    ref = [str(lines), NA, "['b']"]
    assert col == ref and col[-1] == "['b']" and col[1:] == ref[1:] and len(col) == 3


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.lists(st.one_of(st.text(), st.integers(), st.booleans()), max_size=4)),
                max_size=12), st.data())
def test_stack_column_csv_texts_are_each_cell_spelled(stacks: list, data: st.DataObject) -> None:
    """Every row's text is str() of its lines, and its CSV text, rows of one API sharing one object of lines: each cell as csv_cell spells it
    (a line that looks like a formula neutralised, a quote or a newline kept), however the lines repeat."""
    rows = [stacks[data.draw(st.integers(0, len(stacks) - 1))] for _ in range(20)] if stacks else []
    col = StackColumn(rows)
    texts = [NA if v is None else str(v) for v in rows]
    assert col.texts() == texts and [col.cell(i) for i in range(len(rows))] == texts
    expected = [csv_cell(t) for t in texts]
    assert col.csv_texts() == expected and col.csv_texts(3, 9) == expected[3:9]


# (npu, bench, Max diff cell, MaxRelativeErr cell) as the list-based implementation spelled them
DIFF_CASES = [
    (1.5, 0.5, "1.0", "200.0%"), (1, 0, "1.0", "inf"), ("N/A", 1.0, "N/A", "N/A"), (math.nan, 1.0, "Nan", "Nan"),
    (math.inf, 1.0, "inf", "inf"), (2.0, -math.inf, "inf", "inf"), ("npu:0", "npu:0", "0", "0"),
    (3.0, "cpu", "Diff", "Diff"), (-1e-7, 2e-7, "-3e-07", "150.0%"), (5.0, 5.0, "0", "0"), (None, None, "0", "0"),
    ("inf", "Nan", "Nan", "Nan"), (1e308, -1e308, "inf", "inf%"), ("abc", 1.0, "Diff", "Diff"), (4, 4.0, "0.0", "0.0%"),
    (0.5, -0.25, "0.75", "300.0%"),
]


def test_stat_diffs_cells() -> None:
    npu, bench, diffs, rels = (list(x) for x in zip(*DIFF_CASES))
    diff, rel = stat_diffs(npu, bench)
    assert diff == diffs
    assert rel == rels


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(allow_nan=False, allow_infinity=False),
                          st.floats(allow_nan=False, allow_infinity=False)), max_size=30))
def test_stat_diffs_numbers_match_their_text(pairs: list[tuple[float, float]]) -> None:
    npu, bench = [p[0] for p in pairs], [p[1] for p in pairs]
    diff, rel = stat_diffs(npu, bench)
    for k, (x, y) in enumerate(pairs):
        if repr(x) == repr(y):
            assert diff[k] == "0" and rel[k] == "0"
            continue
        with np.errstate(all="ignore"):
            d = np.float64(x) - np.float64(y)
            r = abs(d / np.float64(y) * 100)
        assert diff[k] == repr(float(d))
        assert rel[k] == ("inf" if y == 0 else repr(float(r)) + "%")
        assert float(diff[k]) == diff.numbers()[k] or math.isnan(diff.numbers()[k])


def test_pick() -> None:
    values = ["a", None, "c"]
    assert _pick(values, [2, -1, 1, 0]) == ["c", NA, NA, "a"]
    assert _pick(values, [1, -1], none=None) == [None, NA]
    assert _pick(values, [1], missing=None, none="x") == ["x"]
    assert _pick(values, [-1], missing=None, none="x") == [None]  # the missing value is not a None cell
    assert _pick(values, []) == []


def test_stack_column_first_row_of_each_api_run() -> None:
    from pathlib import Path

    from msprobe_core.model import ApiEntry, DumpTable, MatchResult
    from msprobe_core.result import stack_column

    apis = [ApiEntry(k, k, "0.forward", "forward") for k in ("A", "B", "C")]
    table = DumpTable(Path("d.json"), "dump", "statistics", "statistics", "pytorch", apis=apis,
                      row_api=[0, 0, 1, 1, 1, 2], stack={"A": ["a1", "a2"], "C": ["c"]})
    # rows out of order: a stack is on the first row of each run of one API, whatever the order
    match = MatchResult(target=[0, 1, 2, 3, 0, 5, 4], golden=[-1] * 7)
    assert stack_column(table, match) == [str(["a1", "a2"]), NA, NA, NA, str(["a1", "a2"]), "['c']", NA]
    assert stack_column(table, MatchResult([], [])) == []
