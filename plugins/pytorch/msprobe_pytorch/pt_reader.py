"""Read one tensor from a ``torch.save`` file without torch and without running pickled code.

A ``.pt`` file written by ``torch.save`` (PyTorch >= 1.6) is a zip archive::

    <prefix>/data.pkl           pickle (protocol 2) describing the tensor
    <prefix>/byteorder          "little" or "big" (absent in old files: little)
    <prefix>/data/<key>         raw bytes of each storage, members ZIP_STORED and 64-byte aligned
    <prefix>/version, .format_version, .storage_alignment, .data/serialization_id

``data.pkl`` is unpickled by :class:`_SafeUnpickler`, whose ``find_class`` hands out local,
inert stand-ins for an allow-list of globals (``torch._utils._rebuild_tensor_v2`` and friends,
``torch.<X>Storage`` classes, ``torch.<dtype>`` names, ``collections.OrderedDict``) and raises
:class:`~msprobe_core.plugin.UnsafePickleError` for anything else, before anything is imported.
Storages come through ``persistent_load`` as ``('storage', type, key, location, numel)``.

The zip central directory is parsed here (bounds-checked).  A file under ``WHOLE_FILE_MAX``
bytes (1 MiB) is read whole with one ``preadv`` into a numpy buffer (the caller's reusable arena
when it passes one) and a ZIP_STORED storage is a view of that buffer, not a copy; in larger files
a storage of at least ``MMAP_MIN_BYTES`` is a copy-on-write memory map of the file (no copy at
all: mapping page-cache pages costs less than the kernel's copy), a smaller one is read with one
``preadv`` at the member's data offset.  Then the tensor view (offset, sizes, strides) is
applied; non-contiguous views are copied into a C-contiguous array.
What msprobe does after ``torch.load`` is mirrored: bfloat16 and the float8 types become
float32 (msprobe casts them before ``.numpy()``); every other dtype keeps its numpy twin.
The caller squeezes (msprobe's ``np.squeeze``).

Every failure raises :class:`~msprobe_core.plugin.TensorReadError` (or its subclass
``UnsafePickleError``) naming the file, so that only the row of that tensor fails.
"""

from __future__ import annotations

import os
import pickle
import struct
from typing import Any

import numpy as np

from msprobe_core.plugin import TensorReadError

from .pt_archive import _Archive
from .pt_format import _FP8_FORMATS, _ITEMSIZE, STORAGE_DTYPES, TORCH_DTYPES, _convert, fp8_table
from .pt_pickle_check import _BytesCache, _check_pickle
from .pt_unpickle import _SafeUnpickler, _show, _TensorSpec

__all__ = ["MMAP_MIN_BYTES", "STORAGE_DTYPES", "TORCH_DTYPES", "WHOLE_FILE_MAX", "fp8_table", "read_pt"]

#: storages at least this large are memory-mapped (copy-on-write) instead of read: the kernel's
#: copy out of the page cache costs more than mapping the pages (faults come 16 pages at a time)
MMAP_MIN_BYTES = 1 << 20
#: files smaller than this are read whole with one ``preadv`` (storages are views of that buffer)
WHOLE_FILE_MAX = MMAP_MIN_BYTES
_PICKLE_LIMIT = 1 << 20  # data.pkl of one tensor is a few hundred bytes


# --------------------------------------------------------------------------- main entry
def _is_c_contiguous(size: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    expect = 1
    for s, st in zip(reversed(size), reversed(stride), strict=True):
        if s != 1 and st != expect:
            return False
        expect *= s
    return True





#: data.pkl bytes -> the tensor they describe: same-shaped tensors of a dump share their
#: data.pkl byte for byte, and unpickling with the inert stand-ins is a pure function of them
_SPECS = _BytesCache()


def _unpickle_spec(pkl: bytes) -> _TensorSpec:
    obj = _SPECS.get(pkl)
    if obj is not None:
        return obj
    _check_pickle(pkl)
    unpickler = _SafeUnpickler(pkl)
    try:
        obj = unpickler.load()
    except TensorReadError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError,
            AttributeError, RecursionError, struct.error, UnicodeDecodeError, OverflowError) as exc:
        raise TensorReadError(f"data.pkl is not a valid tensor pickle: {type(exc).__name__}: {exc}") from exc
    if not isinstance(obj, _TensorSpec):
        kind = type(obj).__name__
        raise TensorReadError(f"data.pkl holds a {kind}, not a single tensor")
    _SPECS.remember(pkl, obj)
    return obj


