"""Spelling many float64 values exactly as Python's ``repr`` does, in bulk.

``repr`` costs about a microsecond per float; a statistics result has millions of float cells. orjson spells a
whole float64 array in one C call with the same shortest round-trip digits as ``repr``; only its notation differs
in two ranges:

* ``1e-9 <= |x| < 1e-5``: orjson writes ``1.5e-7`` where Python writes ``1.5e-07`` (two digits of exponent);
* ``1e-5 <= |x| < 1e-4``: orjson writes ``0.000015`` where Python writes ``1.5e-05`` (scientific below ``1e-4``).

The exponents of the first range are padded with one C-level ``str.replace`` over the whole text (values below
``1e-9``, whose exponents have two digits already, are then respelled with ``repr``; when they are many, the first
range is padded apart instead); values of the second range are respelled from orjson's digits by string slicing,
and non-finite values (orjson writes ``null``) with ``repr``. (The CSV writer's C join makes the same two changes to
a column of numbers, :func:`msprobe_core.text.csv_rows.number_column`.) The property test
``tests/test_floattext.py`` checks the result against ``repr`` over arbitrary float64 bit patterns.
"""

from __future__ import annotations

import numpy as np

__all__ = ["float_texts"]


def _positional_texts(texts: list[str]) -> list[str]:
    """orjson's texts of values with ``1e-5 <= |x| < 1e-4`` (``0.000015``) as ``repr`` spells them (``1.5e-05``).

    orjson writes ``0.0000`` and the shortest digits ``D``; Python writes ``D[0].D[1:]e-05``
    (``De-05`` for one digit). String slicing costs a third of ``repr``.
    """
    return [
        (f"-{t[7]}.{t[8:]}e-05" if len(t) > 8 else f"-{t[7]}e-05")
        if t[0] == "-"
        else (f"{t[6]}.{t[7:]}e-05" if len(t) > 7 else f"{t[6]}e-05")
        for t in texts
    ]


def _orjson_text(values: np.ndarray) -> str:
    """orjson's texts of (finite) values, comma-separated."""
    import orjson  # lazily: start-up paths (msprobe --help) import nothing heavy

    return orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY)[1:-1].decode("ascii")


def float_texts(values: np.ndarray, suffix: str = "") -> list[str]:
    """``[repr(float(x)) + suffix for x in values]`` for a 1-d float64 array, computed in bulk.

    ``suffix`` (e.g. ``"%"``) is appended to every text; it must not contain a comma.
    """
    arr = np.ascontiguousarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError("float_texts takes a 1-d array")
    if "," in suffix:
        raise ValueError("the suffix must not contain a comma")
    if len(arr) == 0:
        return []
    finite = np.isfinite(arr)
    all_finite = bool(finite.all())
    clean = arr if all_finite else np.where(finite, arr, 0.0)
    body = _orjson_text(clean)
    magnitude = np.abs(clean)
    tiny = (magnitude < 1e-4) & (magnitude != 0)
    short = positional = None  # values with a one-digit exponent padded apart; values in [1e-5, 1e-4)
    by_repr = []  # rows spelled with repr
    if tiny.any():
        positional = np.flatnonzero(tiny & (magnitude >= 1e-5))
        short = tiny & (magnitude < 1e-5)
        n_short = int(np.count_nonzero(short))
        if n_short:
            two_digits = np.flatnonzero(short & (magnitude < 1e-9))  # e-10 and below: orjson pads like Python
            if len(two_digits) * 4 < n_short:
                # pad every negative exponent in one pass, then respell the few that had two digits already
                body = body.replace("e-", "e-0")
                by_repr.append(two_digits)
                short = None
            else:
                short &= magnitude >= 1e-9
        else:
            short = None
    if suffix:
        body = body.replace(",", suffix + ",") + suffix
    out = body.split(",")
    if short is not None:
        rows = np.flatnonzero(short)
        for i, text in zip(rows.tolist(), _orjson_text(clean[rows]).replace("e-", "e-0").split(",")):
            out[i] = text + suffix
    if positional is not None and len(positional):
        texts = _positional_texts(_orjson_text(clean[positional]).split(","))
        for i, text in zip(positional.tolist(), texts):
            out[i] = text + suffix
    for rows in by_repr:
        for i in rows.tolist():
            out[i] = repr(float(clean[i])) + suffix
    if not all_finite:
        for i in np.flatnonzero(~finite).tolist():
            out[i] = repr(float(arr[i])) + suffix
    return out
