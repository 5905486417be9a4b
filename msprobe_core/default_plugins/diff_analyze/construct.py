"""``construct.json`` read as its ``call -> enclosing call`` map, for the commands that build a module tree from it.

``-da`` and ``--auto-map`` read it alike (the default plugin ``automap`` imports this module from here): a symlink
out of the dump directory, nesting too deep to parse, and enclosing calls that form a cycle (a call inside itself)
are input errors (exit 2, one line naming the file); a file that is absent, no JSON or no JSON object says nothing
(the caller's warning says what it does instead).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from msprobe_core.plugin import InputError, dump_file_beside

log = logging.getLogger("msprobe")


def load_construct(dump_path: Path, unreadable: str = "module nesting is taken from the names") -> dict[str, str | None]:
    """``construct.json`` next to a dump (call → enclosing call); empty when absent or unreadable.

    ``unreadable``: what the warning for an unreadable file says is done without it.
    """
    path = dump_file_beside(dump_path, "construct.json")
    if path is None:
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise InputError("JSON nesting is too deep", path=path) from None
    except (OSError, ValueError, UnicodeDecodeError):
        log.warning("construct.json in %s cannot be read; %s.", path.parent, unreadable)
        return {}
    if not isinstance(doc, dict):
        log.warning("construct.json in %s is not a JSON object; %s.", path.parent, unreadable)
        return {}
    parents = {str(k): (str(v) if isinstance(v, str) else None) for k, v in doc.items()}
    cycle = find_cycle(parents)
    if cycle is not None:
        raise InputError(f"the enclosing calls form a cycle: {' -> '.join(cycle[:6])}"
                         + (" -> …" if len(cycle) > 6 else ""), path=path)
    return parents


def find_cycle(parents: dict[str, str | None]) -> list[str] | None:
    """A cycle of ``child -> parent`` links (its calls, first one repeated at the end), or None; linear time."""
    state: dict[str, int] = {}  # 1 on the current chain, 2 known to end without a cycle
    for start in parents:
        chain: list[str] = []
        node: str | None = start
        while node is not None and node in parents and node not in state:
            state[node] = 1
            chain.append(node)
            node = parents[node]
        if node is not None and state.get(node) == 1:
            return chain[chain.index(node):] + [node]
        for seen in chain:
            state[seen] = 2
    return None
