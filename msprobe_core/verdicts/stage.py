"""The verdict stage: the verdict rules of a table's mode, in chain order, into its columns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import result_columns as C
from ..host.specs import VerdictContext

if TYPE_CHECKING:
    from ..host.registry import PluginHost


#: the column verdict columns new to a table are placed after (msprobe's own verdicts sit there)
VERDICTS_AFTER = C.REQUIRES_GRAD_CONSISTENT


def judge_rows(names: list[str], columns: dict[str, Any], ctx: VerdictContext, host: PluginHost) -> list[str]:
    """The verdict stage: run the verdict rules of the table's mode into ``columns``; returns the column order.

    ``names`` is the order the metric stage gives; the columns the rules give that ``columns`` did not
    hold follow :data:`VERDICTS_AFTER` (or end a table without it) in the order the rules give them, and
    a name of ``names`` that no stage filled (a verdict column whose rule did not run) is left out.
    """
    new: list[str] = []
    for rule in host.verdicts_for(ctx.mode, ctx.options):
        for name, cells in rule.judge(ctx).items():
            if name not in columns and name not in new:
                new.append(name)
            columns[name] = cells
    placed = [n for n in names if n in columns and n not in new]
    at = placed.index(VERDICTS_AFTER) + 1 if VERDICTS_AFTER in placed else len(placed)
    return placed[:at] + new + placed[at:]


