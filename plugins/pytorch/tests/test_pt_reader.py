"""The torch-free .pt reader/writer: real dumps, round trips, views, and hostile files."""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from msprobe_pytorch.pt_reader import fp8_table, read_pt
from msprobe_pytorch.pt_writer import (
    float32_to_bfloat16_bits,
    float32_to_fp8_bits,
    tensor_pickle,
    write_pt,
    write_storage_pt,
)

from msprobe_core.errors import TensorReadError, UnsafePickleError
from tests.conftest import corpora_dir, corpus_mark, no_corpora_reason

CORPORA = corpora_dir()
C02 = CORPORA / "pytorch" / "c02"


# --------------------------------------------------------------------------- real dumps
def _dump_entries(dump_json: Path) -> dict[str, dict]:
    """data_name -> dump.json leaf entry."""
    out: dict[str, dict] = {}

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "data_name" in node and isinstance(node.get("type"), str):
                out[node["data_name"]] = node
                return
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(dump_json.read_text())["data"])
    return out


@corpus_mark("pytorch/c02")
@pytest.mark.parametrize("side", ["target", "golden"])
def test_c02_tensors_match_dump_json_stats(side: str) -> None:
    rank = C02 / side / "step0" / "rank0"
    if not rank.is_dir():
        pytest.skip(no_corpora_reason())
    entries = _dump_entries(rank / "dump.json")
    files = sorted((rank / "dump_tensor_data").glob("*.pt"))
    assert len(files) == len(entries) > 200
    dtypes = set()
    for path in files:
        entry = entries[path.name]
        arr = read_pt(path)
        dtypes.add(entry["dtype"])
        assert list(arr.shape) == entry["shape"], path.name
        assert arr.flags.c_contiguous and arr.flags.writeable
        if entry["dtype"] == "torch.bfloat16":
            assert arr.dtype == np.float32  # msprobe casts bf16 to float32 before .numpy()
        if arr.size == 0:
            continue
        if entry["dtype"] == "torch.bool":
            assert bool(arr.max()) is entry["Max"] and bool(arr.min()) is entry["Min"]
        else:
            assert arr.max().item() == entry["Max"], path.name
            assert arr.min().item() == entry["Min"], path.name
    wanted = {"torch.float32", "torch.int64", "torch.bool"}
    assert wanted | ({"torch.bfloat16"} if side == "target" else set()) <= dtypes


# --------------------------------------------------------------------------- round trips
def _round_to_format(x: np.ndarray, sig_bits: int, min_exp: int, max_finite: float,
                     saturate: bool) -> np.ndarray:
    """Independent oracle: round float32 values to a binary float format, ties to even."""
    x = x.astype(np.float64)
    out = np.empty_like(x)
    finite = np.isfinite(x)
    _, e = np.frexp(np.where(finite, x, 1.0))
    spacing = np.ldexp(1.0, np.maximum(e - sig_bits, min_exp - sig_bits + 1))
    rounded = np.round(x / spacing) * spacing  # np.round: half to even
    over = np.abs(rounded) > max_finite
    if saturate:
        rounded = np.where(over, np.copysign(max_finite, x), rounded)
    else:
        rounded = np.where(over, np.copysign(np.inf, x), rounded)
    out[finite] = rounded[finite]
    out[~finite] = x[~finite]
    if saturate:
        out[np.isinf(x)] = np.copysign(max_finite, x[np.isinf(x)])
    return out


FLOAT32S = hnp.arrays(
    np.float32,
    hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6),
    elements=st.floats(width=32, allow_nan=False),
)
PLAIN_DTYPES = ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8",
                "uint16", "uint32", "uint64", "bool", "complex64", "complex128"]


@pytest.mark.parametrize("dtype", PLAIN_DTYPES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_round_trip_plain_dtypes(tmp_path: Path, dtype: str, data: st.DataObject) -> None:
    arr = data.draw(hnp.arrays(np.dtype(dtype),
                               hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)))
    path = tmp_path / "t.pt"
    write_pt(path, arr)
    got = read_pt(path)
    assert got.dtype == arr.dtype and got.shape == arr.shape
    np.testing.assert_array_equal(got, arr)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arr=FLOAT32S)
