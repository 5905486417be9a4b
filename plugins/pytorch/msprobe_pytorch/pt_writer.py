"""Write numpy arrays as ``.pt`` files that ``torch.load(weights_only=True)`` accepts, without torch.

The layout is the one ``torch.save`` produces (checked against torch 2.13): a ZIP_STORED archive
whose records live under ``<stem>/`` and start on 64-byte boundaries::

    <stem>/data.pkl  <stem>/.format_version  <stem>/.storage_alignment  <stem>/byteorder
    <stem>/data/0    <stem>/version           <stem>/.data/serialization_id

``data.pkl`` is hand-assembled pickle protocol 2 calling ``torch._utils._rebuild_tensor_v2`` on a
typed storage (``torch.FloatStorage`` ...), or ``_rebuild_tensor_v3`` on an ``UntypedStorage``
for the dtypes that have no legacy storage class (float8, uint16/32/64, complex32).

Used for test fixtures and benchmarks; :func:`write_storage_pt` also writes views (offset and
strides into a larger storage), like ``torch.save`` does for a slice.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import zipfile
from collections.abc import Sequence

import numpy as np

from .pt_reader import STORAGE_DTYPES, TORCH_DTYPES, fp8_table

__all__ = [
    "float32_to_bfloat16_bits",
    "float32_to_fp8_bits",
    "tensor_pickle",
    "write_pt",
    "write_storage_pt",
]

_ALIGN = 64
_TYPED_STORAGE = {dt: cls for cls, dt in STORAGE_DTYPES.items() if not cls.startswith(("Float8", "UInt", "ComplexHalf"))}
_NUMPY_TO_TORCH = {
    "float32": "float32", "float64": "float64", "float16": "float16",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "bool": "bool", "complex64": "complex64", "complex128": "complex128",
}
_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
            "int": "int32", "short": "int16", "cfloat": "complex64", "cdouble": "complex128",
            "chalf": "complex32", "bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


# --------------------------------------------------------------------------- conversions
def float32_to_bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) of ``values``, rounded to nearest even like torch.

    NaN becomes ``0xFFFF`` (what torch 2.13's CPU ``Tensor.to`` writes); overflow rounds to +-inf.
    """
    f32 = np.ascontiguousarray(values, dtype=np.float32)
    u = f32.view(np.uint32)
    bias = ((u >> 16) & 1) + np.uint32(0x7FFF)
    out = ((u + bias) >> 16).astype(np.uint16)
    nan = np.isnan(f32)
    if nan.any():
        out[nan] = 0xFFFF
    return out


_FP8_OVERFLOW = {  # first magnitude that no longer rounds to a finite code, code given there
    "float8_e4m3fn": (np.inf, 0x7E),  # torch 2.13 saturates e4m3fn (+-inf too) to +-448
    "float8_e5m2": (65536.0, 0x7C),  # e5m2 overflows to inf
}


def float32_to_fp8_bits(values: np.ndarray, fmt: str) -> np.ndarray:
    """uint8 codes of ``values`` in float8 format ``fmt`` (``float8_e4m3fn`` or ``float8_e5m2``).

    Round to nearest, ties to even, like torch 2.13's ``Tensor.to`` on CPU: e4m3fn saturates
    (``|x| > 448`` and +-inf give +-448); e5m2 turns ``|x| >= 65536`` into +-inf; NaN gives
    ``0x7F | sign`` in both.
    """
    if fmt not in _FP8_OVERFLOW:
        raise ValueError(f"cannot encode float8 format {fmt!r}")
    limit, over_code = _FP8_OVERFLOW[fmt]
    table = fp8_table(fmt).astype(np.float64)
    pos_codes = np.arange(0x80)
    finite = np.isfinite(table[:0x80])
    grid_codes = pos_codes[finite]
    grid = table[:0x80][finite]  # ascending for positive codes
    if np.isfinite(limit):
        grid = np.append(grid, limit)
        grid_codes = np.append(grid_codes, over_code)

    with np.errstate(invalid="ignore", over="ignore"):
        x = np.asarray(values, dtype=np.float32).astype(np.float64)
        mag = np.minimum(np.abs(x), grid[-1]) if not np.isfinite(limit) else np.abs(x)
    idx = np.clip(np.searchsorted(grid, mag, side="left"), 1, len(grid) - 1)
    lo, hi = grid[idx - 1], grid[idx]
    d_lo, d_hi = mag - lo, hi - mag
    take_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (grid_codes[idx] % 2 == 0))
    code = np.where(take_hi, grid_codes[idx], grid_codes[idx - 1])
    code = np.where(mag >= limit, over_code, code)
    code = np.where(np.isnan(x), 0x7F, code)
    sign = np.signbit(x).astype(np.int64) << 7
    return (code | sign).astype(np.uint8)


