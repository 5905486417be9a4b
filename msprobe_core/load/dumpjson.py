"""Load an msprobe ``dump.json`` / ``debug.json`` into a :class:`DumpTable`, and read ``stack.json``.

The document is streamed entry by entry (:func:`msprobe_core.files.jsonfile.parse_streamed`) into the
functions of :mod:`msprobe_core.load.document`: the core's pure-Python loader. The default plugin ``fast_scan``
reads the files its C scanner fully understands ahead of it (through ``msprobe_load_dump``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import DumpFormatError
from ..files.jsonfile import check_json_file, parse_streamed, read_small_object
from ..model import DumpTable
from .document import add_entry, detect_kind, finish_streamed, new_table
from .flatten import Flattener


def load_dump_file(path: Path, kind: str | None = None) -> DumpTable:
    """Read and flatten a dump.json/debug.json, decoding one ``data`` entry at a time (the pure-Python loader:
    the default plugin ``fast_scan`` reads the documents its C scanner fully understands before this is asked),
    and report any problem of the file."""
    kind = kind or detect_kind(path)
    check_json_file(path, f"{kind}.json")
    table = new_table(path, kind, "")
    fl = Flattener(table)
    debug = kind == "debug"
    seen: set[str] = set()

    def on_entry(key: str, entry: Any) -> None:
        if key in seen:
            raise DumpFormatError(f"data has the key '{key}' twice", path=path)
        seen.add(key)
        add_entry(table, fl, key, entry, debug)

    def not_object(value: Any) -> Exception:
        return DumpFormatError(f"top level must be a JSON object, got {type(value).__name__}", path=path)

    header = parse_streamed(path, f"{kind}.json", "data", not_object, on_entry)
    fl.keep_account()
    return finish_streamed(table, fl.has_md5, header, path)


def load_stack(path: Path) -> dict[str, list[str]]:
    """Read stack.json in either layout (new ``{"0": [[apis], [lines]]}`` or old ``{api: [lines]}``).

    A small file of flat lists of strings is decoded whole (``read_small_object``), any other member by member,
    to the same dict or error; every source line is kept once: a few hundred distinct lines repeat across tens of
    thousands of stacks. (API names are all distinct: interning them would cost more time than it saves.)
    """
    doc: dict[str, Any] = {}
    strings: dict[str, str] = {}
    intern = strings.setdefault
    all_str = {str}.issuperset  # of the items' types: no set of them built

    def keep_list(items: list) -> list:
        # the usual list of lines or API names: interned at C speed; other items stay as they are
        if all_str(map(type, items)):
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

    def keep_flat(members: dict[str, Any]) -> bool:
        """Keep a decoded file's lines once, in place; ``False`` at a member not a list of strings or a pair of them
        (only so flat a file is taken whole: its decoder may read numbers and deep nesting otherwise than streaming)."""
        for value in members.values():
            pair = value.__class__ is list and len(value) == 2 and value[0].__class__ is list and value[1].__class__ is list
            if pair and all_str(map(type, value[0])) and all_str(map(type, value[1])):
                value[1] = list(map(intern, value[1], value[1]))
            elif not pair and value.__class__ is list and all_str(map(type, value)):
                value[:] = map(intern, value, value)
            else:
                return False
        return True

    def not_object(value: Any) -> Exception:
        return DumpFormatError("top level of stack.json must be an object", path=path)

    whole = read_small_object(path, "stack")  # the usual file: decoded in one C call, not member by member
    if whole is not None and keep_flat(whole):
        doc = whole
    else:  # a large or unusual file, or one whose error the streamed reader words (as json.loads words it)
        parse_streamed(path, "stack", None, not_object, on_entry, scanner_messages=True)
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
