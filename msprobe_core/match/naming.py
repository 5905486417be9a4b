"""Name normalisation: the compare key of every row before any mapping.

The built-in normaliser is msprobe's backward re-numbering: the k-th backward
call of an op on one side is compared with the k-th backward call on the
other, whatever call numbers the two runs gave them.
"""

from __future__ import annotations

from ..model import DumpTable


def renumber_backward(table: DumpTable, keys: list[str]) -> list[str]:
    """Replace the call number of every backward API by its rank among backward calls of the same op.

    ``Functional.linear.3.backward.input.0`` becomes ``Functional.linear.0.backward.input.0``
    when it is the first backward of ``Functional.linear`` in file order. ``keys`` itself
    is returned (not a copy) when no name changes.
    """
    seen: dict[str, int] = {}
    calls: dict[tuple[str, int], str] = {}  # (call, rank) → renumbered call: few distinct spellings
    out: list[str] | None = None
    for api in table.apis:
        if api.direction != "backward":
            continue
        prefix = api.prefix
        k = seen.get(prefix, 0)
        seen[prefix] = k + 1
        call = api.call
        new_call = calls.get((call, k))
        if new_call is None:
            new_call = calls[(call, k)] = ".".join(str(k) if p.isdigit() else p for p in call.split("."))
        old_head = api.key
        new_head = f"{prefix}.{new_call}" if prefix else new_call
        if new_head == old_head:
            continue
        if out is None:
            out = list(keys)
        first, stop, cut = api.first_row, api.first_row + api.n_rows, len(old_head)
        out[first:stop] = [new_head + n[cut:] if n.startswith(old_head) else n for n in out[first:stop]]
    return keys if out is None else out
