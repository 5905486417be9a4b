"""The default plugin ``sweep``: what killed runs of this program left in a run's output directories is removed.

Every live writer holds an advisory lock on its own temporary file, run lock or side directory
(``msprobe_core.plugin.leftovers``); a run killed outright (SIGKILL, a power cut) cannot remove them, and
:func:`sweep_stale` removes those no live process holds once they have not changed for a while. The core
calls ``msprobe_output_dirs_ready`` with a run's output directories before the run takes its timestamp there;
this plugin sweeps each. Turned off (``-p no:sweep``), a compare works the same and leaves such files alone.

The sweep runs in the user's output directory, so it removes only what this program provably made:
names of the exact shapes it generates (``leftovers.part_name``, ``leftovers.run_lock_name``, a side
directory from the ``chunked`` plugin's ``sidedir.make_side_dir``), regular files (never a link), and side directories only when
they carry the marker written into them at creation, and then only the files of the shapes written there. A
user's ``.thesis.tex.part`` or ``.msprobe-notes.chunks/`` is never touched. Each removal is logged.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import time
from pathlib import Path

from msprobe_core.default_plugins.chunked import sidedir
from msprobe_core.plugin import hookimpl
from msprobe_core.plugin import leftovers as shapes

#: a hidden temporary file or run lock older than this, that no process holds locked, is a leftover
STALE_AFTER_S = 60.0

_HEX = r"[0-9a-f]"
_TEMPFILE_CHARS = r"[a-z0-9_]"  # what tempfile's random names are made of
_PART = re.compile(rf"\..+\.msprobe-{_HEX}{{12}}{re.escape(shapes.PART_SUFFIX)}")
_PROBE = re.compile(rf"{re.escape(shapes.WRITE_PROBE_PREFIX)}{_TEMPFILE_CHARS}{{8}}{re.escape(shapes.PART_SUFFIX)}")
_RUN_LOCK = re.compile(rf"{re.escape(shapes.RUN_LOCK_PREFIX)}\d{{14}}{re.escape(shapes.RUN_LOCK_SUFFIX)}")
_SIDE_DIR = re.compile(
    rf"{re.escape(sidedir.SIDE_DIR_PREFIX)}{_TEMPFILE_CHARS}{{8}}{re.escape(sidedir.SIDE_DIR_SUFFIX)}")
#: the files a chunk worker writes into its side directory (``chunkworker._build_share``)
_SIDE_FILE = re.compile(r"round-\d+-part-\d+\.csv")

log = logging.getLogger("msprobe")


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


def _ours_file(entry: os.DirEntry, st: os.stat_result) -> bool:
    """A hidden temporary file, write probe or run lock of this program's: its exact name shape, a regular file
    (never a link), and a run lock or probe empty as this program leaves them."""
    if not stat.S_ISREG(st.st_mode):
        return False
    name = entry.name
    if _PART.fullmatch(name):
        return True
    return bool(_RUN_LOCK.fullmatch(name) or _PROBE.fullmatch(name)) and st.st_size == 0


def _marked(path: str) -> bool:
    """Whether the side directory ``path`` holds this program's marker, as written (a regular file, its text)."""
    marker = os.path.join(path, sidedir.SIDE_MARKER)
    try:
        st = os.lstat(marker)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(sidedir.SIDE_MARKER_TEXT.encode()):
            return False
        with open(marker, encoding="utf-8") as fh:
            return fh.read() == sidedir.SIDE_MARKER_TEXT
    except (OSError, UnicodeDecodeError):
        return False


def _clear_side_dir(path: str) -> bool:
    """Remove this program's files from the side directory ``path``, then the directory if nothing else is in
    it; whatever else is there stays (with the marker, so the directory is still recognised). True if the
    directory went."""
    try:
        entries = list(os.scandir(path))
    except OSError:
        return False
    foreign = False
    for entry in entries:
        if entry.name == sidedir.SIDE_MARKER:
            continue
        if _SIDE_FILE.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
            try:
                os.unlink(entry.path)
            except OSError:
                foreign = True
            continue
        foreign = True
    if foreign:
        log.warning("Left %s in place: it holds files msprobe did not write there.", path)
        return False
    try:
        os.unlink(os.path.join(path, sidedir.SIDE_MARKER))
        os.rmdir(path)
    except OSError:
        return False
    return True


def sweep_stale(directory: Path, *, older_than: float = STALE_AFTER_S) -> list[Path]:
    """Remove what killed runs of this program left in ``directory``: its hidden temporary files, run locks and
    side directories that no live process holds and that have not changed for ``older_than`` seconds.

    Only names of the exact shapes this program generates are considered, only regular files (and marked side
    directories) are removed, and each removal is logged; anything else, whatever its name, is left alone.
    Returns what was removed; errors are ignored (it is housekeeping).
    """
    removed: list[Path] = []
    now = time.time()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        side = bool(_SIDE_DIR.fullmatch(name))
        if not side and not name.startswith("."):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if side:
            if not stat.S_ISDIR(st.st_mode) or not _marked(entry.path):
                continue
        elif not _ours_file(entry, st):
            continue
        if now - st.st_mtime < older_than or not _unheld(entry.path):
            continue
        if side:
            gone = _clear_side_dir(entry.path)
        else:
            try:
                os.unlink(entry.path)
                gone = True
            except OSError:
                gone = False
        if gone:
            removed.append(Path(entry.path))
            log.info("Removed %s, left by an msprobe run that was killed (no process holds it).", entry.path)
    return removed


@hookimpl
def msprobe_output_dirs_ready(directories: list[Path]) -> None:
    """Sweep each of a run's output directories (:func:`sweep_stale`) before the run takes its timestamp there."""
    for directory in directories:
        sweep_stale(directory)