def test_round_trip_bfloat16(tmp_path: Path, arr: np.ndarray) -> None:
    path = tmp_path / "bf.pt"
    write_pt(path, arr, dtype="bfloat16")
    got = read_pt(path)
    assert got.dtype == np.float32 and got.shape == arr.shape
    want = _round_to_format(arr, 8, -126, float(np.finfo(np.float32).max), saturate=False)
    np.testing.assert_array_equal(got.astype(np.float64), want)


@pytest.mark.parametrize("fmt,sig,min_exp,max_finite,saturate", [
    ("float8_e4m3fn", 4, -6, 448.0, True),
    ("float8_e5m2", 3, -14, 57344.0, False),
])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arr=FLOAT32S)
def test_round_trip_float8(tmp_path: Path, arr: np.ndarray, fmt: str, sig: int, min_exp: int,
                           max_finite: float, saturate: bool) -> None:
    path = tmp_path / "f8.pt"
    write_pt(path, arr, dtype=fmt)
    got = read_pt(path)
    assert got.dtype == np.float32 and got.shape == arr.shape
    want = _round_to_format(arr, sig, min_exp, max_finite, saturate)
    np.testing.assert_array_equal(got.astype(np.float64), want)


def test_special_values_and_other_formats(tmp_path: Path) -> None:
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.0], np.float32)
    bits = float32_to_bfloat16_bits(x)
    assert bits.tolist()[:4] == [0x0000, 0x8000, 0x7F80, 0xFF80] and bits[4] == 0xFFFF
    e4 = float32_to_fp8_bits(x, "float8_e4m3fn")
    assert e4.tolist() == [0x00, 0x80, 0x7E, 0xFE, 0x7F, 0x3C, 0xC0]  # saturating, like torch 2.13
    e5 = float32_to_fp8_bits(x, "float8_e5m2")
    assert e5.tolist() == [0x00, 0x80, 0x7C, 0xFC, 0x7F, 0x3E, 0xC0]
    assert np.isnan(fp8_table("float8_e4m3fn")[0x7F]) and fp8_table("float8_e4m3fn")[0x7E] == 448
    assert np.isnan(fp8_table("float8_e4m3fnuz")[0x80]) and fp8_table("float8_e5m2fnuz")[0x00] == 0
    c = np.array([[1 + 2j, -0.5 - 1j]], np.complex64)
    write_pt(tmp_path / "c32.pt", c, dtype="complex32")
    got = read_pt(tmp_path / "c32.pt")
    assert got.dtype == np.complex64
    np.testing.assert_array_equal(got, c)
    write_pt(tmp_path / "scalar.pt", np.float32(3.5))
    got = read_pt(tmp_path / "scalar.pt")
    assert got.shape == () and got == np.float32(3.5)
    write_pt(tmp_path / "empty.pt", np.zeros((0, 3), np.float16), dtype="bfloat16")
    got = read_pt(tmp_path / "empty.pt")
    assert got.shape == (0, 3) and got.dtype == np.float32


def test_written_layout_matches_torch_save(tmp_path: Path) -> None:
    path = tmp_path / "Functional.linear.0.forward.input.0.pt"
    write_pt(path, np.arange(6, dtype=np.float32).reshape(2, 3))
    raw = path.read_bytes()
    with zipfile.ZipFile(path) as zf:
        names = [i.filename for i in zf.infolist()]
        prefix = "Functional.linear.0.forward.input.0/"
        assert names == [prefix + n for n in ("data.pkl", ".format_version", ".storage_alignment",
                                              "byteorder", "data/0", "version",
                                              ".data/serialization_id")]
        assert zf.read(prefix + "version") == b"3\n"
        assert zf.read(prefix + "byteorder") == b"little"
        for info in zf.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            name_len, extra_len = struct.unpack_from("<HH", raw, info.header_offset + 26)
            assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0
        assert b"_rebuild_tensor_v2" in zf.read(prefix + "data.pkl")


