"""Which calls are communication ops, and how they connect ranks.

A call is a communication op when some registered :class:`CommOpSpec` says so.
The built-in spec knows the usual collective and point-to-point op names and
recognises them under any API family whose name mentions ``distributed`` or
``comm`` (``<Family>.all_reduce``, ``<family>.comm_func.all_gather`` …);
plugins register more through the ``msprobe_register_comm_ops`` hook.

Two calls on different ranks are the same collective event when they have the
same key (the k-th ``all_reduce`` of every rank) and, where the dump records
it, the same process group. A send and a receive are the same event when the
k-th send from rank a to rank b meets the k-th receive on b from a.
"""

from __future__ import annotations

import re

from msprobe_core.plugin import CommOpSpec

#: Collective ops: data flows between every participant.
COLLECTIVE_OPS: frozenset[str] = frozenset(
    {
        "broadcast", "all_reduce", "reduce", "all_gather", "gather", "scatter", "reduce_scatter",
        "_reduce_scatter_base", "_all_gather_base", "all_to_all_single", "all_to_all", "all_gather_into_tensor",
        "reduce_scatter_tensor", "all_gather_object", "broadcast_object_list", "batch_isend_irecv",
    }
)
#: Point-to-point sends (data leaves this rank for the ``dst`` peer).
SEND_OPS: frozenset[str] = frozenset({"send", "isend", "send_object_list"})
#: Point-to-point receives (data arrives from the ``src`` peer).
RECV_OPS: frozenset[str] = frozenset({"recv", "irecv", "recv_object_list"})

_FAMILY_HINT = re.compile(r"distributed|comm", re.IGNORECASE)


def default_kind(prefix: str) -> str | None:
    """The built-in rule: a known op name under a ``*distributed*`` / ``*comm*`` API family."""
    family, _, op = prefix.rpartition(".")
    if not family or not _FAMILY_HINT.search(family):
        return None
    if op in COLLECTIVE_OPS:
        return "collective"
    if op in SEND_OPS:
        return "send"
    if op in RECV_OPS:
        return "recv"
    return None


DEFAULT_SPEC = CommOpSpec("builtin", default_kind)


def comm_kind(prefix: str, specs: list[CommOpSpec] | tuple[CommOpSpec, ...]) -> str | None:
    """What kind of communication op ``prefix`` is under the first spec that knows it (``None``: compute)."""
    for spec in specs:
        kind = spec.kind(prefix)
        if kind:
            return kind
    return None


def parse_ranks(value: object) -> tuple[int, ...] | None:
    """A process group's ranks from a dumped value like ``"[0, 1]"`` (``None`` when it is not one)."""
    if isinstance(value, (list, tuple)):
        items = value
    elif isinstance(value, str) and value.strip().startswith("["):
        items = [x for x in value.strip()[1:-1].split(",") if x.strip()]
    else:
        return None
    try:
        return tuple(sorted(int(str(x).strip()) for x in items))
    except ValueError:
        return None


def parse_peer(value: object) -> int | None:
    """A peer rank from a dumped ``src``/``dst`` value (``None`` when absent or not a number)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(float(str(value)))
    except ValueError:
        return None
