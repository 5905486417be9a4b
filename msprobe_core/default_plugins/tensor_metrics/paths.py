"""Where the tensor files of a dump are, at one ``lstat`` a name (the core's ``safe_tensor_path``, made fast for
the thousands of names of one dump)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from msprobe_core.plugin import safe_tensor_path


class TensorPaths:
    """:func:`safe_tensor_path` for the thousands of names of one dump, at one ``lstat`` a name.

    ``resolve_within`` resolves the root and every component of every name (a dozen
    ``lstat`` calls each). A plain file name (no separator, not ``.``/``..``, no NUL)
    that is not a symlink cannot leave the root, so it is joined to the root's real
    path (resolved once) after one ``lstat``; anything else, including a name that does
    not exist yet, takes the full check, which gives the same path or the same error.
    """

    def __init__(self) -> None:
        self._real_roots: dict[Path, str] = {}
        #: sizes seen by the ``lstat`` of the fast path, for the chunk plan
        self.sizes: dict[str, int] = {}

    def __call__(self, base: Path | None, name: str) -> str:
        """The real path of ``base/name`` as a string (what a :class:`TensorTask` holds)."""
        if base is None or not _plain_name(name):
            return str(safe_tensor_path(base, name))
        real = self._real_roots.get(base)
        if real is None:
            real = self._real_roots[base] = os.path.realpath(base)
        full = os.path.join(real, name)
        try:
            st = os.lstat(full)
        except (OSError, ValueError):
            return str(safe_tensor_path(base, name))
        if stat.S_ISLNK(st.st_mode):
            return str(safe_tensor_path(base, name))
        self.sizes[full] = st.st_size
        return full


def _plain_name(name: object) -> bool:
    return (isinstance(name, str) and name not in ("", ".", "..")
            and "/" not in name and "\\" not in name and "\x00" not in name)
