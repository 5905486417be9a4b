"""The default plugin ``fast_scan``'s statistics column: ``Max``/``Min``/``Mean``/``Norm`` held as arrays instead of
Python objects.

The C scanner of dump.json (:mod:`.scan`) gives the four statistics
columns of a table as :class:`StatCells`: a kind code and a float64 per row, plus the
few values that are not floats (ints, texts such as ``"Nan"``, anything else) kept as
they are, by row. A 100k-entry dump holds ~1.4 million statistics; as float objects in
lists they cost 32 bytes each and, in the forked processes of a run, every page of them
that a process merely reads is copied (reference counts are writes). As arrays they cost
9 bytes, are picked for the result with numpy indexing, and are classified, compared and
spelled without a Python object per cell.

A :class:`StatCells` behaves as the list of values it stands for (``len``, indexing,
slicing, iteration, ``==``, ``list()``): code that reads a table's statistics sees the same
values, of the same types, as the Python walk's lists hold. The core and the other plugins
know it only by what it does, the lean column's methods: ``pick``, ``numeric`` and ``all_numbers`` (the result
stage), ``csv_texts``, ``csv_charset`` and ``typed_cells`` (the writers), ``classified`` and ``values_at`` (the
classification of statistics cells, :mod:`msprobe_core.plugin.stat_cells`), ``csv_numbers`` and ``csv_texts_at`` (the summary),
``to_wire``/``from_wire`` (the default plugin ``pair_loading``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from msprobe_core.plugin import NA, RangeSequence, csv_column, float_texts, number_column
from msprobe_core.plugin import stat_cells as _cells

__all__ = ["StatCells"]

FLOAT, INT, STR, NONE, OTHER = _cells.FLOAT, _cells.INT, _cells.STR, _cells.NONE, _cells.OTHER
_NUMERIC_CHARSET = "0123456789.e+- infNoTrueFals"


def _kind_of(value: Any) -> int:
    t = type(value)
    return FLOAT if t is float else INT if t is int else STR if t is str else NONE if value is None else OTHER


class StatCells(RangeSequence):
    """The values of a statistics column: ``kinds`` and ``nums`` per row, ``others[row]`` for the rest.

    ``kinds[i]``: :data:`FLOAT` (the value is ``float(nums[i])``), :data:`NONE` (``None``),
    or :data:`INT`, :data:`STR`, :data:`OTHER` (the value is ``others[i]``; for an int,
    ``nums[i]`` is its float value, NaN otherwise).
    """

    __slots__ = ("kinds", "nums", "others", "_charset")
    #: cells are values, not text: writers keep numbers typed (xlsx) and spell them as csv_column does
    typed_cells = True

    def __init__(self, kinds: np.ndarray, nums: np.ndarray, others: dict[int, Any]) -> None:
        if kinds.shape != nums.shape or kinds.ndim != 1:
            raise ValueError("kinds and nums must be 1-d arrays of the same length")
        self.kinds = kinds
        self.nums = nums
        self.others = others
        self._charset: str | None | bool = False  # not known yet (see csv_charset)

    @classmethod
    def from_values(cls, values: Sequence[Any]) -> StatCells:
        """The cells of a list of values."""
        kinds, nums = _cells.classify_values(values)
        keep = np.flatnonzero((kinds == INT) | (kinds == STR) | (kinds == OTHER)).tolist()
        return cls(np.array(kinds, dtype=np.int8), np.array(nums, dtype=np.float64), {i: values[i] for i in keep})

    # ------------------------------------------------------------------ list behaviour
    def __len__(self) -> int:
        return len(self.kinds)

    def _item(self, i: int) -> Any:
        kind = self.kinds[i]
        if kind == FLOAT:
            return float(self.nums[i])
        if kind == NONE:
            return None
        return self.others[i]

    def _range(self, start: int, stop: int) -> list[Any]:
        out = self.nums[start:stop].tolist()
        kinds = self.kinds[start:stop]
        others = self.others
        for k in np.flatnonzero(kinds != FLOAT).tolist():
            out[k] = None if kinds[k] == NONE else others[start + k]
        return out

    def values_at(self, rows: Sequence[int]) -> list[Any]:
        """``[self[i] for i in rows]``, in bulk."""
        idx = np.asarray(rows, dtype=np.int64)
        out = self.nums[idx].tolist()
        kinds = self.kinds[idx]
        for k in np.flatnonzero(kinds != FLOAT).tolist():
            out[k] = None if kinds[k] == NONE else self.others[int(idx[k])]
        return out

    def tolist(self) -> list[Any]:
        """The values as a list (what the Python walk's column holds)."""
        return self._range(0, len(self))

    def __iter__(self) -> Iterator[Any]:
        return iter(self.tolist())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, StatCells)):
            return len(self) == len(other) and self.tolist() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # unhashable, like the list it stands for

    def __repr__(self) -> str:
        head = self[:5]
        return f"StatCells({head!r}{'…' if len(self) > 5 else ''}, n={len(self)})"

    # ------------------------------------------------------------------ what the result stage asks
    def classified(self) -> tuple[np.ndarray, np.ndarray]:
        """(kind codes, float64 values) as :func:`msprobe_core.plugin.stat_cells.classify_values` gives them
        (copies)."""
        return self.kinds.copy(), self.nums.copy()

    def pick(self, idx: Sequence[int], missing: Any = NA, none: Any = NA, identity: bool = False) -> StatCells:
        """The cells of rows ``idx`` (``missing`` where a row is -1, ``none`` for ``None`` values), as ``_pick``.

        ``identity`` (``idx`` is every row in order) with ``none is None`` returns this column itself.
        """
        if identity and none is None:
            return self
        ix = np.asarray(idx, dtype=np.int64)
        absent = ix < 0
        if len(self):
            take = np.where(absent, 0, ix)
            kinds, nums = self.kinds[take], self.nums[take]
        else:  # every row missing
            take = np.zeros(len(ix), dtype=np.int64)
            kinds, nums = np.full(len(ix), NONE, dtype=np.int8), np.full(len(ix), np.nan)
        kept = np.flatnonzero(((kinds == INT) | (kinds == STR) | (kinds == OTHER)) & ~absent)
        others = dict(zip(kept.tolist(), map(self.others.__getitem__, take[kept].tolist())))
        if none is not None:
            self._put(kinds, nums, others, np.flatnonzero((kinds == NONE) & ~absent).tolist(), none)
        self._put(kinds, nums, others, np.flatnonzero(absent).tolist(), missing)
        return StatCells(kinds, nums, others)

    @staticmethod
    def _put(kinds: np.ndarray, nums: np.ndarray, others: dict[int, Any], rows: list[int], value: Any) -> None:
        if not rows:
            return
        kind = _kind_of(value)
        kinds[rows] = kind
        if kind == FLOAT:
            nums[rows] = value
            return
        nums[rows] = float(value) if kind == INT else np.nan
        if kind != NONE:
            others.update(dict.fromkeys(rows, value))

    def all_numbers(self) -> bool:
        """Whether the column holds only ints and floats, at least one float (see ``result.all_numbers``)."""
        counts = np.bincount(self.kinds, minlength=OTHER + 1)
        return bool(counts[FLOAT]) and counts[FLOAT] + counts[INT] == len(self)

    def numeric(self, whole: bool | None = None) -> StatCells:
        """``result.numeric_column``: every int a float when the column (or, for a part, ``whole``) is all numbers."""
        if whole is None:
            whole = self.all_numbers()
        if not whole or not (self.kinds == INT).any():
            return self
        kinds = self.kinds.copy()
        kinds[kinds == INT] = FLOAT
        others = {i: v for i, v in self.others.items() if type(v) is not int}
        return StatCells(kinds, self.nums, others)

    # ------------------------------------------------------------------ between processes
    def to_wire(self) -> tuple[bytes, bytes, dict[int, Any]]:
        """The column as its arrays' bytes and its other values (the default plugin ``pair_loading``'s wire form)."""
        return self.kinds.tobytes(), self.nums.tobytes(), self.others

    @classmethod
    def from_wire(cls, kinds: bytes, nums: bytes, others: dict[int, Any]) -> StatCells:
        """The column whose :meth:`to_wire` gave these."""
        return cls(np.frombuffer(kinds, dtype=np.int8), np.frombuffer(nums, dtype=np.float64), others)

    # ------------------------------------------------------------------ writers
    @property
    def csv_charset(self) -> str | None:
        """Every character a CSV cell can hold when no cell is text (``None``: unknown, scan the texts).

        Worked out once: a writer asks for it with every chunk of rows, and a scan of the whole
        column per chunk made writing a table quadratic in its rows (cells are never changed in place).
        """
        if self._charset is False:
            self._charset = None if ((self.kinds == STR) | (self.kinds == OTHER)).any() else _NUMERIC_CHARSET
        return self._charset

    def csv_texts(self, start: int = 0, stop: int | None = None) -> list[str]:
        """The cells ``start:stop`` as :func:`msprobe_core.plugin.csv_column` spells them, floats in bulk."""
        kinds = self.kinds[start:stop]
        nums = self.nums[start:stop]
        plain = (kinds == FLOAT) & np.isfinite(nums)
        out = float_texts(np.where(plain, nums, 0.0))
        if plain.all():
            return out
        self._odd_cells(out, kinds, nums, start)
        return out

    def csv_number_column(self, start: int = 0, stop: int | None = None) -> tuple[Any, ...] | None:
        """The cells ``start:stop`` for the CSV writer to spell in C (:func:`msprobe_core.plugin.number_column`), as
        :meth:`csv_texts` spells them."""
        kinds = self.kinds[start:stop]
        nums = self.nums[start:stop]
        plain = (kinds == FLOAT) & np.isfinite(nums)
        overrides: list[str | None] | None = None
        if not plain.all():
            overrides = [None] * len(kinds)
            self._odd_cells(overrides, kinds, nums, start)
            nums = np.where(plain, nums, 0.0)
        return number_column(np.ascontiguousarray(nums), overrides, "", False, lambda: self.csv_texts(start, stop))

    def _odd_cells(self, out: list[Any], kinds: np.ndarray, nums: np.ndarray, start: int) -> None:
        """Write into ``out`` the text of each cell (of these rows, from ``start``) that is no finite float: ``None``,
        a NaN (empty), an infinity, an int, a text (neutralised) or anything else."""
        is_float = kinds == FLOAT
        for rows, text in ((kinds == NONE, "None"), (is_float & np.isnan(nums), ""),
                           (is_float & (nums == np.inf), " inf"), (is_float & (nums == -np.inf), " -inf")):
            for i in np.flatnonzero(rows).tolist():
                out[i] = text
        ints = np.flatnonzero(kinds == INT).tolist()
        for i, text in zip(ints, map(str, [self.others[start + i] for i in ints])):
            out[i] = text
        rest = np.flatnonzero((kinds == STR) | (kinds == OTHER)).tolist()  # texts, anything else: spelled cell by cell
        for i, text in zip(rest, csv_column([self.others[start + i] for i in rest])):
            out[i] = text

    def csv_texts_at(self, rows: Sequence[int]) -> list[str]:
        """The cells ``rows`` as :meth:`csv_texts` spells them, without spelling the other rows."""
        return self.pick(rows, none=None).csv_texts()

    def csv_numbers(self, start: int, stop: int | None, parse: Callable[[str], float | None]) -> list[float | None]:
        """The cells ``start:stop`` read back as numbers from their CSV spelling (:meth:`csv_texts`), without spelling
        the floats: a float is itself (its text is ``repr``, which reads back exactly; ``" inf"`` is infinite),
        a NaN or ``None`` is no number (``None``), and any other cell (int, text…) is ``parse`` of its CSV text."""
        kinds = self.kinds[start:stop]
        nums = self.nums[start:stop]
        out: list[float | None] = nums.tolist()
        first = start or 0
        for i in np.flatnonzero(((kinds == FLOAT) & np.isnan(nums)) | (kinds == NONE)).tolist():
            out[i] = None
        rest = np.flatnonzero((kinds == INT) | (kinds == STR) | (kinds == OTHER)).tolist()
        for i, text in zip(rest, csv_column([self.others[first + i] for i in rest])):
            out[i] = parse(text)
        return out


