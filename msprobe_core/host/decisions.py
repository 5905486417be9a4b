"""What the host decides about the specs it holds: the order of a chain of specs that declare ``before``/``after``
(the mappers, the verdict rules), and which known plugin a directory nobody claimed belongs to."""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError


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


def unloaded_layout(path: str | None, loaded: Collection[str]) -> InputError | None:
    """The refusal of a directory no loaded plugin understood whose layout a known plugin claims that is not
    among ``loaded`` (a dump whose plugin is not installed): it names the plugin and how to install it."""
    from ..known_plugins import layout_of, missing_hint

    found = layout_of(Path(path)) if path and Path(path).is_dir() else None
    if found is None:
        return None
    plugin, layout = found
    if plugin.distribution in loaded:  # loaded, yet it left the directory: not the layout after all
        return None
    return InputError(f"this is {layout.what}, which no loaded plugin compares ({missing_hint(plugin, loaded)})",
                      path=path)
