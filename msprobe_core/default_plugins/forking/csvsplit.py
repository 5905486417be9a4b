"""The second half of a big CSV file spelled by a forked child while the writer spells the first.

Spelling the cells is pure Python (one core): past :data:`.children.MIN_SPLIT_ROWS` rows a forked child spells
and writes the second half into a side file while the CSV writer writes the header and the first half, and the
writer appends the side file (``msprobe_csv_tail``). The child only accelerates: if it fails in any way, the
writer spells the second half itself, so the file is the same byte for byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from msprobe_core.plugin import TEXT_ERRORS, write_csv_rows

from . import children


def split_tail(path: Path, columns: list[Sequence[Any]], start: int, stop: int) -> children.SideTail | None:
    """Fork the child that writes rows ``(start + stop) // 2:stop`` of ``columns`` into a side file beside ``path``;
    ``None`` when the file is too small to pay, no fork is allowed here (:func:`.children.fork_worthwhile`), or the
    fork failed."""
    mid = (start + stop) // 2
    if mid <= start or not children.fork_worthwhile(stop - start):  # a tail starts after the file's first row
        return None
    side = path.with_name(path.name + ".tail")

    def write_tail() -> None:
        with open(side, "w", newline="", encoding="utf-8", errors=TEXT_ERRORS) as fh:
            write_csv_rows(fh, None, columns, mid, stop)

    child = children.spawn(write_tail, "child writing the second half of a CSV file")
    if child.pid is None:
        return None
    return children.SideTail(child, side, mid)
