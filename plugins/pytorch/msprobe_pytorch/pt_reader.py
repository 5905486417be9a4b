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

import collections
import io
import mmap
import os
import pickle
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from msprobe_core.plugin import TensorReadError, UnsafePickleError

__all__ = ["MMAP_MIN_BYTES", "STORAGE_DTYPES", "TORCH_DTYPES", "WHOLE_FILE_MAX", "fp8_table", "read_pt"]

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
#: copy out of the page cache costs more than mapping the pages (faults come 16 pages at a time)
MMAP_MIN_BYTES = 1 << 20
#: files smaller than this are read whole with one ``preadv`` (storages are views of that buffer)
WHOLE_FILE_MAX = MMAP_MIN_BYTES
_PICKLE_LIMIT = 1 << 20  # data.pkl of one tensor is a few hundred bytes
_MAX_DIMS = 64
_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")
_LOCAL_MAGIC = 0x04034B50


# --------------------------------------------------------------------------- stand-ins
class _NoBuild:
    """Mixin: refuse pickle's BUILD opcode, so a pickle cannot alter a stand-in's fields."""

    __slots__ = ()

    def __setstate__(self, state: object) -> None:
        raise TensorReadError("data.pkl tries to set the state of a torch stand-in object")


class _Callable(_NoBuild):
    """A local function handed to the unpickler; immune to BUILD (no __dict__, no setattr)."""

    __slots__ = ("_fn",)

    def __init__(self, fn: Any) -> None:
        object.__setattr__(self, "_fn", fn)

    def __setattr__(self, name: str, value: object) -> None:
        raise TensorReadError("data.pkl tries to modify a torch stand-in function")

    def __call__(self, *args: object) -> object:
        return self._fn(*args)


@dataclass(frozen=True)
class _StorageType(_NoBuild):
    """Stand-in for a ``torch.<X>Storage`` / ``torch.storage.UntypedStorage`` class."""

    name: str
    dtype: str | None  # None: untyped (bytes)


@dataclass(frozen=True)
class _TorchDtype(_NoBuild):
    """Stand-in for a ``torch.<dtype>`` object."""

    name: str


@dataclass(frozen=True)
class _StorageRef(_NoBuild):
    """What ``persistent_load`` returns for ``('storage', type, key, location, numel)``."""

    key: str
    dtype: str | None
    numel: int  # elements of ``dtype`` (bytes when untyped)
    location: str

    @property
    def nbytes(self) -> int:
        return self.numel * (1 if self.dtype is None else _ITEMSIZE[self.dtype])


@dataclass
class _TensorSpec(_NoBuild):
    """A tensor as described by data.pkl: which storage, which view, which dtype."""

    storage: _StorageRef
    offset: int
    size: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str
    metadata: dict[str, Any] = field(default_factory=dict)


