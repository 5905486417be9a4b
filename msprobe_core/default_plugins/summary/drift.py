"""The first row whose values differ at all, and whether a later step's difference was carried into it.

The first divergence (:mod:`msprobe_core.default_plugins.summary.divergence`) is the first row past a threshold. In a step after the
first, the weights the previous step's update moved differ before anything the step computes does, often by far
less than a threshold (1e-5 relative): the first row past one is then a call somewhere after them, named as if the
fault were there. An L0/mix dump shows such weights as ``parameters`` rows (:func:`~msprobe_core.default_plugins.summary.divergence.
carried_into`); an L1 dump has none: a weight is an *input* of the call that uses it.

:class:`DriftScan` finds, in execution order, the first matched row whose values differ at all (a statistic or
element that is not equal). When that row is an input of a forward call, nothing the step computed before it
differs, so the difference came into the step from outside it: in a later step, the state the previous step
left (its update of the weights, an optimizer's state). The steps view then names that call as the step's first
divergence and says the difference was carried from the previous step (:mod:`msprobe_core.default_plugins.summary.steps_view`).
"""

from __future__ import annotations

import math
from typing import Any

from msprobe_core.plugin import MODE_STATISTICS, MODE_TENSOR
from msprobe_core.plugin import result_columns as C

from .chunks import head_first
from .divergence import Divergence
from .views import ResultView, node_of, view_grammar

#: the columns whose non-zero value means a row's two sides differ, per mode (the first one present spells the reason)
_DIFF_COLUMNS = {
    MODE_STATISTICS: (C.NORM_RELATIVE_ERR, C.L2NORM_DIFF, C.MAX_DIFF, C.MIN_DIFF, C.MEAN_DIFF),
    MODE_TENSOR: (C.MAX_ABS_ERR,),
}


def _differs(value: float | None) -> bool:
    return value is not None and not math.isnan(value) and value != 0


class DriftScan:
    """The first matched row, in execution order, whose values differ at all (``found``), over a result fed chunk
    by chunk as :class:`~msprobe_core.default_plugins.summary.divergence.DivergenceScan` is. Picklable (a rank's partial carries it)."""

    __slots__ = ("found",)

    def __init__(self) -> None:
        self.found: Divergence | None = None

    def __getstate__(self) -> tuple[Any, ...]:
        return (self.found,)  # a tuple: a state of None would skip __setstate__ and leave the slot unset

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        (self.found,) = state

    def feed(self, view: ResultView, offset: int = 0) -> None:
        """Scan the rows of ``view`` (a chunk), position ``offset`` onwards (its head first: see
        :func:`~msprobe_core.default_plugins.summary.chunks.head_first`)."""
        for part, at in head_first(view):
            self._scan(part, offset + at)

    def _scan(self, view: ResultView, offset: int) -> None:
        columns = _DIFF_COLUMNS.get(view.mode)
        if self.found is not None or not len(view) or columns is None:
            return
        nums = [(col, view.numbers(col)) for col in columns]
        nums = [(col, values) for col, values in nums if values is not None]
        if not nums:
            return
        unmatched = view.unmatched()
        names = view.names
        for pos, i in enumerate(view.order(), start=offset):
            if unmatched[i]:
                continue
            hit = next(((col, values[i]) for col, values in nums if _differs(values[i])), None)
            if hit is None:
                continue
            col = nums[0][0]  # the first column of the mode spells the difference
            cell = view.cells[col][i].strip() if col in view.cells else ""
            reason = f"{col} {cell}" if cell else f"{hit[0]} {hit[1]:.6g}"
            bench = view.column(C.BENCH_NAME)
            self.found = Divergence(node_of(names[i], view_grammar(view))[0], names[i], view.label, pos, reason,
                                    source="drift", golden=bench[i] if bench is not None else "")
            return

    def absorb(self, later: DriftScan) -> None:
        """Take ``later``, the scan of the rows right after those fed here, as if they had been fed here."""
        if self.found is None:
            self.found = later.found


def carried_input(d: Divergence | None) -> bool:
    """Whether the first differing row ``d`` is an input of a forward call (or a call's parameters): nothing the
    result computed before it differs, so its difference came from outside (in a later step: the previous step)."""
    if d is None:
        return False
    rest = d.row[len(d.node):] if d.row.startswith(d.node) else ""
    forward = ".forward" in d.node and ".backward" not in d.node
    return forward and (rest.startswith(".input.") or rest.startswith(".parameters."))
