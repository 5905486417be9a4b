"""What killed runs leave behind, and the locks that tell it from what live runs are using.

Every live writer holds an advisory lock on its own temporary file (``outputs.atomic_path``), run
lock (``outputs.run_stamp``) or side directory (:func:`hold_side_dir`); a run killed outright
(SIGKILL, a power cut) cannot remove them, and :func:`sweep_stale` removes those no live process
holds once they have not changed for a while.
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from pathlib import Path

#: the suffix of a hidden temporary file being written (``.<name>.<random>.part``)
PART_SUFFIX = ".part"
RUN_LOCK_PREFIX = ".msprobe-run-"
RUN_LOCK_SUFFIX = ".lock"
#: a hidden temporary file or run lock older than this, that no process holds locked, is a leftover
STALE_AFTER_S = 60.0


def take_lock(fd: int) -> bool:
    """Take an exclusive advisory lock on ``fd`` (released when the process ends, however it ends)."""
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except (ImportError, OSError):  # no flock here (another OS, some network file systems): nothing to rely on
        return False


def _unheld(path: str) -> bool:
    """Whether no process holds a lock on ``path`` (False when that cannot be known)."""
    try:
        import fcntl

        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0))
    except (ImportError, OSError):
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:  # held by a live writer (EWOULDBLOCK), or locks do not work here
        return False
    finally:
        os.close(fd)


#: the names of a run's side directories (a streamed compare's chunk worker, ``pipeline/chunkworker.py``)
SIDE_DIR_PREFIX, SIDE_DIR_SUFFIX = ".msprobe-", ".chunks"


def hold_side_dir(path: Path) -> int:
    """Lock a run's side directory while the run uses it (``-1`` where locks do not work): close the returned
    descriptor when done. A killed run's side directory is then a leftover for :func:`sweep_stale`."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return -1
    if not take_lock(fd):
        os.close(fd)
        return -1
    return fd


def _side_dir(entry: os.DirEntry) -> bool:
    return (entry.name.startswith(SIDE_DIR_PREFIX) and entry.name.endswith(SIDE_DIR_SUFFIX)
            and entry.is_dir(follow_symlinks=False))


def sweep_stale(directory: Path, *, older_than: float = STALE_AFTER_S) -> list[Path]:
    """Remove what killed runs left in ``directory``: hidden ``.part`` files, run locks and side directories
    no live process holds.

    A run killed outright (SIGKILL, a power cut) cannot remove its temporary files; every
    live writer holds a lock on its own (:func:`atomic_path`, :func:`run_stamp`,
    :func:`hold_side_dir`), so a hidden file or side directory that is unlocked and has not
    changed for ``older_than`` seconds is a leftover. Returns what was removed; errors are
    ignored (it is housekeeping).
    """
    removed: list[Path] = []
    now = time.time()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        side = _side_dir(entry)
        if not side and (not name.startswith(".") or not (name.endswith(PART_SUFFIX) or (
                name.startswith(RUN_LOCK_PREFIX) and name.endswith(RUN_LOCK_SUFFIX)))):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if (not side and not stat.S_ISREG(st.st_mode)) or now - st.st_mtime < older_than or not _unheld(entry.path):
            continue
        try:
            if side:
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
            removed.append(Path(entry.path))
        except OSError:
            pass
    return removed


