"""Per-module answers: each module of the dumps' hierarchy with its rows' verdicts and worst row.

The report's model tree (:mod:`msprobe_core.default_plugins.summary.tree`) already counts every call's rows while the results
stream by and places each call under its modules; this module reads the same tree for ``--json-summary``
(``modules``) and the console (the few worst), so a CI job or a terminal answers "which module is worst?" without
the HTML page. Where the hierarchy is calling code (``stack.json`` of an API-level dump), the nodes are code
frames, not modules, and the answer says that a ``mix``-level dump would give module names.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from typing import Any

from .tree import FRAMES_NOTE, NodeStats, assemble, find_call
from .tree_nodes import TreeNode

#: Modules the console lists.
CONSOLE_MODULES = 5
_LEVEL = {"pass": 0, "warning": 1, "error": 2}
_INFINITE = (float("inf"), float("-inf"))


def module_answers(parts: Sequence[tuple[str, NodeStats | None]], hierarchy: Any) -> dict[str, Any] | None:
    """``{"modules": [...], "metric", "sources", "note"?}``: every module (a node enclosing calls) in execution
    order with ``path``, ``rows``, ``verdicts``, ``worst_verdict`` and ``worst`` (the main metric's worst row);
    ``None`` where the results have no node stats or the dumps no hierarchy."""
    assembled = assemble(parts, hierarchy)
    if assembled is None:
        return None
    root, metric, sources, _, named_modules = assembled
    modules: list[dict[str, Any]] = []
    stack: list[tuple[TreeNode, list[str]]] = [(root, [])]
    while stack:
        node, path = stack.pop()
        if node.children:  # most nodes are calls, which enclose nothing
            children = sorted([c for c in node.children.values() if c.kind == "m"], key=_first, reverse=True)
            stack.extend([(c, [*path, c.name]) for c in children])  # each module's own path list (not changed later)
        if node is root:
            continue
        s = node.stats
        worst_verdict = "error" if s[3] else "warning" if s[2] else "pass"
        bad = s[4]
        modules.append({"path": path, "rows": s[1] + s[2] + s[3],
                        "verdicts": {"pass": s[1], "warning": s[2], "error": s[3]}, "worst_verdict": worst_verdict,
                        "worst": {"metric": metric, "value": s[6], "row": s[5],
                                  "badness": bad if bad == bad and bad not in _INFINITE else None} if s[5] else None})
    if not modules:
        return None
    out: dict[str, Any] = {"modules": modules, "metric": metric, "sources": sources}
    if not named_modules:
        out["note"] = FRAMES_NOTE
    out["_root"] = root
    return out


def number_paths(summary: dict[str, Any], answers: Mapping[str, Any]) -> None:
    """Give the first divergences whose path is calling code the frames' visit numbers the modules carry
    (``forward (common.py:94) #2``: block 1's call, not block 0's)."""
    root = answers.get("_root")
    if root is None or not answers.get("note"):
        return
    found = [summary.get("first_divergence"), *(summary.get("first_divergence_by_rank") or ())]
    chains: dict[str, list[TreeNode]] = {}  # the run's and its rank's first divergence are mostly one node
    for fd in found:
        if fd and fd.get("path") and fd.get("node"):
            node = fd["node"]
            chain = chains[node] if node in chains else chains.setdefault(node, find_call(root, node))
            if chain:
                fd["path"] = [x.name for x in chain]


def _first(node: TreeNode) -> float:
    return node.stats[0]


def _order(m: Mapping[str, Any]) -> tuple[int, float, float, int]:
    v, w = m["verdicts"], m["worst"] or {}
    badness = w.get("badness")
    return (_LEVEL[m["worst_verdict"]], v["error"] / max(1, m["rows"]),
            badness if badness is not None else float("-inf"), len(m["path"]))


def rank_modules(answers: Mapping[str, Any], limit: int = CONSOLE_MODULES) -> dict[str, Any]:
    """The answers with ``worst``: the ``limit`` worst modules (worst verdict, then share of error rows, then the
    worst row's metric; the innermost first among equals: the most specific answer); passing modules whose rows
    have no metric are never listed."""
    listed = (m for m in answers["modules"] if m["worst_verdict"] != "pass" or m["worst"])
    return {**answers, "worst": heapq.nlargest(limit, listed, key=_order)}  # sorted(..., reverse=True)[:limit]


def _file_name(name: str) -> str:
    """A row named by a dumped file's path (a kernel dump's): the file's name identifies it."""
    return name.replace("\\", "/").rsplit("/", 1)[-1]


def _short(text: str) -> str:
    """A metric's cell in 4 significant digits (``0.3247881895840407%`` → ``0.3248%``), else as it is."""
    body, pct = (text[:-1], "%") if text.endswith("%") else (text, "")
    try:
        return f"{float(body):.4g}{pct}"
    except ValueError:
        return text


def console_lines(answers: Mapping[str, Any] | None) -> list[str]:
    """The console's lines: the few worst modules (:func:`rank_modules`), and the note on code frames."""
    if not answers:
        return []
    worst = answers.get("worst") or []
    if not worst:
        return []
    lines = [f"  worst modules{' (code frames)' if answers.get('note') else ''}:"]
    for m in worst:
        v = m["verdicts"]
        w = m["worst"]
        metric = (f", worst {w['metric']} {_short(w['value'])} at {_file_name(w['row'])}"
                  if w and w.get("metric") else "")
        where = " → ".join(m["path"][-2:]) if answers.get("note") else (m["path"][-1] or "(top level)")
        lines.append(f"    - {where}: {m['rows']} rows, error {v['error']}, warning {v['warning']}{metric}")
    if answers.get("note"):
        lines.append(f"    ({answers['note']})")
    return lines
