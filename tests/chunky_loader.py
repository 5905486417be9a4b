"""A third party's loader that opts in to the chunked strategy: the test plugin of ``tests/test_chunked_plugin.py``.

Its format, ``*chunky_dump.json`` (the core's discovery pairs files by msprobe's names), is a dump as JSON lines: the first line the header members (``task``, ``level``,
``framework``), then one line per entry, ``[key, entry]``. It builds its index with
:func:`msprobe_core.plugin.index_table` and reads entries back by number (``DumpIndex.offsets`` holds them), so
it imports only :mod:`msprobe_core.plugin`, as a plugin distribution would.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from msprobe_core.plugin import DumpIndex, DumpTable, InputError, flatten_dump, hookimpl, index_table

#: how its files are named
SUFFIX = "chunky_dump.json"


def write_chunky(doc: dict[str, Any], path: Path) -> None:
    """A dump document written in this format."""
    header = {k: v for k, v in doc.items() if k != "data"}
    lines = [json.dumps(header)] + [json.dumps([key, entry]) for key, entry in doc["data"].items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _table(path: Path, keep: Any = None) -> DumpTable:
    """The table of the file's entries (``keep(number)``: only the entries it accepts, in file order)."""
    try:
        header, *entries = path.read_text(encoding="utf-8").splitlines()
        doc = dict(json.loads(header))
        doc["data"] = {key: entry for n, (key, entry) in enumerate(map(json.loads, entries)) if keep is None or keep(n)}
    except (OSError, ValueError) as exc:
        raise InputError(f"not a chunky dump ({exc})", path=path) from None
    return flatten_dump(doc, path, "dump", str(doc.get("framework") or ""))


class EntriesByNumber:
    """The reader of entries of an index of this format (an ``EntryReader``)."""

    def __init__(self, index: DumpIndex) -> None:
        self.index = index

    def __enter__(self) -> EntriesByNumber:
        if not self.index.same_file():
            raise InputError("the file changed while it was being compared", path=self.index.source)
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def read(self, runs: Sequence[tuple[int, int]]) -> DumpTable:
        """The entries of ``runs``, read again from the file."""
        wanted = {n for first, stop in runs for n in range(first, stop)}
        return _table(self.index.source, wanted.__contains__)


def whole_file(index: DumpIndex) -> DumpTable:
    """The whole table (the fallback to whole tables)."""
    return _table(index.source)


@hookimpl
def msprobe_load_dump(path: Path, index: bool | None) -> DumpTable | DumpIndex | None:
    """``*chunky_dump.json`` files: a table, or when the chunked strategy asks, its index."""
    if not path.name.endswith(SUFFIX):
        return None
    table = _table(path)
    table.tensor_dir = path.parent / "dump_tensor_data"
    if index is None:
        return table
    return index_table(table, bool(index), EntriesByNumber, whole_file)
