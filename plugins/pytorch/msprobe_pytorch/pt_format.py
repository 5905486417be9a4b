"""The dtypes a ``torch.save`` file names and how their stored bytes become what msprobe compares.

Legacy typed-storage classes and ``torch.<dtype>`` names map to the numpy dtype of the stored bytes; bfloat16
and the float8 formats become float32 (msprobe casts them before ``.numpy()``). Part of :mod:`.pt_reader`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Legacy typed-storage class name -> torch dtype name (what ``torch.save`` writes).
STORAGE_DTYPES: dict[str, str] = {
    "FloatStorage": "float32",
    "DoubleStorage": "float64",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
    "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
    "ComplexHalfStorage": "complex32",
    # Not written by current torch (float8 goes through UntypedStorage + _rebuild_tensor_v3),
    # accepted in case some writer uses them.
    "Float8_e4m3fnStorage": "float8_e4m3fn",
    "Float8_e5m2Storage": "float8_e5m2",
    "Float8_e4m3fnuzStorage": "float8_e4m3fnuz",
    "Float8_e5m2fnuzStorage": "float8_e5m2fnuz",
    "UInt16Storage": "uint16",
    "UInt32Storage": "uint32",
    "UInt64Storage": "uint64",
}

#: torch dtype name -> (raw numpy dtype of the stored bytes, itemsize).  Names that torch also
#: exposes under an alias (``torch.float`` / ``torch.long`` ...) are listed in ``_DTYPE_ALIASES``.
TORCH_DTYPES: dict[str, str] = {
    "float32": "<f4",
    "float64": "<f8",
    "float16": "<f2",
    "bfloat16": "<u2",
    "int64": "<i8",
    "int32": "<i4",
    "int16": "<i2",
    "int8": "i1",
    "uint8": "u1",
    "uint16": "<u2",
    "uint32": "<u4",
    "uint64": "<u8",
    "bool": "u1",
    "complex64": "<c8",
    "complex128": "<c16",
    "complex32": "<f2",  # pairs of float16
    "float8_e4m3fn": "u1",
    "float8_e5m2": "u1",
    "float8_e4m3fnuz": "u1",
    "float8_e5m2fnuz": "u1",
    "float8_e8m0fnu": "u1",
}

_DTYPE_ALIASES: dict[str, str] = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "long": "int64",
    "int": "int32",
    "short": "int16",
    "cfloat": "complex64",
    "cdouble": "complex128",
    "chalf": "complex32",
}

_ITEMSIZE: dict[str, int] = {
    name: (4 if name == "complex32" else np.dtype(raw).itemsize) for name, raw in TORCH_DTYPES.items()
}

#: storages at least this large are memory-mapped (copy-on-write) instead of read: the kernel's


# --------------------------------------------------------------------------- dtype conversion
def _fp8_table(exp_bits: int, man_bits: int, bias: int, kind: str) -> np.ndarray:
    """float32 value of each of the 256 codes of an 8-bit float format.

    kind: ``"ieee"`` (inf and NaNs like IEEE, e5m2), ``"fn"`` (no inf; only all-ones is NaN,
    e4m3fn), ``"fnuz"`` (no inf, no -0; 0x80 is the only NaN), ``"e8m0"`` (exponent only).
    """
    codes = np.arange(256, dtype=np.int64)
    if kind == "e8m0":
        with np.errstate(over="ignore"):
            out = np.ldexp(1.0, codes - 127).astype(np.float32)
        out[255] = np.nan
        return out
    sign = np.where(codes >> 7, -1.0, 1.0)
    exp = (codes >> man_bits) & ((1 << exp_bits) - 1)
    man = codes & ((1 << man_bits) - 1)
    normal = np.ldexp(1.0 + man / (1 << man_bits), exp - bias)
    subnormal = np.ldexp(man / (1 << man_bits), 1 - bias)
    val = sign * np.where(exp == 0, subnormal, normal)
    max_exp = (1 << exp_bits) - 1
    if kind == "ieee":
        val[(exp == max_exp) & (man == 0)] = sign[(exp == max_exp) & (man == 0)] * np.inf
        val[(exp == max_exp) & (man != 0)] = np.nan
    elif kind == "fn":
        val[(exp == max_exp) & (man == (1 << man_bits) - 1)] = np.nan
    elif kind == "fnuz":
        val[0x80] = np.nan
    return val.astype(np.float32)


_FP8_FORMATS: dict[str, tuple[int, int, int, str]] = {
    "float8_e4m3fn": (4, 3, 7, "fn"),
    "float8_e5m2": (5, 2, 15, "ieee"),
    "float8_e4m3fnuz": (4, 3, 8, "fnuz"),
    "float8_e5m2fnuz": (5, 2, 16, "fnuz"),
    "float8_e8m0fnu": (8, 0, 127, "e8m0"),
}
_FP8_TABLES: dict[str, np.ndarray] = {}


def fp8_table(name: str) -> np.ndarray:
    """The 256-entry float32 decoding table of float8 format ``name`` (cached)."""
    table = _FP8_TABLES.get(name)
    if table is None:
        table = _FP8_TABLES[name] = _fp8_table(*_FP8_FORMATS[name])
        table.flags.writeable = False
    return table


def _bf16_to_f32(raw: np.ndarray, arena: Any = None) -> np.ndarray:
    """bfloat16 bit patterns (``uint16``) widened to float32 (the high half of each float)."""
    if arena is not None:
        out = arena.take(raw.size * 4).view(np.uint32).reshape(raw.shape)
    else:
        out = np.empty(raw.shape, dtype=np.uint32)
    np.left_shift(raw, 16, out=out, dtype=np.uint32)
    return out.view(np.float32)


def _convert(raw: np.ndarray, dtype: str, arena: Any = None) -> np.ndarray:
    """Turn the raw element array into what msprobe's ``.numpy()`` would give (native order)."""
    if raw.dtype.byteorder == ">":
        raw = raw.astype(raw.dtype.newbyteorder("="))
    if dtype == "bfloat16":
        return _bf16_to_f32(raw, arena)
    if dtype in _FP8_FORMATS:
        return fp8_table(dtype)[raw]
    if dtype == "bool":
        return raw.view(np.bool_) if not np.any(raw > 1) else raw != 0
    if dtype == "complex32":
        pairs = raw.astype(np.float32)
        return pairs.view(np.complex64).reshape(raw.shape[:-1])
    return raw


