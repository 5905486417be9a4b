"""How msprobe's MindSpore runs turned statistic text into numbers: pandas' old ``precise_xstrtod``.

msprobe computes the statistics diffs (``Max diff`` … ``NormRelativeErr``) from
``pd.to_numeric(cells.astype(str))``. The MindSpore reference outputs in the
corpora were produced by an msprobe installed next to MindSpore, with a pandas
whose ``to_numeric`` still used the tokenizer's ``precise_xstrtod`` (later
pandas use the correctly rounded fast_float). That parser reads at most 17
significant digits into a double by repeated ``x * 10 + d`` and then divides by
a power of ten, so for the 17-digit reprs of float32 statistics it is often one
or a few ulps off; the differences and relative errors inherit that, down to the
last printed digit. :func:`pandas_precise_xstrtod` is a transcription of that C
function (IEEE doubles behave the same in Python), used as the MindSpore
framework's ``parse_statistic``.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["pandas_precise_xstrtod"]

_POW10 = tuple(float(f"1e{i}") for i in range(309))
_MAX_DIGITS = 17


def _digit(ch: str) -> int:
    return ord(ch) - 48


@lru_cache(maxsize=1 << 16)
def pandas_precise_xstrtod(text: str) -> float | None:
    """``precise_xstrtod(text, decimal='.', sci='E', tsep='\\0')``; ``None`` where it reports an error.

    Accepts what ``repr``/``str`` of a number looks like (``-1.25``, ``3``,
    ``2.5e-07``); leading/trailing whitespace is skipped. Text that is not a
    complete number (``inf``, ``nan``, ``1.5x``) gives ``None``.
    """
    s = text.strip()
    n = len(s)
    p = 0
    negative = False
    if p < n and s[p] in "+-":
        negative = s[p] == "-"
        p += 1
    number = 0.0
    exponent = 0
    num_digits = 0
    while p < n and s[p].isdigit() and s[p].isascii():
        if num_digits < _MAX_DIGITS:
            number = number * 10.0 + _digit(s[p])
            num_digits += 1
        else:
            exponent += 1
        p += 1
    if p < n and s[p] == ".":
        p += 1
        num_decimals = 0
        while num_digits < _MAX_DIGITS and p < n and s[p].isdigit() and s[p].isascii():
            number = number * 10.0 + _digit(s[p])
            p += 1
            num_digits += 1
            num_decimals += 1
        if num_digits >= _MAX_DIGITS:
            while p < n and s[p].isdigit() and s[p].isascii():
                p += 1
        exponent -= num_decimals
    if num_digits == 0:
        return None
    if negative:
        number = -number
    if p < n and s[p] in "eE":
        p += 1
        exp_negative = False
        if p < n and s[p] in "+-":
            exp_negative = s[p] == "-"
            p += 1
        exp_digits = 0
        value = 0
        while exp_digits < _MAX_DIGITS and p < n and s[p].isdigit() and s[p].isascii():
            value = value * 10 + _digit(s[p])
            exp_digits += 1
            p += 1
        if exp_digits == 0:
            p -= 1  # the C code un-consumes a bare 'e'
        exponent += -value if exp_negative else value
    if p != n:
        return None
    if exponent > 308:
        return None
    if exponent > 0:
        number *= _POW10[exponent]
    elif exponent < -308:
        if exponent < -616:
            number = 0.0
        else:
            number /= _POW10[-308 - exponent]
            number /= _POW10[308]
    else:
        number /= _POW10[-exponent]
    if number in (float("inf"), float("-inf")):
        return None
    return number
