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

import re

__all__ = ["pandas_precise_xstrtod", "reference_precise_xstrtod"]

_POW10 = tuple(float(f"1e{i}") for i in range(309))
_MAX_DIGITS = 17


def _digit(ch: str) -> int:
    return ord(ch) - 48


_NUMBER = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?)([0-9]{1,17}))?")
#: Up to this many digits the C loop's ``x * 10 + d`` stays below 2**53, hence exact.
_EXACT_DIGITS = 15


def pandas_precise_xstrtod(text: str) -> float | None:
    """``precise_xstrtod(text, decimal='.', sci='E', tsep='\\0')``; ``None`` where it reports an error.

    Same result as :func:`reference_precise_xstrtod` (the line-by-line transcription),
    computed faster: the first 15 significant digits are accumulated exactly with an
    integer, only the 16th and 17th go through the C loop's float arithmetic.
    """
    m = _NUMBER.fullmatch(text.strip())
    if m is None:
        return None
    sign, int_digits, frac_digits, exp_sign, exp_digits = m.groups()
    frac_digits = frac_digits or ""
    digits = int_digits + frac_digits
    if not digits:
        return None
    if len(digits) > _MAX_DIGITS:
        extra_int = max(len(int_digits) - _MAX_DIGITS, 0)
        num_decimals = max(_MAX_DIGITS - len(int_digits), 0)
        digits = digits[:_MAX_DIGITS]
    else:
        extra_int = 0
        num_decimals = len(frac_digits)
    number = float(int(digits[:_EXACT_DIGITS]))
    for ch in digits[_EXACT_DIGITS:]:
        number = number * 10.0 + _digit(ch)
    if sign == "-":
        number = -number
    exponent = extra_int - num_decimals
    if exp_digits:
        exponent += -int(exp_digits) if exp_sign == "-" else int(exp_digits)
    return _scale(number, exponent)


def _scale(number: float, exponent: int) -> float | None:
    """The C function's final step: one multiplication or division by a power of ten."""
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


def reference_precise_xstrtod(text: str) -> float | None:
    """Line-by-line transcription of pandas' C ``precise_xstrtod`` (the test oracle of the fast version).

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
    return _scale(number, exponent)
