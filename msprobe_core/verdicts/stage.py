"""The verdict stage: the verdict rules of a table's mode, in chain order, into its columns.

Where no rule runs because the rule that would judge the table is a turned-off default plugin's (``-p
no:msprobe_verdicts``), the table keeps its verdict columns: every cell ``N/A``, one warning saying whose rule is
off, and :attr:`~msprobe_core.model.ResultNotes.not_judged` set (the summary counts those rows as not judged).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .. import result_columns as C
from ..host.defaults import turned_off_note, turned_off_specs
from ..host.specs import VerdictContext
from ..model import NA

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
    rules = host.verdicts_for(ctx.mode, ctx.options)
    if not rules:
        _not_judged(names, columns, ctx, host)
    for rule in rules:
        for name, cells in rule.judge(ctx).items():
            if name not in columns and name not in new:
                new.append(name)
            columns[name] = cells
    placed = [n for n in names if n in columns and n not in new]
    at = placed.index(VERDICTS_AFTER) + 1 if VERDICTS_AFTER in placed else len(placed)
    return placed[:at] + new + placed[at:]




def _not_judged(names: list[str], columns: dict[str, Any], ctx: VerdictContext, host: PluginHost) -> None:
    """No rule judges the table: where a turned-off default plugin's rule would have, its verdict columns say
    ``N/A``, the run warns once per table and the result is noted as not judged."""
    declared = turned_off_specs("msprobe_register_verdicts", sorted(host.disabled), named=True)
    off = next((spec.plugin for spec in declared if ctx.mode in spec.modes and spec.applies(ctx.options)), None)
    if off is None:
        return
    logging.getLogger("msprobe").warning("no verdict rule judged the rows of this %s table: their verdict cells say "
                                         "%s (%s)", ctx.mode, NA, turned_off_note(off))
    rows = len(ctx.match.target)
    verdicts = set(host.columns.names(mode=ctx.mode, kind=C.VERDICT))
    columns.update({name: [NA] * rows for name in names if name in verdicts and name not in columns})
    ctx.meta.not_judged = True
