"""The default plugin ``pair_loading``: the two dumps of a job loaded at once, the target in a forked child.

An accelerator only (:mod:`.pairload`; the child sends its table back in the wire form of :mod:`.tablewire`):
turned off (``-p no:pair_loading``), the core loads the target, then the golden, with the same results.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from msprobe_core.plugin import hookimpl


@hookimpl
def msprobe_load_pair(load: Callable[[Path], Any], target: Path, golden: Path,
                      meanwhile: Callable[[Any], None]) -> tuple[Any, Any]:
    """Both sides of a job: the target in a forked child when that pays (:func:`.pairload.can_fork`), else serially."""
    from .pairload import load_two

    return load_two(load, target, golden, meanwhile)
