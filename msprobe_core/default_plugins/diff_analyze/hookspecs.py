"""The hook the default plugin ``diff_analyze`` declares (``msprobe_add_hookspecs``) and reads: the communication
ops of the first-divergence analysis, a registry hook the host collects as it collects the core's.

An implementation is marked ``@hookimpl(optionalhook=True)``: with this plugin turned off the hook is not declared,
and there is no ``-da`` to follow communication ops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from msprobe_core.plugin import hookspec

if TYPE_CHECKING:
    from msprobe_core.plugin import CommOpSpec, Register


@hookspec
def msprobe_register_comm_ops(register: Register[CommOpSpec]) -> None:
    """Name communication ops for the first-divergence analysis (``-da``): ``register(CommOpSpec(...))``.

    ``CommOpSpec(name, kind)`` (see :class:`msprobe_core.plugin.CommOpSpec`): ``kind(prefix)`` gets a call
    key without call number and direction (``Distributed.all_reduce``) and returns ``"collective"``,
    ``"send"``, ``"recv"`` or ``None``. Communication ops connect ranks: a divergence on one rank
    reaches the others through them. Installed plugins' specs are asked first; the default plugin
    ``diff_analyze``'s rule knows the usual op names under any API family whose name mentions ``distributed`` or
    ``comm``. Declared by the default plugin ``diff_analyze``; the host collects it when the plugins load
    (``host.registered``), with the checks of the core's registry hooks.

    .. versionadded:: 0.1
    """
