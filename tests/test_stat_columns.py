"""Statistics columns turned into numbers: the one-pass conversion equals converting cell by cell."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msprobe_core.default_plugins.msprobe_verdicts.rules import _is_inf_nan
from msprobe_core.default_plugins.statistics_metrics.diffs import StatColumn
from msprobe_core.text import statcells

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


def _fits_a_double(v: int) -> bool:
    try:
        float(v)
    except OverflowError:
        return False
    return True


class _Str(str):
    """A str subclass: its kind is "other", as ``type(v) is str`` says."""


any_cells = st.lists(st.floats() | st.integers(-(2**1100), 2**1100) | st.booleans() | st.none() | st.text(max_size=3)
                     | st.builds(_Str, st.text(max_size=2)) | st.just(1.5j), max_size=40)


@settings(max_examples=400, deadline=None)
@given(any_cells, st.sampled_from([list, tuple]))
def test_the_one_pass_classification_is_the_numpy_one(values: list, container: type) -> None:
    """``classify_values`` in C (``_dumpscan.classify_statistics``) gives the kinds and numbers of the numpy path."""
    if statcells._classify is None:
        pytest.skip("the C extension is not built here")
    values = container(v for v in values if type(v) is not int or _fits_a_double(v))
    assert statcells._classify(values + container([2**1024])) is None  # left to numpy, which raises
    kind, num = statcells.classify_values(values)
    want_kind = np.fromiter(map(statcells._TYPE_CODE.__getitem__, map(type, values)), dtype=np.int8,
                            count=len(values))
    assert kind.tolist() == want_kind.tolist()
    numeric = [type(v) in (float, int) for v in values]
    want = statcells.float_values(values, want_kind == statcells.FLOAT, want_kind == statcells.INT)
    assert all((a == b and math.copysign(1, a) == math.copysign(1, b)) or (math.isnan(a) and math.isnan(b))
               for a, b in zip(num.tolist(), want.tolist()))
    assert [math.isnan(x) for x, is_num in zip(num.tolist(), numeric) if not is_num] == [True] * numeric.count(False)
    assert num.flags.writeable  # StatColumn writes the parsed text cells into it
