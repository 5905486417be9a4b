"""Read one ``.npy`` array safely: no pickles, sizes checked before reading. The one ``.npy`` reader.

``np.load(allow_pickle=False)`` already refuses object arrays, but it trusts the header's shape: a 100-byte file
that declares ``(10**12,)`` float64 elements makes it try to allocate 8 TB before noticing the file is short.
:func:`read_npy` opens only regular files (a FIFO or device is refused without blocking), parses the header itself
(``ast.literal_eval`` of a bounded string, as numpy does), refuses ``.npz`` archives and anything but plain numbers
(object, structured, text and time dtypes), compares the declared size with the bytes actually present (a truncated
file fails before anything is allocated) and applies the byte caps it is given. The data is read into the tensor
stage's reusable arena when one is given.

Used by the MindSpore plugin's tensor reader (tensor mode) and by the kernel-dump plugin.
"""

from __future__ import annotations

import ast
import os
import stat
import struct
import warnings
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

from ..errors import TensorReadError

if TYPE_CHECKING:
    from .arena import Arena

__all__ = ["NUMERIC_KINDS", "read_npy"]

_MAGIC = b"\x93NUMPY"
_MAX_HEADER = 10_000
_MAX_DIMS = 64
#: numpy dtype kinds a dump may hold: bool, signed/unsigned int, float, complex.
NUMERIC_KINDS = frozenset("biufc")


def _fail(path: str, problem: str) -> TensorReadError:
    return TensorReadError(problem, path=path)


def _header(fh: Any, path: str) -> tuple[np.dtype, tuple[int, ...], bool, int]:
    """(dtype, shape, fortran_order, header length) of an open .npy file."""
    head = fh.read(8)
    if head[:2] == b"PK":
        raise _fail(path, "a zip archive (.npz), not a single .npy array")
    if len(head) < 8 or head[:6] != _MAGIC:
        raise _fail(path, "not a .npy file (bad magic; truncated or another format)")
    major, minor = head[6], head[7]
    if (major, minor) == (1, 0):
        raw_len = fh.read(2)
        if len(raw_len) < 2:
            raise _fail(path, "truncated .npy header")
        hlen, encoding, start = struct.unpack("<H", raw_len)[0], "latin1", 10
    elif (major, minor) in ((2, 0), (3, 0)):
        raw_len = fh.read(4)
        if len(raw_len) < 4:
            raise _fail(path, "truncated .npy header")
        hlen, encoding, start = struct.unpack("<I", raw_len)[0], ("latin1" if major == 2 else "utf8"), 12
    else:
        raise _fail(path, f"unsupported .npy format version {major}.{minor}")
    if hlen > _MAX_HEADER:
        raise _fail(path, f".npy header of {hlen} bytes is over the {_MAX_HEADER}-byte limit")
    raw = fh.read(hlen)
    if len(raw) < hlen:
        raise _fail(path, "truncated .npy header")
    if b"\\" in raw:  # numpy never writes escapes; literal_eval would warn about them
        raise _fail(path, "malformed .npy header (escape sequences)")
    try:
        meta = ast.literal_eval(raw.decode(encoding))
    except (SyntaxError, ValueError, UnicodeDecodeError, MemoryError, RecursionError, TypeError):
        raise _fail(path, "malformed .npy header") from None
    if not isinstance(meta, dict) or set(meta) != {"descr", "fortran_order", "shape"}:
        raise _fail(path, "malformed .npy header (expected descr, fortran_order and shape)")
    shape, fortran = meta["shape"], meta["fortran_order"]
    if (
        not isinstance(shape, tuple)
        or len(shape) > _MAX_DIMS
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape)
    ):
        raise _fail(path, f".npy header shape {str(shape)[:80]} is not a tuple of non-negative integers")
    if not isinstance(fortran, bool):
        raise _fail(path, ".npy header fortran_order is not a boolean")
    try:
        with warnings.catch_warnings():  # a deprecated alias ('a') warns; what it names is refused below anyway
            warnings.simplefilter("ignore")
            dtype = np.lib.format.descr_to_dtype(meta["descr"])
    except Exception:  # numpy's dtype parser raises TypeError, ValueError, SyntaxError, KeyError…
        raise _fail(path, f".npy header names an unknown dtype {str(meta['descr'])[:80]}") from None
    if dtype.hasobject:
        raise _fail(path, "object arrays (pickled Python objects) are refused; nothing was unpickled")
    if dtype.kind not in NUMERIC_KINDS or dtype.fields is not None:
        raise _fail(path, f"the file holds {dtype} data, not numbers")
    return dtype, shape, fortran, start + hlen


