"""Render compare results as one self-contained HTML file.

Why a hand-written canvas script and not SVG or matplotlib: a result can have
hundreds of thousands of rows. One SVG element per point would make the file
and the DOM grow with the row count (100k ``<circle>`` elements take seconds
to lay out), and matplotlib would add a heavy dependency to produce a static
picture without hover or zoom. The page instead carries the result table once,
as compact JSON (repeated strings dictionary-encoded, ``Bench …`` columns
stored as differences from their ``NPU …`` twins), and a ~20 kB script draws
the plots and the heat map on ``<canvas>`` and renders only the visible table
rows. Nothing is fetched: styles and scripts are inline and a
Content-Security-Policy forbids any network access.
"""

from __future__ import annotations

import base64
import gzip
import json
import math
import re
import secrets
import time
from bisect import bisect_left
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from msprobe_core.plugin import TEXT_ERRORS, OutputError, atomic_path, fraction_text, tick
from msprobe_core.plugin import result_columns as C

from .sampling import ViewSample, sample_note, sample_threshold, sample_views, watched_calls
from .seams import (
    Divergence,
    ResultView,
    carried_in,
    is_mixed_layout,
    node_of,
    page_declarations,
    plot_metrics,
    view_grammar,
)

#: Columns the report stores as "same as column X except at these rows": each golden-side column
#: as its target-side twin, and the tensor file names as the row names they start with.
_TWINS = {
    **{name: C.CORE_COLUMNS.twin(name) for name in C.CORE_COLUMNS.names(side=C.BENCH) if C.CORE_COLUMNS.twin(name)},
    C.DATA_NAME: C.NPU_NAME,
}


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


_MARK = "\u0001"
_FRAME_SEP = "', '"


def _dict_codes(values: list[str], limit: int) -> tuple[list[str], list[int]] | None:
    index: dict[str, int] = {}
    codes = []
    for v in values:
        k = index.get(v)
        if k is None:
            k = index[v] = len(index)
            if len(index) > limit:
                return None
        codes.append(k)
    return list(index), codes


