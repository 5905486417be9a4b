"""``StatCells`` (a statistics column held as arrays) against the list of values it stands for.

Every operation the result stage, the writers and the wire form use must give what the
same operation gives on a plain list: values and their types, picks, the int-to-float
rule, CSV and xlsx cells.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msprobe_core.default_plugins.fast_scan.statcells import StatCells
from msprobe_core.default_plugins.pair_loading.tablewire import decode_column, encode_column
from msprobe_core.default_plugins.xlsx.workbook import _xlsx_values
from msprobe_core.model import NA
from msprobe_core.result import _pick, all_numbers, numeric_column
from msprobe_core.text.cells import csv_cells

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
VALUES = st.lists(st.floats() | st.integers(-(2**70), 2**70) | st.none() | st.booleans()
                  | st.sampled_from(["Nan", "inf", "N/A", "=1+1", "-x", "a,b", 'q"'])
                  | st.lists(st.integers(), max_size=2), max_size=30)


def same(a: list, b: list) -> bool:
    """Equal value by value and type by type (NaN equal to NaN, -0.0 not equal to 0.0)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if type(x) is not type(y):
            return False
        if isinstance(x, float):
            if not ((math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x) == math.copysign(1, y))):
                return False
        elif x != y:
            return False
    return True


@SETTINGS
@given(VALUES)
def test_the_cells_read_as_the_list(values: list) -> None:
    cells = StatCells.from_values(values)
    assert same(list(cells), values)
    assert len(cells) == len(values)
    if not any(isinstance(v, float) and math.isnan(v) for v in values):  # a list's == needs the same NaN object
        assert cells == values and cells == StatCells.from_values(values)
    if values:
        assert same([cells[i] for i in range(-len(values), len(values))], values + values)
        assert same(cells[1:-1], values[1:-1]) and same(cells[::2], values[::2])
        rows = list(range(len(values)))[::-1]
        assert same(cells.values_at(rows), [values[i] for i in rows])
    assert same(list(pickle.loads(pickle.dumps(cells))), values)


@SETTINGS
@given(VALUES, st.data())
def test_a_pick_is_the_lists_pick(values: list, data: st.DataObject) -> None:
    idx = data.draw(st.lists(st.integers(-1, len(values) - 1), max_size=40))
    none = data.draw(st.sampled_from([None, NA]))
    cells = StatCells.from_values(values)
    want = _pick(values, idx, none=none)
    got = _pick(cells, idx, none=none)
    assert isinstance(got, StatCells) or not idx
    assert same(list(got), want)
    assert same(list(_pick(cells, list(range(len(values))), none=None, identity=True)), values)


@SETTINGS
@given(VALUES, st.sampled_from([None, True, False]))
def test_ints_become_floats_as_in_a_list(values: list, whole: bool | None) -> None:
    values = [v for v in values if type(v) is not int or abs(v) < 2**60] if whole else values
    cells = StatCells.from_values(values)
    assert all_numbers(cells) == all_numbers(values)
    if whole and not all_numbers(values):
        return  # a part's "whole" answer comes from a column of numbers only
    assert same(list(numeric_column(cells, whole)), numeric_column(values, whole))


@SETTINGS
@given(VALUES, st.integers(0, 30), st.integers(0, 30))
def test_csv_and_xlsx_cells_are_the_lists(values: list, start: int, stop: int) -> None:
    cells = StatCells.from_values(values)
    start, stop = min(start, len(values)), min(max(start, stop), len(values))
    assert cells.csv_texts(start, stop) == csv_cells(values[start:stop])[0]
    charset = cells.csv_charset
    if charset is not None:  # no text cell: every character of every cell is in it
        assert set("".join(csv_cells(values)[0])) <= set(charset)
    got, want = _xlsx_values(cells, start, stop), _xlsx_values(values, start, stop)
    assert [type(v) for v in got] == [type(v) for v in want]
    assert same([v for v in got if isinstance(v, float)], [v for v in want if isinstance(v, float)])
    assert [v for v in got if not isinstance(v, float)] == [v for v in want if not isinstance(v, float)]


@SETTINGS
@given(VALUES)
def test_the_wire_form_carries_the_cells(values: list) -> None:
    cells = StatCells.from_values(values)
    wire = pickle.loads(pickle.dumps(encode_column(cells)))
    back = decode_column(wire)
    assert isinstance(back, StatCells) and same(list(back), values)


def test_bad_arrays_are_refused() -> None:
    try:
        StatCells(np.zeros(3, dtype=np.int8), np.zeros(2), {})
    except ValueError:
        pass
    else:
        raise AssertionError("mismatched arrays accepted")
