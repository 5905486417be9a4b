"""The parts of the core's ``dump.json`` reader that a reader of its own builds the same rows with: public to plugins
as the module ``msprobe_core.plugin.dump_json`` (what the default plugin ``fast_scan``'s C scanner reads by, and the
streamed parse the default plugin ``chunked`` reads ``stack.json`` member by member with).

It only gathers names whose homes are the loader's modules, so they are one public name instead of thirteen loose
ones; each is documented where it is defined.
"""

from __future__ import annotations

from ..files.jsonfile import parse_streamed
from ..files.jsonstream import BLOCK_BYTES
from .dialects import CURRENT_MEMBERS, ENTRY_METADATA, LEAF_DATA_FIELDS, LEAF_METADATA, P2P_FIELDS, merge_records
from .document import finish_streamed, new_table
from .dumpindex import api_entries, dump_scanner
from .dumpjson import load_dump_file
from .flatten import EMPTY_CRC, non_tensor

__all__ = [
    "BLOCK_BYTES", "CURRENT_MEMBERS", "EMPTY_CRC", "ENTRY_METADATA", "LEAF_DATA_FIELDS", "LEAF_METADATA", "P2P_FIELDS",
    "api_entries", "dump_scanner", "finish_streamed", "load_dump_file", "merge_records", "new_table", "non_tensor", "parse_streamed",
]
