"""The verdict engine reads lean numeric columns without spelling them, and reads them as it reads their text."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from msprobe_core.default_plugins.msprobe_verdicts import rules as verdicts
from msprobe_core.default_plugins.statistics_metrics.coded import CodedTextColumn

LABELS = ["", "N/A", "Nan", "inf", "-inf", "Diff", "0"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(width=64), st.integers(0, len(LABELS) - 1)), max_size=40))
def test_percent_readings_of_a_coded_column_equal_those_of_its_text(cells):
    values = np.array([v for v, _ in cells], dtype=np.float64)
    codes = np.array([c for _, c in cells], dtype=np.int8)
    column = CodedTextColumn(values, codes, LABELS, "%")
    fast_agg, fast_pct = verdicts._percent_columns(column)
    text_agg, text_pct = verdicts._percent_columns(list(column))
    assert np.array_equal(fast_agg, text_agg, equal_nan=True)
    assert np.array_equal(fast_pct, text_pct, equal_nan=True)


def test_statistics_verdicts_equal_for_lean_and_text_columns():
    names = ["a.0.forward.input.0", "a.0.forward.output.0", "b.0.forward.input.0", "b.0.forward.output.0"]
    rel = CodedTextColumn(np.array([0.0, 80.0, 2.0, 0.0]), np.array([0, 0, 0, 1], dtype=np.int8), ["", "N/A"], "%")
    base = {
        "NPU Name": names,
        "Bench Name": names,
        "NPU Dtype": ["torch.float32"] * 4,
        "Bench Dtype": ["torch.float32"] * 4,
        "NPU Tensor Shape": ["[2]"] * 4,
        "Bench Tensor Shape": ["[2]"] * 4,
        "NPU Requires_grad": ["False"] * 4,
        "Bench Requires_grad": ["False"] * 4,
        "NPU max": [1.0] * 4,
        "NPU min": [0.0] * 4,
        "Bench max": [1.0] * 4,
        "Bench min": [0.0] * 4,
    }
    lean = verdicts.compute_verdicts("statistics", {**base, "NormRelativeErr": rel}, [0, 0, 1, 1])
    text = verdicts.compute_verdicts("statistics", {**base, "NormRelativeErr": list(rel)}, [0, 0, 1, 1])
    assert lean == text
    assert lean[0][1] == "error"  # output NormRelativeErr 80% with a clean input


_cells = st.one_of(
    st.floats(), st.integers(-(2**70), 2**70), st.text(alphabet=" infaNI-0.5x", max_size=6), st.none(), st.booleans()
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_cells, max_size=30))
def test_inf_nan_check_reads_floats_and_texts(values):
    expected = [
        (not math.isfinite(v)) if type(v) is float else (v.strip().lower() in ("inf", "-inf", "nan")) if type(v) is str else False
        for v in values
    ]
    assert verdicts._is_inf_nan(values).tolist() == expected
