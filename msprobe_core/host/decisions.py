"""What the host decides about the specs it holds: the order of a chain of specs that declare ``before``/``after``
(the mappers, the verdict rules)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any


def chain_mappers(mappers: Sequence[Any], absent: Sequence[Any] = ()) -> list[Any]:
    """The mappers (or verdict rules) in chain order: every ``before``/``after`` they declare holds; otherwise
    registration order.

    ``absent``: the mappers of default plugins that are turned off, placed in the order as if they were there
    (and returned among the others: the caller drops them), so that ``layer-mapping`` ahead of ``data-mapping``
    ahead of ``fuzzy`` still puts ``layer-mapping`` ahead of ``fuzzy`` without ``data-mapping``. Other names no
    mapper has are ignored; a cycle is broken in registration order, with a warning.
    """
    mappers = [*mappers, *absent]
    names = {m.name for m in mappers}
    ahead: dict[str, set[str]] = {m.name: set() for m in mappers}  # mapper -> the mappers that must come first
    for m in mappers:
        for other in m.before:
            if other in names:
                ahead[other].add(m.name)
        for other in m.after:
            if other in names:
                ahead[m.name].add(other)
    ordered: list[Any] = []
    left = list(mappers)
    while left:
        placed = {m.name for m in ordered}
        ready = next((m for m in left if ahead[m.name] <= placed), None)
        if ready is None:
            ready = left[0]
            logging.getLogger("msprobe").warning("mapper order: a cycle among %s; '%s' goes first",
                                                 ", ".join(m.name for m in left), ready.name)
        ordered.append(ready)
        left.remove(ready)
    return ordered

