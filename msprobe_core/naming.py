"""Name normalisation: the compare key of every row before any mapping.

The built-in normaliser is msprobe's backward re-numbering: the k-th backward
call of an op on one side is compared with the k-th backward call on the
other, whatever call numbers the two runs gave them.
"""

from __future__ import annotations

from .model import DumpTable


def identity_keys(table: DumpTable) -> list[str]:
    """Row names as they are: the starting point of every normaliser chain."""
    return list(table.name)


def renumber_backward(table: DumpTable, keys: list[str]) -> list[str]:
    """Replace the call number of every backward API by its rank among backward calls of the same op.

    ``Functional.linear.3.backward.input.0`` becomes ``Functional.linear.0.backward.input.0``
    when it is the first backward of ``Functional.linear`` in file order.
    """
    seen: dict[str, int] = {}
    out = list(keys)
    for api in table.apis:
        if api.direction != "backward":
            continue
        k = seen.get(api.prefix, 0)
        seen[api.prefix] = k + 1
        parts = api.call.split(".")
        new_call = ".".join(str(k) if p.isdigit() else p for p in parts)
        old_head = api.key
        new_head = f"{api.prefix}.{new_call}" if api.prefix else new_call
        if new_head == old_head:
            continue
        for row in range(api.first_row, api.first_row + api.n_rows):
            name = out[row]
            if name.startswith(old_head):
                out[row] = new_head + name[len(old_head):]
    return out
