"""The default plugin ``statistics_metrics``'s result column of numbers: the statistics diffs and relative errors
held as a float64 array and a small code per cell, spelled only when read or written.

A statistics result holds millions of these cells (``Max diff``, ``MaxRelativeErr``…); as Python strings they
cost ~70 bytes a cell and a ``repr`` each up front. :class:`CodedTextColumn` is a lean text column
(:class:`msprobe_core.plugin.TextColumn`): the writers spell it through ``csv_texts``; the summary reads its
numbers back without spelling them (``csv_numbers``) and spells a few rows (``csv_texts_at``); msprobe's verdict
rule reads a relative error's numbers straight (``numbers()``, ``codes``, ``labels``, ``suffix``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from msprobe_core.plugin import TextColumn, float_texts, neutralise, number_column

__all__ = ["CodedTextColumn"]


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
            for code in np.flatnonzero(np.bincount(codes[is_label])).tolist():  # np.unique imports numpy.ma
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

    def csv_number_column(self, start: int = 0, stop: int | None = None) -> tuple[Any, ...] | None:
        """The cells ``start:stop`` for the CSV writer to spell in C (:func:`msprobe_core.plugin.number_column`), as
        :meth:`csv_texts` spells them (a negative number with the suffix ``%`` is formula-like: after an apostrophe);
        ``None`` for another suffix."""
        if self.suffix not in ("", "%"):
            return None
        codes = self._codes[start:stop]
        values = self._values[start:stop]
        plain = (codes == 0) & np.isfinite(values)
        overrides: list[str | None] | None = None
        if not plain.all():
            overrides = np.array([None, *self._csv_labels[1:]], dtype=object)[codes].tolist()  # None: a number
            for i in np.flatnonzero(~plain & (codes == 0)).tolist():  # inf, -inf, nan: repr's spelling, as csv_texts
                text = repr(float(values[i])) + self.suffix
                overrides[i] = neutralise(text) if not self._csv_safe_numbers and values[i] < 0 else text
            values = np.where(plain, values, 0.0)
        return number_column(np.ascontiguousarray(values), overrides, self.suffix, not self._csv_safe_numbers,
                             lambda: self.csv_texts(start, stop))

    def csv_texts_at(self, rows: Sequence[int]) -> list[str]:
        """The cells ``rows`` as :meth:`csv_texts` spells them, without spelling the other rows."""
        return type(self)(self._values[rows], self._codes[rows], self.labels, self.suffix).csv_texts()

    def csv_numbers(self, start: int, stop: int | None,
                    parse: Callable[[str], float | None]) -> list[float | None] | None:
        """The cells ``start:stop`` read back as ``parse`` (the summary's reading of a cell) reads their CSV text,
        from the numbers: no number is spelled, as a parse reads ``repr(x)`` as ``x`` and ``repr(x) + "%"`` as
        ``x / 100`` (``"'-x%"``, neutralised, as no number); ``parse`` reads each label once. ``None`` for a suffix
        other than ``""`` and ``"%"``."""
        if self.suffix not in ("", "%"):
            return None
        values, codes = self._values[start:stop], self._codes[start:stop]
        # the same operation a parse of "x%" applies to the text repr(x) + "%": float(repr(x)) == x, times 0.01
        out = (values * 0.01).tolist() if self.suffix else values.tolist()
        if self.suffix:  # "-x%" is formula-like: the CSV cell is neutralised ("'-x%") and reads as no number
            for i in ((codes == 0) & np.signbit(values)).nonzero()[0].tolist():
                out[i] = None
        label_numbers = [parse(text) for text in self._csv_labels]
        for code in set(codes.tolist()) - {0}:
            number = label_numbers[code]
            for i in (codes == code).nonzero()[0].tolist():
                out[i] = number
        return [None if v != v else v for v in out]
