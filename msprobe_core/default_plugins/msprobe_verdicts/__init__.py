"""The default plugin ``msprobe_verdicts``: the verdict rule ``msprobe``, the ``Result`` and ``Err_message`` of
the three dump modes as msprobe 26.2.0 judges rows (:mod:`.rules`; its messages, :mod:`.messages`,
the summary reads too, and its differences of form, :mod:`.forms`, the summary and ``-da``).

It registers the rule through ``msprobe_register_verdicts``, as a third party's would (the classic plugin's rule
``classic`` replaces it by that name). Turned off (``-p no:msprobe_verdicts``), a compare still writes its table:
its ``Result`` and ``Err_message`` cells say ``N/A``, the run warns once that no rule judged the rows, and the
summary counts those rows as not judged, never as passing.
"""

from __future__ import annotations

from typing import Any

from msprobe_core.plugin import Register, VerdictSpec, hookimpl


def _msprobe_verdicts(ctx: Any) -> dict[str, list[str]]:
    # the rules (numpy) are imported when rows are judged, not when the plugins register (which may come
    # before the CLI's interrupt handling is in place)
    from .rules import msprobe_verdicts

    return msprobe_verdicts(ctx)


@hookimpl
def msprobe_register_verdicts(register: Register[VerdictSpec]) -> None:
    """``Result`` and ``Err_message`` of the three dump modes, as msprobe 26.2.0 judges rows (``msprobe``)."""
    register(VerdictSpec("msprobe", _msprobe_verdicts))
