"""What the report's first-divergence box says besides the name: the values that differ, and how a
divergence found by ``-da`` reached other ranks.

Both work on a handful of rows (one call's, one per analysis node), never on a whole table.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from msprobe_core.plugin import MODE_MD5, MODE_STATISTICS
from msprobe_core.plugin import result_columns as C

from .seams import ResultView

#: (label, target column, golden column) of the values a row compares, in the order shown.
VALUE_PAIRS = tuple((of, C.CORE_COLUMNS.column_of(C.NPU, of), C.CORE_COLUMNS.column_of(C.BENCH, of))
                    for of in ("dtype", "shape", *C.STAT_NAMES, "MD5"))
#: Per mode: the metric columns shown next to the values.
DETAIL_METRICS = {
    MODE_STATISTICS: (C.NORM_RELATIVE_ERR, C.MAX_RELATIVE_ERR),
    MODE_MD5: (),
}
_TENSOR_METRICS = (C.COSINE, C.MAX_ABS_ERR, C.MAX_RELATIVE_ERR)
#: At most this many rows of the divergent call are listed (a module's parameters can be many).
MAX_DETAIL_ROWS = 12


def divergence_detail(view: ResultView, row: int, row_nodes: Sequence[int], order: Sequence[int]) -> dict[str, Any]:
    """The rows of the call that holds row ``row`` (its inputs, parameters, outputs) with their values.

    ``{"rows": [{"row", "name", "first", "verdict", "values": [[label, target, golden], …],
    "metrics": [[column, value], …]}, …], "more": n}``, in execution order; at most
    :data:`MAX_DETAIL_ROWS` rows around ``row`` (``more`` counts the others). ``row_nodes``
    gives each row's call (as :func:`~msprobe_core.default_plugins.report.html.build_payload` numbers them),
    ``order`` the rows in execution order (:meth:`ResultView.order`).
    """
    node = row_nodes[row]
    members = [i for i in order if row_nodes[i] == node]
    at = members.index(row)
    lo = max(0, min(at - MAX_DETAIL_ROWS // 2, len(members) - MAX_DETAIL_ROWS))
    shown = members[lo : lo + MAX_DETAIL_ROWS]
    names = view.names
    pairs = [(label, view.cells[a], view.cells[b]) for label, a, b in VALUE_PAIRS if a in view.cells and b in view.cells]
    metrics = [(m, view.cells[m]) for m in DETAIL_METRICS.get(view.mode, _TENSOR_METRICS) if m in view.cells]
    verdicts = view.verdicts()
    rows = []
    for i in shown:
        rows.append({
            "row": i,
            "name": names[i],
            "first": i == row,
            "verdict": verdicts[i],
            "values": [[label, a[i], b[i]] for label, a, b in pairs],
            "metrics": [[m, cells[i]] for m, cells in metrics],
        })
    return {"rows": rows, "more": len(members) - len(shown)}


def _load(analysis: Any) -> dict[str, Any] | None:
    if isinstance(analysis, (str, Path)):
        from .seams import read_analysis

        analysis = read_analysis(Path(analysis))
    return analysis if isinstance(analysis, dict) else None


def _rank_label(key: Any) -> str:
    key = str(key)
    return key.replace("_", "") if key.startswith("rank_") else key


def divergence_spread(views: Sequence[ResultView], analysis: Any,
                      orders: Sequence[Sequence[int]] | None = None) -> list[dict[str, Any]]:
    """How the divergence ``-da`` found moved between ranks, from its ``diff_analyze_*.json``.

    One entry per analysis node that is in these results: ``{"part", "rank", "node", "row",
    "pos", "role", "via", "from": [{"rank", "node"}], "reason"}`` where ``role`` is ``cause``
    or ``propagated``, ``via`` the communication call the divergence came in through and
    ``from`` the cause(s) it came from. ``part``/``row``/``pos`` locate the node's first row
    in ``views`` (with a ``via``: that call's first output row). Empty without an analysis.
    ``orders`` are the views' rows in execution order when the caller has them already.
    """
    doc = _load(analysis)
    if not doc:
        return []
    index = {v.label: k for k, v in enumerate(views)}
    out = []
    for key, nodes in doc.items():
        if not isinstance(nodes, list):
            continue
        part = index.get(_rank_label(key))
        if part is None and len(views) == 1:
            part = 0
        if part is None:
            continue
        view = views[part]
        order = orders[part] if orders is not None else view.order()
        for node in nodes:
            if not isinstance(node, dict) or not node.get("op_name"):
                continue
            op = str(node["op_name"])
            via = node.get("via") if isinstance(node.get("via"), str) else None
            hit = _first_row(view, order, via or op, outputs_first=bool(via))
            if hit is None:
                continue
            caused_by = [
                {"rank": f"rank{c['rank']}" if isinstance(c.get("rank"), int) else str(c.get("rank", "")),
                 "node": str(c.get("op_name", ""))}
                for c in node.get("caused_by") or () if isinstance(c, dict)
            ]
            reason = node.get("reason")
            out.append({
                "part": part,
                "rank": view.label,
                "node": op,
                "row": hit[1],
                "pos": hit[0],
                "role": "propagated" if node.get("role") == "propagated" else "cause",
                "via": via,
                "from": caused_by,
                "reason": reason if isinstance(reason, str) else "",
            })
    return out


def _first_row(view: ResultView, order: Sequence[int], op: str, *, outputs_first: bool = False
               ) -> tuple[int, int] | None:
    """(execution position, row index) of the first row of call ``op`` in ``view``; with
    ``outputs_first`` its first output row when it has one (where a communication call
    hands a divergence over)."""
    names = view.names
    prefix = op + "."
    first = None
    for pos, i in enumerate(order):
        name = names[i]
        if name == op or name.startswith(prefix):
            if not outputs_first or name[len(prefix):].startswith("output"):
                return pos, i
            if first is None:
                first = (pos, i)
    return first