def _open_regular(path: str) -> tuple[BinaryIO, int]:
    """The file opened for reading and its size; only a regular file is opened (no FIFO blocks us)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise _fail(path, "tensor file does not exist") from None
    except OSError as exc:
        raise _fail(path, f"cannot open tensor file ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _fail(path, "tensor path is not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb"), info.st_size
    except BaseException:
        os.close(fd)
        raise


def read_npy(
    path: str | os.PathLike[str],
    *,
    max_bytes: int | None = None,
    max_file_bytes: int | None = None,
    arena: Arena | None = None,
) -> np.ndarray:
    """Load the array in a ``.npy`` file; :class:`TensorReadError` for anything unsafe or broken.

    Args:
        path: the ``.npy`` file.
        max_bytes: refuse arrays whose data would take more than this many bytes.
        max_file_bytes: refuse files of this many bytes or more (msprobe's 10 GiB rule for MindSpore tensors).
        arena: read the data into this reusable buffer (:mod:`msprobe_core.files.arena`; the array is
            valid until the arena is reset) instead of fresh memory.

    Returns:
        The array, C- or Fortran-ordered as stored, byte order as stored: what ``np.load`` returns.
    """
    spath = os.fspath(path)
    fh, size = _open_regular(spath)
    with fh:
        try:
            if max_file_bytes is not None and size >= max_file_bytes:
                raise _fail(spath, f"tensor file is {size} bytes, over the {max_file_bytes}-byte limit")
            dtype, shape, fortran, data_at = _header(fh, spath)
            count = 1
            for s in shape:
                count *= s
            nbytes = count * dtype.itemsize
            if max_bytes is not None and nbytes > max_bytes:
                raise _fail(spath, f"array of {nbytes} bytes is over the tensor limit of {max_bytes} bytes")
            present = size - data_at
            if present < nbytes:
                raise _fail(
                    spath,
                    f"header declares shape {list(shape)} of {dtype} ({nbytes} bytes) but the file holds"
                    f" {max(present, 0)} (truncated or lying header)",
                )
            if count == 0 or dtype.itemsize == 0:
                return np.empty(shape, dtype=dtype, order="F" if fortran else "C")
            if arena is not None:
                flat = _read_into(fh, arena, nbytes, spath).view(dtype)
            else:
                flat = np.fromfile(fh, dtype=dtype, count=count)
        except TensorReadError:
            raise
        except OSError as exc:
            raise _fail(spath, f"cannot read tensor file ({exc.strerror or exc})") from None
        except (ValueError, MemoryError, OverflowError) as exc:
            raise _fail(spath, f"cannot read .npy data ({type(exc).__name__}: {exc})") from None
    if flat.size != count:
        raise _fail(spath, f"short read: {flat.size} of {count} elements (truncated file)")
    if fortran:
        return flat.reshape(shape[::-1]).transpose()
    return flat.reshape(shape)


def _read_into(fh: BinaryIO, arena: Arena, nbytes: int, path: str) -> np.ndarray:
    """The next ``nbytes`` of ``fh`` in the arena's buffer (no fresh allocation per tensor)."""
    buf = arena.take(nbytes)
    view = memoryview(buf)
    done = 0
    while done < nbytes:
        got = fh.readinto(view[done:])
        if not got:
            raise _fail(path, f"cannot read tensor file (short read: {done} of {nbytes} bytes)")
        done += got
    return buf
