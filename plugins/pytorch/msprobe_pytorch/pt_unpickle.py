"""Unpickling a tensor's ``data.pkl`` with inert stand-ins: nothing is imported, no pickled code runs.

:class:`_SafeUnpickler`'s ``find_class`` hands out local stand-ins for an allow-list of globals
(``torch._utils._rebuild_tensor_v2`` and friends, ``torch.<X>Storage`` classes, ``torch.<dtype>`` names,
``collections.OrderedDict``) and raises :class:`~msprobe_core.plugin.UnsafePickleError` for anything else.
Part of :mod:`.pt_reader`.
"""

from __future__ import annotations

import collections
import io
import pickle
from dataclasses import dataclass, field
from typing import Any

from msprobe_core.plugin import TensorReadError, UnsafePickleError

from .pt_format import _DTYPE_ALIASES, _ITEMSIZE, STORAGE_DTYPES, TORCH_DTYPES

_MAX_DIMS = 64




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

