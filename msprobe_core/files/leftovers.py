"""The names and locks of what a live run writes while it works: what a killed run leaves behind.

Every live writer holds an advisory lock on its own temporary file (``outputs.atomic_path``), run
lock (``outputs.run_stamp``) or side directory (the default plugin ``chunked``'s ``sidedir.py``, by
:func:`take_lock`); a run killed outright (SIGKILL, a power cut) cannot remove them. The names have exact
shapes (:func:`part_name`, :func:`run_lock_name`), so that a later run can tell them from a user's files that
merely look alike and remove those no live process holds: the default plugin ``sweep`` does
(``msprobe_output_dirs_ready``), reading the shapes here (``msprobe_core.plugin.leftovers``).
"""

from __future__ import annotations

import os
from pathlib import Path

#: the suffix of a hidden temporary file being written (``.<name>.msprobe-<12 hex>.part``)
PART_SUFFIX = ".part"
#: a run lock's name is ``<RUN_LOCK_PREFIX><YYYYmmddHHMMSS><RUN_LOCK_SUFFIX>`` (:func:`run_lock_name`)
RUN_LOCK_PREFIX = ".msprobe-run-"
RUN_LOCK_SUFFIX = ".lock"
#: the prefix of the probe file that checks an output directory is writable (removed at once)
WRITE_PROBE_PREFIX = ".msprobe-write-test."


def part_name(final: Path) -> Path:
    """A fresh name for the hidden temporary file that becomes ``final``: ``.<name>.msprobe-<12 hex>.part``
    next to it (the name cut to 80 bytes), a shape a later run's sweep recognises as this program's."""
    name = final.name
    base = name[:80] if len(name.encode()) > 80 else name
    # os.urandom is what secrets.token_hex reads; the secrets module would import hmac, base64 and random
    return final.parent / f".{base}.msprobe-{os.urandom(6).hex()}{PART_SUFFIX}"


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
