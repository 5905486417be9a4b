"""msprobe-kernel: MindSpore static-graph full kernel dump compare for msprobe-core.

``msprobe compare -tp T -gp G --rank R [--step S]`` writes one
``compare_result_{rank}_{step}_{timestamp}.csv`` per (rank, step) found in both
dumps. :func:`compare_kernel_dumps` is the same as a Python function; see
:mod:`msprobe_kernel.layout` for the dump layouts and file names understood.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["compare_group", "compare_kernel_dumps", "parse_id_list", "parse_kernel_file_name"]


def __getattr__(name: str) -> Any:
    # on first use, not when the plugin is loaded: the engine needs pandas, and a run that holds no kernel dump
    # loads neither it nor the layout (start-up time)
    if name in ("compare_group", "compare_kernel_dumps"):
        from msprobe_kernel import engine

        return getattr(engine, name)
    if name in ("parse_id_list", "parse_kernel_file_name"):
        from msprobe_kernel import layout

        return getattr(layout, name)
    raise AttributeError(f"module 'msprobe_kernel' has no attribute {name!r}")
