"""The summary reads numeric result columns without parsing text, and gets what parsing would give."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from msprobe_core.default_plugins.fast_scan.statcells import StatCells
from msprobe_core.default_plugins.statistics_metrics.coded import CodedTextColumn
from msprobe_core.default_plugins.summary.views import SpelledColumns, to_number, view_from_table
from msprobe_core.result import ResultTable

LABELS = ["", "N/A", "Nan", "inf", "-inf", "Diff", "0"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(allow_nan=True, allow_infinity=True, width=64), st.integers(0, len(LABELS) - 1)),
        max_size=60,
    ),
    st.sampled_from(["", "%"]),
)
def test_numbers_of_a_coded_column_equal_parsing_its_cells(cells, suffix):
    values = np.array([v for v, _ in cells], dtype=np.float64)
    codes = np.array([c for _, c in cells], dtype=np.int8)
    column = CodedTextColumn(values, codes, LABELS, suffix)
    cells = SpelledColumns({"m": column}, ["m"])
    assert cells.numbers("m") == [to_number(text) for text in cells["m"]]  # the cells as the CSV has them


STAT_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.integers(-(10**20), 10**20),
    st.sampled_from(["Nan", "inf", "-inf", "-3", "=1+1", "1.5%", "N/A", "", " 2"]),
    st.booleans(),
    st.none(),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(STAT_VALUES, max_size=60), st.integers(0, 60), st.integers(0, 60))
def test_numbers_of_a_statistics_column_equal_parsing_its_cells(values, a, b):
    column = StatCells.from_values(values)
    start, stop = min(a, b, len(values)), min(max(a, b), len(values))
    cells = SpelledColumns({"NPU max": column}, ["NPU max"], start, stop)
    parsed = [to_number(text) for text in cells["NPU max"]]  # the cells as the CSV has them
    assert cells.numbers("NPU max") == parsed
    assert [type(v) for v in cells.numbers("NPU max")] == [type(v) for v in parsed]


def test_view_numbers_agree_for_plain_and_coded_columns():
    values = np.array([0.5, -1e-7, 3.0, 0.0])
    codes = np.array([0, 0, 1, 0], dtype=np.int8)
    coded = CodedTextColumn(values, codes, ["", "N/A"], "%")
    plain = list(coded)  # the same cells as plain text
    names = ["a.input.0", "a.output.0", "b.input.0", "b.output.0"]
    for column in (coded, plain):
        table = ResultTable("statistics", ["NPU Name", "NormRelativeErr"], {"NPU Name": names, "NormRelativeErr": column}, [0, 0, 1, 1])
        view = view_from_table(table)
        # "-1e-07%" is formula-like: the CSV holds it neutralised, and it reads as no number
        assert view.cells["NormRelativeErr"] == ["0.5%", "'-1e-07%", "N/A", "0.0%"]
        assert view.numbers("NormRelativeErr") == [0.005, None, None, 0.0]


def test_spelled_columns_spell_only_what_is_read():
    class Exploding(list):
        def __iter__(self):
            raise AssertionError("this column must not be spelled")

    table = ResultTable("md5", ["NPU Name", "Other"], {"NPU Name": ["x"], "Other": Exploding(["y"])}, [0])
    view = view_from_table(table)
    assert view.names == ["x"]
    assert "Other" in view.cells and list(view.cells) == ["NPU Name", "Other"]


def test_unmatched_rows_are_computed_once_and_forgotten_on_invalidate() -> None:
    from msprobe_core.default_plugins.summary.views import ResultView

    view = ResultView("", "statistics", ["NPU Name", "Bench Name"],
                      {"NPU Name": ["a", "b", "c"], "Bench Name": ["a", "N/A", " "]})
    first = view.unmatched()
    assert first == [False, True, True]
    assert view.unmatched() is first  # cached
    view.cells["Bench Name"][0] = "N/A"
    view.invalidate()
    assert view.unmatched() == [True, True, True]


@settings(max_examples=200, deadline=None)
@given(st.lists(STAT_VALUES, max_size=40), st.lists(st.booleans(), max_size=40),
       st.lists(st.tuples(st.floats(width=64), st.integers(0, len(LABELS) - 1)), max_size=40))
def test_a_few_rows_of_a_column_held_as_arrays_are_spelled_as_in_the_whole_column(values, keep, coded_cells):
    """The HTML report keeps a few rows of a large result (``texts_at``): the statistics held as arrays (fast_scan's
    ``StatCells``) and the coded diffs (statistics_metrics' ``CodedTextColumn``) spell just those rows
    (``csv_texts_at``), each cell as the whole column's CSV has it."""
    coded = CodedTextColumn(np.array([v for v, _ in coded_cells], dtype=np.float64),
                            np.array([c for _, c in coded_cells], dtype=np.int8), LABELS, "%")
    for column in (StatCells.from_values(values), coded):
        rows = [i for i, k in zip(range(len(column)), keep) if k]
        whole = column.csv_texts()
        assert column.csv_texts_at(rows) == [whole[i] for i in rows]
        cells = SpelledColumns({"m": column}, ["m"])
        assert cells.texts_at("m", rows) == [whole[i] for i in rows]
