"""The shapes of ``dump.json`` that msprobe's dumpers wrote, and an account of what a loader did not understand.

Every mindstudio-probe dumper from 1.0.1 to 26.2.0 writes the same kind of document, but the
members and fields changed over the versions (``docs/dump_versions.md`` lists them by version).
The loader maps each old shape onto the rows the engine knows, by one general rule per shape:

* backward data under ``grad_output``/``grad_input`` (1.0.1) is read as the backward's ``input``/``output``:
  1.0.1 named them after the hook's arguments (``grad_input``, the gradients of the forward inputs, is
  what the backward call puts out), every later dumper after the backward call, as its tensor files
  (``….backward.output.N.pt`` for ``grad_input``) already did in 1.0.1 (:data:`ARGUMENT_MEMBERS`);
* members and fields that carry no argument data (``is_recompute``, ``Min_except_inf_nan``,
  ``layout``…) are understood and not compared, as every msprobe compare leaves them
  (:data:`ENTRY_METADATA`, :data:`LEAF_FIELDS`);
* an ``md5`` that is a number or empty (the xor checksum of a 0-d tensor, 26.0–26.2) is read as
  msprobe's compare reads it: an empty one falls back to the crc32 text, a number is spelled as
  Python prints it.

Anything else, a ``data`` key that names no forward/backward call, an entry member or a leaf field
outside these lists, is never dropped silently: the loader records it in an :class:`Unrecognised`
account (kept in ``DumpTable.unrecognised``), the engine names it on the console, and the
run's summary (console and ``--json-summary``) carries it under ``unrecognised``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..model import STATE_INPUT, STATE_OUTPUT, STATE_PARAMETERS

#: the members of an API entry that hold arguments, in the order their rows come: (JSON key, row state, name suffix)
ARGUMENT_MEMBERS: tuple[tuple[str, str, str], ...] = (
    ("input_args", STATE_INPUT, "input"),
    ("input_kwargs", STATE_INPUT, "input"),
    ("input", STATE_INPUT, "input"),
    ("grad_output", STATE_INPUT, "input"),  # mindstudio-probe 1.0.1 backward entries: the backward's input
    ("parameters", STATE_PARAMETERS, "parameters"),
    ("output", STATE_OUTPUT, "output"),
    ("grad_input", STATE_OUTPUT, "output"),  # mindstudio-probe 1.0.1 backward entries: the backward's output
)
#: the 1.0.1 members among them
OLD_BACKWARD_MEMBERS = frozenset({"grad_input", "grad_output"})

#: the argument members of the newest dumpers (the C scanner reads these and declines any other but the metadata)
CURRENT_MEMBERS = ("input_args", "input_kwargs", "input", "parameters", "output")

#: entry members that hold no argument data: understood, compared by no msprobe version
ENTRY_METADATA = frozenset({"is_recompute"})

#: fields of an argument record (a "leaf") the rows are made of
LEAF_DATA_FIELDS = frozenset({
    "type", "dtype", "shape", "Max", "Min", "Mean", "Norm", "requires_grad", "md5", "data_name", "value",
    "group_ranks",
})
#: fields of an argument record that no msprobe compare reads: understood, not compared
LEAF_METADATA = frozenset({
    "Max_except_inf_nan", "Min_except_inf_nan",  # statistics without inf/nan, 1.0.x-1.3.0
    "tensor_stat", "tensor_stat_index",  # placeholders a dumper stopped half way may leave
    "group_id",  # process groups and P2P ops
    "layout", "hsdp_shard_size",  # MindSpore tensors, 26.x
    "device_mesh", "placements",  # PyTorch DTensors, 8.3+
    "format",  # torch.memory_format arguments
})
#: every field an argument record may have
LEAF_FIELDS = LEAF_DATA_FIELDS | LEAF_METADATA
#: the members of a ``torch.distributed.P2POp`` record (its tensor is the row)
P2P_FIELDS = frozenset({"class_type", "tensor", "op", "peer", "tag", "group_id"})

#: what each kind of record means, for the console
KIND_TEXT = {
    "data key": "data keys that name no forward/backward/parameters_grad call (not compared)",
    "entry member": "members of API entries that hold no known argument data (not compared)",
    "leaf field": "fields of argument records that the loader does not know (not compared)",
}

#: at most this many names of one kind are kept per file (the count goes on)
MAX_NAMES = 20

log = logging.getLogger("msprobe")


class Unrecognised:
    """What one file held that the loader did not understand: per (kind, name) a count and the first place."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], list[Any]] = {}
        self._kinds: dict[str, int] = {}

    def add(self, kind: str, name: str, where: str) -> None:
        """Count one ``name`` of ``kind`` (see :data:`KIND_TEXT`), met first at ``where``."""
        item = self._seen.get((kind, name))
        if item is not None:
            item[0] += 1
            return
        n = self._kinds.get(kind, 0)
        self._kinds[kind] = n + 1
        if n < MAX_NAMES:
            self._seen[(kind, name)] = [1, where]
        else:
            self._seen.setdefault((kind, "…"), [0, where])[0] += 1

    def __bool__(self) -> bool:
        return bool(self._seen)

    def records(self, source: str) -> list[dict[str, Any]]:
        """The account as JSON-ready records: ``{"file", "kind", "name", "count", "first"}``."""
        return [
            {"file": source, "kind": kind, "name": name, "count": count, "first": where}
            for (kind, name), (count, where) in self._seen.items()
        ]


def records_of(table: Any) -> list[dict[str, Any]]:
    """The unrecognised-shape records a loader left on ``table`` (none for a fully understood file)."""
    return list(getattr(table, "unrecognised", None) or ())


def note_dialect(table: Any, feature: str) -> None:
    """Record that ``table``'s file uses a shape the loader maps (1.0.1's ``grad_input``, numeric md5...)."""
    features = table.dialects
    if feature not in features:
        features.append(feature)


def warn_unrecognised(records: Sequence[Mapping[str, Any]], prefix: str = "") -> None:
    """One console warning per file and kind, naming what was not understood and how often."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in records:
        groups.setdefault((str(r["file"]), str(r["kind"])), []).append(r)
    for (source, kind), items in groups.items():
        total = sum(int(r["count"]) for r in items)
        names = ", ".join(
            f"{r['name']} ({r['count']}x, first in {r['first']})" if r["name"] != "…" else f"{r['count']} more"
            for r in items
        )
        log.warning("%s%s: %d %s: %s.", prefix, source, total, KIND_TEXT.get(kind, kind), names)


def merge_records(groups: Iterable[Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """The records of several tables or jobs as one list, a repeated file counted once."""
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    for records in groups:
        for r in records:
            key = (str(r["file"]), str(r["kind"]), str(r["name"]))
            if key not in seen:
                seen.add(key)
                out.append(dict(r))
    return out
