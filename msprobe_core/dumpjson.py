"""Load an msprobe ``dump.json`` / ``debug.json`` into a :class:`DumpTable`.

The walk follows msprobe's naming exactly (one row per leaf, names built from
list indices and dict keys, ``data_name`` overriding the walked name) so that
row names and row order agree with msprobe's result tables.
"""

from __future__ import annotations

import json
import re
import zlib
from json.decoder import scanstring as _scanstring
from pathlib import Path
from typing import Any

from .errors import DumpFormatError, InputError
from .model import (
    MODE_MD5,
    MODE_STATISTICS,
    MODE_TENSOR,
    STATE_DEBUG,
    STATE_INPUT,
    STATE_OUTPUT,
    STATE_PARAMETERS,
    STATE_PARAMETERS_GRAD,
    ApiEntry,
    DumpTable,
)
from .validation import COMPARABLE_TASKS, DumpHeader, describe, find_json_path, json_path, validate

#: dump.json keys of one API entry, in the order msprobe reads them.
_ENTRY_KEYS = (
    ("input_args", STATE_INPUT, "input"),
    ("input_kwargs", STATE_INPUT, "input"),
    ("input", STATE_INPUT, "input"),
    ("parameters", STATE_PARAMETERS, "parameters"),
    ("output", STATE_OUTPUT, "output"),
)
_MAX_DEPTH = 400
_P2P_CLASS = "torch.distributed.P2POp"
_RANK_PARTS = frozenset({"src", "dst", "group_src", "group_dst"})
_PROCESS_GROUP = "torch.ProcessGroup"
MAX_JSON_BYTES = 10 * 1024**3


def read_json_text(path: Path, what: str = "json") -> str:
    """The text of a JSON file, with one-line errors for missing, huge, empty or non-UTF-8 files."""
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


_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class _StreamedDump:
    """A dump document read top-level key by top-level key.

    The entries of ``data`` are decoded one at a time and handed to a callback,
    so the whole document never exists as Python objects at once (a 100k-entry
    dump.json would otherwise cost several hundred MB).
    """

    def __init__(self, text: str, path: Path) -> None:
        self.text = text
        self.path = path
        self.header: dict[str, Any] = {}
        self.data_kind: str | None = None  # type name of 'data' when it is not an object

    def _expect(self, idx: int, char: str) -> int:
        idx = _WS.match(self.text, idx).end()
        if self.text[idx : idx + 1] != char:
            raise json.JSONDecodeError(f"Expecting '{char}'", self.text, idx)
        return idx + 1

    def _key(self, idx: int) -> tuple[str, int]:
        idx = self._expect(idx, '"')
        key, idx = _scanstring(self.text, idx)
        return key, self._expect(idx, ":")

    def _value(self, idx: int) -> tuple[Any, int]:
        idx = _WS.match(self.text, idx).end()
        return _DECODER.raw_decode(self.text, idx)

    def _after_item(self, idx: int, close: str) -> tuple[bool, int]:
        """Skip a ``,`` (more items follow: True) or the closing bracket (False)."""
        idx = _WS.match(self.text, idx).end()
        char = self.text[idx : idx + 1]
        if char == ",":
            return True, idx + 1
        if char == close:
            return False, idx + 1
        raise json.JSONDecodeError("Expecting ',' delimiter", self.text, idx)

    def read(self, on_entry) -> None:
        """Decode the document, calling ``on_entry(key, value)`` for each entry of ``data``."""
        text = self.text
        first = _WS.match(text, 0).end()
        if text[first : first + 1] != "{":
            value, end = _DECODER.raw_decode(text, first)  # not an object: let the header check name it
            if _WS.match(text, end).end() != len(text):
                raise json.JSONDecodeError("Extra data", text, _WS.match(text, end).end())
            raise DumpFormatError(f"top level must be a JSON object, got {type(value).__name__}", path=self.path)
        idx = first + 1
        if _WS.match(text, idx).end() < len(text) and text[_WS.match(text, idx).end()] == "}":
            idx = _WS.match(text, idx).end() + 1
        else:
            more = True
            while more:
                key, idx = self._key(idx)
                start = _WS.match(text, idx).end()
                if key == "data" and text[start : start + 1] == "{":
                    self.header["data"] = True
                    idx = self._data(start + 1, on_entry)
                else:
                    value, idx = self._value(idx)
                    if key == "data":
                        self.header["data"] = value
                    else:
                        self.header[key] = value
                more, idx = self._after_item(idx, "}")
        if _WS.match(text, idx).end() != len(text):
            raise json.JSONDecodeError("Extra data", text, _WS.match(text, idx).end())

    def _data(self, idx: int, on_entry) -> int:
        text = self.text
        after = _WS.match(text, idx).end()
        if text[after : after + 1] == "}":
            return after + 1
        more = True
        while more:
            key, idx = self._key(idx)
            value, idx = self._value(idx)
            on_entry(key, value)
            more, idx = self._after_item(idx, "}")
        return idx


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


