"""The names and locks of what a live run writes while it works: what a killed run leaves behind.

Every live writer holds an advisory lock on its own temporary file (``outputs.atomic_path``), run
lock (``outputs.run_stamp``) or side directory (:func:`make_side_dir`); a run killed outright
(SIGKILL, a power cut) cannot remove them. The names have exact shapes (:func:`part_name`,
:func:`run_lock_name`, a side directory from :func:`make_side_dir`, marked inside with
:data:`SIDE_MARKER`), so that a later run can tell them from a user's files that merely look alike and
remove those no live process holds: the default plugin ``sweep`` does (``msprobe_output_dirs_ready``),
reading the shapes here (``msprobe_core.plugin.leftovers``).
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from pathlib import Path

#: the suffix of a hidden temporary file being written (``.<name>.msprobe-<12 hex>.part``)
PART_SUFFIX = ".part"
#: a run lock's name is ``<RUN_LOCK_PREFIX><YYYYmmddHHMMSS><RUN_LOCK_SUFFIX>`` (:func:`run_lock_name`)
RUN_LOCK_PREFIX = ".msprobe-run-"
RUN_LOCK_SUFFIX = ".lock"
#: the prefix of the probe file that checks an output directory is writable (removed at once)
WRITE_PROBE_PREFIX = ".msprobe-write-test."

#: the names of a run's side directories (a streamed compare's chunk worker, ``default_plugins/chunked/chunkworker.py``)
SIDE_DIR_PREFIX, SIDE_DIR_SUFFIX = ".msprobe-", ".chunks"
#: written into every side directory when it is made: without it a directory is not ours, whatever its name
SIDE_MARKER = ".msprobe-side-dir"
SIDE_MARKER_TEXT = "made by msprobe-core for a running compare; removed when no run holds it\n"


def part_name(final: Path) -> Path:
    """A fresh name for the hidden temporary file that becomes ``final``: ``.<name>.msprobe-<12 hex>.part``
    next to it (the name cut to 80 bytes), a shape a later run's sweep recognises as this program's."""
    name = final.name
    base = name[:80] if len(name.encode()) > 80 else name
    return final.parent / f".{base}.msprobe-{secrets.token_hex(6)}{PART_SUFFIX}"


def run_lock_name(directory: Path, stamp: str) -> Path:
    """The run lock of the timestamp ``stamp`` (``YYYYmmddHHMMSS``) in ``directory``: an empty file."""
    return directory / f"{RUN_LOCK_PREFIX}{stamp}{RUN_LOCK_SUFFIX}"


def take_lock(fd: int) -> bool:
    """Take an exclusive advisory lock on ``fd`` (released when the process ends, however it ends)."""
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except (ImportError, OSError):  # no flock here (another OS, some network file systems): nothing to rely on
        return False


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
    if not take_lock(fd):
        os.close(fd)
        return -1
    return fd