def _show(value: object) -> str:
    """A short description of an unpickled value for a message: never ``repr`` of an arbitrary structure."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return repr(value) if value.bit_length() <= 64 else f"an integer of {value.bit_length()} bits"
    if isinstance(value, str):
        return repr(value[:40] + ("…" if len(value) > 40 else ""))
    if isinstance(value, float):
        return repr(value)
    return f"a {type(value).__name__}"


def _as_int_tuple(value: object, what: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or len(value) > _MAX_DIMS:
        raise TensorReadError(f"data.pkl: tensor {what} is not a tuple of at most {_MAX_DIMS} ints")
    out = []
    for v in value:
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise TensorReadError(f"data.pkl: tensor {what} holds {_show(v)}, not a non-negative int")
        out.append(v)
    return tuple(out)


def _make_spec(storage: object, offset: object, size: object, stride: object,
               dtype: str | None, metadata: object) -> _TensorSpec:
    if not isinstance(storage, _StorageRef):
        raise TensorReadError("data.pkl: tensor is not built on a storage record")
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise TensorReadError(f"data.pkl: bad storage offset {_show(offset)}")
    size_t = _as_int_tuple(size, "size")
    stride_t = _as_int_tuple(stride, "stride")
    if len(size_t) != len(stride_t):
        raise TensorReadError("data.pkl: tensor size and stride differ in length")
    if dtype is None:
        if storage.dtype is None:
            raise TensorReadError("data.pkl: untyped storage without a dtype")
        dtype = storage.dtype
    meta: dict[str, Any] = {}
    if metadata:
        if not isinstance(metadata, dict):
            raise TensorReadError("data.pkl: tensor metadata is not a dict")
        meta = dict(metadata)
    return _TensorSpec(storage, offset, size_t, stride_t, dtype, meta)


def _rebuild_tensor_v2(storage: object, storage_offset: object, size: object, stride: object,
                       requires_grad: object = False, backward_hooks: object = None,
                       metadata: object = None) -> _TensorSpec:
    """Stand-in for ``torch._utils._rebuild_tensor_v2``."""
    return _make_spec(storage, storage_offset, size, stride, None, metadata)


def _rebuild_tensor_v3(storage: object, storage_offset: object, size: object, stride: object,
                       requires_grad: object, backward_hooks: object, dtype: object,
                       metadata: object = None) -> _TensorSpec:
    """Stand-in for ``torch._utils._rebuild_tensor_v3`` (untyped storage + explicit dtype)."""
    if not isinstance(dtype, _TorchDtype):
        raise TensorReadError(f"data.pkl: _rebuild_tensor_v3 dtype is {_show(dtype)}")
    return _make_spec(storage, storage_offset, size, stride, dtype.name, metadata)


def _rebuild_parameter(data: object, requires_grad: object = False,
                       backward_hooks: object = None, state: object = None) -> object:
    """Stand-in for ``torch._utils._rebuild_parameter[_with_state]``: the data tensor itself."""
    return data


@dataclass(frozen=True)
class _TensorClass(_NoBuild):
    """Stand-in for ``torch.Tensor`` / ``torch.nn.parameter.Parameter`` (used as a type tag only)."""

    name: str


def _rebuild_from_type_v2(func: object, new_type: object, args: object, state: object) -> object:
    """Stand-in for ``torch._tensor._rebuild_from_type_v2``: call the (stand-in) rebuild function."""
    if not isinstance(func, _Callable) or func._fn not in (
            _rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_parameter):
        raise TensorReadError("data.pkl: _rebuild_from_type_v2 with an unexpected function")
    if not isinstance(new_type, _TensorClass) or not isinstance(args, tuple):
        raise TensorReadError("data.pkl: _rebuild_from_type_v2 with an unexpected type")
    return func(*args)


def _ordered_dict(*args: object) -> collections.OrderedDict:
    """Stand-in for ``collections.OrderedDict`` (backward hooks / metadata)."""
    if args:
        raise TensorReadError("data.pkl: OrderedDict called with arguments")
    return collections.OrderedDict()


def _allowed_globals() -> dict[tuple[str, str], object]:
    table: dict[tuple[str, str], object] = {
        ("torch._utils", "_rebuild_tensor_v2"): _Callable(_rebuild_tensor_v2),
        ("torch._utils", "_rebuild_tensor_v3"): _Callable(_rebuild_tensor_v3),
        ("torch._utils", "_rebuild_parameter"): _Callable(_rebuild_parameter),
        ("torch._utils", "_rebuild_parameter_with_state"): _Callable(_rebuild_parameter),
        ("torch._tensor", "_rebuild_from_type_v2"): _Callable(_rebuild_from_type_v2),
        ("torch", "Tensor"): _TensorClass("Tensor"),
        ("torch._tensor", "Tensor"): _TensorClass("Tensor"),
        ("torch.nn.parameter", "Parameter"): _TensorClass("Parameter"),
        ("collections", "OrderedDict"): _Callable(_ordered_dict),
        ("torch.storage", "UntypedStorage"): _StorageType("UntypedStorage", None),
        ("torch", "UntypedStorage"): _StorageType("UntypedStorage", None),
    }
    for cls, dt in STORAGE_DTYPES.items():
        table[("torch", cls)] = _StorageType(cls, dt)
    for name in TORCH_DTYPES:
        table[("torch", name)] = _TorchDtype(name)
    for alias, name in _DTYPE_ALIASES.items():
        table[("torch", alias)] = _TorchDtype(name)
    return table


_ALLOWED = _allowed_globals()


class _SafeUnpickler(pickle.Unpickler):
    """Unpickler that resolves only allow-listed globals, to inert local stand-ins."""

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.storages: dict[str, _StorageRef] = {}

    def find_class(self, module: str, name: str) -> Any:
        obj = _ALLOWED.get((module, name))
        if obj is None:
            raise UnsafePickleError(
                f"data.pkl references global '{module}.{name}', which is not on the allow-list;"
                " refusing to load (nothing was imported or executed)"
            )
        return obj

    def persistent_load(self, pid: Any) -> _StorageRef:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise TensorReadError(f"data.pkl: unsupported persistent id {_show(pid)}")
        _, stype, key, location, numel = pid
        if not isinstance(stype, _StorageType):
            raise TensorReadError("data.pkl: persistent id names no storage class")
        if not isinstance(key, str) or not key or "/" in key or key.startswith("."):
            raise TensorReadError(f"data.pkl: bad storage key {_show(key)}")
        if not isinstance(numel, int) or isinstance(numel, bool) or numel < 0:
            raise TensorReadError(f"data.pkl: bad storage size {_show(numel)}")
        ref = _StorageRef(key, stype.dtype, numel, location if isinstance(location, str) else _show(location))
        old = self.storages.get(key)
        if old is not None and old != ref:
            raise TensorReadError(f"data.pkl: storage {key} described twice differently")
        self.storages[key] = ref
        return ref


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


# --------------------------------------------------------------------------- zip access
class _Member(NamedTuple):
    """One central-directory entry."""

    name: str
    flags: int
    method: int
    crc: int
    csize: int
    usize: int
    header_offset: int


_EOCD = struct.Struct("<IHHHHIIH")
_EOCD_MAGIC = 0x06054B50
_EOCD_SIG = b"PK\x05\x06"
_Z64_LOCATOR = struct.Struct("<IIQI")
_Z64_LOCATOR_MAGIC = 0x07064B50
_Z64_EOCD = struct.Struct("<IQHHIIQQQQ")
_Z64_EOCD_MAGIC = 0x06064B50
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_CENTRAL_MAGIC = 0x02014B50
_SMALL_FILE = 1 << 20  # files up to this size are read with one read()
_MAX_MEMBERS = 4096


class _Archive:
    """Minimal, bounds-checked reader of the zip members of one torch file.

    Parses the central directory itself (zipfile's generality costs ~100 us a file, which
    matters for dumps of thousands of small tensors); small files are read in one go.
    """

    def __init__(self, fd: int, max_bytes: int | None, whole: np.ndarray | None = None) -> None:
        self.fd = fd
        self.max_bytes = max_bytes
        #: the whole file (``uint8``) when it was read in one go; storages are then views of it
        self.whole = whole
        self.buf: memoryview | None = None
        if whole is not None:
            self.file_size = whole.size
            self.buf = memoryview(whole)
        else:
            self.file_size = os.fstat(self.fd).st_size
            if self.file_size <= _SMALL_FILE:
                self.buf = memoryview(self._pread(0, self.file_size))
        self.members = self._central_directory()
        self.prefix = self._find_prefix()

    # -- raw access
    def _pread(self, offset: int, n: int) -> bytes:
        if offset < 0 or n < 0 or offset + n > self.file_size:
            raise TensorReadError("zip structure points past the end of the file (truncated file)")
        if self.buf is not None:
            return bytes(self.buf[offset:offset + n])
        parts = []
        while n > 0:
            chunk = os.pread(self.fd, min(n, 1 << 30), offset)
            if not chunk:
                raise TensorReadError("short read (truncated file)")
            parts.append(chunk)
            offset += len(chunk)
            n -= len(chunk)
        return b"".join(parts)

    def _pread_into(self, offset: int, view: memoryview) -> None:
        n = view.nbytes
        if offset < 0 or offset + n > self.file_size:
            raise TensorReadError("zip member runs past the end of the file (truncated file)")
        if self.buf is not None:
            view[:] = self.buf[offset:offset + n]
            return
        done = 0
        while done < n:
            got = os.preadv(self.fd, [view[done:done + (1 << 30)]], offset + done)
            if got <= 0:
                raise TensorReadError("short read (truncated file)")
            done += got

    # -- directory
    def _central_directory(self) -> dict[str, tuple[str, int, int, int, int, int, int]]:
        size = self.file_size
        if size < _EOCD.size:
            raise TensorReadError("file too short to be a zip archive (truncated file)")
        # torch writes no zip comment: the end record is the last 22 bytes, which is what the
        # search of the last 64 KiB below would find when no later signature overlaps them
        tail = self._pread(size - _EOCD.size, _EOCD.size)
        pos = 0 if tail.startswith(_EOCD_SIG) and tail.find(_EOCD_SIG, 1) < 0 else -1
        tail_len = _EOCD.size
        if pos < 0:
            tail_len = min(size, _EOCD.size + 65535)
            tail = self._pread(size - tail_len, tail_len)
            pos = tail.rfind(_EOCD_SIG)
        if pos < 0 or pos + _EOCD.size > len(tail):
            raise TensorReadError("zip end-of-central-directory record not found (truncated or corrupt file)")
        eocd_at = size - tail_len + pos
        _, disk, cd_disk, _, count, cd_size, cd_offset, _ = _EOCD.unpack_from(tail, pos)
        if disk != 0 or cd_disk != 0:
            raise TensorReadError("multi-disk zip archives are not supported")
        if count == 0xFFFF or cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF:
            loc_at = eocd_at - _Z64_LOCATOR.size
            magic, _, z64_at, _ = _Z64_LOCATOR.unpack(self._pread(loc_at, _Z64_LOCATOR.size))
            if magic != _Z64_LOCATOR_MAGIC:
                raise TensorReadError("zip64 locator missing (corrupt zip)")
            rec = _Z64_EOCD.unpack(self._pread(z64_at, _Z64_EOCD.size))
            if rec[0] != _Z64_EOCD_MAGIC:
                raise TensorReadError("zip64 end record missing (corrupt zip)")
            count, cd_size, cd_offset = rec[7], rec[8], rec[9]
            eocd_at = z64_at
        if count > _MAX_MEMBERS:
            raise TensorReadError(f"zip archive lists {count} members; a tensor file has a handful")
        if cd_offset + cd_size > eocd_at:
            raise TensorReadError("zip central directory overlaps its end record (truncated or corrupt file)")
        cd = self._pread(cd_offset, cd_size)
        members: dict[str, tuple[str, int, int, int, int, int, int]] = {}
        at = 0
        end = len(cd)
        head, unpack = _CENTRAL.size, _CENTRAL.unpack_from
        for _ in range(count):
            if at + head > end:
                raise TensorReadError("zip central directory is cut short (corrupt zip)")
            (magic, _, _, flags, method, _, _, crc, csize, usize, nlen, elen, clen,
             _, _, _, offset) = unpack(cd, at)
            if magic != _CENTRAL_MAGIC:
                raise TensorReadError("bad zip central directory entry (corrupt zip)")
            name_at = at + head
            at = name_at + nlen + elen + clen
            if at > end:
                raise TensorReadError("zip central directory is cut short (corrupt zip)")
            if csize == 0xFFFFFFFF or usize == 0xFFFFFFFF or offset == 0xFFFFFFFF:
                extra = cd[name_at + nlen: name_at + nlen + elen]
                usize, csize, offset = _zip64_extra(extra, usize, csize, offset)
            name_b = cd[name_at: name_at + nlen]
            if name_b.isascii():  # what torch writes; cp437 and utf-8 agree on ASCII
                name = name_b.decode("ascii")
            else:
                name = name_b.decode("utf-8" if flags & 0x800 else "cp437", errors="replace")
            members[name] = (name, flags, method, crc, csize, usize, offset)  # a _Member when asked for
        return members

    def _find_prefix(self) -> str:
        names = [n for n in self.members if n.endswith("/data.pkl") and n.count("/") == 1]
        if not names:
            if "data.pkl" in self.members:
                return ""
            raise TensorReadError("zip archive has no <name>/data.pkl: not a torch.save file")
        if len(names) > 1:
            first = next(iter(self.members)).split("/", 1)[0] + "/data.pkl"
            if first not in names:
                raise TensorReadError("zip archive holds several data.pkl records")
            return first[: -len("data.pkl")]
        return names[0][: -len("data.pkl")]

    def info(self, name: str) -> _Member | None:
        entry = self.members.get(self.prefix + name)
        return None if entry is None else _Member._make(entry)

    # -- members
    def _check_limits(self, m: _Member, wanted: int, limit: int | None) -> None:
        if m.flags & 0x1:
            raise TensorReadError(f"zip member {m.name} is encrypted")
        if limit is not None and m.usize > limit:
            raise TensorReadError(
                f"zip member {m.name} declares {m.usize} bytes, over the limit of {limit}"
                " (refused before reading: possible zip bomb)"
            )
        if m.method == 0:
            if m.csize != m.usize:
                raise TensorReadError(f"zip member {m.name}: stored sizes disagree (corrupt zip)")
        elif m.method == 8:
            if m.usize > max(64 << 20, 200 * max(m.csize, 1)):
                raise TensorReadError(
                    f"zip member {m.name} expands {m.csize} -> {m.usize} bytes"
                    " (refused before reading: possible zip bomb)"
                )
        else:
            raise TensorReadError(f"zip member {m.name} uses unsupported compression method {m.method}")
        if m.usize < wanted:
            raise TensorReadError(
                f"zip member {m.name} holds {m.usize} bytes but the tensor needs {wanted}"
                " (truncated storage)"
            )

    def _data_offset(self, m: _Member) -> int:
        head = self._pread(m.header_offset, _LOCAL_HEADER.size)
        magic, _, _, _, _, _, _, _, _, name_len, extra_len = _LOCAL_HEADER.unpack(head)
        if magic != _LOCAL_MAGIC:
            raise TensorReadError(f"zip member {m.name}: bad local header (corrupt zip)")
        start = m.header_offset + _LOCAL_HEADER.size + name_len + extra_len
        if start + m.csize > self.file_size:
            raise TensorReadError(f"zip member {m.name} runs past the end of the file (truncated file)")
        return start

    def _inflate(self, m: _Member, start: int) -> bytes:
        comp = self._pread(start, m.csize)
        try:
            d = zlib.decompressobj(-15)
            data = d.decompress(comp, m.usize + 1)
        except zlib.error as exc:
            raise TensorReadError(f"zip member {m.name}: bad deflate data ({exc})") from exc
        if len(data) != m.usize:
            raise TensorReadError(f"zip member {m.name}: inflates to {len(data)} bytes, not {m.usize}")
        return data

    def read_small(self, name: str, limit: int) -> bytes:
        m = self.info(name)
        if m is None:
            raise TensorReadError(f"zip archive lacks {self.prefix}{name}")
        lim = limit if self.max_bytes is None else min(limit, self.max_bytes)
        self._check_limits(m, 0, lim)
        start = self._data_offset(m)
        data = self._pread(start, m.csize) if m.method == 0 else self._inflate(m, start)
        if zlib.crc32(data) != m.crc:
            raise TensorReadError(f"zip member {m.name}: CRC mismatch (corrupt data)")
        return data

    def map_range(self, name: str, start: int, nbytes: int, dtype: np.dtype) -> np.ndarray | None:
        """A copy-on-write memory map of bytes ``[start, start + nbytes)`` of a stored member,
        as a writable 1-D ``dtype`` array; None when the member cannot be mapped that way."""
        m = self.info(name)
        if m is None or m.method != 0 or self.buf is not None:
            return None
        self._check_limits(m, start + nbytes, self.max_bytes)
        file_at = self._data_offset(m) + start
        if file_at % dtype.alignment:
            return None
        base = file_at - file_at % mmap.ALLOCATIONGRANULARITY
        try:
            mm = mmap.mmap(self.fd, file_at - base + nbytes, access=mmap.ACCESS_COPY, offset=base)
        except (OSError, ValueError, OverflowError):
            return None
        return np.frombuffer(mm, dtype=dtype, count=nbytes // dtype.itemsize, offset=file_at - base)

    def view_range(self, name: str, start: int, nbytes: int, dtype: np.dtype) -> np.ndarray | None:
        """Bytes ``[start, start + nbytes)`` of a stored member as a 1-D ``dtype`` view of the
        whole-file buffer (no copy); None when the file was not read whole, the member is
        compressed or missing, or the bytes are not aligned for ``dtype``."""
        m = self.info(name)
        if m is None or m.method != 0 or self.whole is None:
            return None
        self._check_limits(m, start + nbytes, self.max_bytes)
        file_at = self._data_offset(m) + start
        if file_at % dtype.alignment:
            return None
        return self.whole[file_at:file_at + nbytes].view(dtype)

    def read_into(self, name: str, start: int, out: np.ndarray, *, verify_crc: bool) -> None:
        """Fill ``out`` (contiguous) with the member's bytes ``[start, start + out.nbytes)``."""
        m = self.info(name)
        if m is None:
            raise TensorReadError(f"zip archive lacks the storage record {self.prefix}{name}")
        need = start + out.nbytes
        self._check_limits(m, need, self.max_bytes)
        view = memoryview(out).cast("B")
        base = self._data_offset(m)
        if m.method == 0:
            if verify_crc:
                if self.buf is not None:
                    whole = self.buf[base:base + m.usize]
                else:
                    whole = memoryview(self._pread(base, m.usize))
                if zlib.crc32(whole) != m.crc:
                    raise TensorReadError(f"zip member {m.name}: CRC mismatch (corrupt data)")
                view[:] = whole[start:need]
            else:
                self._pread_into(base + start, view)
            return
        data = self._inflate(m, base)
        if zlib.crc32(data) != m.crc:
            raise TensorReadError(f"zip member {m.name}: CRC mismatch (corrupt data)")
        view[:] = memoryview(data)[start:need]


