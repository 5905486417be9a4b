"""Reading MindSpore ``.npy`` tensor files safely (no pickles, no mindspore).

msprobe reads a MindSpore tensor with ``np.load(path, allow_pickle=False)``.
:func:`read_npy` does the same after checking, from the header alone, that the
file is a regular file below the size limit, holds a plain numeric array and is
long enough for the array its header announces, so a truncated or hostile file
fails with :class:`msprobe_core.errors.TensorReadError` (its row becomes
``unsupported``) instead of an odd numpy error or a huge allocation.
"""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path
from typing import BinaryIO

import numpy as np
from numpy.lib import format as npy_format

from msprobe_core.arena import Arena, current_arena
from msprobe_core.errors import TensorReadError

#: msprobe refuses tensor files of 10 GiB or more.
MAX_NPY_BYTES = 10 * 1024**3
#: numpy dtype kinds a dump may hold: bool, signed/unsigned int, float, complex.
NUMERIC_KINDS = frozenset("biufc")


def _header(fh: BinaryIO, path: Path) -> tuple[tuple[int, ...], np.dtype, int, bool]:
    """(shape, dtype, header length, fortran order) of an open ``.npy`` file."""
    try:
        version = npy_format.read_magic(fh)
    except ValueError as exc:
        raise TensorReadError(f"not a .npy file ({exc})", path=path) from None
    try:
        if version == (1, 0):
            shape, fortran, dtype = npy_format.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, fortran, dtype = npy_format.read_array_header_2_0(fh)
        else:
            raise TensorReadError(f"unsupported .npy format version {version[0]}.{version[1]}", path=path)
    except (ValueError, SyntaxError) as exc:
        raise TensorReadError(f"malformed .npy header ({exc})", path=path) from None
    return tuple(int(d) for d in shape), dtype, fh.tell(), bool(fortran)


def read_npy(path: Path) -> np.ndarray:
    """Load one ``.npy`` tensor as msprobe does (``np.load``, ``allow_pickle=False``).

    Raises :class:`TensorReadError` when the file is missing, not a regular file,
    10 GiB or larger, has a malformed header, holds object/structured/void data,
    or is shorter than its header says. Inside the tensor stage the data goes into the
    stage's reusable arena (:func:`msprobe_core.arena.current_arena`), valid until that
    arena is reset; the array is the same as ``np.load``'s.
    """
    path = Path(path)
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below; the checks and the read share the handle
    except FileNotFoundError:
        raise TensorReadError("tensor file does not exist", path=path) from None
    except OSError as exc:
        raise TensorReadError(f"cannot open tensor file ({exc.strerror or exc})", path=path) from None
    with fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise TensorReadError("tensor path is not a regular file", path=path)
        size = info.st_size
        if size >= MAX_NPY_BYTES:
            raise TensorReadError(f"tensor file is {size} bytes, over the {MAX_NPY_BYTES}-byte limit", path=path)
        shape, dtype, offset, fortran = _header(fh, path)
        if dtype.hasobject or dtype.kind not in NUMERIC_KINDS or dtype.fields is not None:
            raise TensorReadError(f"tensor file holds {dtype} data, not numbers", path=path)
        needed = offset + math.prod(shape) * dtype.itemsize
        if size < needed:
            raise TensorReadError(
                f"tensor file is truncated: {size} bytes, its header announces {needed}", path=path
            )
        arena = current_arena()
        if arena is not None and needed > offset:
            return _read_into(fh, arena, offset, needed - offset, shape, dtype, fortran, path)
        fh.seek(0)
        try:
            return np.load(fh, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise TensorReadError(f"cannot read tensor file ({exc})", path=path) from None


def _read_into(fh: BinaryIO, arena: Arena, offset: int, nbytes: int, shape: tuple[int, ...],
               dtype: np.dtype, fortran: bool, path: Path) -> np.ndarray:
    """The array's bytes read into the tensor stage's reusable arena: what ``np.load`` returns
    for a file (``fromfile`` then the C or Fortran view), without a fresh allocation."""
    buf = arena.take(nbytes)
    fh.seek(offset)
    done = 0
    view = memoryview(buf)
    while done < nbytes:
        got = fh.readinto(view[done:])
        if not got:
            raise TensorReadError(f"cannot read tensor file (short read: {done} of {nbytes} bytes)", path=path)
        done += got
    flat = buf.view(dtype)
    if fortran:
        return flat.reshape(shape[::-1]).transpose()
    return flat.reshape(shape)
