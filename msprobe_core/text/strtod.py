"""Numbers from text as pandas 2.0's ``pd.to_numeric(values.astype(str))`` reads them.

msprobe 8.3.3 (the classic interface) computes its statistics diffs from such numbers, and
``msprobe merge_result`` reads result cells the way msprobe's ``read_excel`` does; both need
the same parse, digit for digit.
"""

from __future__ import annotations

import math

__all__ = ["pandas_strtod"]

_POW10 = [float(f"1e{i}") for i in range(309)]
_INF_WORDS = {"inf": math.inf, "-inf": -math.inf, "+inf": math.inf, "infinity": math.inf,
              "-infinity": -math.inf, "+infinity": math.inf}


def pandas_strtod(text: str) -> float | None:
    """pandas 2.0's ``precise_xstrtod``, which 8.3.3's ``pd.to_numeric(values.astype(str))`` uses.

    It keeps at most 17 digits (leading zeros included) and scales by one power of ten, so it
    can differ from Python's correctly rounded ``float()`` in the last bits. The statistics
    diffs and their ``x%`` relative errors are computed from these values, so reproducing the
    parse is what makes those cells agree with msprobe digit for digit. ``None``: not a number.
    """
    n = len(text)
    p = 0
    while p < n and text[p] in " \t\n\r\f\v":
        p += 1
    negative = False
    if p < n and text[p] in "+-":
        negative = text[p] == "-"
        p += 1
    number = 0.0
    exponent = num_digits = num_decimals = 0
    while p < n and "0" <= text[p] <= "9":
        if num_digits < 17:
            number = number * 10.0 + (ord(text[p]) - 48)
            num_digits += 1
        else:
            exponent += 1
        p += 1
    if p < n and text[p] == ".":
        p += 1
        while num_digits < 17 and p < n and "0" <= text[p] <= "9":
            number = number * 10.0 + (ord(text[p]) - 48)
            p += 1
            num_digits += 1
            num_decimals += 1
        if num_digits >= 17:
            while p < n and "0" <= text[p] <= "9":
                p += 1
        exponent -= num_decimals
    if num_digits == 0:
        return _INF_WORDS.get(text.strip().lower())
    if negative:
        number = -number
    if p < n and text[p] in "eE":
        p += 1
        neg_exp = False
        if p < n and text[p] in "+-":
            neg_exp = text[p] == "-"
            p += 1
        digits = value = 0
        while digits < 17 and p < n and "0" <= text[p] <= "9":
            value = value * 10 + (ord(text[p]) - 48)
            digits += 1
            p += 1
        exponent += -value if neg_exp else value
        if digits == 0:
            p -= 1
    while p < n and text[p] in " \t\n\r\f\v":
        p += 1
    if p != n:
        return None
    if exponent > 308:
        return None
    if exponent > 0:
        return number * _POW10[exponent]
    if exponent < -308:
        return 0.0 if exponent < -616 else number / _POW10[-308 - exponent] / _POW10[308]
    return number / _POW10[-exponent]
