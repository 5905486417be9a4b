"""Property-based tests (hypothesis) of the loaders: dump.json, the .pt reader, the .npy reader.

What must hold for *every* input, not just the examples we thought of:

* a well-formed dump loads, with one row per leaf, identically through the
  streaming file loader and the in-memory flattener;
* a wrong type put into any field of any leaf is refused with a message that
  names exactly that JSON path;
* any JSON document at all either loads or is refused with an ``MsprobeError``;
* any array written as ``.pt``/``.npy`` reads back equal; any truncation, any
  view larger than its storage and any array over the byte cap is refused with a
  ``TensorReadError`` (never another exception, never wrong data).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from msprobe_pytorch.pt_reader import read_pt
from msprobe_pytorch.pt_writer import write_pt, write_storage_pt

from msprobe_core.builtin import msprobe_load_dump
from msprobe_core.default_plugins.fast_scan import msprobe_load_dump as fast_scan_load
from msprobe_core.errors import DumpFormatError, MsprobeError, TensorReadError
from msprobe_core.files.npy_reader import read_npy
from msprobe_core.files.validation import json_path
from msprobe_core.load.document import flatten_dump
from msprobe_core.model import CompareOptions


def load_file(path: Path):
    """The dump.json loaders as the engine calls them: the default plugin ``fast_scan``'s C scanner, else the
    built-in pure-Python loader (whatever its implementation: streaming or not)."""
    options = CompareOptions()
    return fast_scan_load(path, options, None) or msprobe_load_dump(path, options)


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def scratch() -> Path:
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    d = Path(tempfile.mkdtemp(prefix="msprobe-props-", dir=base))
    yield d
    for p in d.iterdir():
        p.unlink()
    d.rmdir()


# =========================================================================== dump.json strategies
FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2**53), 2**53)
STAT = st.none() | FLOATS | st.booleans()
NAMES = st.text(alphabet="abcXYZ019._-/ é😀加\u202e\n\"'=", min_size=1, max_size=12)


@st.composite
def tensor_leaf(draw: st.DrawFn, tensor_mode: bool = False) -> dict:
    leaf = {
        "type": draw(st.sampled_from(["torch.Tensor", "mindspore.Tensor", "torch.nn.parameter.Parameter"])),
        "dtype": draw(st.sampled_from(["torch.float32", "torch.bfloat16", "Float16", "torch.int64", "torch.bool"])),
        "shape": draw(st.lists(st.integers(0, 2**40), max_size=5)),
        "Max": draw(STAT), "Min": draw(STAT), "Mean": draw(STAT), "Norm": draw(STAT),
        "requires_grad": draw(st.booleans() | st.none()),
    }
    if tensor_mode or draw(st.booleans()):
        leaf["data_name"] = draw(NAMES) + ".pt"
    return leaf


@st.composite
def other_leaf(draw: st.DrawFn) -> dict:
    kind = draw(st.sampled_from(["int", "float", "bool", "str", "slice", "torch.Size", "ellipsis", "torch.dtype"]))
    value = {
        "int": st.integers(-(2**63), 2**63), "float": FLOATS, "bool": st.booleans(), "str": NAMES,
        "slice": st.lists(st.integers(0, 9) | st.none(), min_size=3, max_size=3),
        "torch.Size": st.lists(st.integers(0, 99), max_size=4), "ellipsis": st.just("..."),
        "torch.dtype": st.just("torch.float32"),
    }[kind]
    return {"type": kind, "value": draw(value)}


LEAF = tensor_leaf() | other_leaf() | st.none()
ARG = st.recursive(LEAF, lambda inner: st.lists(inner, max_size=3), max_leaves=4)


@st.composite
def api_key(draw: st.DrawFn) -> str:
    prefix = draw(st.sampled_from(["Torch", "Functional", "Tensor", "Mint", "Module.layer.Linear", "Cell.net.Dense"]))
    name = draw(st.text(alphabet="abcdefghij_", min_size=1, max_size=6))
    call = draw(st.integers(0, 50))
    direction = draw(st.sampled_from(["forward", "backward"]))
    if prefix.startswith(("Module", "Cell")):
        return f"{prefix}.{name}.{direction}.{call}"
    return f"{prefix}.{name}.{call}.{direction}"


@st.composite
def entry(draw: st.DrawFn) -> dict:
    e: dict = {}
    if draw(st.booleans()):
        e["input_args"] = draw(st.lists(ARG, max_size=3))
    if draw(st.booleans()):
        e["input_kwargs"] = draw(st.dictionaries(st.text("abcxyz", min_size=1, max_size=4), ARG, max_size=3))
    if draw(st.booleans()):
        e["output"] = draw(st.lists(ARG, max_size=3))
    if draw(st.booleans()):
        e["parameters"] = draw(st.dictionaries(st.sampled_from(["weight", "bias"]), tensor_leaf(), max_size=2))
    return e


@st.composite
def dump_doc(draw: st.DrawFn) -> dict:
    data = draw(st.dictionaries(api_key(), entry(), max_size=4))
    return {"task": "statistics", "level": draw(st.sampled_from(["L0", "L1", "mix"])),
            "framework": "pytorch", "dump_data_dir": None, "data": data}


def count_leaves(value: object) -> int:
    """Rows msprobe makes of one argument: leaves and nulls count, empty lists and dicts do not."""
    if value is None:
        return 1
    if isinstance(value, list):
        return sum(count_leaves(v) for v in value)
    if isinstance(value, dict):
        if isinstance(value.get("type"), str):
            return 1
        return sum(count_leaves(v) for v in value.values())
    raise AssertionError(value)


def expected_rows(doc: dict) -> int:
    return sum(count_leaves(e.get(k)) for e in doc["data"].values()
               for k in ("input_args", "input_kwargs", "output", "parameters") if k in e)


def columns(table) -> dict:
    return {c: [repr(v) for v in getattr(table, c)] for c in (
        "name", "state", "dtype", "shape", "requires_grad", "max", "min", "mean", "norm", "md5", "data_name", "row_api")}


# =========================================================================== dump.json properties
@SETTINGS
@given(doc=dump_doc())
def test_well_formed_dumps_load_one_row_per_leaf(doc: dict, scratch: Path) -> None:
    path = scratch / "dump.json"
    table = flatten_dump(doc, path, "dump", "pytorch")
    assert len(table.name) == expected_rows(doc)
    assert {len(v) for v in columns(table).values()} <= {len(table.name)}
    assert [a.key for a in table.apis] == list(doc["data"])
    path.write_text(json.dumps(doc, allow_nan=True), encoding="utf-8")
    streamed = load_file(path)
    assert columns(streamed) == columns(table)
    assert streamed.mode == table.mode and streamed.task == table.task


WRONG = st.sampled_from([[1], {"a": 1}, [], {}]) | st.lists(st.integers(), min_size=1, max_size=2)
FIELD_EXPECTS = {"dtype": WRONG | st.integers() | st.booleans(), "shape": WRONG | NAMES | st.integers(),
                 "Max": WRONG, "Min": WRONG, "Mean": WRONG, "Norm": WRONG, "requires_grad": WRONG | st.integers(),
                 "data_name": WRONG | st.integers(), "md5": WRONG}


@SETTINGS
@given(doc=dump_doc(), leaf=tensor_leaf(), where=st.sampled_from(["input_args", "input_kwargs", "output"]),
       field=st.sampled_from(sorted(FIELD_EXPECTS)), data=st.data())
def test_wrong_field_types_name_their_json_path(doc: dict, leaf: dict, where: str, field: str, data: st.DataObject,
                                                scratch: Path) -> None:
    """Put a wrong type into one field of a tensor leaf: the error names exactly that JSON path."""
    bad = data.draw(FIELD_EXPECTS[field])
    if field == "shape" and isinstance(bad, list) and all(isinstance(d, int) and d >= 0 for d in bad):
        bad = [-1]
    leaf[field] = bad
    key = "Torch.first.0.forward"
    value = [None, [leaf]] if where != "input_kwargs" else {"x": None, "y": [leaf]}
    doc["data"] = {key: {where: value}, **doc["data"]}
    inner = (1, 0) if where != "input_kwargs" else ("y", 0)
    path = scratch / "dump.json"
    with pytest.raises(DumpFormatError) as info:
        flatten_dump(doc, path, "dump", "pytorch")
    message = str(info.value)
    assert f"{json_path(('data', key, where, *inner, field))}: '{field}'" in message, message
    assert "\n" not in message and str(path) in message


JSON = st.recursive(
    st.none() | st.booleans() | FLOATS | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["task", "data", "type", "dtype", "shape", "input_args", "output", "Max", "data_name",
                         "Torch.a.0.forward", "x"]) | st.text(max_size=5), inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(doc=JSON, task=st.sampled_from([None, "statistics", "tensor"]))
def test_any_json_loads_or_is_refused_cleanly(doc: object, task: str | None, scratch: Path) -> None:
    if task is not None and isinstance(doc, dict):
        doc["task"] = task
        doc.setdefault("data", {})
    path = scratch / "dump.json"
    try:
        table = flatten_dump(doc, path, "dump", "pytorch")  # type: ignore[arg-type]
    except MsprobeError as exc:
        assert "\n" not in str(exc)
    else:
        assert all(len(v) == len(table.name) for v in columns(table).values())
    path.write_text(json.dumps(doc, allow_nan=True), encoding="utf-8")
    try:
        load_file(path)
    except MsprobeError as exc:
        assert "\n" not in str(exc)


# =========================================================================== .pt / .npy properties
PT_DTYPES = st.sampled_from([np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64, np.uint8,
                             np.bool_, np.complex64])
ARRAYS = PT_DTYPES.flatmap(lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)))


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


@SETTINGS
@given(arr=ARRAYS)
def test_pt_round_trip_any_shape(arr: np.ndarray, scratch: Path) -> None:
    """0-d, empty and ordinary tensors of every plain dtype read back exactly."""
    path = scratch / "t.pt"
    write_pt(path, arr)
    assert same(read_pt(path), arr)


@SETTINGS
@given(arr=ARRAYS, cut=st.floats(0, 1, exclude_max=True))
def test_pt_truncated_anywhere_is_refused(arr: np.ndarray, cut: float, scratch: Path) -> None:
    path = scratch / "t.pt"
    write_pt(path, arr)
    raw = path.read_bytes()
    path.write_bytes(raw[: int(len(raw) * cut)])
    with pytest.raises(TensorReadError):
        read_pt(path)


@SETTINGS
@given(storage=st.integers(0, 64), size=st.lists(st.integers(1, 50), min_size=1, max_size=3),
       offset=st.integers(0, 10))
def test_pt_view_larger_than_storage_is_refused(storage: int, size: list[int], offset: int, scratch: Path) -> None:
    """A shape (and offset) that needs more elements than the storage holds fails; one that fits reads."""
    need = offset + int(np.prod(size))
    path = scratch / "v.pt"
    write_storage_pt(path, np.arange(storage, dtype=np.float32), size=size, offset=offset)
    if need > storage:
        with pytest.raises(TensorReadError, match="storage"):
            read_pt(path)
    else:
        assert same(read_pt(path), np.arange(storage, dtype=np.float32)[offset:need].reshape(size))


@SETTINGS
@given(arr=ARRAYS, slack=st.integers(-64, 64))
def test_pt_byte_cap(arr: np.ndarray, slack: int, scratch: Path) -> None:
    """Under the cap (which also bounds the small records of the file) it reads; over it, refused."""
    path = scratch / "c.pt"
    write_pt(path, arr)
    if slack < 0:
        assume(arr.nbytes > 0)
        with pytest.raises(TensorReadError):
            read_pt(path, max_bytes=max(0, arr.nbytes + slack))
    else:
        assert same(read_pt(path, max_bytes=arr.nbytes + 4096 + slack), arr)


@SETTINGS
@given(arr=ARRAYS, at=st.floats(0, 1, exclude_max=True), xor=st.integers(1, 255))
def test_pt_any_corrupted_byte_is_refused_or_read(arr: np.ndarray, at: float, xor: int, scratch: Path) -> None:
    path = scratch / "x.pt"
    write_pt(path, arr)
    raw = bytearray(path.read_bytes())
    raw[int(len(raw) * at)] ^= xor
    path.write_bytes(bytes(raw))
    try:
        out = read_pt(path, max_bytes=1 << 24)
    except TensorReadError as exc:
        assert "\n" not in str(exc)
    else:
        assert isinstance(out, np.ndarray)


NPY_ARRAYS = st.sampled_from([np.float32, np.float64, np.int32, np.uint8, np.bool_, np.complex128]).flatmap(
    lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)))


@SETTINGS
@given(arr=NPY_ARRAYS, fortran=st.booleans(), cut=st.none() | st.floats(0, 1, exclude_max=True))
def test_npy_round_trip_and_truncation(arr: np.ndarray, fortran: bool, cut: float | None, scratch: Path) -> None:
    path = scratch / "a.npy"
    np.save(path, np.asfortranarray(arr) if fortran and arr.ndim >= 2 else arr)
    if cut is None:
        assert same(read_npy(path), arr)
        return
    raw = path.read_bytes()
    keep = int(len(raw) * cut)
    assume(keep < len(raw) and (arr.nbytes > 0 or keep < 64))
    path.write_bytes(raw[:keep])
    with pytest.raises(TensorReadError):
        read_npy(path)
