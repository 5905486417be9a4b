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
    # the process-wide host, for code that is handed none (a worker process of the classic tensor stage)
    ".host.registry": ("get_host",),
    ".host.specs": ("default_canonical",),
    # a first-party plugin's dump mode the core still names (issue 22 §1 moves it to its plugin)
    ".model": ("STATE_DEBUG",),
    ".result": ("data_name_column", "stack_column"),
    # dump.json and the files beside it, as the classic loader reads them
    ".load.document": ("parse_header", "walk_members"),
    ".load.flatten": ("FieldProblem", "Flattener"),
    ".load.dumpjson": ("load_stack",),
    ".files.schemas": ("validate",),
    ".files.npy_reader": ("NUMERIC_KINDS",),
    ".metrics.tensor_paths": ("safe_tensor_path",),
    # matching and metrics helpers
    ".match.matching": ("apply_dtype_gate",),
    ".metrics.tensor_metrics": ("compare_tensors",),
    # cells, files out and the console
    ".text.cells": ("neutralise", "numpy_float_text"),
    ".text.strtod": ("pandas_strtod",),
    ".files.outputs": ("run_stamp", "write_text_atomic"),
    ".write.writers": ("any_formula_like",),
    ".console.logs": ("banner_end", "setup_logging"),
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
    from .console.logs import banner_end, setup_logging
    from .files.npy_reader import NUMERIC_KINDS
    from .files.outputs import run_stamp, write_text_atomic
    from .files.schemas import validate
    from .host.registry import get_host
    from .host.specs import default_canonical
    from .load.document import parse_header, walk_members
    from .load.dumpjson import load_stack
    from .load.flatten import FieldProblem, Flattener
    from .match.matching import apply_dtype_gate
    from .metrics.tensor_metrics import compare_tensors
    from .metrics.tensor_paths import safe_tensor_path
    from .model import STATE_DEBUG
    from .result import data_name_column, stack_column
    from .text.cells import neutralise, numpy_float_text
    from .text.strtod import pandas_strtod
    from .write.writers import any_formula_like