def _normalise_dtype(dtype: str | None, array: np.ndarray) -> str:
    if dtype is None:
        name = _NUMPY_TO_TORCH.get(array.dtype.name)
        if name is None:
            raise ValueError(f"no torch dtype for numpy {array.dtype}")
        return name
    name = dtype.removeprefix("torch.")
    name = _ALIASES.get(name, name)
    if name not in TORCH_DTYPES:
        raise ValueError(f"unknown torch dtype {dtype!r}")
    return name


def _storage_bytes(array: np.ndarray, dtype: str) -> np.ndarray:
    """The array's elements as the raw little-endian storage of torch dtype ``dtype`` (1-D)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _storage_bytes_raw(array, dtype)


def _storage_bytes_raw(array: np.ndarray, dtype: str) -> np.ndarray:
    flat = np.ascontiguousarray(array).reshape(-1)
    if dtype == "bfloat16":
        return float32_to_bfloat16_bits(flat)
    if dtype in ("float8_e4m3fn", "float8_e5m2"):
        return float32_to_fp8_bits(flat, dtype)
    if dtype == "complex32":
        c = flat.astype(np.complex64)
        return np.stack([c.real, c.imag], axis=-1).astype("<f2").reshape(-1)
    if dtype == "bool":
        return flat.astype(np.bool_).view(np.uint8)
    if dtype.startswith("float8"):
        raise ValueError(f"cannot encode {dtype}")
    return flat.astype(np.dtype(TORCH_DTYPES[dtype]), copy=False)


# --------------------------------------------------------------------------- pickle
def _p_int(v: int) -> bytes:
    if 0 <= v < 256:
        return b"K" + bytes([v])
    if 0 <= v < 65536:
        return b"M" + struct.pack("<H", v)
    if -(2**31) <= v < 2**31:
        return b"J" + struct.pack("<i", v)
    nbytes = (v.bit_length() + 8) // 8
    return b"\x8a" + bytes([nbytes]) + v.to_bytes(nbytes, "little", signed=True)


def _p_str(s: str) -> bytes:
    data = s.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def _p_tuple(items: Sequence[bytes]) -> bytes:
    if not items:
        return b")"
    if len(items) <= 3:
        return b"".join(items) + (b"\x85", b"\x86", b"\x87")[len(items) - 1]
    return b"(" + b"".join(items) + b"t"


def _p_global(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def tensor_pickle(dtype: str, numel: int, size: Sequence[int], stride: Sequence[int],
                  offset: int = 0, requires_grad: bool = False, key: str = "0") -> bytes:
    """``data.pkl`` bytes for one tensor on storage ``key`` (as torch 2.x writes them)."""
    typed = _TYPED_STORAGE.get(dtype)
    if typed is not None:
        storage = _p_global("torch", typed)
        storage_numel = numel
    else:
        storage = _p_global("torch.storage", "UntypedStorage")
        storage_numel = numel * (4 if dtype == "complex32" else np.dtype(TORCH_DTYPES[dtype]).itemsize)
    pid = b"(" + _p_str("storage") + storage + _p_str(key) + _p_str("cpu") + _p_int(storage_numel) + b"t"
    args = [
        pid + b"Q",
        _p_int(offset),
        _p_tuple([_p_int(s) for s in size]),
        _p_tuple([_p_int(s) for s in stride]),
        b"\x88" if requires_grad else b"\x89",
        _p_global("collections", "OrderedDict") + b")R",
    ]
    if typed is None:
        args.append(_p_global("torch", dtype))
        func = _p_global("torch._utils", "_rebuild_tensor_v3")
    else:
        func = _p_global("torch._utils", "_rebuild_tensor_v2")
    return b"\x80\x02" + func + b"(" + b"".join(args) + b"tR."


# --------------------------------------------------------------------------- zip
def _archive_name(path: str) -> str:
    stem = os.path.basename(path)
    if "." in stem:
        stem = stem.rsplit(".", 1)[0]
    return stem if stem and re.fullmatch(r"[A-Za-z0-9_.\-]+", stem) else "archive"


def _write_record(zf: zipfile.ZipFile, name: str, data: bytes | memoryview) -> None:
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    size = len(data) if isinstance(data, bytes) else data.nbytes
    info.file_size = size
    zip64 = size * 1.05 > zipfile.ZIP64_LIMIT
    offset = zf.fp.tell()  # type: ignore[union-attr]
    head = 30 + len(name.encode()) + (20 if zip64 else 0)
    pad = (-(offset + head)) % _ALIGN
    if 0 < pad < 4:
        pad += _ALIGN
    if pad:
        info.extra = b"FB" + struct.pack("<H", pad - 4) + b"Z" * (pad - 4)
    with zf.open(info, "w", force_zip64=zip64) as out:
        out.write(data)


def write_storage_pt(path: str | os.PathLike[str], storage: np.ndarray, *, dtype: str | None = None,
                     size: Sequence[int] | None = None, stride: Sequence[int] | None = None,
                     offset: int = 0, requires_grad: bool = False) -> None:
    """Write a tensor that views ``storage`` (1-D) with ``offset``/``size``/``stride``.

    ``size`` defaults to the storage's length and ``stride`` to C-contiguous strides
    (in elements).  ``dtype`` is a torch dtype name (``"bfloat16"``, ``"float8_e4m3fn"``, ...);
    default: the storage's numpy dtype.  No check that the view fits the storage is made,
    so that malformed test files can be produced.
    """
    spath = os.fspath(path)
    storage = np.asarray(storage).reshape(-1)
    tdtype = _normalise_dtype(dtype, storage)
    raw = _storage_bytes(storage, tdtype)
    numel = storage.size
    if size is None:
        size = (numel,)
    if stride is None:
        acc, strides = 1, []
        for s in reversed(list(size)):
            strides.append(acc)
            acc *= max(int(s), 1)
        stride = tuple(reversed(strides))
    pkl = tensor_pickle(tdtype, numel, [int(s) for s in size], [int(s) for s in stride],
                        int(offset), requires_grad)
    body = memoryview(np.ascontiguousarray(raw).astype(raw.dtype.newbyteorder("<"), copy=False)).cast("B")
    prefix = _archive_name(spath) + "/"
    serial = int(hashlib.sha1(pkl + str(numel).encode()).hexdigest(), 16) % 10**40
    with zipfile.ZipFile(spath, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        _write_record(zf, prefix + "data.pkl", pkl)
        _write_record(zf, prefix + ".format_version", b"1")
        _write_record(zf, prefix + ".storage_alignment", b"64")
        _write_record(zf, prefix + "byteorder", b"little")
        _write_record(zf, prefix + "data/0", body)
        _write_record(zf, prefix + "version", b"3\n")
        _write_record(zf, prefix + ".data/serialization_id", f"{serial:040d}".encode())


def write_pt(path: str | os.PathLike[str], array: np.ndarray, *, dtype: str | None = None) -> None:
    """Save ``array`` to ``path`` as ``torch.save(torch.from_numpy(array).to(dtype))`` would.

    ``dtype`` is a torch dtype name (``"bfloat16"``, ``"float16"``, ``"float8_e4m3fn"``,
    ``"torch.int64"`` ...); default: the twin of the array's numpy dtype.  bfloat16 and float8
    are rounded to nearest even from float32.  0-d and empty arrays are kept as such.
    """
    arr = np.asarray(array)
    shape = arr.shape
    acc, strides = 1, []
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    tdtype = _normalise_dtype(dtype, arr)
    write_storage_pt(path, arr.reshape(-1), dtype=tdtype, size=shape, stride=tuple(reversed(strides)))
