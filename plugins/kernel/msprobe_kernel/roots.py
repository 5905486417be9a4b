"""Whether a path is a kernel dump's root: the one question every compare asks this plugin (its discovery hook).

Kept apart from :mod:`msprobe_kernel.layout` (file names, directories, steps) so that a compare of other dumps
answers it without loading the layout.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

#: a MindSpore e2e dump's rank directory
_RANK_DIR = re.compile(r"^rank_(\d+)$")
#: the config file msprobe writes at the root of a kernel-by-kernel dump
KBYK_CONFIG = "kernel_kbyk_dump.json"


def is_kernel_dump_root(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is the root of a kernel dump (or one of its ``rank_<r>`` directories).

    A root holds ``rank_<r>`` directories (MindSpore's e2e dump) or msprobe's
    ``kernel_kbyk_dump.json``; msprobe's own dumps use ``rank<r>`` without the
    underscore, so the two layouts never look alike.
    """
    p = Path(path)
    if not p.is_dir():
        return False
    if _RANK_DIR.match(p.name) or (p / KBYK_CONFIG).is_file():
        return True
    try:
        return any(_RANK_DIR.match(e.name) and e.is_dir() for e in os.scandir(p))
    except OSError:
        return False


