"""Everything a plugin author imports from msprobe-core, in one module (``from msprobe_core.plugin import ...``).

A plugin imports from here (and ``hookimpl`` also from ``msprobe_core``) and from no other module of the core:
the names below are the core's public surface for plugins and are kept stable; every other module of
``msprobe_core`` may move (``tests/test_result_columns.py`` checks this repository's plugins keep to it,
``docs/plugins.md`` "What a plugin imports" says what each name is for).

Each name is imported from its home module the first time it is asked for, so a plugin that takes
``hookimpl`` and a few specs at registration loads none of the stages (numpy, the writers…): ``msprobe --help``
stays fast however many plugins are installed. ``result_columns`` is the column registry module itself
(``from msprobe_core.plugin import result_columns as C``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: home module (relative to ``msprobe_core``) -> the public names it gives plugins
_HOMES: dict[str, tuple[str, ...]] = {
    # hooks and what plugins register
    ".host.hookspecs": ("hookimpl",),
    ".host.specs": (
        "CommandLineClaim", "CompareJob", "DtypeInfo", "FrameworkSpec", "HierarchySpec", "MapperSpec", "MatchContext", "MetricContext",
        "MetricSpec", "NormalizerSpec", "TensorMetricSpec", "VerdictContext", "VerdictSpec", "WriterSpec",
        "default_canonical",
    ),
    ".host.registry": ("PluginHost", "current_host", "get_host", "reset_host"),
    ".options": ("CHOICE", "DUMP_KINDS", "FLAG", "INT", "PATH", "TEXT", "OptionSpec"),
    ".workers.executors": ("Executor", "ExecutorRef", "ExecutorSpec", "LocalExecutor", "usable_cpus"),
    ".analysis.comm": ("CommOpSpec",),
    # the data model
    ".model": (
        "MODE_KERNEL", "MODE_MD5", "MODE_STATISTICS", "MODE_TENSOR", "NA", "STATE_DEBUG", "STATE_INPUT", "STATE_OUTPUT",
        "STATE_PARAMETERS", "STATE_PARAMETERS_GRAD", "ApiEntry", "CompareOptions", "DumpTable", "MatchResult",
    ),
    ".result": ("ResultTable", "data_name_column", "stack_column"),
    ".errors": (
        "DumpFormatError", "InputError", "MappingError", "MsprobeError", "OutputError", "RankMismatchError",
        "TensorReadError", "UnsafePathError", "UnsafePickleError", "UsageError",
    ),
    # reading input safely
    ".files.validation": ("check_tensor_file", "confine", "dump_file_beside", "max_tensor_bytes", "read_yaml",
                          "resolve_within"),
    ".files.schemas": ("CompareJson", "validate"),
    ".files.jsonfile": ("read_json_file",),
    ".files.npy_reader": ("NUMERIC_KINDS", "read_npy"),
    ".files.arena": ("current_arena",),
    ".load.document": ("detect_kind", "flatten_dump", "parse_header", "split_api_key", "walk_members"),
    ".load.flatten": ("FieldProblem", "Flattener"),
    ".load.dumpjson": ("load_stack",),
    ".match.data_mapping": ("load_data_mapping",),
    ".metrics.tensor_stage": ("safe_tensor_path",),
    # matching and metrics
    ".match.matching": ("apply_dtype_gate", "join_on_keys", "mapped_golden_keys"),
    ".metrics.tensor_metrics": ("compare_tensors",),
    # cells and writing
    ".text.cells": ("neutralise", "numpy_float_text"),
    ".text.strtod": ("pandas_strtod",),
    ".files.outputs": ("atomic_path", "run_stamp", "write_text_atomic"),
    ".write.writers": ("any_formula_like",),
    ".write.xlsx_stream": ("HEADER_STYLE", "CellStyle", "XlsxStreamWriter", "fill_style"),
    ".console.logs": ("banner_end", "setup_logging"),
    # the stages, for a plugin that brings a front end of its own (the classic plugin)
    ".load.discover": ("discover_jobs",),
    ".load.stage": ("account_unrecognised", "load_pair"),
    ".match.stage": ("match_tables",),
    ".pipeline.job": ("build_result",),
    ".write.stage": ("write_result",),
    ".run.jobs": ("run_jobs",),
}
#: modules given as they are
_MODULES = {"result_columns": ".result_columns"}

_HOME_OF = {name: home for home, names in _HOMES.items() for name in names}
__all__ = sorted([*_HOME_OF, *_MODULES])


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        value: Any = importlib.import_module(_MODULES[name], "msprobe_core")
    elif name in _HOME_OF:
        value = getattr(importlib.import_module(_HOME_OF[name], "msprobe_core"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # found once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # what the names are, for type checkers and IDEs (never run)
    from . import result_columns
    from .analysis.comm import CommOpSpec
    from .console.logs import banner_end, setup_logging
    from .errors import (
        DumpFormatError,
        InputError,
        MappingError,
        MsprobeError,
        OutputError,
        RankMismatchError,
        TensorReadError,
        UnsafePathError,
        UnsafePickleError,
        UsageError,
    )
    from .files.arena import current_arena
    from .files.jsonfile import read_json_file
    from .files.npy_reader import NUMERIC_KINDS, read_npy
    from .files.outputs import atomic_path, run_stamp, write_text_atomic
    from .files.schemas import CompareJson, validate
    from .files.validation import (
        check_tensor_file,
        confine,
        dump_file_beside,
        max_tensor_bytes,
        read_yaml,
        resolve_within,
    )
    from .host.hookspecs import hookimpl
    from .host.registry import PluginHost, current_host, get_host, reset_host
    from .host.specs import (
        CommandLineClaim,
        CompareJob,
        DtypeInfo,
        FrameworkSpec,
        HierarchySpec,
        MapperSpec,
        MatchContext,
        MetricContext,
        MetricSpec,
        NormalizerSpec,
        TensorMetricSpec,
        VerdictContext,
        VerdictSpec,
        WriterSpec,
        default_canonical,
    )
    from .load.discover import discover_jobs
    from .load.document import detect_kind, flatten_dump, parse_header, split_api_key, walk_members
    from .load.dumpjson import load_stack
    from .load.flatten import FieldProblem, Flattener
    from .load.stage import account_unrecognised, load_pair
    from .match.data_mapping import load_data_mapping
    from .match.matching import apply_dtype_gate, join_on_keys, mapped_golden_keys
    from .match.stage import match_tables
    from .metrics.tensor_metrics import compare_tensors
    from .metrics.tensor_stage import safe_tensor_path
    from .model import (
        MODE_KERNEL,
        MODE_MD5,
        MODE_STATISTICS,
        MODE_TENSOR,
        NA,
        STATE_DEBUG,
        STATE_INPUT,
        STATE_OUTPUT,
        STATE_PARAMETERS,
        STATE_PARAMETERS_GRAD,
        ApiEntry,
        CompareOptions,
        DumpTable,
        MatchResult,
    )
    from .options import CHOICE, DUMP_KINDS, FLAG, INT, PATH, TEXT, OptionSpec
    from .pipeline.job import build_result
    from .result import ResultTable, data_name_column, stack_column
    from .run.jobs import run_jobs
    from .text.cells import neutralise, numpy_float_text
    from .text.strtod import pandas_strtod
    from .workers.executors import Executor, ExecutorRef, ExecutorSpec, LocalExecutor, usable_cpus
    from .write.stage import write_result
    from .write.writers import any_formula_like
    from .write.xlsx_stream import HEADER_STYLE, CellStyle, XlsxStreamWriter, fill_style
