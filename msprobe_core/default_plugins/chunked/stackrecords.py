"""``stack.json`` read member by member, without its API names: :func:`read_stack_records`.

The whole-table path keeps ``stack.json`` as a dict from API name to its list of lines
(:func:`~msprobe_core.plugin.load_stack`): at a million entries, millions of API-name strings.
:func:`read_stack_records` reads the file member by member into :class:`StackRecords` (API-name hashes, the
index's 64-bit key hashes, :func:`~msprobe_core.plugin.key_hashes`; records; lines kept once) without ever holding
the file's dict, and needs no index: the load stage asks for it (``msprobe_read_index_stack``, which this plugin
answers) while a target read in chunks is indexed (:func:`.stackindex.entry_stacks` makes it a per-entry stack once
matching is done), and the default plugin ``hierarchy`` reads the calling code of a first divergence with it. It
takes the layouts :func:`~msprobe_core.plugin.load_stack` takes and returns ``None`` for anything whose meaning
depends on more than one member at a time (a repeated top-level key, a ``"0"`` member that is not the first, an API
name that is not a text, an old-layout stack that is not a list): the caller then reads the file with
``load_stack``, which gives today's result or today's error. A syntax error is raised as ``load_stack`` raises it
(the same parser).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from msprobe_core.plugin import DumpFormatError, dump_json, key_hashes

#: API names hashed at a time while ``stack.json`` is read
HASH_BATCH = 65536


@dataclass
class StackRecords:
    """``stack.json`` without its API names: per name (by its key hash) a record; per record its lines or an object.

    ``name_hash``/``name_record``: one element per API name in file order (a repeated name: the last one
    counts, as in ``load_stack``'s dict); a record's lines are ``ids[starts[rec]:starts[rec + 1]]`` into
    ``lines``, or ``objects[rec]`` when its value is not a list of texts.
    """

    name_hash: np.ndarray
    name_record: np.ndarray
    lines: list[Any]
    objects: dict[int, Any]
    starts: np.ndarray
    ids: np.ndarray



class _RecordReader:
    """The members of ``stack.json`` as they are decoded, turned into :class:`StackRecords` (see the module)."""

    def __init__(self) -> None:
        self.layout = ""  # "new" ({"0": [[apis], [lines]], ...}) or "old" ({api: [lines]}), from the first member
        self.declined = False
        self.not_list = False  # an old-layout member that is not a list: load_stack words the error
        self.lines: list[Any] = []
        self.line_ids: dict[str, int] = {}
        self.objects: dict[int, Any] = {}
        self.starts = array("q", [0])
        self.ids = array("i")
        self.names: list[str] = []  # API names not hashed yet
        self.name_hash = bytearray()
        self.name_record = array("i")
        self.keys: list[str] = []  # top-level keys not hashed yet (a repeated key: declined)
        self.key_hash = bytearray()

    def record(self, value: Any) -> int:
        rec = len(self.starts) - 1
        if value.__class__ is list and all(v.__class__ is str for v in value):
            ids, line_ids, lines = self.ids, self.line_ids, self.lines
            for line in value:
                lid = line_ids.get(line)
                if lid is None:
                    lid = line_ids[line] = len(lines)
                    lines.append(line)
                ids.append(lid)
        else:
            self.objects[rec] = value
        self.starts.append(len(self.ids))
        return rec

    def on_member(self, key: str, value: Any) -> None:
        if self.declined:
            return
        self.keys.append(key)
        if not self.layout:
            self.layout = "new" if key == "0" and value else "old"
        elif key == "0" and self.layout == "old" and value:
            self.declined = True  # a later "0" makes the file the new layout: decided by the whole dict
            return
        if self.layout == "new":
            if value.__class__ is list and len(value) == 2 and value[0].__class__ is list:
                apis = value[0]
                if not all(a.__class__ is str for a in apis):  # load_stack's str(api): its own path
                    self.declined = True
                    return
                if apis:
                    rec = self.record(value[1])
                    self.names.extend(apis)
                    self.name_record.extend([rec] * len(apis))
        elif value.__class__ is not list:
            self.not_list = True
        else:
            self.names.append(key)
            self.name_record.append(self.record(value))
        if len(self.names) >= HASH_BATCH or len(self.keys) >= HASH_BATCH:
            self.flush()

    def flush(self) -> None:
        try:
            # the arrays' bytes (``.data``): ``bytearray += ndarray`` would be numpy's addition
            self.name_hash += key_hashes(self.names).data
            self.key_hash += key_hashes(self.keys).data
        except (UnicodeError, TypeError):  # a text that is not UTF-8 encodable: load_stack's path
            self.declined = True
        self.names.clear()
        self.keys.clear()

    def result(self) -> StackRecords | None:
        self.flush()
        if self.declined or (self.layout == "old" and self.not_list):
            return None
        keys = np.frombuffer(self.key_hash, dtype=np.uint64)
        if len(keys) > 1:
            keys = np.sort(keys)
            if bool((keys[1:] == keys[:-1]).any()):  # a repeated key (or two keys of one hash): load_stack's dict
                return None
        return StackRecords(
            name_hash=np.frombuffer(self.name_hash, dtype=np.uint64), name_record=np.frombuffer(self.name_record, dtype=np.int32),
            lines=self.lines, objects=self.objects, starts=np.frombuffer(self.starts, dtype=np.int64),
            ids=np.frombuffer(self.ids, dtype=np.int32),
        )


def read_stack_records(path: Path) -> StackRecords | None:
    """``stack.json`` read member by member into :class:`StackRecords`, or ``None`` (see the module's docstring).

    Raises what :func:`~msprobe_core.plugin.load_stack` raises for a file that is not JSON or
    whose top level is not an object.
    """
    reader = _RecordReader()

    def not_object(value: Any) -> Exception:
        return DumpFormatError("top level of stack.json must be an object", path=path)

    dump_json.parse_streamed(path, "stack", None, not_object, reader.on_member, scanner_messages=True)
    return reader.result()