def _zip64_extra(extra: bytes, usize: int, csize: int, offset: int) -> tuple[int, int, int]:
    at = 0
    while at + 4 <= len(extra):
        tag, ln = struct.unpack_from("<HH", extra, at)
        body = extra[at + 4: at + 4 + ln]
        if tag == 1:
            vals = [int.from_bytes(body[i:i + 8], "little") for i in range(0, len(body) - 7, 8)]
            it = iter(vals)
            try:
                if usize == 0xFFFFFFFF:
                    usize = next(it)
                if csize == 0xFFFFFFFF:
                    csize = next(it)
                if offset == 0xFFFFFFFF:
                    offset = next(it)
            except StopIteration:
                raise TensorReadError("zip64 extra field too short (corrupt zip)") from None
            return usize, csize, offset
        at += 4 + ln
    raise TensorReadError("zip64 sizes without a zip64 extra field (corrupt zip)")


# --------------------------------------------------------------------------- main entry
def _is_c_contiguous(size: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    expect = 1
    for s, st in zip(reversed(size), reversed(stride), strict=True):
        if s != 1 and st != expect:
            return False
        expect *= s
    return True


_MEMO_LIMIT = 1 << 16  # memo slots a tensor pickle may name (torch uses a handful)
#: objects a value of a tensor pickle may expand to (shared parts counted each time), and how deep it may nest:
#: torch writes a few dozen objects, three levels deep
_EXPANDED_LIMIT = 100_000
_DEPTH_LIMIT = 64


def _opcode_table() -> dict[int, tuple[int, int]]:
    """opcode byte -> (kind, size): 0 fixed ``size`` bytes, 1 a ``size``-byte length then data, 2/3 one/two lines."""
    import pickletools

    table: dict[int, tuple[int, int]] = {}
    prefix = {-2: 1, -3: 4, -4: 4, -5: 8}
    for op in pickletools.opcodes:
        n = op.arg.n if op.arg is not None else 0
        code = ord(op.code)
        if op.name in ("GLOBAL", "INST"):
            table[code] = (3, 0)
        elif n == -1:  # UP_TO_NEWLINE
            table[code] = (2, 0)
        elif n < -1:
            table[code] = (1, prefix[n])
        else:
            table[code] = (0, n)
    return table


def _effect_table() -> dict[int, str]:
    """opcode byte -> what it does to the unpickler's stack, in the terms :func:`_check_pickle` models."""
    import pickletools

    groups = {
        "new": "EMPTY_LIST EMPTY_DICT EMPTY_TUPLE EMPTY_SET",
        "mark": "MARK",
        "from_mark": "LIST TUPLE DICT FROZENSET OBJ INST",
        "tuple1": "TUPLE1", "tuple2": "TUPLE2", "tuple3": "TUPLE3",
        "append": "APPEND", "setitem": "SETITEM", "build": "BUILD",
        "extend": "APPENDS SETITEMS ADDITEMS",
        "call2": "REDUCE NEWOBJ STACK_GLOBAL", "call3": "NEWOBJ_EX", "call1": "BINPERSID READONLY_BUFFER",
        "pop": "POP", "pop_mark": "POP_MARK", "dup": "DUP",
        "put": "PUT BINPUT LONG_BINPUT", "memoize": "MEMOIZE", "get": "GET BINGET LONG_BINGET",
        "none": "PROTO FRAME", "stop": "STOP",
    }
    by_name = {name: group for group, names in groups.items() for name in names.split()}
    # everything else pushes one atom: numbers, strings, bytes, None, bools, GLOBAL, PERSID, EXT*, NEXT_BUFFER
    return {ord(op.code): by_name.get(op.name, "atom") for op in pickletools.opcodes}


_OPCODES = _opcode_table()
_EFFECTS = _effect_table()


class _BadPickle(Exception):
    """The opcode stream is not one the unpickler would accept (checked before it runs)."""


def _check_pickle(pkl: bytes) -> None:
    """Refuse a pickle whose values would cost unbounded work or memory once unpickled, before it runs.

    Two bombs fit in a few hundred bytes. ``LONG_BINPUT 2**32-1`` makes ``pickle.Unpickler`` grow
    its memo array to that many slots (tens of GB, zeroed). And the memo lets a value hold the same
    part many times: forty levels of ``[x, x]`` are 2**40 objects to ``repr`` or ``hash``, which the
    unpickler does itself for a dict key (no Ctrl-C gets through). The opcodes are walked once: each
    container's parts are recorded, then every value's expanded size (shared parts counted each
    time, cycles once) and depth are bounded, so formatting or hashing any value later is cheap.
    Pickles already seen are remembered, so a dump of same-shaped tensors pays this once.
    """
    if pkl in _SAFE_PICKLES:
        return
    try:
        parts = _walk_pickle(pkl)
    except _BadPickle as exc:
        raise TensorReadError(f"data.pkl is not a valid tensor pickle: {exc}") from None
    _bound_values(parts)
    _SAFE_PICKLES.remember(pkl, None)


def _walk_pickle(pkl: bytes) -> list[list[int]]:
    """The parts of every container the pickle builds (object ids; ``-1`` stands for any atom)."""
    parts: list[list[int]] = []
    stack: list[int] = []
    marks: list[int] = []
    memo: dict[int, int] = {}
    at, end = 0, len(pkl)
    try:
        while at < end:
            code = pkl[at]
            at += 1
            spec = _OPCODES.get(code)
            if spec is None:
                raise _BadPickle(f"unknown opcode {code:#04x}")
            kind, size = spec
            index = -1
            if kind == 0:
                if code in (0x71, 0x68):  # BINPUT, BINGET
                    index = pkl[at]
                elif code in (0x72, 0x6A):  # LONG_BINPUT, LONG_BINGET
                    index = int.from_bytes(pkl[at : at + 4], "little")
                at += size
            elif kind == 1:
                length = int.from_bytes(pkl[at : at + size], "little", signed=size == 4)
                if length < 0:
                    raise _BadPickle("negative length")
                at += size + length
            else:
                line_at = at
                for _ in range(kind - 1):  # one line, or two for GLOBAL/INST
                    nl = pkl.find(b"\n", at)
                    if nl < 0:
                        raise _BadPickle("unterminated line")
                    at = nl + 1
                if code in (0x70, 0x67):  # PUT, GET <decimal>
                    try:
                        index = int(pkl[line_at : at - 1])
                    except ValueError:
                        raise _BadPickle("bad memo index") from None
            if at > end:
                raise _BadPickle("truncated")
            effect = _EFFECTS[code]
            if effect == "atom":
                stack.append(-1)
            elif effect == "new":
                parts.append([])
                stack.append(len(parts) - 1)
            elif effect == "mark":
                marks.append(len(stack))
            elif effect == "from_mark":
                m = marks.pop()
                parts.append(stack[m:])
                del stack[m:]
                stack.append(len(parts) - 1)
            elif effect in ("tuple1", "tuple2", "tuple3", "call1", "call2", "call3"):
                n = int(effect[-1])
                if len(stack) < n:
                    raise _BadPickle("stack underflow")
                parts.append(stack[-n:])
                del stack[-n:]
                stack.append(len(parts) - 1)
            elif effect in ("append", "setitem", "build"):
                n = 2 if effect == "setitem" else 1
                if len(stack) <= n:
                    raise _BadPickle("stack underflow")
                _grow(parts, stack[-n - 1], stack[-n:])
                del stack[-n:]
            elif effect == "extend":
                m = marks.pop()
                if m < 1:
                    raise _BadPickle("stack underflow")
                _grow(parts, stack[m - 1], stack[m:])
                del stack[m:]
            elif effect == "pop":
                if stack:
                    stack.pop()
                else:
                    marks.pop()
            elif effect == "pop_mark":
                del stack[marks.pop():]
            elif effect == "dup":
                stack.append(stack[-1])
            elif effect in ("put", "memoize"):
                if effect == "memoize":
                    index = len(memo)
                if index > _MEMO_LIMIT:
                    raise TensorReadError("data.pkl stores a memo slot past 65536; refused (a tensor pickle uses a few)")
                memo[index] = stack[-1]
            elif effect == "get":
                stack.append(memo[index])
            elif effect == "stop":
                break
    except (IndexError, KeyError):
        raise _BadPickle("stack underflow or unknown memo slot") from None
    return parts


def _grow(parts: list[list[int]], obj: int, items: list[int]) -> None:
    if obj < 0:
        raise _BadPickle("adds items to an object that holds none")
    parts[obj].extend(items)


def _bound_values(parts: list[list[int]]) -> None:
    """Raise when a value would expand past :data:`_EXPANDED_LIMIT` objects or nest past :data:`_DEPTH_LIMIT`."""
    size = [0] * len(parts)
    depth = [0] * len(parts)
    state = bytearray(len(parts))  # 0 not seen, 1 on the path (a cycle back to it counts once), 2 done
    for root in range(len(parts)):
        if state[root]:
            continue
        path = [(root, 0)]
        state[root] = 1
        while path:
            obj, k = path[-1]
            kids = parts[obj]
            if k < len(kids):
                path[-1] = (obj, k + 1)
                kid = kids[k]
                if kid >= 0 and not state[kid]:
                    state[kid] = 1
                    path.append((kid, 0))
                    if len(path) > _DEPTH_LIMIT:
                        raise TensorReadError(f"data.pkl nests values more than {_DEPTH_LIMIT} levels deep;"
                                              " refused (a tensor pickle nests three)")
                continue
            total, deep = 1, 0
            for kid in kids:
                if kid >= 0 and state[kid] == 2:
                    total += size[kid]
                    deep = max(deep, depth[kid])
                else:
                    total += 1
            size[obj], depth[obj] = min(total, _EXPANDED_LIMIT + 1), deep + 1
            if total > _EXPANDED_LIMIT or deep >= _DEPTH_LIMIT:
                raise TensorReadError(f"data.pkl holds a value that expands to more than {_EXPANDED_LIMIT}"
                                      " objects or nests too deep; refused (a tensor pickle holds a few dozen)")
            state[obj] = 2
            path.pop()


#: bytes the two caches below may hold in keys (and in what the keys describe): entries are counted by
#: size, not number, so thousands of distinct large data.pkl members cannot fill the memory
_CACHE_BYTES = 8 << 20
#: a data.pkl larger than this is not cached at all (torch writes a few hundred bytes)
_CACHE_ITEM_MAX = 64 << 10


class _BytesCache(dict):
    """A dict keyed by data.pkl bytes that stops growing at :data:`_CACHE_BYTES` of keys."""

    used = 0

    def remember(self, key: bytes, value: Any) -> None:
        if len(key) > _CACHE_ITEM_MAX or self.used + len(key) > _CACHE_BYTES or key in self:
            return
        self[key] = value
        self.used += len(key)

    def clear(self) -> None:
        super().clear()
        self.used = 0


_SAFE_PICKLES = _BytesCache()


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