def encode_column(values: list[str], twin: list[str] | None = None, twin_name: str = "") -> dict[str, Any]:
    """Compact JSON form of one column (decoded by the page's script).

    * ``{"t": "ref", "of": twin_name, "xi": [...], "xv": [...]}``: equal to the twin column except at rows ``xi``;
    * ``{"t": "tpl", "of": twin_name, "v": [...], "i": [...]}``: dictionary of templates in which
      ``\u0001`` stands for the twin's value in the same row (``Data_name`` holds the row name);
    * ``{"t": "split", "sep": ..., "v": [...], "i": [[...], ...]}``: long texts cut at ``sep``
      (stack frames), the pieces dictionary-encoded;
    * ``{"t": "num", ...}``: mostly numbers (see :func:`_encode_numbers`);
    * ``{"t": "dict", "v": [...], "i": [...]}``: few distinct values; ``{"t": "raw", "v": [...]}`` otherwise.
    """
    n = len(values)
    if twin is not None and len(twin) == n:
        xi = [i for i in range(n) if values[i] != twin[i]]
        if len(xi) <= n // 4:
            return {"t": "ref", "of": twin_name, "xi": xi, "xv": [values[i] for i in xi]}
        if n and not any(_MARK in v for v in values) and sum(1 for v, t in zip(values, twin) if t and t in v) > n // 2:
            tpl = [v.replace(t, _MARK) if t else v for v, t in zip(values, twin)]
            coded = _dict_codes(tpl, max(16, n // 4))
            if coded is not None:
                return {"t": "tpl", "of": twin_name, "v": coded[0], "i": coded[1]}
    numeric = _encode_numbers(values)
    if numeric is not None:
        return numeric
    coded = _dict_codes(values, max(16, n // 4))
    if coded is not None:
        return {"t": "dict", "v": coded[0], "i": coded[1]}
    total = sum(len(v) for v in values)
    if n and total / n > 80:
        pieces: dict[str, int] = {}
        rows = []
        for v in values:
            row = []
            for frag in v.split(_FRAME_SEP):
                k = pieces.get(frag)
                if k is None:
                    k = pieces[frag] = len(pieces)
                row.append(k)
            rows.append(row)
        if sum(len(p) for p in pieces) < total * 0.6:
            return {"t": "split", "sep": _FRAME_SEP, "v": list(pieces), "i": rows}
    return {"t": "raw", "v": values}


def _is_float_text(text: str) -> bool:
    """Whether ``text`` is exactly Python's ``repr`` of a finite float (so it is valid JSON and the page can respell it)."""
    if not text or text[0] not in "-0123456789":
        return False
    try:
        value = float(text)
    except ValueError:
        return False
    return value == value and value not in (math.inf, -math.inf) and repr(value) == text


class RawNumbers(list):
    """Number texts that are already valid JSON; written into the payload as they are (no float round trip)."""


def _encode_numbers(values: list[str]) -> dict[str, Any] | None:
    """``{"t": "num", "v": [...], "p": [...], "xi": [...], "xv": [...]}`` when most cells are float texts.

    ``v`` holds the numbers (the page spells them back with Python's float ``repr``
    rules), ``p`` the rows whose text ends in ``%``, and ``xi``/``xv`` the rows kept as
    text (``N/A``, ``unsupported``, ints, …; their ``v`` entry is 0).
    """
    n = len(values)
    sample = values[: 256]
    if sum(_is_float_text(t) or (t.endswith("%") and _is_float_text(t[:-1])) for t in sample) * 2 < len(sample):
        return None  # clearly not a number column: do not walk it
    nums = RawNumbers()
    pct: list[int] = []
    xi: list[int] = []
    xv: list[str] = []
    for i, text in enumerate(values):
        if _is_float_text(text):
            nums.append(text)
        elif text.endswith("%") and _is_float_text(text[:-1]):
            pct.append(i)
            nums.append(text[:-1])
        else:
            xi.append(i)
            xv.append(text)
            nums.append("0")
            if len(xi) > n // 2:
                return None
    if not n:
        return None
    return {"t": "num", "v": nums, "p": pct, "xi": xi, "xv": xv}


def _encode_names(names: list[str], row_nodes: list[int], node_names: list[str]) -> dict[str, Any] | None:
    """``NPU Name`` as node + suffix (``Functional.linear.0.forward`` + ``input.0``), when that spells every row."""
    suffixes = []
    for name, k in zip(names, row_nodes):
        node = node_names[k]
        if name == node:
            suffixes.append("")
        elif name.startswith(node + "."):
            suffixes.append(name[len(node) + 1 :])
        else:
            return None
    coded = _dict_codes(suffixes, len(suffixes) + 1)
    assert coded is not None
    return {"t": "node", "v": coded[0], "i": coded[1]}


def build_payload(
    views: Sequence[ResultView], summary: dict[str, Any], *, title: str = "msprobe compare report",
    analysis: Any = None, sample_above: int | None = None, samples: Sequence[ViewSample] | None = None,
    tree: Any = None,
) -> dict[str, Any]:
    """Everything the page shows, as one JSON-ready dict.

    Besides the tables: ``detail``, the values of the first divergent call's rows
    (:func:`~msprobe_core.default_plugins.report.explain.divergence_detail`); ``spread``, how ``-da``
    says the divergence reached other ranks (:func:`~msprobe_core.default_plugins.report.explain.divergence_spread`);
    ``mixed``, whether the results are the parts of a mixed graph/pynative dump (each
    part's first divergence then says whether it was carried into the part).

    Above :func:`~msprobe_core.default_plugins.report.sampling.sample_threshold` rows in all (``sample_above``
    overrides it) the tables are samples of the results (:mod:`msprobe_core.default_plugins.report.sampling`);
    ``samples`` gives them already made (fed chunk by chunk elsewhere), and ``views`` is then not read
    (complete samples of at most that many rows in all are every row: the page is the whole-table one).
    Each sampled part has ``pos`` (each row's position in its result) and ``total``; ``sample``
    says how many rows are shown of how many, and which files hold them all.

    ``tree``: ``(stats, hierarchy)``, each result's :class:`~msprobe_core.default_plugins.summary.tree.NodeStats` by label and the
    run's :class:`~msprobe_core.default_plugins.summary.hierarchy.RunHierarchy`; the page's ``tree`` is the model tree
    (:func:`~msprobe_core.default_plugins.summary.tree.build_tree`) with ``of``, each call node's tree node.
    """
    from .explain import divergence_detail, divergence_spread

    if samples is None and sum(len(v) for v in views) > sample_threshold(sample_above):
        samples = sample_views(views, watched_calls(analysis) if analysis is not None else ())
    if samples is not None:
        views = [s.view() for s in samples]
        if all(s.complete for s in samples) and sum(s.total for s in samples) <= sample_threshold(sample_above):
            samples = None

    nodes: dict[str, int] = {}
    node_dirs: list[str] = []
    parts = []
    fd = summary.get("first_divergence") or {}
    mixed = is_mixed_layout(views)
    detail = None
    orders = []
    for k_view, view in enumerate(views):
        positions = samples[k_view].positions if samples is not None else None
        names = view.names
        row_nodes = []
        grammar = view_grammar(view)
        for name in names:
            node, direction = node_of(name, grammar)
            k = nodes.get(node)
            if k is None:
                k = nodes[node] = len(nodes)
                node_dirs.append(direction[0] if direction in ("forward", "backward") else "-")
            row_nodes.append(k)
        order = view.order()
        orders.append(order)
        identity = all(i == j for i, j in enumerate(order))
        enc = []
        node_names = list(nodes)
        for n_col, col in enumerate(view.columns, start=1):
            tick(f"column {fraction_text(n_col, len(view.columns))}{' of ' + view.label if view.label else ''}")
            if col == C.NPU_NAME:
                named = _encode_names(view.cells[col], row_nodes, node_names)
                if named is not None:
                    enc.append(named)
                    continue
            twin = _TWINS.get(col)
            if twin not in view.cells:
                twin = None
            enc.append(encode_column(view.cells[col], view.cells[twin] if twin else None, twin or ""))
        first = None
        for d in summary.get("first_divergence_by_rank", []):
            at = _shown_at(positions, d["index"], len(view))
            if d["rank"] == view.label and at >= 0:
                first = {"pos": at, "row": order[at], "node": d["node"], "reason": d["reason"]}
        at = _shown_at(positions, fd.get("index", -1), len(view)) if fd else -1
        is_chosen = bool(fd) and fd.get("rank") == view.label and at >= 0
        if is_chosen:
            first = {"pos": at, "row": order[at], "node": fd["node"], "reason": fd["reason"]}
            detail = divergence_detail(view, first["row"], row_nodes, order)
            detail["part"] = len(parts)
        if mixed and first is not None:
            name = view.names[first["row"]]
            first["carried"] = carried_in(view, Divergence(first["node"], name, view.label, first["pos"], ""))
        if first is not None and positions is not None:
            first["at"] = positions[first["pos"]]  # its position in the whole result (the page shows that)
        parts.append({
            "label": view.label,
            "mode": view.mode,
            "n": len(view),
            "columns": view.columns,
            "enc": enc,
            "node": row_nodes,
            "verdict": "".join(v[0] for v in view.verdicts()),
            "unmatched": "".join("1" if u else "0" for u in view.unmatched()),
            "order": None if identity else order,
            "plot": [m for m in plot_metrics(view.mode) if m in view.cells],
            "first": first,
            "chosen": is_chosen,
        })
        if samples is not None:
            parts[-1].update(pos=positions, total=samples[k_view].total)
    spread = divergence_spread(views, analysis, orders)
    payload = {
        "title": title,
        "generated": time.strftime("%Y-%m-%d %H:%M:%S"),
        "summary": summary,
        "nodes": list(nodes),
        "nodeDir": "".join(node_dirs),
        "parts": parts,
        "detail": detail,
        "spread": spread,
        "mixed": mixed,
        **page_declarations(views),
        "tree": _model_tree(tree, summary, spread, list(nodes)),
    }
    if samples is not None:
        payload["sample"] = sample_note(samples)
    return payload


def _model_tree(tree: Any, summary: dict[str, Any], spread: list[dict[str, Any]], nodes: list[str]
                ) -> dict[str, Any] | None:
    """The page's model tree (see :func:`build_payload`), ``None`` without stats."""
    if tree is None:
        return None
    from .seams import ALIAS_KEY, build_tree, row_tree_index

    stats, hierarchy = tree
    built = build_tree(stats, hierarchy, summary, spread)
    if built is None:
        return None
    built["of"] = row_tree_index(built, nodes)
    built.pop(ALIAS_KEY, None)
    return built


def _shown_at(positions: Sequence[int] | None, index: int, n: int) -> int:
    """Where row ``index`` of a result is in its part (-1: not shown); ``positions``: a sample's, else every row."""
    if positions is None:
        return index if 0 <= index < n else -1
    k = bisect_left(positions, index)
    return k if k < len(positions) and positions[k] == index else -1


#: Payloads larger than this are embedded gzip-compressed (base64), which the page inflates with the
#: browser's built-in DecompressionStream: a third of the size, so the file opens faster.
COMPRESS_ABOVE = 2_000_000


def _dumps(payload: dict[str, Any]) -> str:
    """Compact JSON of ``payload``; :class:`RawNumbers` lists are spliced in as their texts."""
    raw: list[str] = []
    nonce = secrets.token_hex(8)  # no cell text can collide with the placeholders

    def default(obj: Any) -> Any:
        raise TypeError(f"not JSON serialisable: {type(obj).__name__}")

    def swap(obj: Any) -> Any:
        if isinstance(obj, RawNumbers):
            raw.append("[" + ",".join(obj) + "]")
            return f"\u0000raw{nonce}:{len(raw) - 1}\u0000"
        if isinstance(obj, dict):
            return {k: swap(v) for k, v in obj.items()}
        if isinstance(obj, list) and obj and isinstance(obj[0], dict):
            return [swap(v) for v in obj]
        return obj

    text = json.dumps(swap(payload), ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=default)
    if not raw:
        return text
    pieces = re.split(r'"\\u0000raw' + nonce + r':(\d+)\\u0000"', text)
    return "".join(raw[int(p)] if k % 2 else p for k, p in enumerate(pieces))


def _json_for_script(payload: dict[str, Any]) -> tuple[str, str]:
    """The payload as the text of the data ``<script>`` element, and its encoding (``json`` or ``gzip+base64``)."""
    text = _dumps(payload)
    if len(text) > COMPRESS_ABOVE:
        packed = gzip.compress(text.encode("utf-8"), compresslevel=4, mtime=0)
        return base64.b64encode(packed).decode("ascii"), "gzip+base64"
    # "<" only occurs inside JSON strings, where \u003c means the same; this keeps "</script>" out
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"), "json"


def _html_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_html(views: Sequence[ResultView], summary: dict[str, Any], *, title: str = "msprobe compare report",
                analysis: Any = None, sample_above: int | None = None,
                samples: Sequence[ViewSample] | None = None, tree: Any = None) -> str:
    """The whole report page as a string (``analysis``, ``sample_above``, ``samples``, ``tree``: as for
    :func:`build_payload`)."""
    payload = build_payload(views, summary, title=title, analysis=analysis, sample_above=sample_above, samples=samples,
                            tree=tree)
    data, encoding = _json_for_script(payload)
    values = {
        "__TITLE__": _html_text(title),
        "/*__CSS__*/": _asset("report.css"),
        "__ENCODING__": encoding,
        "__DATA__": data,
        "/*__TREE_JS__*/": _asset("tree.js"),
        "/*__JS__*/": _asset("report.js"),
    }
    # split the template once, so inserted text is never searched for the next marker
    pieces = re.split("(" + "|".join(re.escape(k) for k in values) + ")", _asset("template.html"))
    return "".join(values.get(p, p) for p in pieces)


def write_report(
    views: Sequence[ResultView], summary: dict[str, Any], path: Path, *, title: str = "msprobe compare report",
    analysis: Any = None, sample_above: int | None = None, samples: Sequence[ViewSample] | None = None,
    tree: Any = None,
) -> Path:
    """Write the report atomically to ``path`` and return it (``analysis``: the ``-da`` answer, if any; a large
    result is shown as a sample, see :func:`build_payload`)."""
    path = Path(path)
    html = render_html(views, summary, title=title, analysis=analysis, sample_above=sample_above, samples=samples,
                       tree=tree)
    try:
        with atomic_path(path) as tmp:
            tmp.write_text(html, encoding="utf-8", errors=TEXT_ERRORS)
    except OSError as exc:
        raise OutputError(f"cannot write report ({exc.strerror or exc})", path=path) from None
    return path
