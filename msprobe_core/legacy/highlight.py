"""Red/yellow row highlighting of the classic result (spec compare-legacy.md §7).

The rules are msprobe 8.3.3's; the evaluation is not: instead of looping over pandas
rows and openpyxl cells, each rule is evaluated at once over numpy arrays of every
(output row, input row) pair of every API, so a million-row result is coloured in
seconds. Only the rows that a rule hits are visited in Python, to attach messages in
8.3.3's order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..model import MODE_MD5, MODE_STATISTICS
from .table import ERR, REQ_GRAD_CONSIST, LegacyTable

NONE, RED, YELLOW = 0, 1, 2
OVERFLOW = frozenset({"nan\t", "inf\t", "-inf\t", "nan", "inf", "-inf"})
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
    """
    batches: list[list[int]] = []
    no_fwd_bwd: dict[str, bool] = {}
    current = None
    for i, (key, st) in enumerate(zip(api_key, state)):
        if current is not None:
            name = current[4]
            joins = key == name
            if not joins:
                plain = no_fwd_bwd.get(key)
                if plain is None:
                    plain = no_fwd_bwd[key] = _FWD_BWD.search(key) is None
                joins = plain and key in name
            if joins:
                if st == "input" or st == "kwargs":
                    current[1] += 1
                    current[2] += 1
                elif st == "parameters":
                    current[1] += 1
                    current[2] += 1
                elif st == "output":
                    current[2] += 1
                current[3] += 1
                continue
        current = [i, i + 1, i + 1, i + 1, key]
        batches.append(current)
    return [(b[0], b[1], b[2], b[3]) for b in batches]


def _is_num(v: Any) -> bool:
    return isinstance(v, (float, int, np.floating, np.integer)) and not isinstance(v, bool)


def _nums(values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(is numeric, value as float with NaN elsewhere) per cell."""
    n = len(values)
    ok = np.zeros(n, dtype=bool)
    out = np.full(n, np.nan)
    for i, v in enumerate(values):
        if _is_num(v):
            ok[i] = True
            out[i] = float(v)
    return ok, out


def _percent(values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """8.3.3 ``get_number`` of MaxRelativeErr: ``'x%'`` → x / 100, numbers kept."""
    n = len(values)
    ok = np.zeros(n, dtype=bool)
    out = np.full(n, np.nan)
    for i, v in enumerate(values):
        if isinstance(v, str) and v.endswith("%"):
            try:
                out[i] = float(v[:-1]) / 100
                ok[i] = True
            except ValueError:
                pass
        elif _is_num(v):
            ok[i] = True
            out[i] = float(v)
    return ok, out


def find_rows(table: LegacyTable) -> Highlight:
    """Evaluate every rule of §7.2 over ``table``; nothing is changed in the table."""
    n = len(table)
    colour = np.zeros(n, dtype=np.int8)
    messages: dict[int, list[str]] = {}
    if table.mode == MODE_MD5 or n == 0:
        return Highlight(colour, messages)
    data = table.data
    stats = table.mode == MODE_STATISTICS
    diff_col = "Max diff" if stats else "MaxAbsErr"
    diff_ok, diff = _nums(data[diff_col])
    nmax_ok, _ = _nums(data["NPU max"])
    bmax_ok, _ = _nums(data["Bench max"])
    usable = diff_ok & nmax_ok & bmax_ok

    red: dict[int, list[str]] = {}
    yellow: dict[int, list[str]] = {}

    # single-row rule: overflow / huge max diff
    npu_max, npu_min = data["NPU max"], data["NPU min"]
    for i in range(n):
        if str(npu_max[i]) in OVERFLOW or str(npu_min[i]) in OVERFLOW:
            red.setdefault(i, []).append(MSG_OVERFLOW)
        elif diff_ok[i] and abs(diff[i]) > 1e10:
            red.setdefault(i, []).append(MSG_MAX_DIFF)

    # output vs input pairs, all APIs at once
    batches = np.array([b[:3] for b in api_batches(table.api_key, table.state)], dtype=np.int64).reshape(-1, 3)
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
        for p in np.flatnonzero(hit_any).tolist():
            row = int(pair_out[p])
            for mask, msg, col in rules:
                if mask[p]:
                    (red if col == RED else yellow).setdefault(row, []).append(msg)

    # requires_grad consistency
    for i, consistent in enumerate(data[REQ_GRAD_CONSIST]):
        if not consistent:
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
    data: dict[str, list[Any]], stats: bool, diff: np.ndarray, pin: np.ndarray, pout: np.ndarray
) -> list[tuple[np.ndarray, str, int]]:
    """Per-pair masks of the comparison rules, in 8.3.3's rule order."""
    rules: list[tuple[np.ndarray, str, int]] = []
    with np.errstate(invalid="ignore", divide="ignore"):
        din, dout = np.abs(diff[pin]), np.abs(diff[pout])
        skip = (din > dout) | (din <= 1) | (dout <= 1)
        order = np.log10(np.where(dout < 1, 1, dout)) - np.log10(np.where(din < 1, 1, din))
        rules.append((~skip & (order >= 1), MSG_ORDER, YELLOW))
        if stats:
            ok, rel = _percent(data["MaxRelativeErr"])
            out_ok, in_ok = ok[pout], ok[pin]
            r_out, r_in = rel[pout], rel[pin]
            rules.append((out_ok & (r_out > 0.5), MSG_REL_RED, RED))
            rules.append((out_ok & in_ok & (r_out > 0.1) & (r_in < 0.01), MSG_REL_YELLOW, YELLOW))
        else:
            ok, ratio = _nums(data["One Thousandth Err Ratio"])
            both = ok[pin] & ok[pout]
            a, b = ratio[pin], ratio[pout]
            one_red = both & (a > 0.9) & (b < 0.6)
            rules.append((one_red, MSG_ONE_RED, RED))
            rules.append((both & ~one_red & (a - b > 0.1), MSG_ONE_YELLOW, YELLOW))
            ok, cos = _nums(data["Cosine"])
            rules.append((ok[pin] & ok[pout] & (cos[pin] - cos[pout] > 0.1), MSG_COSINE, YELLOW))
    return rules


def apply_messages(table: LegacyTable, hl: Highlight) -> None:
    """Append the highlight messages to ``Err_message`` (red rows get only red messages)."""
    if table.mode == MODE_MD5 or ERR not in table.data:
        return
    err = table.data[ERR]
    for row, msgs in hl.messages.items():
        text = err[row]
        for msg in msgs:
            text = msg if text == "" else f"{text}\n{msg}"
        err[row] = text


__all__ = ["Highlight", "api_batches", "find_rows", "apply_messages", "NONE", "RED", "YELLOW"]
