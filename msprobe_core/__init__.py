"""msprobe-core: accuracy compare of msprobe dumps, fast, safe and open to plugins.

Public API: :func:`compare`, :func:`compare_distributed`, and ``hookimpl`` for
plugin authors (see ``msprobe_core.hookspecs``).
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["compare", "compare_distributed", "hookimpl", "__version__"]


def __getattr__(name: str) -> object:
    # imported on first use: ``msprobe`` imports this package before it can catch a Ctrl-C, so it stays tiny
    if name == "hookimpl":
        from .hookspecs import hookimpl

        return hookimpl
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def compare(*args: object, **kwargs: object):
    """See :func:`msprobe_core.api.compare`."""
    from .api import compare as _compare

    return _compare(*args, **kwargs)


def compare_distributed(*args: object, **kwargs: object):
    """See :func:`msprobe_core.api.compare_distributed`."""
    from .api import compare_distributed as _cd

    return _cd(*args, **kwargs)
