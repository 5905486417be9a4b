"""msprobe-core: accuracy compare of msprobe dumps, fast, safe and open to plugins.

Public API: :func:`compare` (returns a :class:`CompareResult`), :func:`compare_distributed`,
and ``hookimpl`` for plugin authors (everything else they import is in ``msprobe_core.plugin``).
``help(msprobe_core.compare)`` lists every option, those of the installed plugins included (looking it up loads them).
"""

from __future__ import annotations

__all__ = ["CompareResult", "compare", "compare_distributed", "hookimpl", "__version__"]
_FROM_API = ("CompareResult", "compare", "compare_distributed")


def __getattr__(name: str) -> object:
    # imported on first use: ``msprobe`` imports this package before it can catch a Ctrl-C, so it
    # stays tiny; importing it (``msprobe --help``, plugins importing ``hookimpl``) loads no plugin
    if name == "__version__":
        from .version import __version__

        return __version__
    if name == "hookimpl":
        from .host.markers import hookimpl

        return hookimpl
    if name in _FROM_API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_FROM_API, "hookimpl", "__version__"})
