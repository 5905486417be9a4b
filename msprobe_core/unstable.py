"""UNSTABLE: core internals this repository's own plugins still use; any name here may change or go in any release.

Not the plugin API. A third-party plugin imports ``msprobe_core.plugin`` (stable) and nothing here. The
first-party plugins (above all the one whose front end speaks msprobe 8.3.3's formats: its dump.json
walk, its workbook, its number spelling) take from here what no other plugin needs, so that the stable surface
stays small; each name is its home module's, loaded on first use like those of ``msprobe_core.plugin``.
A name used by a third party should move to ``msprobe_core.plugin`` (documented), not be taken from here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: home module (relative to ``msprobe_core``) -> the names given to first-party plugins
_HOMES: dict[str, tuple[str, ...]] = {
    # dump.json and the files beside it, as the classic loader reads them
    ".load.document": ("parse_header", "walk_members"),
    ".load.flatten": ("FieldProblem", "Flattener"),
}

_HOME_OF = {name: home for home, names in _HOMES.items() for name in names}
__all__ = sorted(_HOME_OF)


def __getattr__(name: str) -> Any:
    if name not in _HOME_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME_OF[name], "msprobe_core"), name)
    globals()[name] = value  # found once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # what the names are, for type checkers and IDEs (never run)
    from .load.document import parse_header, walk_members
    from .load.flatten import FieldProblem, Flattener