# --------------------------------------------------------------------------- views
@pytest.mark.parametrize("size,stride,offset", [
    ((3, 4), (8, 2), 3),        # strided slice
    ((4, 3), (1, 4), 0),        # transposed
    ((2, 5), (0, 1), 7),        # expanded (stride 0)
    ((), (), 11),               # 0-d element of a bigger storage
    ((0, 4), (4, 1), 40),       # empty view at the end
    ((2, 1, 3), (12, 99, 1), 1),  # size-1 dim with an odd stride is still contiguous
])
def test_views_are_read_like_torch(tmp_path: Path, size: tuple, stride: tuple, offset: int) -> None:
    storage = np.arange(40, dtype=np.float32) * 1.5
    path = tmp_path / "v.pt"
    write_storage_pt(path, storage, size=size, stride=stride, offset=offset)
    got = read_pt(path)
    want = np.lib.stride_tricks.as_strided(storage[offset:], size, [s * 4 for s in stride]) \
        if np.prod(size) else np.empty(size, np.float32)
    assert got.shape == want.shape and got.flags.c_contiguous and got.flags.writeable
    np.testing.assert_array_equal(got, want)


def test_bf16_view_and_big_endian(tmp_path: Path) -> None:
    storage = np.linspace(-3, 3, 24).astype(np.float32)
    write_storage_pt(tmp_path / "b.pt", storage, dtype="bfloat16", size=(3, 2), stride=(4, 2), offset=1)
    bf = (float32_to_bfloat16_bits(storage).astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(read_pt(tmp_path / "b.pt"),
                                  np.lib.stride_tricks.as_strided(bf[1:], (3, 2), (16, 8)))
    arr = np.array([1.5, -2.25, 1e30], np.float32)
    _zip_tensor(tmp_path / "big.pt", tensor_pickle("float32", 3, (3,), (1,)),
                arr.astype(">f4").tobytes(), byteorder=b"big")
    np.testing.assert_array_equal(read_pt(tmp_path / "big.pt"), arr)


# --------------------------------------------------------------------------- hostile files
def _zip_tensor(path: Path, pkl: bytes, data: bytes = b"\0" * 16, *, byteorder: bytes = b"little",
                compress: int = zipfile.ZIP_STORED, prefix: str = "archive/") -> None:
    with zipfile.ZipFile(path, "w", compression=compress) as zf:
        zf.writestr(prefix + "data.pkl", pkl)
        zf.writestr(prefix + "byteorder", byteorder)
        zf.writestr(prefix + "data/0", data)
        zf.writestr(prefix + "version", b"3\n")


class _Exploit:
    def __init__(self, func: object, arg: str) -> None:
        self.func, self.arg = func, arg

    def __reduce__(self) -> tuple:
        return self.func, (self.arg,)


@pytest.mark.parametrize("how", ["os.system", "posix.system", "builtins.exec", "builtins.eval",
                                 "subprocess.call", "protocol0"])
def test_hostile_pickle_is_refused_and_not_run(tmp_path: Path, how: str) -> None:
    marker = tmp_path / "pwned"
    cmd = f"touch {marker}"
    py = f"open({str(marker)!r}, 'w').close()"
    if how == "os.system":
        pkl = pickle.dumps(_Exploit(os.system, cmd), protocol=4)  # STACK_GLOBAL posix/nt system
    elif how == "posix.system":
        pkl = b"cposix\nsystem\n(" + pickle.dumps(cmd, protocol=2)[2:-1] + b"tR."
    elif how == "builtins.exec":
        pkl = pickle.dumps(_Exploit(exec, py), protocol=2)
    elif how == "builtins.eval":
        pkl = pickle.dumps(_Exploit(eval, py), protocol=3)
    elif how == "subprocess.call":
        pkl = b"\x80\x02csubprocess\ncall\n(X\x05\x00\x00\x00touch" + b"tR."
    else:
        pkl = b"cos\nsystem\n(S'" + cmd.encode() + b"'\ntR."
    path = tmp_path / "evil.pt"
    _zip_tensor(path, pkl)
    write_pt(tmp_path / "warm.pt", np.zeros(3, np.float32))
    read_pt(tmp_path / "warm.pt")  # any lazy imports of the reader itself happen here
    before = set(sys.modules)
    with pytest.raises(UnsafePickleError) as info:
        read_pt(path)
    assert not marker.exists()
    assert set(sys.modules) - before == set()
    assert "allow-list" in str(info.value) and "evil.pt" in str(info.value)


def test_unknown_module_is_not_imported(tmp_path: Path) -> None:
    assert "tabnanny" not in sys.modules
    _zip_tensor(tmp_path / "imp.pt", b"\x80\x02ctabnanny\ncheck\n.")
    with pytest.raises(UnsafePickleError, match="tabnanny.check"):
        read_pt(tmp_path / "imp.pt")
    assert "tabnanny" not in sys.modules


def test_pickle_cannot_tamper_with_stand_ins(tmp_path: Path) -> None:
    good = tensor_pickle("float32", 4, (4,), (1,))
    # BUILD on the rebuilt tensor trying to enlarge its view past the storage
    evil = good[:-1] + b"}X\x04\x00\x00\x00sizeK\x10\x85s" + b"b."
    _zip_tensor(tmp_path / "b.pt", evil)
    with pytest.raises(TensorReadError):
        read_pt(tmp_path / "b.pt")
    # setting attributes on the stand-in function through BUILD's slot state
    evil2 = (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nN}X\x0c\x00\x00\x00__defaults__"
             b")s\x86b.")
    _zip_tensor(tmp_path / "c.pt", evil2)
    with pytest.raises(TensorReadError):
        read_pt(tmp_path / "c.pt")
    write_pt(tmp_path / "ok.pt", np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(read_pt(tmp_path / "ok.pt"), [0, 1, 2])


def test_non_tensor_pickles_are_refused(tmp_path: Path) -> None:
    _zip_tensor(tmp_path / "d.pt", pickle.dumps({"a": 1}, protocol=2))
    with pytest.raises(TensorReadError, match="dict, not a single tensor"):
        read_pt(tmp_path / "d.pt")
    _zip_tensor(tmp_path / "l.pt", pickle.dumps([1, 2], protocol=2))
    with pytest.raises(TensorReadError, match="list"):
        read_pt(tmp_path / "l.pt")
    _zip_tensor(tmp_path / "g.pt", b"\x80\x02ctorch\nFloatStorage\n)R.")  # calling a storage class
    with pytest.raises(TensorReadError):
        read_pt(tmp_path / "g.pt")


# --------------------------------------------------------------------------- broken files
def test_truncated_storage_member(tmp_path: Path) -> None:
    pkl = tensor_pickle("float32", 100, (10, 10), (10, 1))
    _zip_tensor(tmp_path / "short.pt", pkl, b"\0" * 396)  # 99 floats for a 100-float storage
    with pytest.raises(TensorReadError, match="truncated"):
        read_pt(tmp_path / "short.pt")


def test_view_past_storage_end(tmp_path: Path) -> None:
    write_storage_pt(tmp_path / "v.pt", np.zeros(10, np.float32), size=(4, 3), stride=(3, 1))
    with pytest.raises(TensorReadError, match="reaches element"):
        read_pt(tmp_path / "v.pt")


def test_truncated_file(tmp_path: Path) -> None:
    write_pt(tmp_path / "full.pt", np.arange(5000, dtype=np.float32))
    raw = (tmp_path / "full.pt").read_bytes()
    for cut in (len(raw) - 10, len(raw) // 2, 100):
        (tmp_path / "cut.pt").write_bytes(raw[:cut])
        with pytest.raises(TensorReadError, match="truncated|corrupt"):
            read_pt(tmp_path / "cut.pt")


def test_crc_mismatch(tmp_path: Path) -> None:
    write_pt(tmp_path / "ok.pt", np.arange(1000, dtype=np.float32))
    raw = bytearray((tmp_path / "ok.pt").read_bytes())
    with zipfile.ZipFile(tmp_path / "ok.pt") as zf:
        info = zf.getinfo("ok/data/0")
        pkl_info = zf.getinfo("ok/data.pkl")
    name_len, extra_len = struct.unpack_from("<HH", raw, info.header_offset + 26)
    raw[info.header_offset + 30 + name_len + extra_len + 17] ^= 0xFF
    (tmp_path / "bad.pt").write_bytes(bytes(raw))
    assert read_pt(tmp_path / "bad.pt").shape == (1000,)  # like torch.load: no CRC check by default
    with pytest.raises(TensorReadError, match="CRC"):
        read_pt(tmp_path / "bad.pt", verify_crc=True)
    name_len, extra_len = struct.unpack_from("<HH", raw, pkl_info.header_offset + 26)
    raw[pkl_info.header_offset + 30 + name_len + extra_len + 40] ^= 0x01
    (tmp_path / "badpkl.pt").write_bytes(bytes(raw))
    with pytest.raises(TensorReadError, match="CRC"):
        read_pt(tmp_path / "badpkl.pt")


def test_zip_bomb_is_refused_before_reading(tmp_path: Path) -> None:
    pkl = tensor_pickle("float32", 25 << 20, (25 << 20,), (1,))
    bomb = tmp_path / "bomb.pt"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("archive/data.pkl", pkl)
        zf.writestr("archive/data/0", bytes(100 << 20))  # 100 MiB of zeros, ~100 KiB on disk
    assert bomb.stat().st_size < 1 << 20
    with pytest.raises(TensorReadError, match="zip bomb"):
        read_pt(bomb)
    with pytest.raises(TensorReadError, match="limit"):
        read_pt(bomb, max_bytes=1 << 20)
    # a lie in the central directory: a tiny member declaring 8 GiB
    small = tmp_path / "liar.pt"
    with zipfile.ZipFile(small, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("archive/data.pkl", tensor_pickle("float32", 4, (4,), (1,)))
        zf.writestr("archive/data/0", bytes(16))
    raw = bytearray(small.read_bytes())
    cd = raw.rfind(b"PK\x01\x02")
    struct.pack_into("<I", raw, cd + 24, 0xFFFFFFF0)
    small.write_bytes(bytes(raw))
    with pytest.raises(TensorReadError, match="zip bomb|limit"):
        read_pt(small, max_bytes=1 << 30)


def test_compressed_members_are_read(tmp_path: Path) -> None:
    arr = np.arange(64, dtype=np.int32)
    _zip_tensor(tmp_path / "z.pt", tensor_pickle("int32", 64, (8, 8), (8, 1)), arr.tobytes(),
                compress=zipfile.ZIP_DEFLATED, prefix="some_name/")
    np.testing.assert_array_equal(read_pt(tmp_path / "z.pt"), arr.reshape(8, 8))


def test_not_a_zip_legacy_and_missing(tmp_path: Path) -> None:
    (tmp_path / "junk.pt").write_bytes(b"hello world, not a tensor")
    with pytest.raises(TensorReadError, match="not a torch zip"):
        read_pt(tmp_path / "junk.pt")
    legacy = io.BytesIO()
    pickle.dump(0x1950A86A20F9469CFC6C, legacy, protocol=2)  # torch's legacy magic number
    (tmp_path / "legacy.pt").write_bytes(legacy.getvalue() + b"\0" * 32)
    with pytest.raises(TensorReadError, match="legacy non-zip torch format not supported"):
        read_pt(tmp_path / "legacy.pt")
    with pytest.raises(TensorReadError, match="cannot read tensor file"):
        read_pt(tmp_path / "missing.pt")
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(TensorReadError):
        read_pt(tmp_path / "empty.pt")
    with zipfile.ZipFile(tmp_path / "nopkl.pt", "w") as zf:
        zf.writestr("archive/data/0", b"\0" * 4)
    with pytest.raises(TensorReadError, match="data.pkl"):
        read_pt(tmp_path / "nopkl.pt")
    pkl = tensor_pickle("float32", 4, (4,), (1,))
    _zip_tensor(tmp_path / "nostorage.pt", pkl.replace(b"X\x01\x00\x00\x000", b"X\x01\x00\x00\x007"))
    with pytest.raises(TensorReadError, match="lacks the storage record"):
        read_pt(tmp_path / "nostorage.pt")


def test_max_bytes_limits_the_result(tmp_path: Path) -> None:
    write_pt(tmp_path / "t.pt", np.zeros(1000, np.float32))
    assert read_pt(tmp_path / "t.pt", max_bytes=4000).size == 1000
    with pytest.raises(TensorReadError, match="limit"):
        read_pt(tmp_path / "t.pt", max_bytes=3999)


def test_deflate_crc_checked(tmp_path: Path) -> None:
    arr = np.arange(32, dtype=np.int64)
    _zip_tensor(tmp_path / "z.pt", tensor_pickle("int64", 32, (32,), (1,)), arr.tobytes(),
                compress=zipfile.ZIP_DEFLATED)
    raw = bytearray((tmp_path / "z.pt").read_bytes())
    with zipfile.ZipFile(tmp_path / "z.pt") as zf:
        info = zf.getinfo("archive/data/0")
    cd = raw.rfind(b"PK\x01\x02")
    while cd >= 0 and raw[cd + 46: cd + 46 + len(info.filename)] != info.filename.encode():
        cd = raw.rfind(b"PK\x01\x02", 0, cd)
    struct.pack_into("<I", raw, cd + 16, (info.CRC ^ 1) & 0xFFFFFFFF)
    (tmp_path / "z2.pt").write_bytes(bytes(raw))
    with pytest.raises(TensorReadError, match="CRC"):
        read_pt(tmp_path / "z2.pt")
    assert zlib.crc32(arr.tobytes()) == info.CRC


@pytest.mark.parametrize("dtype,view", [("float32", False), ("bfloat16", False), ("float32", True)])
def test_large_storages_are_memory_mapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          dtype: str, view: bool) -> None:
    import msprobe_pytorch.pt_reader as reader

    monkeypatch.setattr(reader, "MMAP_MIN_BYTES", 4096)
    storage = np.random.default_rng(3).standard_normal(600_000).astype(np.float32)
    path = tmp_path / "big.pt"
    if view:
        write_storage_pt(path, storage, size=(1000, 300), stride=(600, 2), offset=1)
        want = np.lib.stride_tricks.as_strided(storage[1:], (1000, 300), (2400, 8))
    else:
        write_storage_pt(path, storage, dtype=dtype, size=(600, 1000))
        want = storage.reshape(600, 1000)
        if dtype == "bfloat16":
            want = (float32_to_bfloat16_bits(want).astype(np.uint32) << 16).view(np.float32)
    before = path.read_bytes()
    got = read_pt(path)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(read_pt(path, use_mmap=False), want)
    assert got.flags.writeable and got.flags.c_contiguous
    got[...] = 0  # copy-on-write: the file is untouched
    assert path.read_bytes() == before
    np.testing.assert_array_equal(read_pt(path), want)


def test_expanded_view_bomb_is_refused(tmp_path: Path) -> None:
    write_storage_pt(tmp_path / "e.pt", np.ones(4, np.float32), size=(1 << 40,), stride=(0,))
    with pytest.raises(TensorReadError, match="expands far beyond"):
        read_pt(tmp_path / "e.pt")
    with pytest.raises(TensorReadError, match="limit"):
        read_pt(tmp_path / "e.pt", max_bytes=1 << 30)
    # within the byte cap the CLI always sets (16 GiB), a 600-byte file must not become gigabytes either
    write_storage_pt(tmp_path / "g.pt", np.ones(4, np.float32), size=(1 << 28, 6), stride=(0, 0))
    assert (tmp_path / "g.pt").stat().st_size < 2000
    with pytest.raises(TensorReadError, match="expands far beyond"):
        read_pt(tmp_path / "g.pt", max_bytes=16 << 30)
    write_storage_pt(tmp_path / "z.pt", np.ones(4, np.float32), size=(0, 1 << 62), stride=(1, 1))
    with pytest.raises(TensorReadError):
        read_pt(tmp_path / "z.pt")


# --------------------------------------------------------------------------- pickle bombs (work, not memory)
_READ_ONE = """
import sys
from msprobe_core.errors import TensorReadError
from msprobe_pytorch.pt_reader import read_pt
try:
    read_pt(sys.argv[1])
except TensorReadError as exc:
    print("refused:", exc)
"""


@pytest.mark.parametrize("name", ["persistent-id", "storage-offset", "size-entry", "dict-key", "location"])
def test_pickle_bombs_are_refused_at_once(tmp_path: Path, name: str) -> None:
    """A ~300-byte data.pkl whose values expand to 2**40 objects: refused in one short message, not a hang.

    Run in a child with a time limit: where the bug is back, formatting or hashing such a value never ends
    (and ignores Ctrl-C).
    """
    import subprocess

    from tests.pickle_bombs import BOMBS

    path = tmp_path / f"{name}.pt"
    _zip_tensor(path, BOMBS[name])
    assert len(BOMBS[name]) < 600
    try:
        proc = subprocess.run([sys.executable, "-c", _READ_ONE, str(path)], capture_output=True, text=True,
                              timeout=600)
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading the {name} bomb did not finish in 600 s")
    assert proc.returncode == 0 and proc.stdout.startswith("refused:"), proc
    assert "expands to more than" in proc.stdout, proc.stdout  # refused for what it is, before anything ran
    assert len(proc.stdout) < 600 and proc.stdout.count("\n") == 1, proc.stdout


def test_deep_nesting_and_wide_values_are_bounded(tmp_path: Path) -> None:
    deep = b"\x80\x02" + b"(" * 500 + b")" + b"t" * 500 + b"."  # 500 nested tuples, nothing shared
    _zip_tensor(tmp_path / "deep.pt", deep)
    with pytest.raises(TensorReadError, match="nests .*deep"):
        read_pt(tmp_path / "deep.pt")
    wide = b"\x80\x02(" + b"K\x01" * 200_000 + b"l."  # a list of 200,000 ints in a 400 KB data.pkl
    _zip_tensor(tmp_path / "wide.pt", wide)
    with pytest.raises(TensorReadError, match="expands to more than"):
        read_pt(tmp_path / "wide.pt")


def test_the_bombs_differ_from_a_good_pickle_only_where_they_say(tmp_path: Path) -> None:
    from tests.pickle_bombs import _rebuild

    _zip_tensor(tmp_path / "ok.pt", _rebuild(b"K\x00"))
    np.testing.assert_array_equal(read_pt(tmp_path / "ok.pt"), np.zeros(4, np.float32))
    _zip_tensor(tmp_path / "meta.pt", _rebuild(b"K\x00", metadata=b"}X\x03\x00\x00\x00neg\x89s"))
    np.testing.assert_array_equal(read_pt(tmp_path / "meta.pt"), np.zeros(4, np.float32))


def test_caches_count_bytes_not_entries(tmp_path: Path) -> None:
    """Tensors whose data.pkl is 1 MiB (deflated to a few KB), each different: reading them keeps no copy of it."""
    import gc
    import tracemalloc

    from tests.pickle_bombs import GOOD

    paths = []
    for k in range(48):
        padding = f"{k:08d}".encode() + b"a" * ((1 << 20) - 300)
        pkl = b"\x80\x02X" + struct.pack("<I", len(padding)) + padding + b"0" + GOOD[2:]  # a string, POP, the tensor
        _zip_tensor(tmp_path / f"{k}.pt", pkl, compress=zipfile.ZIP_DEFLATED)
        paths.append(tmp_path / f"{k}.pt")
    assert sum(p.stat().st_size for p in paths) < 48 * 8192
    gc.collect()
    tracemalloc.start()
    try:
        for p in paths:
            np.testing.assert_array_equal(read_pt(p), np.zeros(4, np.float32))
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 16 << 20, f"{held >> 20} MiB still held after reading 48 MiB of data.pkl"
