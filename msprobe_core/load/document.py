"""A dump.json / debug.json document into a :class:`~msprobe_core.model.DumpTable`: its header and its entries.

Each ``data`` entry becomes an API of the table and its argument members are walked by the
:class:`~msprobe_core.load.flatten.Flattener`, in msprobe's order; the header decides the
table's task and mode. :func:`flatten_dump` does this for a parsed document; the loader of
:mod:`msprobe_core.load.dumpjson` feeds the same functions one entry at a time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import DumpFormatError, InputError
from ..files.validation import COMPARABLE_TASKS, header_fields
from ..model import MODE_MD5, MODE_STATISTICS, MODE_TENSOR, STATE_DEBUG, STATE_PARAMETERS_GRAD, ApiEntry, DumpTable
from .dialects import ARGUMENT_MEMBERS, ENTRY_METADATA, OLD_BACKWARD_MEMBERS, note_dialect
from .flatten import FieldProblem, Flattener

#: the argument members of every dumper version (``dialects.ARGUMENT_MEMBERS``), in the order msprobe reads them
_MEMBERS = {key: (state, suffix) for key, state, suffix in ARGUMENT_MEMBERS}
_MEMBER_ORDER = tuple(m[0] for m in ARGUMENT_MEMBERS)


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


def new_table(path: Path, kind: str, framework: str) -> DumpTable:
    """An empty table for the dump file ``path`` (its task and mode are set when the header is read)."""
    return DumpTable(source=path, kind=kind, task="", mode=MODE_STATISTICS, framework=framework)


def add_entry(table: DumpTable, fl: Flattener, key: str, entry: Any, debug: bool) -> None:
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
                raise FieldProblem(None, None, f"must be a JSON object, got {_json_type(entry)}")
            if split[2] == STATE_PARAMETERS_GRAD:
                fl.walk(entry, key, STATE_PARAMETERS_GRAD, api_idx)
            else:
                walk_members(table, fl, key, entry, api_idx)
    except FieldProblem as p:
        raise p.to_error(table.source, key, entry) from None
    api.n_rows = len(table.name) - api.first_row


def walk_members(table: DumpTable, fl: Flattener, key: str, entry: dict, api_idx: int) -> None:
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
    table = new_table(path, kind, framework)
    fl = Flattener(table)
    debug = kind == "debug"
    for key, entry in doc["data"].items():
        add_entry(table, fl, key, entry, debug)
    fl.keep_account()
    return _finish(table, fl.has_md5, doc, path)


def strip_call_number(head: str) -> str:
    """The op name of a call key without its call number.

    ``Functional.linear.3.forward`` → ``Functional.linear.forward``;
    ``Module.a.B.forward.2`` → ``Module.a.B.forward``;
    ``Module.a.B.parameters_grad`` stays as it is. Keys that do not look like
    calls are returned unchanged.
    """
    split = split_api_key(head, debug=False)
    if split is None:
        return head
    prefix, _call, direction = split
    return f"{prefix}.{direction}" if prefix else direction
