"""Why a worst row is listed with its verdict, and its metric value as people and programs read it.

A worst row shows the rule behind its verdict: its ``Err_message`` when it has one (the sentences
msprobe's rules wrote, see the default plugin ``msprobe_verdicts``), else the rule that let it pass or
the cell that made it fail. Its value is the table's cell (kept as the CSV spells it), the number
that cell holds (for ``--json-summary``) and that number to 4 significant digits (console, page).
"""

from __future__ import annotations

import math

from msprobe_core.default_plugins.msprobe_verdicts import messages as verdict_messages
from msprobe_core.plugin import MODE_STATISTICS, MODE_TENSOR
from msprobe_core.plugin import result_columns as C

from .divergence import plain_messages
from .views import ResultView, err_messages, levelled_verdict

#: what msprobe's own message gets wrong, said after it (the verdict itself is msprobe's, kept)
_NOTES = {
    verdict_messages.MSG_ONE_THOUSANDTH: "msprobe tests output < 0.1",
    # a call's warning is written on its first output row, whatever that row's own value (0 included)
    verdict_messages.MSG_REL_WARN: "over the call's outputs, marked on its first",
    verdict_messages.MSG_COSINE_WARN: "over the call's outputs, marked on its first",
}

#: the rule that let a row pass, per mode of msprobe's rules, for input (False) and output (True) rows
_PASS_RULES = {
    (MODE_STATISTICS, False): "no rule flags it: NormRelativeErr is judged on outputs only",
    (MODE_STATISTICS, True): "no rule flags it: NormRelativeErr fails an output only above 50% "
                             "with every input of its call below 10%",
    (MODE_TENSOR, False): "no rule flags it: inputs are judged on dtype, shape, requires_grad and scalars only",
    (MODE_TENSOR, True): "no rule flags it: an output fails on One Thousandth Err Ratio < 0.1 "
                         "(inputs > 0.9) or a Cosine 0.1 below its inputs'",
}


#: the metric cells said beside a plugin's verdict column that failed a row (what such rules read: the kernel
#: plugin's ``Accuracy Reached or Not`` is Cosine and MaxAbsErr)
_PLUGIN_VERDICT_METRICS = (C.COSINE, C.MAX_ABS_ERR)


def row_reason(view: ResultView, i: int) -> str:
    """Why row ``i`` has its verdict: its messages, else the rule that let it pass or the cell that failed it.

    Said after the verdict (``error  <reason>``), so it does not repeat it: a message's own level prefix
    is dropped (one of another level keeps it) and so is its final full stop.
    """
    verdict = view.verdicts()[i]
    err = view.column(C.ERR_MESSAGE)
    messages = err_messages(err[i]) if err is not None else []
    if messages:
        said = plain_messages(messages, verdict)
        notes = [_NOTES[m.strip()] for m in messages if m.strip() in _NOTES]
        return "; ".join(said) + (f" ({'; '.join(notes)})" if notes else "")
    own = levelled_verdict(view)  # a plugin's verdict column, where the table has no Result
    if own is not None and view.column(C.RESULT) is None:
        said = f"{own} is {view.cells[own][i].strip() or 'empty'}"
        if verdict == "pass":
            return said
        # the plugin's rule is its own; the metrics it reads are the table's: name their cells
        metrics = [f"{col} {people_text(view.cells[col][i])}" for col in _PLUGIN_VERDICT_METRICS
                   if col in view.cells and view.cells[col][i].strip()]
        return f"{said} ({', '.join(metrics)})" if metrics else said
    res = view.column(C.RESULT)
    if verdict != "pass":
        return f"its Result cell reads {res[i].strip()!r}, with no message" if res is not None else "no message"
    if res is not None:
        rule = _PASS_RULES.get((view.mode, ".output." in view.names[i]))
        if rule is not None:
            return rule
    return "no rule flags it"


def cell_number(cell: str) -> tuple[float | None, str]:
    """(the number a metric cell holds, its unit): ``0.35%`` is ``(0.35, "%")``, ``1.0`` is ``(1.0, "")``;
    no number (``N/A``, ``unsupported``, an infinite or NaN value: JSON has none) is ``None``."""
    s = cell.strip()
    unit = "%" if s.endswith("%") else ""
    try:
        x = float(s[:-1] if unit else s)
    except ValueError:
        return None, unit
    return (x if math.isfinite(x) else None), unit


def people_text(cell: str) -> str:
    """A metric cell to 4 significant digits (``0.3503%``, ``1.000``, ``3.142e-05``); other text unchanged."""
    s = cell.strip()
    unit = "%" if s.endswith("%") else ""
    try:
        x = float(s[:-1] if unit else s)
    except ValueError:
        return s
    if not math.isfinite(x):
        return s
    return ("0" if x == 0 else f"{x:#.4g}") + unit
