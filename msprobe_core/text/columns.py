"""Lean text columns of a result table: cells spelled only when read or written.

A result holds millions of text cells that are numbers (``Max diff``, ``MaxRelativeErr``…) or the stack text of an
API repeated per row. Holding them as Python strings costs ~70 bytes a cell and a ``repr`` each up front; these
classes keep what the text is made from (a reference to the stack's lines here; a float64 array and a small code per
cell in the default plugin ``statistics_metrics``'s ``CodedTextColumn``) and spell cells in bulk when a consumer
reads them.

Each class is a :class:`collections.abc.Sequence` that behaves like the list of cells it stands for: ``len``,
indexing (negative too), slicing (returns a list), iteration, ``==`` against a list, ``list(col)``,
``np.asarray(col)``. Writers ask for chunks of cells with :meth:`TextColumn.texts` and :meth:`TextColumn.csv_texts`
(the cells as the CSV spells them, formula-like text neutralised).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from operator import index as as_index
from typing import Any

import numpy as np

from ..model import NA
from .cells import csv_column

__all__ = ["RangeSequence", "StackColumn", "TextColumn", "ITER_CHUNK"]

_ALL_STR = {str}.issuperset
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


class StackColumn(TextColumn):
    """``NPU_Stack_Info``: per row the stack lines (``str(lines)``) or ``N/A``, spelled on demand.

    ``lines[i]`` is the object whose ``str()`` is cell ``i`` (the list of stack lines of the
    row's API), or ``None`` for ``N/A``. Rows of one API share the same object.
    """

    __slots__ = ("_lines", "_reprs")

    def __init__(self, lines: list[Any]) -> None:
        self._lines = lines
        self._reprs: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._lines)

    def cell(self, i: int) -> str:
        return self._text(self._lines[i])

    def texts(self, start: int = 0, stop: int | None = None) -> list[str]:
        return list(map(self._text, self._lines[start:stop]))

    def csv_texts(self, start: int = 0, stop: int | None = None) -> list[str]:
        # each distinct object spelled once, and the same text object per row (the CSV quotes each text once)
        lines = self._lines[start:stop]
        distinct = list({id(v): v for v in lines}.values())
        spelled = dict(zip(map(id, distinct), csv_column(list(map(self._text, distinct)))))
        return list(map(spelled.__getitem__, map(id, lines)))

    def _text(self, v: Any) -> str:
        if v is None or v.__class__ is not list or not _ALL_STR(map(type, v)):
            return NA if v is None else str(v)
        # str() of a list of text, a few hundred distinct lines repeating across the stacks: each repr made once
        return "[" + ", ".join([self._reprs.get(x) or self._reprs.setdefault(x, repr(x)) for x in v]) + "]"
