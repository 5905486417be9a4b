"""msprobe-core: accuracy compare of msprobe dumps, fast, safe and open to plugins.

Public API: :func:`compare`, :func:`compare_distributed`, and ``hookimpl`` for
plugin authors (see ``msprobe_core.hookspecs``).
"""

from __future__ import annotations

from typing import Any

from .hookspecs import hookimpl

__version__ = "0.1.0"
__all__ = ["compare", "compare_distributed", "hookimpl", "__version__"]


def compare(*args: Any, **kwargs: Any):
    """See :func:`msprobe_core.api.compare`."""
    from .api import compare as _compare

    return _compare(*args, **kwargs)


def compare_distributed(*args: Any, **kwargs: Any):
    """See :func:`msprobe_core.api.compare_distributed`."""
    from .api import compare_distributed as _cd

    return _cd(*args, **kwargs)
