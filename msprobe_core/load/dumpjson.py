"""Load an msprobe ``dump.json`` / ``debug.json`` into a :class:`DumpTable`.

The walk follows msprobe's naming exactly (one row per leaf, names built from
list indices and dict keys, ``data_name`` overriding the walked name) so that
row names and row order agree with msprobe's result tables.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import DumpFormatError, InputError
from ..files.validation import COMPARABLE_TASKS, describe, find_json_path, header_fields, json_path
from ..model import (
    MODE_MD5,
    MODE_STATISTICS,
    MODE_TENSOR,
    NA,
    STATE_DEBUG,
    STATE_PARAMETERS_GRAD,
    ApiEntry,
    DumpTable,
)
from .dialects import (
    ARGUMENT_MEMBERS,
    ENTRY_METADATA,
    EXTRA_KEY,
    LEAF_FIELDS,
    OLD_BACKWARD_MEMBERS,
    P2P_FIELDS,
    Unrecognised,
    note_dialect,
)
from .jsonstream import BLOCK_BYTES, ObjectStream, TextWindow

#: the argument members of every dumper version (``dialects.ARGUMENT_MEMBERS``), in the order msprobe reads them
_MEMBERS = {key: (state, suffix) for key, state, suffix in ARGUMENT_MEMBERS}
_MEMBER_ORDER = tuple(m[0] for m in ARGUMENT_MEMBERS)
_MAX_DEPTH = 400
_P2P_CLASS = "torch.distributed.P2POp"
_RANK_PARTS = frozenset({"src", "dst", "group_src", "group_dst"})
_PROCESS_GROUP = "torch.ProcessGroup"
MAX_JSON_BYTES = 10 * 1024**3


def check_json_file(path: Path, what: str = "json") -> int:
    """The size of a JSON file to read, with one-line errors for missing, special or huge files."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise InputError("file does not exist", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot access file ({exc.strerror})", path=path) from None
    if not path.is_file():
        raise InputError(f"expected a {what} file, found a directory or special file", path=path)
    if size > MAX_JSON_BYTES:
        raise InputError(f"file is {size} bytes, larger than the {MAX_JSON_BYTES}-byte limit", path=path)
    return size


def read_json_text(path: Path, what: str = "json") -> str:
    """The text of a JSON file, with one-line errors for missing, huge, empty or non-UTF-8 files."""
    check_json_file(path, what)
    try:
        raw = path.read_bytes()
    except PermissionError:
        raise InputError("file is not readable (permission denied)", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror})", path=path) from None
    if not raw.strip():
        raise InputError(f"{what} file is empty", path=path)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=path) from None