def _load_spec(arch: _Archive) -> tuple[_TensorSpec, str]:
    obj = _unpickle_spec(arch.read_small("data.pkl", _PICKLE_LIMIT))
    byteorder = "little"
    if arch.info("byteorder") is not None:
        mark = arch.read_small("byteorder", 16).strip()
        if mark not in (b"little", b"big"):
            raise TensorReadError(f"unknown byteorder record {mark[:16]!r}")
        byteorder = mark.decode()
    return obj, byteorder


def read_pt(path: str | os.PathLike[str], *, max_bytes: int | None = None,
            verify_crc: bool = False, use_mmap: bool = True, arena: Any = None) -> np.ndarray:
    """Load the single tensor saved in ``path`` by ``torch.save`` as a numpy array.

    Args:
        path: the ``.pt`` file.
        max_bytes: refuse (before reading) any zip member whose declared size exceeds this,
            and any result larger than this; ``None`` = no limit beyond the file's own size.
        verify_crc: also check the zip CRC-32 of the storage (torch.load does not; costs a pass
            over the data).  ``data.pkl`` is always CRC-checked.
        use_mmap: a contiguous storage of at least ``MMAP_MIN_BYTES`` is returned as a
            copy-on-write memory map of the file instead of being read into memory (no copy;
            pages come from the page cache as they are used).  The file must then not be
            truncated while the array lives (the OS would raise SIGBUS).
        arena: a :class:`msprobe_core.files.arena.Arena` to carve the file's bytes and the converted
            array from instead of fresh memory; the result is then a view of the arena, valid
            until its next reset.  Files under ``WHOLE_FILE_MAX`` bytes are read with one
            ``preadv`` either way and their storage returned without a further copy.

    Returns:
        A C-contiguous, writable numpy array with the tensor's shape (not squeezed).
        bfloat16 and float8 tensors come back as float32, complex32 as complex64; every other
        dtype keeps its numpy twin (float16 stays float16, bool stays bool, ...).

    Raises:
        UnsafePickleError: data.pkl names a global outside the allow-list.
        TensorReadError: anything else wrong with the file (missing, not a zip, legacy format,
            truncated or oversized members, not a single tensor, inconsistent view).
    """
    spath = os.fspath(path)
    try:
        fd = os.open(spath, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            whole = _read_whole(fd, arena)
            magic = bytes(whole[:4]) if whole is not None else os.pread(fd, 4, 0)
            if magic[:2] != b"PK":
                if magic[:1] == b"\x80":
                    raise TensorReadError(
                        "legacy non-zip torch format not supported (re-save with torch >= 1.6)")
                raise TensorReadError("not a torch zip file (no zip signature)")
            return _read_open(fd, max_bytes, verify_crc, use_mmap, whole, arena)
        finally:
            os.close(fd)
    except TensorReadError as exc:
        if exc.path is None:
            exc.path = spath
            exc.args = (f"{spath}: {exc.args[0]}",) if exc.args else (spath,)
        raise
    except OSError as exc:
        raise TensorReadError(f"{spath}: cannot read tensor file: {exc.strerror or exc}",
                              path=spath) from exc
    except (MemoryError, OverflowError, ValueError) as exc:
        raise TensorReadError(f"{spath}: cannot read tensor: {type(exc).__name__}: {exc}",
                              path=spath) from exc


def _read_whole(fd: int, arena: Any) -> np.ndarray | None:
    """The whole file as ``uint8`` (from ``arena`` when given) if it is under ``WHOLE_FILE_MAX``
    bytes, read with as few ``preadv`` calls as the kernel allows; else None."""
    size = os.fstat(fd).st_size
    if size >= WHOLE_FILE_MAX:
        return None
    whole = arena.take(size) if arena is not None else np.empty(size, np.uint8)
    done = 0
    while done < size:
        got = os.preadv(fd, [whole[done:]], done)
        if got <= 0:
            raise TensorReadError("short read (truncated file)")
        done += got
    return whole


def _read_open(fd: int, max_bytes: int | None, verify_crc: bool, use_mmap: bool,
               whole: np.ndarray | None = None, arena: Any = None) -> np.ndarray:
    arch = _Archive(fd, max_bytes, whole)
    spec, byteorder = _load_spec(arch)
    dtype = spec.dtype
    raw_code = TORCH_DTYPES.get(dtype)
    if raw_code is None:
        raise TensorReadError(f"unsupported tensor dtype {dtype}")
    raw_dt = np.dtype(raw_code)
    if byteorder == "big" and raw_dt.itemsize > 1:
        raw_dt = raw_dt.newbyteorder(">")
    elem = _ITEMSIZE[dtype]
    store = spec.storage
    if store.dtype is not None and _ITEMSIZE[store.dtype] != elem:
        raise TensorReadError(f"tensor dtype {dtype} does not fit its {store.dtype} storage")
    storage_elems = store.nbytes // elem
    size, stride, offset = spec.size, spec.stride, spec.offset

    numel = 1
    for s in size:
        numel *= s
    out_itemsize = 4 if dtype in ("bfloat16", "complex32") or dtype in _FP8_FORMATS else elem
    out_itemsize = 8 if dtype == "complex32" else out_itemsize
    if max_bytes is not None and numel * out_itemsize > max_bytes:
        raise TensorReadError(f"tensor of {numel} elements exceeds the limit of {max_bytes} bytes")

    if numel == 0:
        if offset > storage_elems:
            raise TensorReadError("tensor view starts past the end of its storage")
        raw = np.empty(size + ((2,) if dtype == "complex32" else ()), dtype=raw_dt)
        return np.ascontiguousarray(_convert(raw, dtype, None).reshape(size))

    last = offset + sum((s - 1) * st for s, st in zip(size, stride, strict=True))
    if last >= storage_elems:
        raise TensorReadError(
            f"tensor view (offset {offset}, size {list(size)}, stride {list(stride)}) reaches element"
            f" {last} of a storage of {storage_elems} elements (truncated or corrupt)"
        )
    span = last - offset + 1
    if numel > span and numel * out_itemsize > 16 * store.nbytes + (1 << 20):
        # an expanded (stride-0) view would be materialised far beyond the file's own size; the byte cap
        # does not cover this: 16 GiB from a 600-byte file is within it
        raise TensorReadError("overlapping tensor view expands far beyond its storage; refused")
    n_sub = 2 if dtype == "complex32" else 1
    contiguous = _is_c_contiguous(size, stride)
    count = (numel if contiguous else span) * n_sub
    buf = None
    if use_mmap and not verify_crc and count * raw_dt.itemsize >= MMAP_MIN_BYTES:
        buf = arch.map_range(f"data/{store.key}", offset * elem, count * raw_dt.itemsize, raw_dt)
    if buf is None and not verify_crc:
        buf = arch.view_range(f"data/{store.key}", offset * elem, count * raw_dt.itemsize, raw_dt)
    if buf is None:
        if arena is not None:
            buf = arena.take(count * raw_dt.itemsize).view(raw_dt)
        else:
            buf = np.empty(count, dtype=raw_dt)
        arch.read_into(f"data/{store.key}", offset * elem, buf, verify_crc=verify_crc)
    if contiguous:
        raw = buf.reshape(size + ((2,) if n_sub == 2 else ()))
    else:
        item = raw_dt.itemsize * n_sub
        view = np.lib.stride_tricks.as_strided(
            buf, shape=size + ((2,) if n_sub == 2 else ()),
            strides=tuple(st * item for st in stride) + ((raw_dt.itemsize,) if n_sub == 2 else ()),
            writeable=False,
        )
        raw = np.ascontiguousarray(view)
    arr = _convert(raw, dtype, arena)
    if spec.metadata:
        arr = _apply_metadata(arr, spec.metadata)
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return arr


def _apply_metadata(arr: np.ndarray, meta: dict[str, Any]) -> np.ndarray:
    for key, value in meta.items():
        if not value:
            continue
        if key == "conj":
            arr = np.conj(arr)
        elif key == "neg":
            arr = np.negative(arr)
        else:
            raise TensorReadError(f"unsupported tensor metadata {_show(key)}")
    return arr
