"""The default plugin ``fast_scan``: dump.json / debug.json read by the optional C scanner (``_dumpscan``).

An accelerator only: it reads a file its scanner fully understands (:mod:`.scan`), and, when a chunked compare
asks for a file's index, indexes it (:mod:`.index`) with a reader of its entries by byte range (:mod:`.chunks`);
any other file it hands on (``None``) to the core's pure-Python loader, which reads it and reports any problem.
Turned off (``-p no:fast_scan``, or ``MSPROBE_PY_LOADER`` set), every file is read by the core's loader, with the
same results, and no file is indexed (a big pair is compared as whole tables).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msprobe_core.plugin import CompareOptions, check_json_file, detect_kind, hookimpl


# neither tryfirst nor trylast: installed plugins (registered after the default ones) are asked before it, the
# built-in pure-Python loader (trylast) after it
@hookimpl
def msprobe_load_dump(path: Path, options: CompareOptions, index: bool | None) -> Any:
    """The scanner's table (or, asked for one, its index) of a dump/debug file, or ``None`` to hand it on."""
    if path.is_dir():
        return None
    kind = detect_kind(path)
    if index is not None:
        from .chunks import ChunkReader
        from .index import index_dump_file

        indexed = index_dump_file(path, kind, renumber=bool(index))
        if indexed is not None:
            indexed.tensor_dir = path.parent / "dump_tensor_data"
            indexed.reader = ChunkReader
            return indexed
    check_json_file(path, f"{kind}.json")
    from .scan import scan_dump  # numpy (its columns): loaded when a dump is read

    table = scan_dump(path, kind)
    if table is not None:
        table.tensor_dir = path.parent / "dump_tensor_data"
    return table
