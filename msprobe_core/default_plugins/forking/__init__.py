"""The default plugin ``forking``: pure-Python work shared with a watched forked child.

The machinery (:mod:`.children`: when a fork is allowed and worth it, a child watched for progress, its pipe, the
stop signals held around the fork) serves every child of the run: the default plugins ``chunked`` (the chunk
worker, the last rows of a big result) and ``pair_loading`` (the target loaded beside the golden) run theirs
through it, and this plugin lends the CSV writer a child for the second half of a big file (:mod:`.csvsplit`,
through ``msprobe_csv_tail``). Each child is an accelerator only: turned off (``-p no:forking``), nothing forks,
this process does every share itself and writes the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from msprobe_core.plugin import hookimpl


@hookimpl
def msprobe_csv_tail(path: Path, columns: list[Sequence[Any]], start: int, stop: int) -> Any:
    """The second half of a big CSV file spelled by a forked child (:func:`.csvsplit.split_tail`), else ``None``."""
    from .csvsplit import split_tail

    return split_tail(path, columns, start, stop)
