"""The default plugin ``hierarchy``: where in the model a call is, from what a ``dump.json`` dump keeps beside it.

It registers two :class:`~msprobe_core.plugin.HierarchySpec`\\ s (:mod:`.sources`): ``construct.json`` (the
enclosing modules/cells of each call) and ``stack.json`` (the user's calling code, for a dump without modules).
The summary's first-divergence paths, the report's model tree and the console's module answers ask them; a
plugin's own sources (the kernel plugin's scopes) are asked first.

The compare reads the target's ``stack.json`` for the result's stack column whatever plugins are loaded; this
plugin keeps what it read (``msprobe_stack_read``) so that a path reads no file twice, and lets it go when the run
is done (``msprobe_run_released``).

Turned off (``-p no:hierarchy``), a compare writes the same result files; a first divergence's path is the node
alone, with a note that says why, and the report's tree has no modules.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from msprobe_core.plugin import hookimpl

if TYPE_CHECKING:
    from msprobe_core.plugin import HierarchySpec, Register


@hookimpl
def msprobe_register_hierarchies(register: Register[HierarchySpec]) -> None:
    """``construct.json`` (the enclosing module/cell of each call) and ``stack.json`` (the calling code)."""
    from .sources import HIERARCHIES

    for spec in HIERARCHIES:
        register(spec)


@hookimpl
def msprobe_stack_read(path: Path, stack: Any, key_hash: Any) -> None:
    """Keep what the compare read of a target's ``stack.json`` for the first divergence's path."""
    from .sources import remember_stack

    remember_stack(path, stack, key_hash)


@hookimpl
def msprobe_run_released() -> None:
    """Let go of the ``stack.json`` contents kept for the run's paths."""
    from .sources import forget_stacks

    forget_stacks()
