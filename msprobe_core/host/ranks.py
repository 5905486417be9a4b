"""Ranks: which rank a compare job is, and which calls connect ranks (what ``-da`` follows between them)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


def rank_number(label: str, default: int) -> int:
    """The rank a job label names (``rank3`` → 3), else ``default``."""
    m = re.search(r"rank(\d+)", label)
    return int(m.group(1)) if m else default


@dataclass(frozen=True)
class CommOpSpec:
    """A rule naming communication ops: ``kind(prefix) -> "collective" | "send" | "recv" | None``.

    ``prefix`` is the call key without call number and direction (``Distributed.all_reduce``). Registered through
    ``msprobe_register_comm_ops``; the first-divergence analysis (``-da``, the default plugin ``diff_analyze``)
    asks them which calls connect ranks.
    """

    name: str
    kind: Callable[[str], str | None]
    plugin: str = ""
