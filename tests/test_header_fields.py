"""The pydantic-free check of a dump header accepts exactly what the DumpHeader model accepts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msprobe_core.errors import DumpFormatError
from msprobe_core.files.schemas import DumpHeader, validate
from msprobe_core.files.validation import header_fields

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=6)
field_values = st.none() | st.just("") | st.sampled_from(["statistics", "tensor", "L1", "pytorch"]) | json_values


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(st.sampled_from(["task", "level", "framework", "dump_data_dir", "data", "extra"]),
                       field_values | st.dictionaries(st.text(max_size=3), json_values, max_size=2), max_size=6))
def test_fast_header_check_agrees_with_the_model(doc: dict) -> None:
    try:
        model = validate(DumpHeader, doc, path=None, error=DumpFormatError)
    except DumpFormatError:
        model = None
    fast = header_fields(doc)
    if model is None:
        assert fast is None
    else:
        assert fast is not None and fast[0] == model.task and fast[1] is model.data


@pytest.mark.parametrize("doc", [
    {"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": None, "data": {}},
    {"task": "tensor", "data": {"a": 1}, "anything": [1, 2]},
])
def test_well_formed_headers_pass_without_the_model(doc: dict) -> None:
    assert header_fields(doc) == (doc["task"], doc["data"])
