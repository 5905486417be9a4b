"""How a statistics cell (``Max``/``Min``/``Mean``/``Norm``) is classified: a kind code and a float64 per cell.

The statistics metric set and msprobe's verdict rule read the dumped statistics through :func:`classify_values`
and :func:`cells_at`, whatever holds them: a list (the core's pure-Python loader), or a lean column of a loader
that keeps them as arrays (the default plugin ``fast_scan``'s ``StatCells``), which classifies itself
(``classified``) and gives the values of some rows in bulk (``values_at``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["FLOAT", "INT", "STR", "NONE", "OTHER", "cells_at", "classify_values", "float_values"]

#: kind codes of the cells (those of :func:`classify_values`)
FLOAT, INT, STR, NONE, OTHER = range(5)
_TYPE_CODE: defaultdict[type, int] = defaultdict(lambda: OTHER, {float: FLOAT, int: INT, str: STR, type(None): NONE})

try:
    from .._dumpscan import classify_statistics as _classify
except ImportError:  # built without a C compiler
    _classify = None


def cells_at(values: Sequence[Any], rows: list[int]) -> list[Any]:
    """``[values[i] for i in rows]``; in bulk for a column held as arrays (its ``values_at``)."""
    values_at = getattr(values, "values_at", None)
    if values_at is not None:
        return values_at(rows)
    return [values[i] for i in rows]


def classify_values(values: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(kind code per value: :data:`FLOAT`, :data:`INT`, :data:`STR`, :data:`NONE` or :data:`OTHER`; its float64
    value, NaN unless a float or an int), in one C pass where ``_dumpscan`` is built."""
    classified = getattr(values, "classified", None)  # a column held as arrays classifies itself
    if classified is not None:
        return classified()
    if _classify is not None:
        found = _classify(values)
        if found is not None:  # None: an int too large for a double, left to numpy's rules below
            kinds, numbers = found
            return np.frombuffer(kinds, dtype=np.int8), np.frombuffer(numbers, dtype=np.float64)
    kind = np.fromiter(map(_TYPE_CODE.__getitem__, map(type, values)), dtype=np.int8, count=len(values))
    return kind, float_values(values, kind == FLOAT, kind == INT)


def float_values(values: Sequence[Any], is_float: np.ndarray, is_int: np.ndarray | None = None) -> np.ndarray:
    """The cells of ``values`` as float64 where ``is_float`` (or ``is_int``) holds, NaN elsewhere.

    Statistics columns are almost all floats: converted in one C pass, the few other cells
    set to NaN first (ints converted as ``astype`` converts them).
    """
    if is_float.all():
        return np.array(values, dtype=np.float64)
    obj = np.empty(len(values), dtype=object)
    obj[:] = values
    ints = obj[is_int].astype(np.float64) if is_int is not None and is_int.any() else None
    obj[~is_float] = np.nan
    num = obj.astype(np.float64)
    if ints is not None:
        num[is_int] = ints
    return num
