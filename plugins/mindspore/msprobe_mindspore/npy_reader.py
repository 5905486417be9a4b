"""Reading MindSpore ``.npy`` tensor files: the core's one ``.npy`` reader with msprobe's limit for them.

msprobe reads a MindSpore tensor with ``np.load(path, allow_pickle=False)`` and refuses
files of 10 GiB or more. :func:`read_npy` reads it with :func:`msprobe_core.plugin.read_npy`
(no pickles; only regular files of plain numbers whose header agrees with their size), so a
truncated or hostile file fails with :class:`msprobe_core.plugin.TensorReadError` (its row
becomes ``unsupported``) instead of an odd numpy error or a huge allocation.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from msprobe_core.plugin import NUMERIC_KINDS, current_arena
from msprobe_core.plugin import read_npy as _read_npy

__all__ = ["MAX_NPY_BYTES", "NUMERIC_KINDS", "read_npy"]

#: msprobe refuses tensor files of 10 GiB or more.
MAX_NPY_BYTES = 10 * 1024**3


def read_npy(path: Path | str) -> np.ndarray:
    """Load one ``.npy`` tensor as msprobe does (``np.load``, ``allow_pickle=False``).

    Raises :class:`~msprobe_core.plugin.TensorReadError` when the file is missing, not a regular
    file, 10 GiB or larger, has a malformed header, holds object/structured/non-numeric data, or
    is shorter than its header says. Inside the tensor stage the data goes into the stage's
    reusable arena (:func:`msprobe_core.plugin.current_arena`), valid until that arena is reset;
    the array is the same as ``np.load``'s.
    """
    return _read_npy(path, max_file_bytes=MAX_NPY_BYTES, arena=current_arena())
