"""Name normalisation: the compare key of every row before any mapping.

The built-in normaliser is msprobe's backward re-numbering: the k-th backward
call of an op on one side is compared with the k-th backward call on the
other, whatever call numbers the two runs gave them.
"""

from __future__ import annotations

from ..model import DumpTable

try:
    from .._dumpscan import Scanner

    _renamed_keys = Scanner.renamed_keys
except ImportError:  # built without a C compiler
    _renamed_keys = None


def renumber_backward(table: DumpTable, keys: list[str]) -> list[str]:
    """Replace the call number of every backward API by its rank among backward calls of the same op.

    ``Functional.linear.3.backward.input.0`` becomes ``Functional.linear.0.backward.input.0``
    when it is the first backward of ``Functional.linear`` in file order. ``keys`` itself
    is returned (not a copy) when no name changes.
    """
    seen: dict[str, int] = {}
    calls: dict[tuple[str, int], str] = {}  # (call, rank) → renumbered call: few distinct spellings
    renames: list[tuple[int, int, str, str]] = []  # (first row, rows, old head, new head) of each renamed call
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
        if new_head != old_head:
            renames.append((api.first_row, api.n_rows, old_head, new_head))
    if not renames:
        return keys
    if _renamed_keys is not None:  # in C: one string per renamed row, no Python step
        return _renamed_keys(keys, renames)
    out = list(keys)
    for first, count, old_head, new_head in renames:
        stop, cut = first + count, len(old_head)
        out[first:stop] = [new_head + n[cut:] if n.startswith(old_head) else n for n in out[first:stop]]
    return out
