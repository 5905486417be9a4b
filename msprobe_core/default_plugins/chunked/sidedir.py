"""A chunk worker's side directory: made in the output directory, marked as this program's, locked while used.

A run killed outright (SIGKILL, a power cut) cannot remove it: its name has an exact shape and the marker inside
says it is ours, so that the default plugin ``sweep`` can tell it from a user's directory that merely looks alike
and remove it once no live process holds it (the sweep reads the shapes here).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from msprobe_core.plugin import leftovers

#: the names of a run's side directories (:mod:`.chunkworker`'s)
SIDE_DIR_PREFIX, SIDE_DIR_SUFFIX = ".msprobe-", ".chunks"
#: written into every side directory when it is made: without it a directory is not ours, whatever its name
SIDE_MARKER = ".msprobe-side-dir"
SIDE_MARKER_TEXT = "made by msprobe-core for a running compare; removed when no run holds it\n"


def make_side_dir(place: Path) -> tuple[Path, int]:
    """Make a run's side directory in ``place``, mark it as this program's and lock it while the run uses it.

    Returns the directory and the lock's descriptor (``-1`` where locks do not work): close it when done. A
    killed run's side directory is then a leftover a later run's sweep removes. Raises ``OSError`` when the
    directory cannot be made (the marker is written before anything else goes in).
    """
    side = Path(tempfile.mkdtemp(prefix=SIDE_DIR_PREFIX, suffix=SIDE_DIR_SUFFIX, dir=place))
    try:
        with open(side / SIDE_MARKER, "x", encoding="utf-8") as fh:
            fh.write(SIDE_MARKER_TEXT)
        return side, hold_side_dir(side)
    except BaseException:  # a failure, or a stop signal before the caller knows of it: nothing is left
        shutil.rmtree(side, ignore_errors=True)
        raise


def hold_side_dir(path: Path) -> int:
    """Lock a run's side directory while the run uses it (``-1`` where locks do not work): close the returned
    descriptor when done."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return -1
    if not leftovers.take_lock(fd):
        os.close(fd)
        return -1
    return fd
