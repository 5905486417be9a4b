"""Side files removed by a thread while the run goes on, and the run's wait for them.

Freeing the blocks of a side file of a hundred megabytes (the text a forked child spelled, a child's answers)
takes the file system a noticeable time: the code that made it hands it to :func:`remove_later`, and the run waits
for those removals (:func:`finish_removals`) before a job forks a child (no other thread may run then) and before
it returns (the output directory then holds only the results).
"""

from __future__ import annotations

import contextlib
import shutil
import threading
from pathlib import Path

_REMOVERS: list[threading.Thread] = []


def remove_later(path: Path) -> None:
    """Remove a side file or directory by a thread while the run goes on (:func:`finish_removals` waits).

    Freeing the blocks of a side file of a hundred megabytes takes the file system a noticeable time.
    """
    remover = threading.Thread(target=_remove, args=(path,), name="msprobe-remove-side-file")
    remover.start()
    _REMOVERS.append(remover)


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
        return
    with contextlib.suppress(OSError):
        path.unlink()


def finish_removals() -> None:
    """Wait for side files still being removed (before a fork: no other thread may run then)."""
    while _REMOVERS:
        _REMOVERS.pop().join()
