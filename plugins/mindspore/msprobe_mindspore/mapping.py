"""MindSpore name mapping for ``msprobe compare``: pure functions plus small file loaders.

Covers the four mapping options of the MindSpore comparator (spec ``compare-modes.md`` §1–§4)
and the cross-framework dtype gate (``compare-core.md`` §4.1.4):

* ``-am`` API mapping: :func:`load_builtin_api_table`, :func:`load_api_mapping_yaml`,
  :func:`api_mapping_keys`;
* ``-cm`` cell mapping: :func:`load_cell_mapping_yaml`, :func:`cell_mapping_keys`;
* ``-dm`` data mapping: :func:`load_data_mapping`, :func:`data_mapping_keys`;
* ``-lm`` layer mapping: :func:`load_layer_mapping_yaml`, :func:`load_stack_construct`,
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

import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from msprobe_core.plugin import DumpFormatError, InputError, MappingError

from .dtypes import DTYPES, MINDSPORE_FLOATS, TORCH_FLOATS

__all__ = [
    "ABANDONED_SUFFIX",
    "NA_KEY",
    "ApiMappingEntry",
    "LayerItem",
    "LayerSide",
    "RowLike",
    "api_mapping_keys",
    "builtin_api_key",
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

NA_KEY = "N/A"
"""Compare key (and bench name) meaning "no counterpart"."""

ABANDONED_SUFFIX = "abandoned"
"""Appended by the user API mapping to keys of rows whose position the entry does not list."""

NpuBase = Literal["raw", "renumbered"]
Warn = Callable[[str], None]

_BUILTIN_TABLE_PATH = Path(__file__).resolve().parent / "data" / "ms_to_pt_api.yaml"


class RowLike(Protocol):
    """What the mappers read from a row (the engine's row type satisfies it)."""

    @property
    def api(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def state(self) -> str: ...

    @property
    def dtype(self) -> str: ...


# --------------------------------------------------------------------------------------------
# YAML reading
# --------------------------------------------------------------------------------------------


def _read_yaml(path: str | Path, what: str) -> Any:
    """Parse one YAML file with the core's hardened reader (no tags, no aliases, bounded size and depth);
    every failure is a :class:`MappingError` naming the file."""
    from msprobe_core.plugin import read_yaml

    return read_yaml(path, what, error=MappingError)


def _scalar_str(value: Any) -> str | None:
    """``str`` for YAML scalars usable as names (str, int); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (str, int)):
        return str(value)
    return None


def _flat_str_mapping(obj: Any, path: str | Path, what: str) -> dict[str, str]:
    """Validate a flat ``{name: name}`` mapping (integer scalars are accepted as text)."""
    if obj is None:
        raise MappingError(f"{what} file is empty; expected a mapping of 'name: name' lines", path=path)
    if not isinstance(obj, dict):
        raise MappingError(
            f"{what} file must be a YAML mapping of 'name: name' lines, got a {type(obj).__name__}",
            path=path,
        )
    out: dict[str, str] = {}
    for key, value in obj.items():
        k = _scalar_str(key)
        v = _scalar_str(value)
        if k is None or not k:
            raise MappingError(f"{what} file: key {key!r} is not a name", path=path)
        if v is None or not v:
            raise MappingError(f"{what} file: value of {k!r} must be a name, got {value!r}", path=path)
        out[k] = v
    return out


# --------------------------------------------------------------------------------------------
# dtype gate
# --------------------------------------------------------------------------------------------

_SAME_FRAMEWORK_FLOAT_GROUPS = (MINDSPORE_FLOATS, TORCH_FLOATS)


def dtype_kind(dtype: str) -> str:
    """Normalise a MindSpore or torch dtype for the cross-framework dtype gate.

    ``Int8..Int64``/``UInt8..UInt64``/``torch.int*``/``torch.uint*`` → ``int``;
    ``Float16/32/64``/``BFloat16``/``torch.float16/32/64``/``torch.bfloat16`` → ``float``;
    ``Bool``/``torch.bool`` → ``bool``; ``Complex64/128``/``torch.complex64/128`` → ``complex``.
    Anything else (``<class 'int'>``, ``torch.Size``, ``""`` of a None item, ``Float8…``) is
    returned unchanged, so it only matches an identical string.
    """
    info = DTYPES.get(dtype)
    return info.family if info is not None else dtype


def dtypes_match(npu_dtype: str, bench_dtype: str, *, cross_framework: bool) -> bool:
    """The dtype gate of compare-core §4.1.4: may these two rows be paired?

    Equal strings pass, as do two members of the same framework's float group; with
    ``cross_framework`` both are first normalised by :func:`dtype_kind` (so ``Int32`` pairs with
    ``torch.int64`` and ``Float32`` with ``torch.bfloat16``). Not applied with data mapping.
    """
    if cross_framework:
        npu_dtype, bench_dtype = dtype_kind(npu_dtype), dtype_kind(bench_dtype)
    if npu_dtype == bench_dtype:
        return True
    return any(npu_dtype in g and bench_dtype in g for g in _SAME_FRAMEWORK_FLOAT_GROUPS)


def mapping_precedence(
    *, api_mapping: bool, cell_mapping: bool, data_mapping: bool, layer_mapping: bool
) -> Literal["api", "cell", "data", "none"]:
    """Which mapper builds the NPU keys (compare-modes §1.3): ``-am`` > ``-cm`` > ``-dm``/``-lm``.

    ``-lm`` produces a data mapping, so it reports ``"data"``. Whenever ``-dm`` or ``-lm`` is given
    (even if ``-am``/``-cm`` wins the keys) the join is the data-mapping left join with no dtype
    gate; the caller decides that separately.
    """
    if api_mapping:
        return "api"
    if cell_mapping:
        return "cell"
    if data_mapping or layer_mapping:
        return "data"
    return "none"


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
) -> list[str]:
    """Compare keys for ``-am`` (compare-modes §1): built-in rewrite, then the user entries.

    ``table`` is :func:`load_builtin_api_table`; ``entries`` come from
    :func:`load_api_mapping_yaml` (empty for bare ``-am``). A user entry is used only when its
    ``ms_api`` is the API of some NPU row and its ``pt_api`` the API of some bench row
    (``bench_rows``; if None, the bench check is skipped). Rows of a used entry get the mapped
    key, or ``<name>abandoned`` when their position is not listed (nested items, kwargs not
    named). Keys start from the raw NPU row names unless ``npu_base="renumbered"``.
    """
    bases = _bases(npu_rows, npu_keys, npu_base)
    keys = [builtin_api_key(base, table) for base in bases]
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
        cparts = parent.split(".")
        if len(cparts) < 4:
            raise DumpFormatError(f"construct.json parent {parent!r} of {data_name!r} has fewer than four parts")
        layer_scope = ".".join(cparts[:-3])
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
