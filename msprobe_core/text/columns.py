"""Lean text columns of a result table: cells spelled only when read or written.

A statistics result holds millions of text cells that are numbers (``Max diff``,
``MaxRelativeErr``…) or the stack text of an API repeated per row. Holding them as
Python strings costs ~70 bytes a cell and a ``repr`` each up front; these classes
keep what the text is made from (a float64 array and a small code per cell, or a
reference to the stack's lines) and spell cells in bulk when a consumer reads them.

Each class is a :class:`collections.abc.Sequence` that behaves like the list of
cells it stands for: ``len``, indexing (negative too), slicing (returns a list),
iteration, ``==`` against a list, ``list(col)``, ``np.asarray(col)``. Writers ask
for chunks of cells with :meth:`TextColumn.texts` and :meth:`TextColumn.csv_texts`
(the cells as the CSV spells them, formula-like text neutralised).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from operator import index as as_index
from typing import Any

import numpy as np

from ..model import NA
from .cells import csv_column, neutralise
from .floattext import float_texts

__all__ = ["CodedTextColumn", "RangeSequence", "StackColumn", "TextColumn", "ITER_CHUNK"]

ITER_CHUNK = 16384
"""Cells spelled at a time while a column is iterated."""


class RangeSequence(Sequence[Any]):
    """List-like indexing (negative indices, slices returning lists) on top of two methods:
    ``_range(start, stop)`` (the items of a step-1 slice) and ``_item(i)`` (one item, ``0 <= i < len``)."""

    __slots__ = ()

    def _range(self, start: int, stop: int) -> list[Any]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _item(self, i: int) -> Any:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __getitem__(self, key: Any) -> Any:
        n = len(self)
        if isinstance(key, slice):
            start, stop, step = key.indices(n)
            if step == 1:
                return self._range(start, max(start, stop))
            return [self._item(i) for i in range(start, stop, step)]
        i = as_index(key)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("column index out of range")
        return self._item(i)


class TextColumn(RangeSequence):
    """Base of the lean text columns: list behaviour on top of :meth:`texts`."""

    __slots__ = ()

    def __len__(self) -> int:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def cell(self, i: int) -> str:
        """The text of cell ``i`` (``0 <= i < len(self)``)."""
        raise NotImplementedError

    def texts(self, start: int = 0, stop: int | None = None) -> list[str]:
        """The cells ``start:stop`` as a list of text (bulk spelling)."""
        raise NotImplementedError

    def csv_texts(self, start: int = 0, stop: int | None = None) -> list[str]:
        """The cells ``start:stop`` as :func:`msprobe_core.text.cells.csv_cell` spells them."""
        return csv_column(self.texts(start, stop))

    def _range(self, start: int, stop: int) -> list[str]:
        return self.texts(start, stop)

    def _item(self, i: int) -> str:
        return self.cell(i)

    def __iter__(self) -> Iterator[str]:
        n = len(self)
        for k in range(0, n, ITER_CHUNK):
            yield from self.texts(k, min(n, k + ITER_CHUNK))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, TextColumn)):
            return len(self) == len(other) and self.texts() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # unhashable, like the list it stands for

    def __add__(self, other: Any) -> list[str]:
        return self.texts() + list(other)

    def __radd__(self, other: Any) -> list[str]:
        return list(other) + self.texts()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self.texts(), dtype=dtype)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.texts(0, min(len(self), 5))!r}{'…' if len(self) > 5 else ''}, n={len(self)})"


class CodedTextColumn(TextColumn):
    """Cells that are a number spelled ``repr(x) + suffix`` or one of a few fixed labels.

    ``codes[i] == 0``: the cell is ``repr(float(values[i])) + suffix``; ``codes[i] == k > 0``:
    the cell is ``labels[k]`` (``labels[0]`` is unused). The statistics diffs are
    ``CodedTextColumn`` with ``suffix=""``, the relative errors with ``suffix="%"``.
    """

    __slots__ = ("_values", "_codes", "labels", "suffix", "_csv_labels", "_csv_safe_numbers", "csv_charset")

    NUMBER = 0

    def __init__(self, values: np.ndarray, codes: np.ndarray, labels: Sequence[str], suffix: str = "") -> None:
        values = np.ascontiguousarray(values, dtype=np.float64)
        codes = np.ascontiguousarray(codes, dtype=np.int8)
        if values.shape != codes.shape or values.ndim != 1:
            raise ValueError("values and codes must be 1-d arrays of the same length")
        if len(codes) and (codes.min() < 0 or codes.max() >= max(1, len(labels))):
            raise ValueError("a code has no label")
        self._values = np.where(codes == 0, values, np.nan)
        self._codes = codes
        self.labels = tuple(labels)
        self.suffix = suffix
        self._csv_labels = tuple(neutralise(t) for t in self.labels)
        # repr(x) + suffix is formula-like only for a negative number followed by a suffix ("-1.5%")
        self._csv_safe_numbers = not suffix or not bool(np.signbit(self._values[codes == 0]).any())
        #: every character a CSV cell can hold (a writer needs no quoting scan when none is special)
        self.csv_charset = "0123456789.e+-infa'" + suffix + "".join(self._csv_labels)

    def __len__(self) -> int:
        return len(self._codes)

    @property
    def codes(self) -> np.ndarray:
        """Per cell: 0 for a number, else the index of its label (read-only)."""
        view = self._codes.view()
        view.flags.writeable = False
        return view

    def numbers(self) -> np.ndarray:
        """The number of each numeric cell, NaN where the cell is a label (read-only)."""
        view = self._values.view()
        view.flags.writeable = False
        return view

    def cell(self, i: int) -> str:
        code = int(self._codes[i])
        return self.labels[code] if code else repr(float(self._values[i])) + self.suffix

    def _spell(self, start: int, stop: int | None, labels: Sequence[str]) -> list[str]:
        codes = self._codes[start:stop]
        is_label = codes != 0
        values = self._values[start:stop]
        if is_label.any():
            values = np.where(is_label, 0.0, values)  # label cells: cheap placeholders, replaced below
        out = float_texts(values, self.suffix)
        if is_label.any():
            for code in np.unique(codes[is_label]).tolist():
                text = labels[code]
                for i in np.flatnonzero(codes == code).tolist():
                    out[i] = text
        return out

    def texts(self, start: int = 0, stop: int | None = None) -> list[str]:
        return self._spell(start, stop, self.labels)

    def csv_texts(self, start: int = 0, stop: int | None = None) -> list[str]:
        out = self._spell(start, stop, self._csv_labels)
        if not self._csv_safe_numbers:
            codes = self._codes[start:stop]
            for i in np.flatnonzero((codes == 0) & np.signbit(self._values[start:stop])).tolist():
                out[i] = neutralise(out[i])
        return out


class StackColumn(TextColumn):
    """``NPU_Stack_Info``: per row the stack lines (``str(lines)``) or ``N/A``, spelled on demand.

    ``lines[i]`` is the object whose ``str()`` is cell ``i`` (the list of stack lines of the
    row's API), or ``None`` for ``N/A``. Rows of one API share the same object.
    """

    __slots__ = ("_lines",)

    def __init__(self, lines: list[Any]) -> None:
        self._lines = lines

    def __len__(self) -> int:
        return len(self._lines)

    def cell(self, i: int) -> str:
        v = self._lines[i]
        return NA if v is None else str(v)

    def texts(self, start: int = 0, stop: int | None = None) -> list[str]:
        return [NA if v is None else str(v) for v in self._lines[start:stop]]
