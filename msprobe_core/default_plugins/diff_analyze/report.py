"""The two files of ``-da``, in msprobe's schema (compare-modes §8) with our fields added alongside.

* ``compare_result{_rankN}_{timestamp}.json`` (indent 4): per call with ≥4 name parts,
  ``{"is_same": bool, "op_items": [row, …]}`` where a row holds every result column, the
  stack (a list, first row of the call only), ``state``, ``api_origin_name`` and the four
  ``P2POp`` columns. ``Result``/``Err_message`` are msprobe's ``-da`` values (statistics:
  ``""``/``Warning``, md5: ``pass``/``Different``, unmatched: ``N/A`` and ``No bench data
  matched.``). ``is_same`` is msprobe's verdict (output rows, relative errors above 50 %, or md5).
  Added: ``divergence`` per call — our verdict and its evidence, and ``forms``: the rows whose difference is
  only one of form, set aside (operands in the other order, a reshape, an activation inside the call on one
  side: :mod:`msprobe_core.default_plugins.msprobe_verdicts.forms`).
* ``diff_analyze_{time_ns}.json`` (indent 2): ``{"rank_N": [node, …]}`` with msprobe's node
  fields ``op_name``, ``data_info`` (input/output rows with the NPU statistics and P2POp peer),
  ``stack_info``; added: ``rank``, ``role``, ``reason``, ``row`` (the row whose evidence the reason
  cites first), ``evidence``, the bench side of each
  row, ``first_visible``, ``via``/``caused_by`` for propagated divergences, ``hints``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from msprobe_core.plugin import MODE_MD5, NA, STATE_INPUT, STATE_OUTPUT, STATE_PARAMETERS, TEXT_ERRORS, atomic_path
from msprobe_core.plugin import result_columns as C

from .locate import Finding
from .nodes import Node, RankView

#: msprobe's -da threshold on the relative-error columns of output rows (diff_analyze_threshold.yaml).
IS_SAME_THRESHOLD = 0.5
IS_SAME_METRICS = C.STAT_RELATIVE_COLUMNS
#: msprobe's ignore_op_list.yaml: outputs (by index) of these APIs are not judged.
IGNORED_OUTPUTS = {"npu_fusion_attention": (4, 5)}
P2P_COLUMNS = ("NPU P2POp op", "Bench P2POp op", "NPU P2POp peer", "Bench P2POp peer")
_STAT_NAMES = C.STAT_NAMES
_STAT_COLUMNS = frozenset(C.STAT_VALUE_COLUMNS)
_BOOLS = {"True": True, "False": False}


def _json_value(value: Any, column: str = "", dtype: Any = None) -> Any:
    """A cell as msprobe's json holds it.

    ``None`` → ``"None"``; the statistics of a Python ``bool`` argument are JSON booleans (a bool
    tensor's stay ``"True"``/``"False"``); non-finite floats stay numbers (``NaN``, ``-Infinity``).
    """
    if (column in _STAT_COLUMNS and isinstance(value, str) and value in _BOOLS
            and isinstance(dtype, str) and dtype.startswith("<class")):
        return _BOOLS[value]
    if value is None:
        return "None"
    return value


def _dtype_column(column: str) -> str:
    return C.BENCH_DTYPE if column.startswith(C.BENCH) else C.NPU_DTYPE


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _verdict(table_mode: str, data: dict[str, list[Any]], k: int) -> tuple[str, Any]:
    """msprobe's ``Result`` and ``Err_message`` of a -da row (its pre-rule-engine values).

    Statistics: ``""`` for every matched row (msprobe's -da never grades them); md5: ``pass`` or
    ``Different`` with ``Err_message`` NaN (as msprobe writes it); unmatched rows:
    ``N/A`` and ``No bench data matched.``. ``Requires_grad inconsistent. `` is appended where the
    two requires_grad differ.
    """
    unmatched = data[C.BENCH_NAME][k] == NA
    rg = "" if data[C.REQUIRES_GRAD_CONSISTENT][k] else "Requires_grad inconsistent. "
    if unmatched:
        return "N/A", "No bench data matched." + rg
    if table_mode == MODE_MD5:
        return ("pass" if data[C.NPU_MD5][k] == data[C.BENCH_MD5][k] else "Different"), math.nan
    return "", rg


def _output_index(name: str) -> int | None:
    marker = ".output."
    if marker not in name:
        return None
    rest = name.split(marker, 1)[1].split(".", 1)[0]
    return int(rest) if rest.isdigit() else None


def is_same(view: RankView, node: Node) -> bool:
    """msprobe's ``is_same`` of a call: judged on its output rows only (compare-modes §8.1)."""
    data = view.table.data
    ignored = IGNORED_OUTPUTS.get(node.op, ())
    for k in node.rows:
        i = view.table.pairs.target[k]  # type: ignore[union-attr]
        if view.target.state[i] != STATE_OUTPUT:
            continue
        if _output_index(data[C.NPU_NAME][k]) in ignored:
            continue
        if view.table.mode == MODE_MD5:
            if data[C.BENCH_NAME][k] != NA and data[C.NPU_MD5][k] != data[C.BENCH_MD5][k]:
                return False
            continue
        for col in IS_SAME_METRICS:
            value = data[col][k]
            if isinstance(value, str) and value.endswith("%"):
                try:
                    if float(value[:-1]) / 100 > IS_SAME_THRESHOLD:
                        return False
                except ValueError:
                    continue
    return True


def compare_result_doc(view: RankView, p2p: dict[str, tuple[str, str]] | None = None,
                       golden_p2p: dict[str, tuple[str, str]] | None = None) -> dict[str, Any]:
    """The per-rank compare result document."""
    data = view.table.data
    pairs = view.table.pairs
    assert pairs is not None
    columns = [c for c in view.table.columns if c not in (C.STACK_INFO, C.DATA_NAME)]
    stack = view.target.stack
    p2p = p2p or {}
    golden_p2p = golden_p2p or {}
    doc: dict[str, Any] = {}
    for node in view.nodes:
        if len(node.key.split(".")) < 4:
            continue
        items = []
        for n, k in enumerate(node.rows):
            i, j = pairs.target[k], pairs.golden[k]
            item: dict[str, Any] = {}
            for c in columns:
                item[c] = _json_value(data[c][k], c, data[_dtype_column(c)][k])
            item[C.RESULT], item[C.ERR_MESSAGE] = _verdict(view.table.mode, data, k)
            if stack is not None:
                lines = stack.get(node.key) if n == 0 else None
                item[C.STACK_INFO] = lines if lines is not None else NA
            item["state"] = view.target.state[i]
            item["api_origin_name"] = node.key
            npu_op, npu_peer = p2p.get(view.target.name[i], ("None", "None"))
            bench_op, bench_peer = golden_p2p.get(view.golden.name[j], ("None", "None")) if j >= 0 else ("None", "None")
            item["NPU P2POp op"], item["Bench P2POp op"] = npu_op, bench_op
            item["NPU P2POp peer"], item["Bench P2POp peer"] = npu_peer, bench_peer
            items.append(item)
        entry: dict[str, Any] = {"is_same": is_same(view, node), "op_items": items}
        entry["divergence"] = {
            "diverges": node.divergent,
            **({"skipped": node.skip} if node.skip else {}),
            **({"evidence": [e.to_json() for e in node.evidence]} if node.evidence else {}),
            # what differs only in form (set aside: msprobe_verdicts.forms), as "row: how"
            **({"forms": list(node.forms)} if node.forms else {}),
        }
        doc[node.key] = entry
    return doc


def _row_info(view: RankView, k: int, md5: bool) -> dict[str, Any]:
    data = view.table.data
    if md5:
        out = {C.NPU_MD5: _json_value(data[C.NPU_MD5][k])}
    else:
        out = {c: _json_value(data[c][k], c, data[C.NPU_DTYPE][k]) for c in _side_stats(C.NPU)}
    out["NPU P2POp peer"] = "None"
    out[C.BENCH_NAME] = data[C.BENCH_NAME][k]
    if md5:
        out[C.BENCH_MD5] = _json_value(data[C.BENCH_MD5][k])
    else:
        out.update({c: _json_value(data[c][k], c, data[C.BENCH_DTYPE][k]) for c in _side_stats(C.BENCH)})
    for c in (C.NPU_DTYPE, C.BENCH_DTYPE, C.NPU_SHAPE, C.BENCH_SHAPE):
        out[c] = _json_value(data[c][k])
    return out


def _side_stats(side: str) -> list[str]:
    """The four statistic columns of one side."""
    return [C.stat_column(side, s) for s in _STAT_NAMES]


def node_doc(view: RankView, node: Node, p2p: dict[str, tuple[str, str]] | None = None) -> dict[str, Any]:
    """msprobe's node fields for ``node``: ``op_name``, ``data_info``, ``stack_info``."""
    md5 = view.table.mode == MODE_MD5
    info: dict[str, dict[str, Any]] = {"input": {}, "output": {}}
    params: dict[str, Any] = {}
    pairs = view.table.pairs
    assert pairs is not None
    for k in node.rows:
        i = pairs.target[k]
        state = view.target.state[i]
        row = _row_info(view, k, md5)
        if p2p and view.target.name[i] in p2p:
            row["NPU P2POp peer"] = p2p[view.target.name[i]][1]
        name = view.table.data[C.NPU_NAME][k]
        if state == STATE_INPUT:
            info["input"][name] = row
        elif state == STATE_OUTPUT:
            info["output"][name] = row
        elif state == STATE_PARAMETERS:
            params[name] = row
    if params:
        info["parameters"] = params
    stack = view.target.stack.get(node.key) if view.target.stack else None
    return {"op_name": node.key, "data_info": info, "stack_info": stack}


def finding_doc(view: RankView, finding: Finding, p2p: dict[str, tuple[str, str]] | None = None) -> dict[str, Any]:
    """One node of ``diff_analyze_*.json``: msprobe's fields, then ours."""
    doc = node_doc(view, finding.node, p2p)
    doc["rank"] = finding.rank
    doc["role"] = finding.role
    doc["reason"] = finding.reason
    if finding.row:
        doc["row"] = finding.row
    doc["evidence"] = [e.to_json() for e in finding.evidence]
    if finding.first_visible is not None:
        fv = finding.first_visible
        doc["first_visible"] = {
            "op_name": fv.key,
            "evidence": [e.to_json() for e in fv.evidence],
            "data_info": node_doc(view, fv, p2p)["data_info"],
        }
    if finding.via is not None:
        doc["via"] = finding.via.key
    if finding.sources:
        doc["caused_by"] = [{"rank": r, "op_name": op} for r, op in finding.sources]
    if finding.hints:
        doc["hints"] = finding.hints
    return doc


def write_json(path: Path, doc: Any, indent: int) -> Path:
    """Write ``doc`` atomically as JSON (non-finite statistics as ``NaN``/``Infinity``, as msprobe writes them)."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8", errors=TEXT_ERRORS) as fh:
            json.dump(doc, fh, indent=indent, ensure_ascii=False, allow_nan=True, default=str)
    return path