def _json_error(exc: json.JSONDecodeError, path: Path) -> InputError:
    return InputError(f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", path=path)


def read_json_file(path: Path, what: str = "json") -> Any:
    """Parse a JSON file (``NaN``/``Infinity`` tokens allowed) or raise :class:`InputError`."""
    text = read_json_text(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _json_error(exc, path) from None
    except ValueError as exc:  # e.g. an integer literal longer than Python's digit limit
        raise InputError(f"malformed JSON: {exc}", path=path) from None
    except RecursionError:
        raise InputError("JSON nesting is too deep", path=path) from None


def split_api_key(key: str, debug: bool) -> tuple[str, str, str] | None:
    """Split a data key into (prefix, call, direction); ``None`` means the API is skipped.

    ``Functional.linear.0.forward`` → (``Functional.linear``, ``0.forward``, ``forward``);
    ``Module.a.B.backward.0`` → (``Module.a.B``, ``backward.0``, ``backward``);
    ``Module.a.B.parameters_grad`` → (``Module.a.B``, ``parameters_grad``, ``parameters_grad``).
    """
    if debug:
        return key, "", STATE_DEBUG
    parts = key.split(".")
    last2 = parts[-2:]
    if STATE_PARAMETERS_GRAD in last2:
        return ".".join(parts[:-1]), STATE_PARAMETERS_GRAD, STATE_PARAMETERS_GRAD
    for direction in ("forward", "backward"):
        if direction in last2 and len(parts) >= 2:
            return ".".join(parts[:-2]), ".".join(parts[-2:]), direction
    return None


def crc32_text(value: Any) -> str:
    """msprobe's md5 fallback for leaves without an ``md5``: crc32 of ``str(value)``."""
    return format(zlib.crc32(str(value).encode()), "08x")


def _py_str(value: Any) -> str:
    """``str()`` of a JSON value as Python prints the decoded object."""
    return str(value)


def _type_name(value: Any) -> str:
    return str(type(value))


#: the md5 fallback of a tensor leaf without ``md5``: crc32 of the empty text, one shared string
_EMPTY_CRC = crc32_text("")


_NONE_TYPE = type(None)
#: JSON types a statistic (Max/Min/Mean/Norm) may have; msprobe writes numbers, bools or null.
_STAT_TYPES = frozenset({float, int, bool, str, _NONE_TYPE})
_RG_TYPES = frozenset({bool, str, _NONE_TYPE})
#: an md5 is a crc32 text; the xor checksum of a 0-d tensor (26.0-26.2) is a float
_MD5_TYPES = frozenset({str, int, float, bool, _NONE_TYPE})


class _Problem(Exception):
    """A malformed value met while flattening; becomes a :class:`DumpFormatError` with its JSON path.

    ``container``/``key`` locate the value (the leaf object and the field name, or
    the list/object holding a bare value); the path is searched for only when this
    is raised, so well-formed dumps never pay for it.
    """

    def __init__(self, container: Any, key: object, message: str) -> None:
        super().__init__(message)
        self.container = container
        self.key = key
        self.message = message

    def to_error(self, source: Path, api_key: str, entry: Any) -> DumpFormatError:
        where = ("data", api_key)
        base = json_path(where) if self.container is None else find_json_path(entry, self.container, where)
        if self.key is not None:
            base += json_path((self.key,))[1:]
        return DumpFormatError(f"{base}: {self.message}", path=source)


def _field_problem(leaf: dict, field: str, name: str, expected: str) -> _Problem:
    return _Problem(leaf, field, f"'{field}' of {name} must be {expected}, got {describe(leaf.get(field))}")


class _Flattener:
    """Walks API entries and appends rows to a :class:`DumpTable` (one instance per file).

    Every leaf field the result uses is type-checked here, inline (a few ``type() is``
    tests a leaf); a wrong type raises :class:`_Problem`, never a stray exception.
    The walk runs once per leaf of a 100k-entry dump, so it is built as closures over
    the bound ``append`` methods of the columns and the per-file caches (no attribute
    look-ups per leaf), and the strings that repeat (dtypes, shapes, md5 fallbacks,
    prefixes) are kept once.
    """

    def __init__(self, table: DumpTable) -> None:
        self.t = table
        self._md5_seen = [False]
        # the same few dtype, shape and call spellings repeat on every row: keep one copy of each
        self._dtypes: dict[str, str] = {}
        self._shapes: dict[tuple, str] = {}
        self._crcs: dict[str, str] = {}
        self.strings: dict[str, str] = {}
        #: what the file held that the loader does not understand (see :mod:`msprobe_core.load.dialects`)
        self.unrecognised = Unrecognised()
        self.add_null, self.add_leaf, self.walk = _build_walk(self)

    def keep_account(self) -> None:
        """Put the account of what was not understood on the table (nothing when all was)."""
        if self.unrecognised:
            self.t.extra[EXTRA_KEY] = self.unrecognised.records(str(self.t.source))

    @property
    def has_md5(self) -> bool:
        """Whether some leaf carried an ``md5`` (the dump is in md5 mode)."""
        return self._md5_seen[0]

    @has_md5.setter
    def has_md5(self, value: bool) -> None:
        self._md5_seen[0] = value


def _build_walk(fl: _Flattener):  # noqa: C901 - one hot loop, kept in one place on purpose
    """The (add_null, add_leaf, walk) closures of one flattener."""
    t = fl.t
    a_api, a_name, a_state = t.row_api.append, t.name.append, t.state.append
    a_dtype, a_shape, a_rg = t.dtype.append, t.shape.append, t.requires_grad.append
    a_max, a_min, a_mean, a_norm = t.max.append, t.min.append, t.mean.append, t.norm.append
    a_md5, a_dn = t.md5.append, t.data_name.append
    dtypes, shapes, crcs, md5_seen = fl._dtypes, fl._shapes, fl._crcs, fl._md5_seen
    stat_types, md5_types = _STAT_TYPES, _MD5_TYPES
    empty_crc = _EMPTY_CRC
    pgrad = STATE_PARAMETERS_GRAD
    leaf_fields, p2p_fields = LEAF_FIELDS, P2P_FIELDS
    unrecognised = fl.unrecognised

    def add_null(name: str, state: str, api_idx: int) -> None:
        a_api(api_idx)
        a_name(name)
        a_state(state)
        a_dtype(None)
        a_shape(None)
        a_rg(None)
        a_max(None)
        a_min(None)
        a_mean(None)
        a_norm(None)
        a_md5(None)
        a_dn("-1")

    def stat(value: Any, leaf: dict, name: str) -> Any:
        # the uncommon statistic (not a plain float): validate all four in order, as msprobe's fields
        if value.__class__ not in stat_types:
            bad = next(k for k in ("Max", "Min", "Mean", "Norm") if leaf.get(k).__class__ not in stat_types)
            raise _field_problem(leaf, bad, name, "a number, a boolean, a string or null")
        if value.__class__ is int and not _float_sized(value):
            bad = next(k for k in ("Max", "Min", "Mean", "Norm") if not _float_sized(leaf.get(k)))
            raise _field_problem(leaf, bad, name, "a number within the range of a float")
        return _stat(value)

    def add_leaf(leaf: dict, name: str, state: str, api_idx: int) -> None:
        if not leaf_fields.issuperset(leaf):
            for field in leaf:
                if field not in leaf_fields:
                    unrecognised.add("leaf field", field, name)
        data_name = leaf.get("data_name")
        if data_name is None:
            data_name = "-1"
            row_name = name
        elif data_name.__class__ is str:
            if data_name:
                row_name = data_name.rsplit(".", 1)[0] if "." in data_name else data_name
            else:
                data_name = "-1"
                row_name = name
        else:
            raise _field_problem(leaf, "data_name", name, "a file name (string)")
        md5 = leaf.get("md5")
        if md5 is not None:
            if md5.__class__ is not str:
                if md5.__class__ not in md5_types:
                    raise _field_problem(leaf, "md5", name, "a string")
                md5 = _number_md5(md5, fl.t)
            md5_seen[0] = True
            if not md5:  # msprobe's compare takes an empty md5 as none: the crc32 text stands in
                md5 = None
        if "dtype" in leaf:
            dtype = leaf["dtype"]
            if dtype is not None:
                if dtype.__class__ is not str:
                    raise _field_problem(leaf, "dtype", name, "a string")
                dtype = dtypes.get(dtype) or dtypes.setdefault(dtype, dtype)
            shape = leaf.get("shape")
            if shape is None:
                shape_text = None
            elif shape.__class__ is list:
                try:
                    key = tuple(shape)
                    shape_text = shapes.get(key)
                except TypeError:  # unhashable items
                    shape_text = key = None
                if shape_text is None:
                    # validated once per distinct shape: a list of non-negative integers
                    if key is None or not all(d.__class__ is int and d >= 0 for d in shape):
                        raise _field_problem(leaf, "shape", name, "a list of non-negative integers")
                    shape_text = shapes.setdefault(key, str(shape))
            else:
                raise _field_problem(leaf, "shape", name, "a list")
            # the common statistic is a float that is not NaN: one class test and one compare
            mx = leaf.get("Max")
            if mx.__class__ is not float or mx != mx:
                mx = stat(mx, leaf, name)
            mn = leaf.get("Min")
            if mn.__class__ is not float or mn != mn:
                mn = stat(mn, leaf, name)
            me = leaf.get("Mean")
            if me.__class__ is not float or me != me:
                me = stat(me, leaf, name)
            nm = leaf.get("Norm")
            if nm.__class__ is not float or nm != nm:
                nm = stat(nm, leaf, name)
            rg = leaf.get("requires_grad")
            if rg is True:
                requires_grad = "True"
            elif rg is False:
                requires_grad = "False"
            elif rg is None:
                requires_grad = None
            elif rg.__class__ is str:
                requires_grad = rg
            else:
                raise _field_problem(leaf, "requires_grad", name, "a boolean")
            if md5 is None:
                md5 = empty_crc
        else:
            dtype, shape_text, mx, md5 = _non_tensor(leaf, name, md5, crcs)
            requires_grad = None
            if mx.__class__ is list:
                mx, mn, me, nm = mx
            else:
                mn = me = nm = mx
        a_api(api_idx)
        a_name(row_name)
        a_state(state)
        a_dtype(dtype)
        a_shape(shape_text)
        a_rg(requires_grad)
        a_max(mx)
        a_min(mn)
        a_mean(me)
        a_norm(nm)
        a_md5(md5)
        a_dn(data_name)

    def walk(value: Any, name: str, state: str, api_idx: int, depth: int = 0) -> None:
        if depth > _MAX_DEPTH:
            raise _Problem(value, None, f"entry {name} is nested deeper than {_MAX_DEPTH} levels")
        cls = value.__class__
        if value is None:
            add_null(name, state, api_idx)
        elif cls is list or isinstance(value, list):
            keep_index = pgrad not in name or pgrad not in name.split(".")
            fast = depth < _MAX_DEPTH  # an item one level down still passes the depth check
            for i, item in enumerate(value):
                # fast path for the common shapes: a leaf record or null directly in the list
                if fast and item.__class__ is dict and "class_type" not in item and item.get("type").__class__ is str:
                    add_leaf(item, f"{name}.{i}" if keep_index else name, state, api_idx)
                    continue
                if fast and item is None:
                    add_null(f"{name}.{i}" if keep_index else name, state, api_idx)
                    continue
                try:
                    walk(item, f"{name}.{i}" if keep_index else name, state, api_idx, depth + 1)
                except _Problem as p:
                    if p.container is None:
                        p.container, p.key = value, i
                    raise
        elif cls is dict or isinstance(value, dict):
            if value.get("class_type") == _P2P_CLASS:
                if not p2p_fields.issuperset(value):
                    for field in value:
                        if field not in p2p_fields:
                            unrecognised.add("leaf field", field, name)
                tensor = value.get("tensor")
                if isinstance(tensor, dict) and isinstance(tensor.get("type"), str):
                    add_leaf(tensor, name, state, api_idx)
                else:
                    add_null(name, state, api_idx)
            elif isinstance(value.get("type"), str):
                add_leaf(value, name, state, api_idx)
            else:
                for k, v in value.items():
                    try:
                        walk(v, f"{name}.{k}", state, api_idx, depth + 1)
                    except _Problem as p:
                        if p.container is None:
                            p.container, p.key = value, k
                        raise
        else:
            raise _Problem(
                None, None, f"entry {name} holds a bare {describe(value)} where an argument record was expected"
            )

    return add_null, add_leaf, walk


#: the ``type()`` spellings of non-tensor values, one string object each
_TYPE_NAMES: dict[type, str] = {}


def _non_tensor(leaf: dict, name: str, md5: str | None, crcs: dict[str, str]) -> tuple[Any, str, Any, str]:
    """(dtype, shape, statistic or list of four statistics, md5) of a non-tensor leaf."""
    kind = leaf.get("type")
    value = leaf.get("value")
    if kind == "torch.Size":
        dtype, shape_text, stats = "torch.Size", str(value), None
    elif kind == "slice":
        dtype, stats = "slice", None
        shape_text = f"({len(value)},)" if isinstance(value, list) else "()"
    elif kind == "ellipsis":
        dtype, shape_text, stats = "ellipsis", "[]", value
    elif name.rsplit(".", 1)[-1] in _RANK_PARTS:
        dtype, shape_text, stats = str(kind), "[]", str(value)
        if md5 is None:
            md5 = stats
    elif kind == _PROCESS_GROUP:
        ranks = str(leaf.get("group_ranks"))
        dtype, shape_text, stats = str(kind), "[]", ranks
        if md5 is None:
            md5 = ranks
    else:
        vtype = value.__class__
        if vtype is int and not _float_sized(value):
            raise _field_problem(leaf, "value", name, "a number within the range of a float")
        dtype = _TYPE_NAMES.get(vtype) or _TYPE_NAMES.setdefault(vtype, _type_name(value))
        shape_text = "[]"
        stats = _stat(value)
    if md5 is None:
        text = "" if value is None and "value" not in leaf else str(value)
        md5 = crcs.get(text)
        if md5 is None:
            md5 = crcs[text] = crc32_text(text)
    if stats.__class__ is list:  # a list statistic is one value repeated, not four values
        stats = [stats] * 4
    return dtype, shape_text, stats, md5


def _float_sized(value: Any) -> bool:
    """False for an integer too large for a float (every statistic is compared as a float: 10**400 cannot be)."""
    if value.__class__ is not int:
        return True
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _number_md5(value: Any, table: DumpTable) -> Any:
    """An md5 given as a number (the xor checksum of a 0-d tensor) as msprobe's compare keeps it.

    msprobe keeps the number (the writers spell it as any float cell: ``1.5``, `` inf`` in a CSV, a
    number in an xlsx) and compares it by equality; a zero is empty to it, like a missing md5
    (``None`` here: the crc32 fallback stands in); NaN becomes ``N/A`` (and equals ``N/A``);
    a boolean becomes ``True``/``False``.
    """
    note_dialect(table, "md5 values that are numbers (xor checksums of 0-d tensors, 26.x) kept as numbers")
    if value.__class__ is bool:
        return "True" if value else "False"
    if not value:
        return None
    if value != value:
        return NA
    return value


def _stat(value: Any) -> Any:
    """A statistic as msprobe keeps it: bools become ``"True"``/``"False"``, NaN the text ``"Nan"``."""
    if value is True:
        return "True"
    if value is False:
        return "False"
    if value != value:
        return "Nan"
    return value


def detect_kind(path: Path) -> str:
    """``dump`` or ``debug`` from the file name (msprobe requires the suffix)."""
    name = path.name
    if name.endswith("debug.json"):
        return "debug"
    if name.endswith("dump.json"):
        return "dump"
    raise InputError("file name must end with dump.json or debug.json", path=path)


def parse_header(doc: Any, path: Path) -> tuple[str, dict]:
    """Validate the top level of a dump document (:class:`~msprobe_core.files.schemas.DumpHeader`); return (task, data)."""
    if not isinstance(doc, dict):
        raise DumpFormatError(f"top level must be a JSON object, got {type(doc).__name__}", path=path)
    fields = header_fields(doc)
    if fields is None:  # something is wrong: the model names it
        from ..files.schemas import DumpHeader, validate

        header = validate(DumpHeader, doc, path=path, error=DumpFormatError)
        fields = header.task, header.data
    task, data = fields
    if task not in COMPARABLE_TASKS:
        raise DumpFormatError(f"$.task: task '{_clip(task)}' cannot be compared (only tensor or statistics)", path=path)
    return task, data


def _clip(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _new_table(path: Path, kind: str, framework: str) -> DumpTable:
    return DumpTable(source=path, kind=kind, task="", mode=MODE_STATISTICS, framework=framework)


def _add_entry(table: DumpTable, fl: _Flattener, key: str, entry: Any, debug: bool) -> None:
    """Append the rows of one ``data`` entry (a key msprobe does not compare is counted, not read)."""
    split = split_api_key(key, debug)
    if split is None:
        fl.unrecognised.add("data key", key, "$.data")
        return
    api_idx = len(table.apis)
    strings = fl.strings  # prefixes and call spellings repeat across calls: one object each
    prefix, call = split[0], split[1]
    prefix = strings.get(prefix) or strings.setdefault(prefix, prefix)
    call = strings.get(call) or strings.setdefault(call, call)
    api = ApiEntry(key=key, prefix=prefix, call=call, direction=split[2], first_row=len(table.name))
    table.apis.append(api)
    try:
        if debug or key.rsplit(".", 1)[-1] == "debug":
            fl.walk(entry, key, STATE_DEBUG, api_idx)
        else:
            if not isinstance(entry, dict):
                raise _Problem(None, None, f"must be a JSON object, got {_json_type(entry)}")
            if split[2] == STATE_PARAMETERS_GRAD:
                fl.walk(entry, key, STATE_PARAMETERS_GRAD, api_idx)
            else:
                _walk_members(table, fl, key, entry, api_idx)
    except _Problem as p:
        raise p.to_error(table.source, key, entry) from None
    api.n_rows = len(table.name) - api.first_row


def _walk_members(table: DumpTable, fl: _Flattener, key: str, entry: dict, api_idx: int) -> None:
    """The rows of an API entry's argument members, in msprobe's order; other members are counted."""
    walked = 0
    for member in _MEMBER_ORDER:
        if member in entry:
            walked += 1
            state, suffix = _MEMBERS[member]
            if member in OLD_BACKWARD_MEMBERS:
                note_dialect(table, "backward data under grad_output/grad_input (mindstudio-probe 1.0.1) "
                                    "read as the backward's input/output")
            fl.walk(entry[member], f"{key}.{suffix}", state, api_idx)
    if walked != len(entry):
        for member in entry:
            if member not in _MEMBERS and member not in ENTRY_METADATA:
                fl.unrecognised.add("entry member", member, key)


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def _finish(table: DumpTable, has_md5: bool, header: dict, path: Path) -> DumpTable:
    task, _ = parse_header(header, path)
    table.task = task
    table.level = header.get("level") if isinstance(header.get("level"), str) else None
    if task == "tensor":
        table.mode = MODE_TENSOR
    elif has_md5:
        table.mode = MODE_MD5
    return table


def finish_streamed(table: DumpTable, has_md5: bool, header: dict[str, Any], path: Path) -> DumpTable:
    """Complete a table whose rows were read: ``header`` holds the top-level members, ``data`` as ``True``."""
    framework = header.get("framework")
    if framework is not None and not isinstance(framework, str):
        raise DumpFormatError("'framework' must be a string", path=path)
    table.framework = framework or ""
    if header.get("data") is True:
        header = dict(header, data={})
    return _finish(table, has_md5, header, path)


def flatten_dump(doc: dict, path: Path, kind: str, framework: str) -> DumpTable:
    """Turn an already parsed dump document into a :class:`DumpTable`."""
    parse_header(doc, path)
    table = _new_table(path, kind, framework)
    fl = _Flattener(table)
    debug = kind == "debug"
    for key, entry in doc["data"].items():
        _add_entry(table, fl, key, entry, debug)
    fl.keep_account()
    return _finish(table, fl.has_md5, doc, path)


@contextmanager
def _json_window(path: Path, what: str) -> Iterator[TextWindow]:
    """A :class:`TextWindow` on a JSON file: the whole text for a small file, blocks for a large one.

    Errors while parsing a large file are reported as reading the whole file first
    would: an empty or non-UTF-8 file is named as such before any parse error.
    """
    size = check_json_file(path, what)
    if size <= BLOCK_BYTES:
        yield TextWindow(read_json_text(path, what))
        return
    try:
        handle = path.open("rb")
    except OSError:
        read_json_text(path, what)  # raises the one-line error of a whole-file read
        raise
    with handle:
        try:
            yield TextWindow(source=handle, block=BLOCK_BYTES)
        except Exception:
            read_json_text(path, what)  # empty, unreadable or not UTF-8: that error comes first
            raise


def _parse_streamed(path: Path, what: str, stream_key: str | None, not_object: Callable[[Any], Exception],
                    on_entry: Callable[[str, Any], None], scanner_messages: bool = False) -> dict[str, Any]:
    """Stream a JSON object file through :class:`ObjectStream`; returns its header members."""
    try:
        with _json_window(path, what) as window:
            stream = ObjectStream(window, stream_key, not_object, scanner_messages)
            stream.read(on_entry)
    except json.JSONDecodeError as exc:
        raise _json_error(exc, path) from None
    except ValueError as exc:  # e.g. an integer literal longer than Python's digit limit
        raise InputError(f"malformed JSON: {exc}", path=path) from None
    except RecursionError:
        raise InputError("JSON nesting is too deep", path=path) from None
    return stream.header


def load_dump_file(path: Path, kind: str | None = None) -> DumpTable:
    """Read and flatten a dump.json/debug.json, decoding one ``data`` entry at a time.

    The C scanner of :mod:`msprobe_core.load.dumpscan` reads the file when it is built and the
    document is one it fully understands; otherwise (or when it declines half way) the
    walk below reads it, and reports any problem.
    """
    kind = kind or detect_kind(path)
    check_json_file(path, f"{kind}.json")
    from .dumpscan import scan_dump  # imports this module: loaded here, not at the top

    fast = scan_dump(path, kind)
    if fast is not None:
        return fast
    table = _new_table(path, kind, "")
    fl = _Flattener(table)
    debug = kind == "debug"
    seen: set[str] = set()

    def on_entry(key: str, entry: Any) -> None:
        if key in seen:
            raise DumpFormatError(f"data has the key '{key}' twice", path=path)
        seen.add(key)
        _add_entry(table, fl, key, entry, debug)

    def not_object(value: Any) -> Exception:
        return DumpFormatError(f"top level must be a JSON object, got {type(value).__name__}", path=path)

    header = _parse_streamed(path, f"{kind}.json", "data", not_object, on_entry)
    fl.keep_account()
    return finish_streamed(table, fl.has_md5, header, path)


def load_stack(path: Path) -> dict[str, list[str]]:
    """Read stack.json in either layout (new ``{"0": [[apis], [lines]]}`` or old ``{api: [lines]}``).

    The file is parsed member by member and every source line is kept once: a few
    hundred distinct lines repeat across tens of thousands of stacks. (API names are
    all distinct: interning them would cost more time than the memory it saves.)
    """
    doc: dict[str, Any] = {}
    strings: dict[str, str] = {}
    intern = strings.setdefault

    def keep_list(items: list) -> list:
        # the usual list of lines or API names: interned at C speed; other items stay as they are
        if set(map(type, items)) <= {str}:
            return list(map(intern, items, items))
        return [intern(v, v) if v.__class__ is str else v for v in items]

    def keep(value: Any) -> Any:
        """``value`` with its strings, and those of its lists and their lists, kept once."""
        if value.__class__ is str:
            return intern(value, value)
        if value.__class__ is not list:
            return value
        return [keep_list(v) if v.__class__ is list else intern(v, v) if v.__class__ is str else v for v in value]

    def on_entry(key: str, value: Any) -> None:
        if value.__class__ is list and len(value) == 2:  # the usual [[apis], [lines]] member, without the general walk
            apis, lines = value
            if apis.__class__ is list and lines.__class__ is list:
                doc[key] = [apis, keep_list(lines)]
                return
        doc[key] = keep(value)

    def not_object(value: Any) -> Exception:
        return DumpFormatError("top level of stack.json must be an object", path=path)

    _parse_streamed(path, "stack", None, not_object, on_entry, scanner_messages=True)  # as json.loads words errors
    result: dict[str, list[str]] = {}
    if doc.get("0"):
        for value in doc.values():
            if isinstance(value, list) and len(value) == 2 and isinstance(value[0], list):
                for api in value[0]:
                    result[str(api)] = value[1]
        return result
    for api, stack in doc.items():
        if not isinstance(stack, list):
            raise DumpFormatError(
                f"stack of '{api}' must be a list, got {type(stack).__name__}", path=path
            )
        result[api] = stack
    return result
