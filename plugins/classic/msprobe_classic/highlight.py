"""Red/yellow row highlighting of the classic result (spec compare-legacy.md §7).

The rules are msprobe 8.3.3's; the evaluation is not: instead of looping over pandas
rows and openpyxl cells, each rule is evaluated at once over numpy arrays of every
(output row, input row) pair of every API, so a million-row result is coloured in
seconds. Only the rows that a rule hits are visited in Python, to attach messages in
8.3.3's order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from msprobe_core.plugin import MODE_MD5, MODE_STATISTICS
from msprobe_core.plugin import result_columns as C

from .table import REQ_GRAD_CONSIST

NONE, RED, YELLOW = 0, 1, 2
OVERFLOW = frozenset({"nan\t", "inf\t", "-inf\t", "nan", "inf", "-inf"})
#: The table spells a NaN statistic ``Nan``, which 8.3.3's lower-case test misses; the seed
#: documents promise red for nan as for inf, so any spelling counts (docs/differences.md).
_OVERFLOW_WORDS = frozenset({"nan", "inf", "-inf"})
_FWD_BWD = re.compile(r"\.(forward|backward)\.")

MSG_OVERFLOW = "maximum or minimum is nan, -inf, or inf"
MSG_MAX_DIFF = "maximum absolute error exceeds 1e+10"
MSG_ORDER = (
    "maximum absolute error of both input/parameters and output exceed 1, with the output larger by an order of magnitude"
)
MSG_ONE_RED = "The input/parameter's one thousandth err ratio exceeds 0.9, while the output's is below 0.6"
MSG_ONE_YELLOW = "The output's one thousandth err ratio decreases by more than 0.1 compared to the input/parameter's"
MSG_COSINE = "The output's cosine decreases by more than 0.1 compared to the input/parameter's"
MSG_REL_RED = "maximum relative error exceeds 0.5"
MSG_REL_YELLOW = "The output's maximum relative error exceeds 0.1, while the input/parameter's is below 0.01"
MSG_REQ_GRAD = "requires_grad is inconsistent"


@dataclass
class Highlight:
    """The colour of every row (``NONE``/``RED``/``YELLOW``) and the messages added to rows."""

    colour: np.ndarray
    messages: dict[int, list[str]]

    @property
    def red_rows(self) -> int:
        return int((self.colour == RED).sum())

    @property
    def yellow_rows(self) -> int:
        return int((self.colour == YELLOW).sum())


def api_batches(api_key: list[str], state: list[str]) -> list[tuple[int, int, int, int]]:
    """8.3.3's API batches as ``(start, params_end, output_end, end)`` row ranges.

    Rows ``[start, params_end)`` are the inputs/parameters (the first row always counts as
    one), ``[params_end, output_end)`` the outputs, ``[start, end)`` every row of the batch.
    Rows are taken a run of equal keys at a time (a key not matching ``.forward.``/``.backward.``
    that is a substring of the current batch's key joins that batch, as in 8.3.3).
    """
    n = len(api_key)
    if not n:
        return []
    cuts = [0] + [i for i in range(1, n) if api_key[i] is not api_key[i - 1] and api_key[i] != api_key[i - 1]] + [n]
    batches: list[list] = []
    current: list | None = None
    plain_cache: dict[str, bool] = {}
    for r in range(len(cuts) - 1):
        s, e = cuts[r], cuts[r + 1]
        key = api_key[s]
        joins = False
        if current is not None:
            joins = key == current[4]
            if not joins:
                plain = plain_cache.get(key)
                if plain is None:
                    plain = plain_cache[key] = _FWD_BWD.search(key) is None
                joins = plain and key in current[4]
        if joins:
            first = s
        else:
            current = [s, s + 1, s + 1, s + 1, key]
            batches.append(current)
            first = s + 1
        run = state[first:e]
        n_in = run.count("input") + run.count("kwargs") + run.count("parameters")
        current[1] += n_in
        current[2] += n_in + run.count("output")
        current[3] += e - first
    return [(b[0], b[1], b[2], b[3]) for b in batches]


_NUM_CLASSES = frozenset({float, int, np.float64, np.float32, np.float16, np.int64, np.int32})
_INF = float("inf")


def _nums(values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(is numeric, value as float with NaN elsewhere) per cell (``isinstance(v, (float, int))``, bools excluded)."""
    classes = _NUM_CLASSES
    ok = np.fromiter((v.__class__ in classes for v in values), dtype=bool, count=len(values))
    out = np.fromiter((v if v.__class__ in classes else np.nan for v in values), dtype=float, count=len(values))
    return ok, out


def _percent(values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """8.3.3 ``get_number`` of MaxRelativeErr: ``'x%'`` → x / 100, numbers kept."""
    classes = _NUM_CLASSES

    def number(v: Any) -> float:
        if v.__class__ is str:
            if v.endswith("%"):
                try:
                    return float(v[:-1]) / 100
                except ValueError:
                    return np.nan
            return np.nan
        return v if v.__class__ in classes else np.nan

    def numeric(v: Any) -> bool:
        if v.__class__ is str:
            if not v.endswith("%"):
                return False
            try:
                float(v[:-1])
            except ValueError:
                return False
            return True
        return v.__class__ in classes

    n = len(values)
    return (np.fromiter((numeric(v) for v in values), dtype=bool, count=n),
            np.fromiter((number(v) for v in values), dtype=float, count=n))


def _overflow(values: list[Any]) -> np.ndarray:
    """``str(v) in ('nan', 'inf', '-inf', …)`` per cell, without building the strings."""

    def hit(v: Any) -> bool:
        c = v.__class__
        if c is str:
            return v in OVERFLOW or v.strip().lower() in _OVERFLOW_WORDS
        if c is float:
            return v != v or v == _INF or v == -_INF
        if c is int or c is bool or v is None:
            return False
        return str(v) in OVERFLOW

    return np.fromiter((hit(v) for v in values), dtype=bool, count=len(values))


def find_rows(mode: str, data: Mapping[str, Sequence[Any]], api_key: list[str], state: list[str]) -> Highlight:
    """Evaluate every rule of §7.2 over the columns ``data`` of a classic table of ``mode``; nothing is changed.

    ``api_key``/``state``: per row, the dump key of the API the row belongs to and its state
    (``input``, ``output``…), which make 8.3.3's API batches (:func:`api_batches`).
    """
    n = len(api_key)
    colour = np.zeros(n, dtype=np.int8)
    messages: dict[int, list[str]] = {}
    if mode == MODE_MD5 or n == 0:
        return Highlight(colour, messages)
    stats = mode == MODE_STATISTICS
    diff_col = C.MAX_DIFF if stats else C.MAX_ABS_ERR
    diff_ok, diff = _nums(data[diff_col])
    nmax_ok, _ = _nums(data[C.NPU_MAX])
    bmax_ok, _ = _nums(data[C.BENCH_MAX])
    usable = diff_ok & nmax_ok & bmax_ok

    red: dict[int, list[str]] = {}
    yellow: dict[int, list[str]] = {}

    # single-row rule: overflow / huge max diff
    over = _overflow(data[C.NPU_MAX]) | _overflow(data[C.NPU_MIN])
    with np.errstate(invalid="ignore"):
        huge = ~over & diff_ok & (np.abs(diff) > 1e10)
    for i in np.flatnonzero(over).tolist():
        red[i] = [MSG_OVERFLOW]
    for i in np.flatnonzero(huge).tolist():
        red[i] = [MSG_MAX_DIFF]

    # output vs input pairs, all APIs at once
    batches = np.array([b[:3] for b in api_batches(api_key, state)], dtype=np.int64).reshape(-1, 3)
    starts, pends, oends = batches[:, 0], batches[:, 1], batches[:, 2]
    n_in, n_out = pends - starts, oends - pends
    out_rows = _ranges(pends, n_out)
    in_counts = np.repeat(n_in, n_out)
    pair_out = np.repeat(out_rows, in_counts)
    pair_in = _ranges(np.repeat(starts, n_out), in_counts)
    keep = usable[pair_out] & usable[pair_in]
    pair_out, pair_in = pair_out[keep], pair_in[keep]
    if len(pair_out):
        rules = _pair_rules(data, stats, diff, pair_in, pair_out)
        hit_any = np.zeros(len(pair_out), dtype=bool)
        for mask, _, _ in rules:
            hit_any |= mask
        hits = np.flatnonzero(hit_any)
        rows = pair_out[hits].tolist()
        flags = [(mask[hits].tolist(), msg, red if col == RED else yellow) for mask, msg, col in rules]
        for k, row in enumerate(rows):
            for mask, msg, target in flags:
                if mask[k]:
                    target.setdefault(row, []).append(msg)

    # requires_grad consistency
    inconsistent = np.fromiter((not v for v in data[REQ_GRAD_CONSIST]), dtype=bool, count=n)
    for i in np.flatnonzero(inconsistent).tolist():
        yellow.setdefault(i, []).append(MSG_REQ_GRAD)

    for row, msgs in red.items():
        colour[row] = RED
        messages[row] = list(msgs)
    for row, msgs in yellow.items():
        if colour[row] != RED:
            colour[row] = YELLOW
            messages[row] = list(msgs)
    return Highlight(colour, messages)


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + c)`` for every (s, c), without a Python loop."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(np.asarray(starts, dtype=np.int64), counts) + offsets


def _pair_rules(
    data: Mapping[str, Sequence[Any]], stats: bool, diff: np.ndarray, pin: np.ndarray, pout: np.ndarray
) -> list[tuple[np.ndarray, str, int]]:
    """Per-pair masks of the comparison rules, in 8.3.3's rule order."""
    rules: list[tuple[np.ndarray, str, int]] = []
    with np.errstate(invalid="ignore", divide="ignore"):
        din, dout = np.abs(diff[pin]), np.abs(diff[pout])
        skip = (din > dout) | (din <= 1) | (dout <= 1)
        order = np.log10(np.where(dout < 1, 1, dout)) - np.log10(np.where(din < 1, 1, din))
        rules.append((~skip & (order >= 1), MSG_ORDER, YELLOW))
        if stats:
            ok, rel = _percent(data[C.MAX_RELATIVE_ERR])
            out_ok, in_ok = ok[pout], ok[pin]
            r_out, r_in = rel[pout], rel[pin]
            rules.append((out_ok & (r_out > 0.5), MSG_REL_RED, RED))
            rules.append((out_ok & in_ok & (r_out > 0.1) & (r_in < 0.01), MSG_REL_YELLOW, YELLOW))
        else:
            ok, ratio = _nums(data[C.ONE_THOUSANDTH_ERR_RATIO])
            both = ok[pin] & ok[pout]
            a, b = ratio[pin], ratio[pout]
            one_red = both & (a > 0.9) & (b < 0.6)
            rules.append((one_red, MSG_ONE_RED, RED))
            rules.append((both & ~one_red & (a - b > 0.1), MSG_ONE_YELLOW, YELLOW))
            ok, cos = _nums(data[C.COSINE])
            rules.append((ok[pin] & ok[pout] & (cos[pin] - cos[pout] > 0.1), MSG_COSINE, YELLOW))
            # the seed documents give yellow rule 3 to tensor mode too (8.3.3 checks statistics only)
            ok, rel = _nums(data[C.MAX_RELATIVE_ERR])
            rules.append((ok[pout] & ok[pin] & (rel[pout] > 0.1) & (rel[pin] < 0.01), MSG_REL_YELLOW, YELLOW))
    return rules


def apply_messages(err: Sequence[str], hl: Highlight) -> list[str]:
    """``Err_message`` with the highlight messages appended (red rows get only red messages)."""
    err = list(err)
    for row, msgs in hl.messages.items():
        text = err[row]
        for msg in msgs:
            text = msg if text == "" else f"{text}\n{msg}"
        err[row] = text
    return err


__all__ = ["Highlight", "api_batches", "find_rows", "apply_messages", "NONE", "RED", "YELLOW"]
