"""floattext.float_texts spells float64 arrays exactly as ``repr`` does."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msprobe_core.text.floattext import float_texts


def _reference(values: list[float], suffix: str = "") -> list[str]:
    return [repr(v) + suffix for v in values]


BOUNDARIES = [
    0.0, -0.0, 1.0, -1.0, 2.0, 0.1, 1 / 3, 5e-324, -5e-324, 2.2250738585072014e-308, 2.225073858507201e-308,
    1.7976931348623157e308, -1.7976931348623157e308, 1e-4, 9.999999999999999e-05, 1.0000000000000002e-4,
    1e-5, 9.99e-06, 1.5e-5, 1.0000001e-05, 1e-6, 1e-7, 1e-9, 9.999999999999999e-10, 1.0000000000000001e-09,
    1e-10, -3.16e-09, -1e-9, -2e-5, 2.5e-5, 9.9e-5, 1e15, 1e16, 9999999999999998.0,
    1.0000000000000002e16, 1e17, 1e21, 1e22, 1e100, 123456789012345.6, 2.0**53, 2.0**53 + 2, -(2.0**63),
    float("nan"), float("inf"), float("-inf"), -float("nan"),
]


def test_boundaries_match_repr() -> None:
    assert float_texts(np.array(BOUNDARIES)) == _reference(BOUNDARIES)
    assert float_texts(np.array(BOUNDARIES), "%") == _reference(BOUNDARIES, "%")


def test_each_value_alone_matches_repr() -> None:
    # a value first, last or alone in the text exercises the regexes' anchors
    for v in BOUNDARIES:
        assert float_texts(np.array([v])) == [repr(v)]
        assert float_texts(np.array([v, 1e-5, v, 1.5e-7, v])) == _reference([v, 1e-5, v, 1.5e-7, v])


def test_empty_and_errors() -> None:
    assert float_texts(np.array([], dtype=np.float64)) == []
    with pytest.raises(ValueError):
        float_texts(np.zeros((2, 2)))
    with pytest.raises(ValueError):
        float_texts(np.zeros(2), ",")


def _from_bits(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


any_float = st.integers(min_value=0, max_value=2**64 - 1).map(_from_bits)
near_switches = st.sampled_from([1e-9, 1e-5, 1e-4, 1e16, 1e15]).flatmap(
    lambda b: st.floats(min_value=b / 4, max_value=b * 4)
).flatmap(lambda x: st.sampled_from([x, -x]))
integral = st.integers(min_value=-(2**62), max_value=2**62).map(float)
float_values = st.one_of(any_float, st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True),
                         near_switches, integral, st.sampled_from(BOUNDARIES))


@settings(max_examples=400, deadline=None)
@given(st.lists(float_values, max_size=60), st.sampled_from(["", "%"]))
def test_matches_repr_on_any_float64(values: list[float], suffix: str) -> None:
    assert float_texts(np.array(values, dtype=np.float64), suffix) == _reference(values, suffix)


def test_many_random_bit_patterns_match_repr() -> None:
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**64 - 1, size=200_000, dtype=np.uint64, endpoint=True)
    values = bits.view(np.float64)
    scaled = rng.standard_normal(200_000) * np.exp(rng.standard_normal(200_000) * 12)
    for arr in (values, scaled):
        assert float_texts(arr) == _reference(arr.tolist())


@pytest.mark.parametrize("short, long_", [(50, 1), (1, 50), (10, 10), (0, 5), (5, 0)])
def test_one_and_two_digit_exponents_mixed(short: int, long_: int) -> None:
    # both ways of padding one-digit exponents (the whole text, or those values apart) give repr's text
    rng = np.random.default_rng(short * 100 + long_)
    values = np.concatenate([
        rng.uniform(1e-9, 1e-5, short) * rng.choice([-1, 1], short),
        rng.uniform(1e-300, 1e-9, long_) * rng.choice([-1, 1], long_),
        [1.5, 2e-5, 0.0],
    ])
    rng.shuffle(values)
    assert float_texts(values) == _reference(values.tolist())
    assert float_texts(values, "%") == _reference(values.tolist(), "%")
