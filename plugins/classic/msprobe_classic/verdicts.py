"""The classic verdicts, as verdict rules of the core's verdict stage (spec compare-legacy.md §6-§7).

* ``classic`` (in place of the core's ``msprobe`` rule): ``Accuracy Reached or Not`` in tensor
  mode (from Cosine and MaxAbsErr), ``Result``/``Err_message`` in statistics mode (``Warning``
  where a diff is large against its statistic), ``Result`` ``pass``/``Different`` in md5 mode;
* ``classic-highlight`` (``-hl``, the default; dump.json results): the red and yellow rules,
  whose sentences are appended to ``Err_message`` and whose colour per row is left in the
  result's findings (:class:`~msprobe_classic.settings.ClassicFindings`) for the workbook writer.
"""

from __future__ import annotations

from typing import Any

from msprobe_core.plugin import MODE_MD5, MODE_TENSOR, NA
from msprobe_core.plugin import result_columns as C

from .settings import findings_of
from .table import (
    ACCURACY,
    DIFFERENT,
    ERR,
    NEED_CHECK,
    NO_BENCH,
    PASS,
    REQ_GRAD_CONSIST,
    REQ_GRAD_MSG,
    RESULT,
    WARNING,
)


def classic_verdicts(ctx: Any) -> dict[str, list[Any]]:
    """The ``classic`` rule: 8.3.3's verdict columns of the table's mode."""
    data = ctx.columns
    matched = [j >= 0 for j in ctx.match.golden]
    if ctx.mode == MODE_TENSOR:
        from .tensor import accuracy

        return {ACCURACY: [accuracy(c, m) for c, m in zip(data[C.COSINE], data[C.MAX_ABS_ERR])]}
    if ctx.mode == MODE_MD5:
        a, b = data[C.NPU_MD5], data[C.BENCH_MD5]
        return {RESULT: [PASS if x == y else (DIFFERENT if m else NA) for x, y, m in zip(a, b, matched)]}
    warn = findings_of(ctx.meta).magnitude_warnings or [False] * len(matched)
    result, err = [], []
    for k, consistent in enumerate(data[REQ_GRAD_CONSIST]):
        if not matched[k]:
            result.append(NA)
            msg = NO_BENCH
        elif warn[k]:
            result.append(WARNING)
            msg = NEED_CHECK
        else:
            result.append("")
            msg = ""
        if not consistent:
            msg += REQ_GRAD_MSG
        err.append(msg)
    return {RESULT: result, ERR: err}


def highlight_rows(ctx: Any) -> dict[str, list[Any]]:
    """The ``classic-highlight`` rule: colour rows and append the reasons to ``Err_message`` (dump.json only)."""
    if ctx.target.kind != "dump":
        return {}
    from .highlight import apply_messages, find_rows

    target, rows = ctx.target, ctx.match.target
    apis, row_api = target.apis, target.row_api
    api_key = [apis[row_api[i]].key for i in rows]
    state = [target.state[i] for i in rows]
    hl = find_rows(ctx.mode, ctx.columns, api_key, state)
    findings_of(ctx.meta).fills = hl.colour
    if ctx.mode == MODE_MD5:  # no Err_message in md5 mode (and no rule colours a row)
        return {}
    return {ERR: apply_messages(ctx.columns[ERR], hl)}
