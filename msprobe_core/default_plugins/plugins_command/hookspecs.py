"""The hook the default plugin ``plugins_command`` calls and declares (``msprobe_add_hookspecs``): what ``msprobe
plugins`` lists besides the plugins registered (the default plugin ``known_plugins`` answers).

An implementation is marked ``@hookimpl(optionalhook=True)``: with ``msprobe plugins`` turned off the hook is not
declared.
"""

from __future__ import annotations

from typing import Any

from msprobe_core.plugin import hookspec


@hookspec(firstresult=True)
def msprobe_list_plugins(described: list[dict[str, Any]], loaded: set[str]) -> list[dict[str, Any]] | None:
    """What ``msprobe plugins`` lists: ``described`` (:func:`.listing.describe_plugins`), each
    entry with ``gives`` (what it gives a user, or ``None``) and ``loaded``, then any plugin the user may want that
    is not loaded (``loaded`` false, ``gives``, ``install``: its install command, ``hint``: what to do);
    ``None``: ``described`` as it is. ``loaded``: the normalised names of the distributions whose plugins the host
    loaded. Declared by the default plugin ``plugins_command``.

    .. versionadded:: 0.1
    """
