"""Reusable read memory (arena), whole-file .pt reads, the data.pkl cache, and the one-lstat path check."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from msprobe_pytorch import pt_reader
from msprobe_pytorch.pt_reader import read_pt
from msprobe_pytorch.pt_writer import write_pt

from msprobe_core.default_plugins.tensor_metrics import stage as tensor_stage
from msprobe_core.errors import TensorReadError, UnsafePathError
from msprobe_core.files.arena import ALIGN, Arena, current_arena, use_arena
from msprobe_core.files.validation import resolve_within


# --------------------------------------------------------------------------- arena
def test_arena_blocks_are_aligned_disjoint_and_reused_after_reset() -> None:
    arena = Arena()
    a = arena.take(10)
    b = arena.take(1000)
    assert a.ctypes.data % ALIGN == 0 and b.ctypes.data % ALIGN == 0
    assert not np.shares_memory(a, b)
    a[:] = 1
    b[:] = 2
    assert (a == 1).all()
    arena.reset()
    assert arena.take(10).ctypes.data == a.ctypes.data  # same memory, no new allocation


def test_arena_growth_keeps_earlier_blocks_valid_and_fits_next_time() -> None:
    arena = Arena()
    small = arena.take(100)
    small[:] = 7
    big = arena.take(3 << 20)  # larger than the first buffer: a new one
    assert (small == 7).all() and big.size == 3 << 20
    capacity = arena.capacity
    arena.reset()
    arena.take(100)
    arena.take(3 << 20)
    assert arena.capacity == capacity  # the same requests now fit in one buffer


def test_use_arena_sets_and_restores_the_current_arena() -> None:
    outer, inner = Arena(), Arena()
    assert current_arena() is None
    with use_arena(outer):
        with use_arena(inner):
            assert current_arena() is inner
        assert current_arena() is outer
    assert current_arena() is None


# --------------------------------------------------------------------------- .pt reads into an arena
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "int64", "bool"])
def test_read_pt_into_arena_equals_fresh_read(tmp_path: Path, dtype: str) -> None:
    rng = np.random.default_rng(1)
    values = rng.standard_normal((33, 17)).astype(np.float32)
    if dtype == "int64":
        values = (values * 100).astype(np.int64)
    elif dtype == "bool":
        values = values > 0
    path = tmp_path / "t.pt"
    write_pt(path, values, dtype=dtype)
    fresh = read_pt(path)
    arena = Arena()
    arena.take(1)  # the buffer exists: the read must land inside it
    in_arena = read_pt(path, arena=arena)
    assert in_arena.dtype == fresh.dtype and in_arena.shape == fresh.shape
    np.testing.assert_array_equal(in_arena, fresh)
    assert in_arena.flags.c_contiguous and in_arena.flags.writeable
    if dtype in ("float32", "bfloat16", "int64"):  # no copy beyond the arena
        assert np.shares_memory(in_arena, arena.take(0).base)


def test_storage_is_a_view_of_the_whole_file_buffer(tmp_path: Path) -> None:
    path = tmp_path / "t.pt"
    write_pt(path, np.arange(1000, dtype=np.float32))
    out = read_pt(path)
    assert out.base is not None and out.base.size == os.path.getsize(path)


def test_same_data_pkl_is_unpickled_once(tmp_path: Path) -> None:
    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    write_pt(a, np.arange(6, dtype=np.float32).reshape(2, 3))
    write_pt(b, -np.arange(6, dtype=np.float32).reshape(2, 3))
    pt_reader._SPECS.clear()
    read_pt(a)
    assert len(pt_reader._SPECS) == 1
    np.testing.assert_array_equal(read_pt(b), -np.arange(6, dtype=np.float32).reshape(2, 3))
    assert len(pt_reader._SPECS) == 1


def test_zip_comment_still_finds_the_end_record(tmp_path: Path) -> None:
    path = tmp_path / "t.pt"
    write_pt(path, np.arange(5, dtype=np.float32))
    data = bytearray(path.read_bytes())
    data[-2:] = (9).to_bytes(2, "little")  # comment length: the end record is not the last 22 bytes
    path.write_bytes(bytes(data) + b"a comment")
    np.testing.assert_array_equal(read_pt(path), np.arange(5, dtype=np.float32))


# --------------------------------------------------------------------------- path confinement
def _same_as_resolve_within(base: Path, name: str) -> None:
    fast = tensor_stage._TensorPaths()
    try:
        want: object = str(resolve_within(base, name))
    except TensorReadError as exc:
        want = (type(exc), str(exc))
    try:
        got: object = fast(base, name)
    except TensorReadError as exc:
        got = (type(exc), str(exc))
    assert got == want, name


def test_tensor_paths_agree_with_resolve_within(tmp_path: Path) -> None:
    root = tmp_path / "dump_tensor_data"
    root.mkdir()
    (root / "a.pt").write_bytes(b"x")
    (root / "sub").mkdir()
    (root / "sub" / "b.pt").write_bytes(b"x")
    (tmp_path / "outside.pt").write_bytes(b"x")
    (root / "link_out.pt").symlink_to(tmp_path / "outside.pt")
    (root / "link_in.pt").symlink_to(root / "a.pt")
    via_link = tmp_path / "via"
    via_link.symlink_to(root)
    for base in (root, via_link):
        for name in ("a.pt", "missing.pt", "sub/b.pt", "sub", "link_out.pt", "link_in.pt", "..", ".",
                     "../outside.pt", "/etc/passwd", "", "a\x00.pt", "sub/../a.pt", "...pt"):
            _same_as_resolve_within(base, name)


def test_tensor_paths_refuse_a_symlink_out() -> None:
    with pytest.raises(UnsafePathError):
        tensor_stage._TensorPaths()(Path("/proc/self"), "cwd")


# --------------------------------------------------------------------------- .npy reads into an arena
@pytest.mark.parametrize("array", [
    np.arange(12, dtype=np.float32).reshape(3, 4),
    np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4)),
    np.arange(6, dtype=">i4").reshape(2, 3),
    np.array([True, False, True]),
    np.array([1 + 2j, 3 - 4j], dtype=np.complex64),
    np.array(2.5, dtype=np.float16),
    np.zeros((0, 3), np.float32),
])
def test_mindspore_npy_into_arena_equals_np_load(tmp_path: Path, array: np.ndarray) -> None:
    from msprobe_mindspore.npy_reader import read_npy

    path = tmp_path / "t.npy"
    np.save(path, array)
    want = np.load(path, allow_pickle=False)
    arena = Arena()
    with use_arena(arena):
        got = read_npy(path)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.flags.f_contiguous == want.flags.f_contiguous
    np.testing.assert_array_equal(got, want)
    if want.size:
        assert np.shares_memory(got, arena.take(0).base)


def test_large_file_storage_is_mapped_and_small_view_read_into_arena(tmp_path: Path) -> None:
    import mmap

    from msprobe_pytorch.pt_writer import write_storage_pt

    storage = np.arange(pt_reader.MMAP_MIN_BYTES // 2, dtype=np.float32)  # a 2 MiB file
    whole, part = tmp_path / "whole.pt", tmp_path / "part.pt"
    write_storage_pt(whole, storage)
    write_storage_pt(part, storage, size=(100,), stride=(1,), offset=7)  # 400 bytes of a 2 MiB file
    arena = Arena()
    mapped = read_pt(whole, arena=arena)
    base = mapped.base
    while isinstance(base, (np.ndarray, memoryview)):
        base = base.obj if isinstance(base, memoryview) else base.base
    assert isinstance(base, mmap.mmap)
    np.testing.assert_array_equal(mapped, storage)
    arena.reset()
    small = read_pt(part, arena=arena)
    np.testing.assert_array_equal(small, storage[7:107])
    assert np.shares_memory(small, arena.take(0).base)


def test_file_map_is_found_through_frombuffer(tmp_path: Path) -> None:
    import mmap

    data = np.arange(50_000, dtype=np.float32)
    path = tmp_path / "raw.bin"
    path.write_bytes(data.tobytes())
    with open(path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
    mapped = np.frombuffer(mm, dtype=np.float32).reshape(100, 500)[1:]
    assert tensor_stage._file_map(mapped) is mm
    assert tensor_stage._file_map(data) is None
    assert tensor_stage._file_map(Arena().take(64)) is None
