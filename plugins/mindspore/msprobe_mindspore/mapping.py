"""MindSpore name mapping for ``msprobe compare``: pure functions plus small file loaders.

Covers the four mapping options of the MindSpore comparator (spec ``compare-modes.md`` §1–§4)
and the cross-framework dtype gate (``compare-core.md`` §4.1.4):

* ``-am`` API mapping: :func:`load_builtin_api_table`, :func:`load_api_mapping_yaml`,
  :func:`api_mapping_keys`;
* ``-cm`` cell mapping: :func:`load_cell_mapping_yaml`, :func:`cell_mapping_keys`;
* ``-dm`` data mapping: :func:`load_data_mapping`, :func:`data_mapping_keys`;
* ``-lm`` layer mapping (:mod:`.layer_mapping`): :func:`load_layer_mapping_yaml`, :func:`load_stack_construct`,
  :func:`layer_data_items`, :func:`layer_api_mapping`, :func:`layer_data_mapping`,
  :func:`layer_mapping` and :func:`data_mapping_yaml_text`;
* :func:`dtype_kind` for the dtype gate, :func:`mapping_precedence` for which option is used.

The engine hands each side over as rows in dump order. A row is anything with the attributes of
:class:`RowLike`: ``api`` (the dump.json data key, e.g. ``Mint.div.1.forward``), ``name`` (the row
name shown in ``NPU Name``/``Bench Name``, e.g. ``Mint.div.1.forward.input.0``), ``state``
(``input``/``output``/``parameters``/``parameters_grad``) and ``dtype``. Every ``*_keys``
function returns one compare key per NPU row; the engine then pairs rows by equal keys.

msprobe 26.2.0 behaviour that the real oracles show and that a caller must know:

* With any mapping option active, msprobe builds the NPU key from the **raw** NPU row name, not
  from the backward-renumbered one (the bench side stays renumbered). With ``-am`` this pairs
  the i-th backward call of an NPU API with the i-th-from-last bench backward call of that API
  (``MintFunctional.linear.8.backward`` ↔ ``Functional.linear.0.backward``). The key functions
  therefore start from ``row.name`` unless ``npu_base="renumbered"`` is passed, which starts from
  the engine's renumbered ``npu_keys`` instead (the pairing a user would expect).
* Keys that must never match are ``N/A`` (cell mapping) or end in ``abandoned`` (API mapping);
  the engine shows such rows with ``Bench Name = N/A``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from msprobe_core.plugin import DumpFormatError, MappingError

from .layer_mapping import (
    LayerItem,
    LayerSide,
    data_mapping_yaml_text,
    detect_framework,
    layer_api_mapping,
    layer_data_items,
    layer_data_mapping,
    layer_mapping,
    load_layer_mapping_yaml,
    load_stack_construct,
)
from .mapping_files import (
    _BUILTIN_TABLE_PATH,
    ABANDONED_SUFFIX,
    NA_KEY,
    NpuBase,
    RowLike,
    Warn,
    _flat_str_mapping,
    _read_yaml,
    dtype_kind,
    dtypes_match,
    mapping_precedence,
)

__all__ = [
    "ABANDONED_SUFFIX",
    "NA_KEY",
    "ApiMappingEntry",
    "LayerItem",
    "LayerSide",
    "RowLike",
    "api_mapping_keys",
    "builtin_api_key",
    "load_primitive_table",
    "primitive_api_key",
    "cell_mapping_keys",
    "data_mapping_keys",
    "data_mapping_yaml_text",
    "detect_framework",
    "dtype_kind",
    "dtypes_match",
    "layer_api_mapping",
    "layer_data_items",
    "layer_data_mapping",
    "layer_mapping",
    "load_api_mapping_yaml",
    "load_builtin_api_table",
    "load_cell_mapping_yaml",
    "load_data_mapping",
    "load_layer_mapping_yaml",
    "load_stack_construct",
    "mapping_precedence",
]

log = logging.getLogger("msprobe_mindspore.mapping")


# --------------------------------------------------------------------------------------------
# shared helpers
# --------------------------------------------------------------------------------------------


def _api_name(name: str) -> str:
    """First two dot parts (``Functional.abs`` of ``Functional.abs.0.forward.input.0``)."""
    parts = name.split(".")
    if len(parts) < 2:
        raise DumpFormatError(f"cannot take the API name of {name!r}: fewer than two dot-separated parts")
    return f"{parts[0]}.{parts[1]}"


def _bases(npu_rows: Sequence[RowLike], npu_keys: Sequence[str] | None, npu_base: NpuBase) -> list[str]:
    """The name each NPU key is derived from: raw row names (msprobe) or the renumbered keys."""
    if npu_base == "raw":
        return [row.name for row in npu_rows]
    if npu_base != "renumbered":
        raise ValueError(f"npu_base must be 'raw' or 'renumbered', not {npu_base!r}")
    if npu_keys is None or len(npu_keys) != len(npu_rows):
        raise ValueError("npu_base='renumbered' needs one npu_key per NPU row")
    return list(npu_keys)


def _call_of(row: RowLike, base: str) -> str:
    """The API-call part of ``base`` (``base`` minus the row's suffix after its data key)."""
    if row.name.startswith(row.api):
        suffix = row.name[len(row.api) :]
        if base.endswith(suffix):
            return base[: len(base) - len(suffix)] if suffix else base
    return row.api


# --------------------------------------------------------------------------------------------
# §1 API mapping (-am)
# --------------------------------------------------------------------------------------------


def load_builtin_api_table(path: str | Path | None = None) -> dict[str, str]:
    """The built-in MindSpore→PyTorch API table (``"<MsType>.<api>": "<PtType>.<api>"``, 399 entries).

    ``path`` overrides the packaged ``data/ms_to_pt_api.yaml`` (for tests).
    """
    p = Path(path) if path is not None else _BUILTIN_TABLE_PATH
    return _flat_str_mapping(_read_yaml(p, "built-in API mapping"), p, "built-in API mapping")


_PRIMITIVE_TABLE_PATH = Path(__file__).resolve().parent / "data" / "ms_primitive_to_pt.yaml"


def load_primitive_table(path: str | Path | None = None) -> dict[str, str]:
    """MindSpore primitive classes and the PyTorch API each computes (``MatMul: Torch.matmul``).

    ``path`` overrides the packaged ``data/ms_primitive_to_pt.yaml`` (for tests).
    """
    p = Path(path) if path is not None else _PRIMITIVE_TABLE_PATH
    return _flat_str_mapping(_read_yaml(p, "built-in primitive mapping"), p, "built-in primitive mapping")


def primitive_api_key(name: str, primitives: Mapping[str, str]) -> str | None:
    """The PyTorch key of a primitive's row (``Primitive.matmul.MatMul.3.forward.input.0`` →
    ``Torch.matmul.3.forward.input.0``), ``None`` for any other row or a class the table does not carry."""
    parts = name.split(".")
    if len(parts) < 5 or parts[0] != "Primitive":
        return None
    torch_api = primitives.get(parts[2])
    return ".".join([torch_api, *parts[3:]]) if torch_api else None


def _with_primitives(keys: list[str], bases: Sequence[str], primitives: Mapping[str, str],
                     bench_rows: Iterable[RowLike] | None) -> list[str]:
    """``keys`` with each primitive row keyed by its PyTorch API, where that pairs it and takes no one's key.

    A primitive's row keeps its own name when the golden dump has rows of that very primitive (a MindSpore
    golden run pairs it by name, as msprobe does), and when its PyTorch key is already another target row's
    (``Functional.add`` and a ``Primitive.*.Add`` of one number): msprobe's own pairs never change.
    """
    bench_apis = None if bench_rows is None else {".".join(r.name.split(".")[:3]) for r in bench_rows}
    taken = set(keys)
    out = list(keys)
    for i, base in enumerate(bases):
        key = primitive_api_key(base, primitives)
        if key is None or (bench_apis is not None and ".".join(base.split(".")[:3]) in bench_apis):
            continue
        if key in taken:
            continue
        out[i] = key
    return out


@dataclass(frozen=True)
class ApiMappingEntry:
    """One entry of a user ``api_mapping.yaml`` (positions are ints or kwarg names).

    ``ms_outputs``/``pt_outputs`` are the lists actually used for output rows: msprobe's own
    spelling ``ms_output``/``pt_output`` when present, else the documented ``ms_outputs``/
    ``pt_outputs``. ``problem`` is set when the entry must be skipped (lists of unequal length);
    :func:`api_mapping_keys` then ignores it, like msprobe (which warns and skips).
    """

    ms_api: str
    pt_api: str
    ms_args: tuple[int | str, ...] = ()
    pt_args: tuple[int | str, ...] = ()
    ms_outputs: tuple[int | str, ...] = ()
    pt_outputs: tuple[int | str, ...] = ()
    ms_parameters: tuple[int | str, ...] = ()
    pt_parameters: tuple[int | str, ...] = ()
    ms_parameters_grad: tuple[int | str, ...] = ()
    pt_parameters_grad: tuple[int | str, ...] = ()
    problem: str | None = None

    def lists_for_state(self, state: str) -> tuple[tuple[int | str, ...], tuple[int | str, ...]] | None:
        """(MS positions, PT positions) for a row state, or None for states the entry cannot map."""
        return {
            "input": (self.ms_args, self.pt_args),
            "output": (self.ms_outputs, self.pt_outputs),
            "parameters": (self.ms_parameters, self.pt_parameters),
            "parameters_grad": (self.ms_parameters_grad, self.pt_parameters_grad),
        }.get(state)


_API_ENTRY_LIST_KEYS = (
    "ms_args",
    "pt_args",
    "ms_outputs",
    "pt_outputs",
    "ms_output",
    "pt_output",
    "ms_parameters",
    "pt_parameters",
    "ms_parameters_grad",
    "pt_parameters_grad",
)
_API_ENTRY_KEYS = frozenset(("ms_api", "pt_api", *_API_ENTRY_LIST_KEYS))


def _positions(value: Any, key: str, where: str, path: str | Path) -> tuple[int | str, ...]:
    if value is None:
        return ()
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        value = [value]  # a single position written without the list dash
    if not isinstance(value, list):
        raise MappingError(f"{where}: '{key}' must be a list of positions, got {value!r}", path=path)
    out: list[int | str] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise MappingError(
                f"{where}: '{key}' holds {item!r}; positions are integers or keyword names",
                path=path,
            )
        out.append(item)
    if len(set(map(str, out))) != len(out):
        raise MappingError(f"{where}: '{key}' lists a position twice: {out}", path=path)
    return tuple(out)


def _api_entry(raw: Any, where: str, path: str | Path, warn: Warn) -> ApiMappingEntry:
    if not isinstance(raw, dict):
        raise MappingError(f"{where} must be a mapping with ms_api/pt_api/..., got {raw!r}", path=path)
    for key in ("ms_api", "pt_api"):
        value = raw.get(key)
        if not isinstance(value, str) or not value.strip():
            raise MappingError(
                f"{where}: '{key}' is missing or not a name (e.g. Functional.abs)",
                path=path,
            )
        if value.count(".") != 1:
            raise MappingError(
                f"{where}: '{key}: {value}' must be '<api_type>.<api_name>' as in dump.json, "
                "without call index or direction",
                path=path,
            )
    unknown = sorted(str(k) for k in raw if k not in _API_ENTRY_KEYS)
    if unknown:
        warn(f"{path}: {where}: unknown keys ignored: {', '.join(unknown)}")
    lists = {key: _positions(raw.get(key), key, where, path) for key in _API_ENTRY_LIST_KEYS}
    ms_out = lists["ms_output"] if "ms_output" in raw else lists["ms_outputs"]
    pt_out = lists["pt_output"] if "pt_output" in raw else lists["pt_outputs"]
    pairs = (
        ("ms_args", "pt_args", lists["ms_args"], lists["pt_args"]),
        ("ms_outputs", "pt_outputs", lists["ms_outputs"], lists["pt_outputs"]),
        ("ms_output", "pt_output", ms_out, pt_out),
        (
            "ms_parameters",
            "pt_parameters",
            lists["ms_parameters"],
            lists["pt_parameters"],
        ),
        (
            "ms_parameters_grad",
            "pt_parameters_grad",
            lists["ms_parameters_grad"],
            lists["pt_parameters_grad"],
        ),
    )
    problem = None
    for k1, k2, a, b in pairs:
        if len(a) != len(b):
            problem = f"'{k1}' has {len(a)} positions but '{k2}' has {len(b)}"
            break
    if problem:
        warn(
            f"{path}: {where} ({raw['ms_api']} -> {raw['pt_api']}) is skipped: {problem}; "
            "make sure that the number of parameters is equal"
        )
    return ApiMappingEntry(
        ms_api=raw["ms_api"].strip(),
        pt_api=raw["pt_api"].strip(),
        ms_args=lists["ms_args"],
        pt_args=lists["pt_args"],
        ms_outputs=ms_out,
        pt_outputs=pt_out,
        ms_parameters=lists["ms_parameters"],
        pt_parameters=lists["pt_parameters"],
        ms_parameters_grad=lists["ms_parameters_grad"],
        pt_parameters_grad=lists["pt_parameters_grad"],
        problem=problem,
    )


def load_api_mapping_yaml(path: str | Path, *, warn: Warn | None = None) -> list[ApiMappingEntry]:
    """Read a user ``api_mapping.yaml``.

    Accepts msprobe's format (a YAML list of entries) and the seed-document format (one
    top-level mapping, on which msprobe 26.2.0 crashes). Output positions come from
    ``ms_output``/``pt_output`` when given (what msprobe reads), else from the documented
    ``ms_outputs``/``pt_outputs``; missing lists are empty, a bare scalar is a one-item
    list. Entries whose paired lists differ in length are kept with ``problem`` set and a
    warning (msprobe skips them). Malformed content raises :class:`MappingError` naming the
    file and the entry.
    """
    warn = warn or log.warning
    obj = _read_yaml(path, "API mapping")
    if obj is None:
        raise MappingError("API mapping file is empty; expected entries with ms_api/pt_api", path=path)
    if isinstance(obj, dict):
        items: list[Any] = [obj]
        label = "the mapping"
    elif isinstance(obj, list):
        items = obj
        label = ""
    else:
        raise MappingError(
            f"API mapping file must hold a list of entries (or one entry), got {type(obj).__name__}",
            path=path,
        )
    entries = []
    for i, raw in enumerate(items):
        where = label or f"entry {i + 1}"
        entries.append(_api_entry(raw, where, path, warn))
    return entries


def builtin_api_key(name: str, table: Mapping[str, str]) -> str:
    """compare-modes §1.1: rewrite an NPU name with the built-in rules.

    ``Mint.*`` → every ``Mint`` replaced by ``Torch``; ``MintFunctional.*`` → every
    ``MintFunctional`` replaced by ``Functional``; else an API (first two parts) found in
    ``table`` is replaced (every occurrence) by its value; else unchanged.
    """
    api = _api_name(name)
    prefix = api.split(".", 1)[0]
    if prefix == "Mint":
        return name.replace("Mint", "Torch")
    if prefix == "MintFunctional":
        return name.replace("MintFunctional", "Functional")
    target = table.get(api)
    if target:
        return name.replace(api, target)
    return name


_STATE_PATTERN = {
    "input": ".input.",
    "output": ".output.",
    "parameters": ".parameters.",
    "parameters_grad": ".parameters_grad.",
}


def _user_api_key(row: RowLike, base: str, entry: ApiMappingEntry) -> str:
    """compare-modes §1.2 step 3 for one row of ``entry.ms_api``."""
    new_name = base.replace(entry.ms_api, entry.pt_api, 1)
    origin = _call_of(row, base).replace(entry.ms_api, entry.pt_api, 1)
    pattern = _STATE_PATTERN.get(row.state)
    lists = entry.lists_for_state(row.state)
    if pattern is None or lists is None:
        return new_name + ABANDONED_SUFFIX
    ms_list, pt_list = lists
    head = origin + pattern
    rest = new_name.removeprefix(head)
    key = None
    for ms_pos, pt_pos in zip(ms_list, pt_list, strict=True):
        if rest == str(ms_pos):
            key = new_name.replace(pattern + str(ms_pos), pattern + str(pt_pos))
    return key if key is not None else new_name + ABANDONED_SUFFIX


def api_mapping_keys(
    npu_rows: Sequence[RowLike],
    npu_keys: Sequence[str] | None,
    table: Mapping[str, str],
    entries: Sequence[ApiMappingEntry] = (),
    *,
    bench_rows: Iterable[RowLike] | None = None,
    npu_base: NpuBase = "raw",
    primitives: Mapping[str, str] | None = None,
) -> list[str]:
    """Compare keys for ``-am`` (compare-modes §1): built-in rewrite, then the user entries.

    ``primitives`` (:func:`load_primitive_table`): also key the rows of MindSpore primitives by the PyTorch
    API they compute, which msprobe leaves unpaired (:func:`_with_primitives`; docs/differences.md).

    ``table`` is :func:`load_builtin_api_table`; ``entries`` come from
    :func:`load_api_mapping_yaml` (empty for bare ``-am``). A user entry is used only when its
    ``ms_api`` is the API of some NPU row and its ``pt_api`` the API of some bench row
    (``bench_rows``; if None, the bench check is skipped). Rows of a used entry get the mapped
    key, or ``<name>abandoned`` when their position is not listed (nested items, kwargs not
    named). Keys start from the raw NPU row names unless ``npu_base="renumbered"``.
    """
    bases = _bases(npu_rows, npu_keys, npu_base)
    keys = [builtin_api_key(base, table) for base in bases]
    if primitives:
        keys = _with_primitives(keys, bases, primitives, bench_rows)
    usable = [e for e in entries if e.problem is None]
    if not usable:
        return keys
    npu_api_rows: dict[str, list[int]] = {}
    for i, row in enumerate(npu_rows):
        npu_api_rows.setdefault(_api_name(row.name), []).append(i)
    bench_apis = None if bench_rows is None else {_api_name(r.name) for r in bench_rows}
    for entry in usable:
        if entry.ms_api not in npu_api_rows:
            continue
        if bench_apis is not None and entry.pt_api not in bench_apis:
            continue
        for i in npu_api_rows[entry.ms_api]:
            keys[i] = _user_api_key(npu_rows[i], bases[i], entry)
    return keys


# --------------------------------------------------------------------------------------------
# §2 cell mapping (-cm)
# --------------------------------------------------------------------------------------------


def load_cell_mapping_yaml(path: str | Path) -> dict[str, str]:
    """Read a ``cell_mapping.yaml``: flat ``{target: golden}`` (exact ``cell.Class`` or substring rules)."""
    return _flat_str_mapping(_read_yaml(path, "cell mapping"), path, "cell mapping")


_DIRECTION_RE = re.compile(r"\.(?:forward|backward)\.")
_CELL_SPLIT_RE = re.compile(r"\.(?:forward|backward|parameters_grad)\.")


def cell_mapping_key(name: str, cell_map: Mapping[str, str] | None, *, substring_rules: bool = True) -> str:
    """compare-modes §2 for one NPU name (``N/A`` = never matches).

    ``substring_rules=False`` gives msprobe 8.3.3 (legacy CLI), which only knows exact
    ``{cell_name}.{class_name}`` rules.
    """
    if not name:
        return NA_KEY
    if "parameters_grad" not in name.split(".") and not _DIRECTION_RE.search(name):
        return NA_KEY
    name = name.replace("Cell", "Module", 1)
    if not cell_map:
        return name
    cell = _CELL_SPLIT_RE.split(name.split(".", 1)[-1])[0]
    if cell in cell_map:
        new = cell_map[cell]
    elif not substring_rules:
        return name
    else:
        new = cell
        for old, repl in cell_map.items():
            if old in new:
                new = new.replace(old, repl, 1)
    if new != cell:
        name = name.replace(cell, new, 1)
    return name


def cell_mapping_keys(
    npu_rows: Sequence[RowLike],
    npu_keys: Sequence[str] | None,
    cell_yaml: Mapping[str, str] | None,
    *,
    npu_base: NpuBase = "raw",
    substring_rules: bool = True,
) -> list[str]:
    """Compare keys for ``-cm`` (compare-modes §2); ``cell_yaml`` None/empty = bare ``-cm``.

    Every name (APIs too) gets its first ``Cell`` replaced by ``Module``; names with neither
    ``.forward.``/``.backward.`` nor a ``parameters_grad`` part get ``N/A``. With a file, the
    ``{cell_name}.{class_name}`` part is then replaced by an exact rule, else by chained
    first-occurrence substring rules in file order (which also touch API names, as in msprobe
    26.2.0; ``substring_rules=False`` = msprobe 8.3.3, exact rules only).
    """
    return [
        cell_mapping_key(base, cell_yaml, substring_rules=substring_rules)
        for base in _bases(npu_rows, npu_keys, npu_base)
    ]


# --------------------------------------------------------------------------------------------
# §3 data mapping (-dm)
# --------------------------------------------------------------------------------------------


def load_data_mapping(path: str | Path) -> dict[str, str]:
    """Read a ``data_mapping.yaml``: flat ``{NPU row name: bench row name}``."""
    return _flat_str_mapping(_read_yaml(path, "data mapping"), path, "data mapping")


def data_mapping_keys(
    npu_rows: Sequence[RowLike],
    npu_keys: Sequence[str] | None,
    data_map: Mapping[str, str],
    *,
    npu_base: NpuBase = "raw",
) -> list[str]:
    """Compare keys for ``-dm``/``-lm`` (compare-modes §3): ``data_map.get(name, name)``.

    The lookup is by the displayed row name; unmapped rows keep their own name (so identically
    named bench rows still match). The engine must join with a **left** join and **no** dtype
    gate while a data mapping is active; one NPU key may hit several bench rows.
    A mapped value of ``N/A`` (layer mapping without counterpart) never matches.
    """
    bases = _bases(npu_rows, npu_keys, npu_base)
    return [data_map.get(row.name, base) for row, base in zip(npu_rows, bases, strict=True)]

