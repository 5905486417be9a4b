"""``-lm`` layer mapping (spec ``compare-modes.md`` §4): the layers of both dumps from ``stack.json`` and
``construct.json``, renamed by the yaml's rules, give each call's counterpart. Part of :mod:`.mapping`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msprobe_core.plugin import DumpFormatError, InputError, MappingError

from .mapping_files import NA_KEY, RowLike, _read_yaml, _scalar_str

# --------------------------------------------------------------------------------------------
# §4 layer mapping (-lm)
# --------------------------------------------------------------------------------------------

TOP_LAYER = "TopLayer"
_LAYER_PREFIXES = frozenset({"Cell", "Module"})
_NO_FRAME_SCOPE_TYPES = frozenset({"Primitive", "Jit"})
_FRAME_FILES = (
    "site-packages/torch",
    "package/torch",
    "site-packages/mindspore",
    "package/mindspore",
)
_SKIP_FILES = ("msprobe", "MindSpeed")
_SKIP_FUNCS = ("construct", "__call__")
_STACK_END_SIGN = {
    "mindspore": re.compile("construct"),
    "pytorch": re.compile(r"in (for|back)ward,"),
}


def load_layer_mapping_yaml(path: str | Path) -> dict[str, dict[str, str]]:
    """Read a ``layer_mapping.yaml``: ``{TypeName: {child_path: target_name}}``.

    Unquoted integer keys/values (``layers: {5: 0}``) are accepted as text (msprobe crashes on
    them). A top-level ``Cell`` key is kept as written; :func:`layer_api_mapping` treats it as the
    root (``TopLayer``). In a value, everything from the first ``(`` on is dropped.
    """
    obj = _read_yaml(path, "layer mapping")
    if obj is None:
        return {}
    if not isinstance(obj, dict):
        raise MappingError(
            f"layer mapping file must be a mapping 'LayerType: {{child: target}}', got {type(obj).__name__}",
            path=path,
        )
    out: dict[str, dict[str, str]] = {}
    for type_name, rules in obj.items():
        t = _scalar_str(type_name)
        if not t:
            raise MappingError(f"layer mapping file: layer type {type_name!r} is not a name", path=path)
        if rules is None:
            out[t] = {}
            continue
        if not isinstance(rules, dict):
            raise MappingError(
                f"layer mapping file: '{t}' must map child names to target names, got {rules!r}",
                path=path,
            )
        inner: dict[str, str] = {}
        for child, target in rules.items():
            c = _scalar_str(child)
            v = _scalar_str(target)
            if not c:
                raise MappingError(
                    f"layer mapping file: under '{t}', key {child!r} is not a name",
                    path=path,
                )
            if v is None:
                raise MappingError(
                    f"layer mapping file: under '{t}', '{c}' must map to a name, got {target!r}",
                    path=path,
                )
            v = v.split("(", 1)[0].strip()
            if not v:
                raise MappingError(
                    f"layer mapping file: under '{t}', '{c}' maps to an empty name",
                    path=path,
                )
            inner[c] = v
        out[t] = inner
    return out


def detect_framework(dump: Mapping[str, Any], raw_text: str | None = None) -> str:
    """``pytorch`` or ``mindspore`` for a loaded dump.json (compare-modes §4.1).

    The ``framework`` field wins when it is one of the two; otherwise the first ``"type":
    "mindspore`` / ``"type": "torch`` in the file text (``raw_text``, or the re-serialised dump).
    """
    fw = dump.get("framework")
    if fw in ("pytorch", "mindspore"):
        return str(fw)
    text = raw_text if raw_text is not None else json.dumps(dump)
    m = re.search(r'"type":\s*"(mindspore|torch)', text)
    if m:
        return "mindspore" if m.group(1) == "mindspore" else "pytorch"
    return "pytorch"


def load_stack_construct(
    dump_dir: str | Path,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """``(stack, construct)`` of the dump directory for layer mapping (compare-modes §4.1).

    Neither file present → ``(None, None)`` (layer mapping yields an empty mapping). Exactly one
    present → :class:`InputError`. Both must hold JSON objects.
    """
    from msprobe_core.plugin import dump_file_beside

    d = Path(dump_dir)
    stack_p, construct_p = d / "stack.json", d / "construct.json"
    # the rule for every file of a dump: no symlink out of its directory
    has_stack = dump_file_beside(stack_p, stack_p.name) is not None
    has_construct = dump_file_beside(construct_p, construct_p.name) is not None
    if not has_stack and not has_construct:
        return None, None
    if has_stack != has_construct:
        missing = construct_p if has_stack else stack_p
        raise InputError(
            f"layer mapping needs both stack.json and construct.json next to dump.json; {missing.name} is missing",
            path=missing,
        )
    from msprobe_core.plugin import read_json_file  # the core's one JSON reader: size cap, one-line errors

    loaded: list[dict[str, Any]] = []
    for p in (stack_p, construct_p):
        obj = read_json_file(p, p.stem)
        if not isinstance(obj, dict):
            raise DumpFormatError(f"{p.name} must hold a JSON object, got {type(obj).__name__}", path=p)
        loaded.append(obj)
    return loaded[0], loaded[1]


@dataclass
class LayerItem:
    """One dump.json data key placed in the layer tree (compare-modes §4.2)."""

    data_name: str
    type_name: str
    api_name: str
    state: str
    layer_scope: str
    frame_scope: str = ""
    full_scope: str = ""


def _construct_parent(value: Any) -> str | None:
    if isinstance(value, list):  # Megatron micro-step wrapper: [parent, micro_step]
        value = value[0] if value else None
    return value if isinstance(value, str) and value else None


def _frame_scope(stack: Any, framework: str, data_name: str) -> str:
    """The framework-entry function name of an API's stack (compare-modes §4.2 frame scope)."""
    if not isinstance(stack, list) or not all(isinstance(s, str) for s in stack):
        raise DumpFormatError(f"stack of {data_name} must be a list of strings")
    end_sign = _STACK_END_SIGN.get(framework, _STACK_END_SIGN["pytorch"])
    start, end = -1, len(stack)
    for i, line in enumerate(stack):
        if "Template" in line:
            start = i
        elif start >= 0 and end_sign.search(line):
            end = i
            break
    frame_line = None
    for line in stack[start + 1 : end]:
        file_part = line.split(",")[0]
        if any(f in file_part for f in _FRAME_FILES):
            frame_line = line
        else:
            break
    if not frame_line:
        return ""
    parts = frame_line.split(",")
    if any(s in parts[0] for s in _SKIP_FILES):
        return ""
    func = parts[2] if len(parts) > 2 else ""
    if any(s in func for s in _SKIP_FUNCS):
        return ""
    words = func.split()
    return words[1] if len(words) > 1 else ""


def _new_layer_item(
    data_name: str,
    parent: str | None,
    stack: Any,
    framework: str,
    fix_parameters_grad_scope: bool,
) -> LayerItem:
    parts = data_name.split(".")
    if len(parts) < 4:
        raise DumpFormatError(
            f"dump.json key {data_name!r} has fewer than four dot-separated parts; layer mapping needs "
            "'<Type>.<api>.<n>.<direction>' or 'Cell.<path>.<Class>.<direction>.<n>'"
        )
    if parts[-1] == "parameters_grad" or parts[-2] == "parameters_grad":
        off = 0 if parts[-1] == "parameters_grad" else 1
        api_name, type_name = parts[-3 - off], parts[-2 - off]
        # msprobe 26.2.0 cuts the last three parts of the *whole* key, so with the current
        # '...<attr>.<Class>.parameters_grad.<n>' keys the attribute stays in the layer scope
        # and the full scope ends in '<attr>.<attr>' (renamed attributes then never match).
        cut = parts[: -3 - off] if fix_parameters_grad_scope else parts[:-3]
        return LayerItem(data_name, type_name, api_name, "parameters_grad", ".".join(cut))
    api_type = parts[0]
    type_name = parts[-3]
    if api_type in _LAYER_PREFIXES:
        return LayerItem(data_name, type_name, parts[-4], parts[-2], ".".join(parts[:-4]))
    if parent:
        # a parent that is no module call (the dumper's ``optimizer``, under which it records the
        # optimizer's own calls) has no parts to cut: like msprobe, the scope is what is left, nothing
        layer_scope = ".".join(parent.split(".")[:-3])
    else:
        layer_scope = TOP_LAYER
    frame = ""
    if stack and api_type not in _NO_FRAME_SCOPE_TYPES:
        frame = _frame_scope(stack, framework, data_name)
    return LayerItem(data_name, type_name, type_name, parts[-1], layer_scope, frame)


def _renumber(
    items: Sequence[LayerItem],
    type_name: str = "ParallelTransformer",
    suffix: str = "layers",
) -> None:
    """Renumber pass: make layer indices under each ``<ParallelTransformer>.layers`` start at 0."""
    prefixes = [f"{it.full_scope}.{suffix}" for it in items if it.type_name == type_name]
    for prefix in dict.fromkeys(prefixes):
        head = re.compile(rf"^{re.escape(prefix)}\.(\S+?)(?:\.|$)")

        def number(scope: str, _head: re.Pattern[str] = head) -> int | None:
            m = _head.search(scope)
            if not m:
                return None
            digits = re.findall(r"\d+", m.group(1))
            return int(digits[-1]) if digits else None

        found = [n for n in (number(it.full_scope) for it in items) if n is not None]
        if not found:
            continue
        low = min(found)
        for it in items:
            n = number(it.full_scope)
            if n is None:
                continue
            m = head.search(it.full_scope)
            assert m is not None
            start, end = m.span(1)
            it.full_scope = f"{it.full_scope[:start]}{n - low}{it.full_scope[end:]}"


def layer_data_items(
    data_names: Iterable[str],
    construct: Mapping[str, Any] | None,
    stack: Mapping[str, Any] | None,
    framework: str,
    *,
    fix_parameters_grad_scope: bool = False,
) -> list[LayerItem]:
    """Layer items of one dump (compare-modes §4.2), in dump order, after both post-passes.

    ``data_names`` are the dump.json data keys. Empty/missing ``stack`` or ``construct`` → no
    items (msprobe: empty mapping). ``stack`` is looked up by data key as is, so the grouped
    stack.json format of current dumps yields no frame scope (as in msprobe).
    """
    if not stack or not construct:
        return []
    items: list[LayerItem] = []
    by_name: dict[str, LayerItem] = {}
    for name in data_names:
        item = _new_layer_item(
            name,
            _construct_parent(construct.get(name)),
            stack.get(name),
            framework,
            fix_parameters_grad_scope,
        )
        scope = [item.layer_scope, item.frame_scope] if item.frame_scope else [item.layer_scope]
        item.full_scope = ".".join([*scope, item.api_name])
        items.append(item)
        by_name[name] = item
    for item in items:  # backward pass: take the scope of the forward twin
        parts = item.data_name.split(".")
        if "backward" in parts[-2:]:
            twin = by_name.get(".".join(parts[:-2] + [p.replace("backward", "forward") for p in parts[-2:]]))
            if twin is not None:
                item.layer_scope, item.frame_scope, item.full_scope = (
                    twin.layer_scope,
                    twin.frame_scope,
                    twin.full_scope,
                )
    _renumber(items)
    return items


@dataclass
class _Node:
    type_name: str
    items: dict[str, list[str]] = field(default_factory=dict)
    children: dict[str, _Node] = field(default_factory=dict)


def _build_tree(items: Iterable[LayerItem]) -> _Node:
    root = _Node(TOP_LAYER)
    for item in items:
        node = root
        for part in item.full_scope.split(".")[1:]:
            node = node.children.setdefault(part, _Node(part))
        node.items.setdefault(item.state, []).append(item.data_name)
        node.type_name = item.type_name
    return root


def _prepare_rules(
    rules: Mapping[str, Mapping[str, str]] | None,
) -> dict[str, dict[str, list[tuple[list[str], str]]]]:
    """``{type: {first_part: [(key parts, target), ...longest first]}}``; ``Cell`` → ``TopLayer``."""
    out: dict[str, dict[str, list[tuple[list[str], str]]]] = {}
    for type_name, mapping in (rules or {}).items():
        t = TOP_LAYER if type_name == "Cell" else type_name
        per_type = out.setdefault(t, {})
        for key, target in mapping.items():
            parts = key.split(".")
            per_type.setdefault(parts[0], []).append((parts, target))
    for per_type in out.values():
        for rule_list in per_type.values():
            rule_list.sort(key=lambda r: -len(r[0]))
    return out


def _map_item(
    item: LayerItem,
    npu_root: _Node,
    bench_root: _Node,
    rules: dict[str, dict[str, list[tuple[list[str], str]]]],
) -> str:
    path = item.full_scope.split(".")[1:]
    node = npu_root
    targets: list[str] = []
    i = 0
    while i < len(path):
        step, target = 1, path[i]
        for key_parts, rule_target in rules.get(node.type_name, {}).get(path[i], []):
            if path[i : i + len(key_parts)] == key_parts:
                step, target = len(key_parts), rule_target
                break
        targets.append(target)
        for _ in range(step):
            node = node.children[path[i]]
            i += 1
    own = node.items.get(item.state, [])
    ordinal = len(own) - 1 - own[::-1].index(item.data_name)
    bench = bench_root
    for part in ".".join(targets).split(".") if targets else []:
        nxt = bench.children.get(part)
        if nxt is None:
            return NA_KEY
        bench = nxt
    candidates = bench.items.get(item.state, [])
    return candidates[ordinal] if ordinal < len(candidates) else NA_KEY


def layer_api_mapping(
    npu_items: Sequence[LayerItem],
    bench_items: Sequence[LayerItem],
    rules: Mapping[str, Mapping[str, str]] | None,
) -> dict[str, str]:
    """NPU data key → bench data key (or ``N/A``) by walking both layer trees (compare-modes §4.3)."""
    npu_root, bench_root = _build_tree(npu_items), _build_tree(bench_items)
    prepared = _prepare_rules(rules)
    out: dict[str, str] = {}
    for item in npu_items:
        out[item.data_name] = _map_item(item, npu_root, bench_root, prepared)
    return out


def layer_data_mapping(
    api_map: Mapping[str, str],
    npu_rows: Iterable[RowLike],
    bench_rows: Iterable[RowLike],
) -> dict[str, str]:
    """Expand an API-level mapping to row names by equal suffix after the data key (§4.3 end).

    Rows must be in msprobe's per-API order (inputs, parameters, outputs, parameters_grad);
    an NPU row whose suffix the bench call lacks, or whose call maps to ``N/A``, maps to ``N/A``.
    """
    npu_by_api: dict[str, list[str]] = {}
    for row in npu_rows:
        npu_by_api.setdefault(row.api, []).append(row.name)
    bench_by_api: dict[str, list[str]] = {}
    for row in bench_rows:
        bench_by_api.setdefault(row.api, []).append(row.name)
    out: dict[str, str] = {}
    for npu_api, bench_api in api_map.items():
        suffix_to_bench = {n[len(bench_api) :]: n for n in bench_by_api.get(bench_api, [])}
        for name in npu_by_api.get(npu_api, []):
            out[name] = suffix_to_bench.get(name[len(npu_api) :], NA_KEY)
    return out


@dataclass
class LayerSide:
    """What layer mapping needs from one side: data keys, construct, stack, framework and rows."""

    data_names: Sequence[str]
    construct: Mapping[str, Any] | None
    stack: Mapping[str, Any] | None
    framework: str
    rows: Sequence[RowLike]


def layer_mapping(
    npu: LayerSide,
    bench: LayerSide,
    rules: Mapping[str, Mapping[str, str]] | None,
    *,
    fix_parameters_grad_scope: bool = False,
) -> dict[str, str]:
    """The data mapping ``-lm`` generates (compare-modes §4), in the order msprobe writes it.

    Empty when either side lacks stack/construct data; the caller then compares by plain names
    (any ``-dm`` is dropped, as in msprobe). Write it with :func:`data_mapping_yaml_text` to
    ``data_mapping_{timestamp}.yaml`` and compare with :func:`data_mapping_keys`.
    """
    npu_items = layer_data_items(
        npu.data_names,
        npu.construct,
        npu.stack,
        npu.framework,
        fix_parameters_grad_scope=fix_parameters_grad_scope,
    )
    bench_items = layer_data_items(
        bench.data_names,
        bench.construct,
        bench.stack,
        bench.framework,
        fix_parameters_grad_scope=fix_parameters_grad_scope,
    )
    if not npu_items:
        return {}
    api_map = layer_api_mapping(npu_items, bench_items, rules)
    return layer_data_mapping(api_map, npu.rows, bench.rows)


def data_mapping_yaml_text(data_map: Mapping[str, str]) -> str:
    """Contents of ``data_mapping_{timestamp}.yaml``: one ``npu: bench`` line each, in order."""
    if not data_map:
        return "{}\n"
    import yaml

    return yaml.safe_dump(
        dict(data_map),
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=10**9,
    )
