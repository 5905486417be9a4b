"""Minimal dump.json → rows expansion (compare-core §3/§4.1), for the mapping tests only.

The engine provides the real implementation; this module only exists so that
``plugins/mindspore/tests/test_ms_mapping.py`` can check the name mappers of :mod:`msprobe_mindspore.mapping`
against msprobe's own output without depending on the engine. It lives with the tests, not in
the msprobe-mindspore distribution (``tests/test_distributions.py`` keeps test-only code out of
every wheel). It implements:

* name expansion (one row per leaf; ``data_name`` minus its suffix wins over the walked name);
* the API-key split and the backward re-numbering of compare-core §4.1;
* an exact key join (outer join, NPU order kept, bench-only rows dropped) with an optional
  dtype gate, and the left join used by data mapping;
* ``legacy=True`` variants for msprobe 8.3.3 (every data key read, ``...parameters_grad.<n>``
  keys give no rows, shape part of the match key, no backward renumbering).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from msprobe_mindspore.mapping import dtypes_match

_STATE_ORDER = {"input": 0, "parameters": 1, "output": 2, "parameters_grad": 3}


@dataclass(frozen=True)
class Row:
    """One leaf item of a dump: ``api`` is the data key, ``name`` the displayed row name."""

    api: str
    name: str
    state: str
    dtype: str
    shape: str = ""


def _parse(value: Any, name: str, state: str, api: str, out: list[Row], depth: int = 0) -> None:
    if depth > 400:
        raise ValueError(f"{api}: nesting too deep")
    if value is None:
        out.append(Row(api, name, state, "", ""))
        return
    if isinstance(value, list):
        in_pgrad = "parameters_grad" in name.split(".")
        for i, item in enumerate(value):
            _parse(item, name if in_pgrad else f"{name}.{i}", state, api, out, depth + 1)
        return
    if isinstance(value, dict):
        if value.get("class_type") == "torch.distributed.P2POp":
            value = value.get("tensor") or {"type": "NoneType"}
        if isinstance(value.get("type"), str):
            data_name = value.get("data_name")
            row_name = data_name.rsplit(".", 1)[0] if isinstance(data_name, str) and data_name else name
            dtype = value.get("dtype")
            shape = value.get("shape")
            if dtype is None:
                dtype, shape = _non_tensor_dtype(value, name)
            out.append(Row(api, row_name, state, str(dtype), str(shape)))
            return
        for k, v in value.items():
            _parse(v, f"{name}.{k}", state, api, out, depth + 1)


def _non_tensor_dtype(leaf: dict[str, Any], name: str) -> tuple[str, str]:
    """(dtype, shape) filled in for a leaf without ``dtype`` (compare-core §3 table)."""
    typ = leaf["type"]
    value = leaf.get("value")
    if typ == "torch.Size":
        return typ, str(value)
    if typ == "slice":
        return typ, f"({len(value) if isinstance(value, list) else 0},)"
    if typ == "ellipsis":
        return typ, "[]"
    if name.rsplit(".", 1)[-1] in ("src", "dst", "group_src", "group_dst") or typ == "torch.ProcessGroup":
        return typ, "[]"
    return str(type(value)), "[]"


def expand_api(api: str, entry: Any, *, legacy: bool = False) -> list[Row]:
    """Rows of one dump.json data entry, in msprobe's order (inputs, parameters, outputs, grads).

    ``legacy``: msprobe 8.3.3 walks a key whole only when its *last* part is parameters_grad.
    """
    parts = api.split(".")
    rows: list[Row] = []
    if parts[-1] == "debug":
        _parse(entry, api, "debug", api, rows)
        return rows
    if parts[-1] == "parameters_grad" or (not legacy and parts[-2:-1] == ["parameters_grad"]):
        _parse(entry, api, "parameters_grad", api, rows)
        return rows
    if not isinstance(entry, dict):
        return rows
    for key, suffix, state in (
        ("input_args", "input", "input"),
        ("input_kwargs", "input", "input"),
        ("input", "input", "input"),
        ("output", "output", "output"),
        ("parameters", "parameters", "parameters"),
    ):
        if key in entry:
            _parse(entry[key], f"{api}.{suffix}", state, api, rows)
    rows.sort(key=lambda r: _STATE_ORDER.get(r.state, 9))  # stable
    return rows


def split_api(api: str) -> tuple[str, str, str] | None:
    """``(prefix, call, direction)`` of a data key, or None when msprobe skips the key."""
    parts = api.split(".")
    if "parameters_grad" in parts[-2:]:
        return ".".join(parts[:-1]), "parameters_grad", "parameters_grad"
    if len(parts) >= 2 and (parts[-1] in ("forward", "backward") or parts[-2] in ("forward", "backward")):
        direction = parts[-1] if parts[-1] in ("forward", "backward") else parts[-2]
        return ".".join(parts[:-2]), ".".join(parts[-2:]), direction
    return None


def load_rows(dump_json: Path, *, legacy: bool = False) -> list[Row]:
    """All rows of a dump.json in dump order.

    26.2.0 leaves out keys without forward/backward/parameters_grad; ``legacy`` (8.3.3) keeps
    every key.
    """
    with open(dump_json, encoding="utf-8") as fh:
        data = json.load(fh)["data"]
    rows: list[Row] = []
    for api, entry in data.items():
        if not legacy and split_api(api) is None:
            continue
        rows.extend(expand_api(api, entry, legacy=legacy))
    return rows


def renumbered_keys(rows: Sequence[Row]) -> list[str]:
    """Compare keys after the backward re-numbering of compare-core §4.1 step 2."""
    seen: dict[str, int] = {}
    new_call: dict[str, str] = {}
    for row in rows:
        if row.api in new_call:
            continue
        split = split_api(row.api)
        assert split is not None
        prefix, call, direction = split
        if direction != "backward":
            new_call[row.api] = row.api
            continue
        k = seen.get(prefix, 0)
        seen[prefix] = k + 1
        new = ".".join(str(k) if p.isdigit() else p for p in call.split("."))
        new_call[row.api] = f"{prefix}.{new}"
    keys = []
    for row in rows:
        suffix = row.name[len(row.api) :] if row.name.startswith(row.api) else "." + row.name.split(".", 1)[-1]
        keys.append(new_call[row.api] + suffix)
    return keys


def join(
    npu_rows: Sequence[Row],
    npu_keys: Sequence[str],
    bench_rows: Sequence[Row],
    bench_keys: Sequence[str],
    *,
    dtype_gate: Callable[[str, str], bool] | None,
    shape_in_key: bool = False,
) -> list[tuple[str, str]]:
    """(NPU name, bench name) pairs in NPU order; ``N/A`` where unmatched or gated out.

    Outer and left join look the same here: bench-only rows are dropped either way.
    ``shape_in_key``: msprobe 8.3.3 also requires equal shapes (except with data mapping).
    """
    index: dict[tuple[str, str], list[int]] = {}
    for i, key in enumerate(bench_keys):
        index.setdefault((key, bench_rows[i].shape if shape_in_key else ""), []).append(i)
    pairs: list[tuple[str, str]] = []
    for row, key in zip(npu_rows, npu_keys, strict=True):
        hits = index.get((key, row.shape if shape_in_key else ""))
        if not hits:
            pairs.append((row.name, "N/A"))
            continue
        for j in hits:
            bench = bench_rows[j]
            if dtype_gate is not None and not dtype_gate(row.dtype, bench.dtype):
                pairs.append((row.name, "N/A"))
            else:
                pairs.append((row.name, bench.name))
    return pairs


def dtype_gate_same_framework(a: str, b: str) -> bool:
    """compare-core §4.1.4 gate without the cross-framework normalisation."""
    return dtypes_match(a, b, cross_framework=False)


def dtype_gate_cross_framework(a: str, b: str) -> bool:
    """compare-core §4.1.4 gate with both dtypes normalised by ``dtype_kind`` first."""
    return dtypes_match(a, b, cross_framework=True)


def names(rows: Iterable[Row]) -> list[str]:
    """Row names, for convenience."""
    return [r.name for r in rows]
