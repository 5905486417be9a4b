"""Statistics columns turned into numbers: the one-pass conversion equals converting cell by cell."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from msprobe_core.stats_metrics import StatColumn
from msprobe_core.verdicts import _is_inf_nan

cells = st.lists(st.floats() | st.integers(-(2**70), 2**70) | st.sampled_from(["Nan", "inf", "-inf", "N/A", "cpu"])
                 | st.none() | st.booleans(), max_size=40)


def _number(v: object) -> float:
    if type(v) is float:
        return v
    if type(v) is int:
        return float(v)
    return math.nan


@settings(max_examples=400, deadline=None)
@given(cells)
def test_numbers_of_a_statistics_column(values: list) -> None:
    num = StatColumn(values).num
    strings = {i for i, v in enumerate(values) if type(v) is str}
    for i, v in enumerate(values):
        if i in strings:
            continue  # text cells are parsed by the rule table (_classify_str), not converted
        want = _number(v)
        assert (math.isnan(num[i]) and math.isnan(want)) or num[i] == want


@settings(max_examples=400, deadline=None)
@given(cells)
def test_inf_nan_cells(values: list) -> None:
    want = [(type(v) is float and not math.isfinite(v))
            or (type(v) is str and v.strip().lower() in ("inf", "-inf", "nan")) for v in values]
    assert _is_inf_nan(values).tolist() == want


def test_an_all_float_column_is_converted_whole() -> None:
    values = [0.5, -1e300, float("inf"), 3.0]
    assert np.array_equal(StatColumn(values).num, np.array(values))