_NONE_TYPE = type(None)
#: JSON types a statistic (Max/Min/Mean/Norm) may have; msprobe writes numbers, bools or null.
_STAT_TYPES = frozenset({float, int, bool, str, _NONE_TYPE})
_RG_TYPES = frozenset({bool, str, _NONE_TYPE})
_MD5_TYPES = frozenset({str, int, _NONE_TYPE})


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
    """

    def __init__(self, table: DumpTable) -> None:
        self.t = table
        self.has_md5 = False
        # the same few dtype and shape spellings repeat on every row: keep one copy of each
        self._dtypes: dict[str, str] = {}
        self._shapes: dict[tuple, str] = {}

    def add_null(self, name: str, state: str, api_idx: int) -> None:
        t = self.t
        t.row_api.append(api_idx)
        t.name.append(name)
        t.state.append(state)
        t.dtype.append(None)
        t.shape.append(None)
        t.requires_grad.append(None)
        t.max.append(None)
        t.min.append(None)
        t.mean.append(None)
        t.norm.append(None)
        t.md5.append(None)
        t.data_name.append("-1")

    def add_leaf(self, leaf: dict, name: str, state: str, api_idx: int) -> None:
        t = self.t
        data_name = leaf.get("data_name")
        if data_name.__class__ is str and data_name:
            row_name = data_name.rsplit(".", 1)[0] if "." in data_name else data_name
        else:
            if data_name is not None and data_name.__class__ is not str:
                raise _field_problem(leaf, "data_name", name, "a file name (string)")
            data_name = "-1"
            row_name = name
        md5 = leaf.get("md5")
        if md5 is not None:
            if md5.__class__ not in _MD5_TYPES:
                raise _field_problem(leaf, "md5", name, "a string")
            self.has_md5 = True
            md5 = str(md5)
        if "dtype" in leaf:
            dtype = leaf["dtype"]
            if dtype is not None:
                if dtype.__class__ is not str:
                    raise _field_problem(leaf, "dtype", name, "a string")
                dtype = self._dtypes.get(dtype) or self._dtypes.setdefault(dtype, dtype)
            shape = leaf.get("shape")
            if shape is None:
                shape_text = None
            elif shape.__class__ is list:
                try:
                    key = tuple(shape)
                    shape_text = self._shapes.get(key)
                except TypeError:  # unhashable items
                    shape_text = key = None
                if shape_text is None:
                    # validated once per distinct shape: a list of non-negative integers
                    if key is None or not all(d.__class__ is int and d >= 0 for d in shape):
                        raise _field_problem(leaf, "shape", name, "a list of non-negative integers")
                    shape_text = self._shapes.setdefault(key, str(shape))
            else:
                raise _field_problem(leaf, "shape", name, "a list")
            mx, mn, me, nm = leaf.get("Max"), leaf.get("Min"), leaf.get("Mean"), leaf.get("Norm")
            if (
                mx.__class__ not in _STAT_TYPES
                or mn.__class__ not in _STAT_TYPES
                or me.__class__ not in _STAT_TYPES
                or nm.__class__ not in _STAT_TYPES
            ):
                bad = next(k for k in ("Max", "Min", "Mean", "Norm") if leaf.get(k).__class__ not in _STAT_TYPES)
                raise _field_problem(leaf, bad, name, "a number, a boolean, a string or null")
            stats = [_stat(mx), _stat(mn), _stat(me), _stat(nm)]
            rg = leaf.get("requires_grad")
            if rg.__class__ not in _RG_TYPES:
                raise _field_problem(leaf, "requires_grad", name, "a boolean")
            requires_grad = None if rg is None else str(rg)
            if md5 is None:
                md5 = crc32_text("")
        else:
            kind = leaf.get("type")
            value = leaf.get("value")
            last = name.rsplit(".", 1)[-1]
            requires_grad = None
            if kind == "torch.Size":
                dtype, shape_text, stats = "torch.Size", str(value), [None] * 4
            elif kind == "slice":
                dtype, stats = "slice", [None] * 4
                shape_text = f"({len(value)},)" if isinstance(value, list) else "()"
            elif kind == "ellipsis":
                dtype, shape_text, stats = "ellipsis", "[]", [value] * 4
            elif last in _RANK_PARTS:
                dtype, shape_text, stats = str(kind), "[]", [str(value)] * 4
                if md5 is None:
                    md5 = str(value)
            elif kind == _PROCESS_GROUP:
                ranks = str(leaf.get("group_ranks"))
                dtype, shape_text, stats = str(kind), "[]", [ranks] * 4
                if md5 is None:
                    md5 = ranks
            else:
                dtype, shape_text = _type_name(value), "[]"
                shown = _stat(value)
                stats = [shown] * 4
            if md5 is None:
                md5 = crc32_text("" if value is None and "value" not in leaf else value)
        t.row_api.append(api_idx)
        t.name.append(row_name)
        t.state.append(state)
        t.dtype.append(dtype)
        t.shape.append(shape_text)
        t.requires_grad.append(requires_grad)
        t.max.append(stats[0])
        t.min.append(stats[1])
        t.mean.append(stats[2])
        t.norm.append(stats[3])
        t.md5.append(md5)
        t.data_name.append(data_name)

    def walk(self, value: Any, name: str, state: str, api_idx: int, depth: int = 0) -> None:
        if depth > _MAX_DEPTH:
            raise _Problem(value, None, f"entry {name} is nested deeper than {_MAX_DEPTH} levels")
        if value is None:
            self.add_null(name, state, api_idx)
        elif isinstance(value, list):
            keep_index = STATE_PARAMETERS_GRAD not in name.split(".")
            for i, item in enumerate(value):
                try:
                    self.walk(item, f"{name}.{i}" if keep_index else name, state, api_idx, depth + 1)
                except _Problem as p:
                    if p.container is None:
                        p.container, p.key = value, i
                    raise
        elif isinstance(value, dict):
            if value.get("class_type") == _P2P_CLASS:
                tensor = value.get("tensor")
                if isinstance(tensor, dict) and isinstance(tensor.get("type"), str):
                    self.add_leaf(tensor, name, state, api_idx)
                else:
                    self.add_null(name, state, api_idx)
            elif isinstance(value.get("type"), str):
                self.add_leaf(value, name, state, api_idx)
            else:
                for k, v in value.items():
                    try:
                        self.walk(v, f"{name}.{k}", state, api_idx, depth + 1)
                    except _Problem as p:
                        if p.container is None:
                            p.container, p.key = value, k
                        raise
        else:
            raise _Problem(
                None, None, f"entry {name} holds a bare {describe(value)} where an argument record was expected"
            )


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
    """Validate the top level of a dump document (:class:`~msprobe_core.validation.DumpHeader`); return (task, data)."""
    if not isinstance(doc, dict):
        raise DumpFormatError(f"top level must be a JSON object, got {type(doc).__name__}", path=path)
    header = validate(DumpHeader, doc, path=path, error=DumpFormatError)
    if header.task not in COMPARABLE_TASKS:
        raise DumpFormatError(
            f"$.task: task '{_clip(header.task)}' cannot be compared (only tensor or statistics)", path=path
        )
    return header.task, header.data


def _clip(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _new_table(path: Path, kind: str, framework: str) -> DumpTable:
    return DumpTable(source=path, kind=kind, task="", mode=MODE_STATISTICS, framework=framework)


def _add_entry(table: DumpTable, fl: _Flattener, key: str, entry: Any, debug: bool) -> None:
    """Append the rows of one ``data`` entry (skipping keys msprobe does not compare)."""
    split = split_api_key(key, debug)
    if split is None:
        return
    api_idx = len(table.apis)
    api = ApiEntry(key=key, prefix=split[0], call=split[1], direction=split[2], first_row=len(table.name))
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
                for json_key, state, suffix in _ENTRY_KEYS:
                    if json_key in entry:
                        fl.walk(entry[json_key], f"{key}.{suffix}", state, api_idx)
    except _Problem as p:
        raise p.to_error(table.source, key, entry) from None
    api.n_rows = len(table.name) - api.first_row


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def _finish(table: DumpTable, fl: _Flattener, header: dict, path: Path) -> DumpTable:
    task, _ = parse_header(header, path)
    table.task = task
    table.level = header.get("level") if isinstance(header.get("level"), str) else None
    if task == "tensor":
        table.mode = MODE_TENSOR
    elif fl.has_md5:
        table.mode = MODE_MD5
    return table


def flatten_dump(doc: dict, path: Path, kind: str, framework: str) -> DumpTable:
    """Turn an already parsed dump document into a :class:`DumpTable`."""
    parse_header(doc, path)
    table = _new_table(path, kind, framework)
    fl = _Flattener(table)
    debug = kind == "debug"
    for key, entry in doc["data"].items():
        _add_entry(table, fl, key, entry, debug)
    return _finish(table, fl, doc, path)


def load_dump_file(path: Path, kind: str | None = None) -> DumpTable:
    """Read and flatten a dump.json/debug.json, decoding one ``data`` entry at a time."""
    kind = kind or detect_kind(path)
    text = read_json_text(path, f"{kind}.json")
    stream = _StreamedDump(text, path)
    table = _new_table(path, kind, "")
    fl = _Flattener(table)
    debug = kind == "debug"
    seen: set[str] = set()

    def on_entry(key: str, entry: Any) -> None:
        if key in seen:
            raise DumpFormatError(f"data has the key '{key}' twice", path=path)
        seen.add(key)
        _add_entry(table, fl, key, entry, debug)

    try:
        stream.read(on_entry)
    except json.JSONDecodeError as exc:
        raise _json_error(exc, path) from None
    except ValueError as exc:  # e.g. an integer literal longer than Python's digit limit
        raise InputError(f"malformed JSON: {exc}", path=path) from None
    except RecursionError:
        raise InputError("JSON nesting is too deep", path=path) from None
    del text, stream.text
    header = stream.header
    framework = header.get("framework")
    if framework is not None and not isinstance(framework, str):
        raise DumpFormatError("'framework' must be a string", path=path)
    table.framework = framework or ""
    if header.get("data") is True:
        header = dict(header, data={})
    return _finish(table, fl, header, path)


def load_stack(path: Path) -> dict[str, list[str]]:
    """Read stack.json in either layout (new ``{"0": [[apis], [lines]]}`` or old ``{api: [lines]}``)."""
    doc = read_json_file(path, "stack")
    if not isinstance(doc, dict):
        raise DumpFormatError("top level of stack.json must be an object", path=path)
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
