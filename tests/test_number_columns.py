"""Columns of numbers spelled by the C join (msprobe_core.text.csv_rows.number_column): every CSV byte is what the
same column spelled as text gives, through the C join and through the join in Python."""

from __future__ import annotations

import csv
import io
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msprobe_core.default_plugins.fast_scan.statcells import StatCells
from msprobe_core.default_plugins.statistics_metrics.coded import CodedTextColumn
from msprobe_core.text import csv_rows
from msprobe_core.text.csv_rows import csv_chunk, number_column
from msprobe_core.write.writers import _csv_texts

#: any float64 bit pattern, and the ranges where orjson and repr spell differently (1.5e-7, 0.000015)
floats = (st.integers(0, 2**64 - 1).map(lambda b: struct.unpack("<d", struct.pack("<Q", b))[0])
          | st.floats(1e-10, 1e-3) | st.floats(-1e-3, -1e-10) | st.sampled_from([0.0, -0.0, 1e16, 1e-5, 1e-4, 9.99e-5]))
cells = st.lists(floats | st.integers(-(2**70), 2**70) | st.none() | st.booleans()
                 | st.sampled_from(["N/A", "=cmd", "a,b", 'say "x"', "line\nbreak", "-1.5", "ü"]), max_size=30)
LABELS = ("", "N/A", "Diff", "inf", "-inf", "Nan", "0", "a,b", "=x")


def _same(column: object, n: int) -> None:
    names = [f"r{i}" for i in range(n)]
    texts, charset = column.csv_texts(0, n), getattr(column, "csv_charset", None)
    as_text = csv_chunk([names, texts, names], [None, charset, None])
    form, form_charset = _csv_texts(column, 0, n)
    assert isinstance(form, tuple), "the column offers no number column"
    assert csv_chunk([names, form, names], [None, form_charset, None]) == as_text
    # a field the C join cannot take (not ASCII): every row joined in Python, the numbers spelled by the column
    other = ["ü"] * n
    assert (csv_chunk([names, form, other], [None, form_charset, None])
            == csv_chunk([names, texts, other], [None, charset, None]))
    # what the csv module reads back is the cells the column spells (quoting included)
    rows = list(csv.reader(io.StringIO(as_text)))
    assert [r[1] for r in rows] == texts


@settings(max_examples=300, deadline=None)
@given(cells)
def test_a_statistics_column_spelled_in_c_is_its_text(values: list) -> None:
    _same(StatCells.from_values(values), len(values))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(floats, st.integers(0, len(LABELS) - 1)), max_size=30), st.sampled_from(["", "%"]))
def test_a_coded_column_spelled_in_c_is_its_text(cells: list, suffix: str) -> None:
    values = np.array([v for v, _ in cells], dtype=np.float64)
    codes = np.array([c if c else 0 for _, c in cells], dtype=np.int8)
    _same(CodedTextColumn(values, codes, LABELS, suffix), len(cells))


def test_a_coded_column_with_another_suffix_is_spelled_as_text() -> None:
    column = CodedTextColumn(np.array([1.5, -2.0]), np.zeros(2, dtype=np.int8), LABELS, " units")
    assert column.csv_number_column(0, 2) is None
    assert _csv_texts(column, 0, 2)[0] == ["1.5 units", "'-2.0 units"]


def test_the_c_join_spells_numbers_as_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    """The notation orjson and repr differ in, negative numbers after an apostrophe, overrides quoted."""
    values = np.array([1.5e-7, -1.5e-7, 0.000015, -0.00001, 1e-10, 1e16, -0.0, 0.0001, 123.25])
    overrides = [None] * len(values)
    overrides[-1] = "a,b"
    form = number_column(values, overrides, "%", True, lambda: [])
    line = csv_chunk([["x"] * len(values), form], [None, ""])
    assert line.splitlines() == [f"x,{t}" for t in ["1.5e-07%", "'-1.5e-07%", "1.5e-05%", "'-1e-05%", "1e-10%",
                                                   "1e+16%", "'-0.0%", "0.0001%", '"a,b"']]
    # without the C extension the column's own spelling is joined in Python
    monkeypatch.setattr(csv_rows, "_join_rows", None)
    assert csv_chunk([["x", "y"], number_column(values[:2], None, "", False, lambda: ["a", "b"])], [None, ""]) \
        == "x,a\ny,b\n"
