"""Everything a plugin author imports from msprobe-core, in one module (``from msprobe_core.plugin import ...``).

A plugin imports from here (and ``hookimpl`` also from ``msprobe_core``) and from no other module of the core:
the names below are the core's stable public surface for plugins, at most the count tests/test_plugin_api.py allows (175): the specs a plugin
registers and the typed callables they hold, the contexts its code is handed, the data model, the errors, the
safe readers and :func:`run_compare` (the supported entry for a front end of a plugin's own). Every other module
of ``msprobe_core`` may move, and this repository's own plugins use none of them either (``tests/test_plugin_api.py``
checks the count and the docstrings, ``tests/test_result_columns.py`` that the plugins keep to this module;
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
    ".host.markers": ("hookimpl", "hookspec"),
    ".host.specs": (
        "CommandLineClaim", "CompareJob", "DtypeInfo", "FrameworkSpec", "HierarchySpec", "MapperFunction",
        "MapperSpec", "MatchContext", "MetricContext", "MetricFunction", "MetricSpec", "NormalizerSpec", "Register",
        "RowNames", "TensorMetricSpec", "VerdictContext", "VerdictSpec", "WriterFunction", "WriterSpec",
        "EXACT_MAPPER", "default_canonical", "AncestorLookup",
    ),
    ".host.strategies": ("DumpIndex", "EntryReader", "FileIdentity", "Strategy", "StrategySpec", "WholeTablesNeeded"),
    ".pipeline.strategy": ("whole_tables", "job_bytes"),
    # what a strategy's finish builds and returns (the default plugin chunked)
    ".pipeline.build": ("build_result",),
    ".pipeline.sink": ("Written",),
    ".load.dumpindex": ("index_table", "key_hashes"),
    ".match.frameworks": ("dtype_compat", "resolve_frameworks"),
    ".host.tensor_row": ("TensorRow",),
    ".host.ranks": ("CommOpSpec", "rank_number"),
    ".options": ("DUMP_KINDS", "OptionSpec", "option_label"),
    ".workers.executors": ("Executor", "ExecutorRef", "ExecutorSpec", "InlineExecutor", "usable_cpus", "executor_for",
                           "using"),
    ".host.defaults": ("BUILTIN_PLUGIN", "default_plugin_names"),
    ".host.registry": ("PluginHost", "get_host", "reset_host", "current_host"),
    # the command line run in-process (the plugin authors' test fixtures, msprobe-testing, run `msprobe` through it)
    ".cli.main": ("main",),
    ".run.frontend": ("run_compare",),
    ".pipeline.job": ("JobOutcome", "raise_if_partly_failed", "run_job"),
    ".run.jobs": ("job_partial",),
    ".pipeline.whole": ("WholeTables",),
    ".model": (
        "MODE_MD5", "MODE_STATISTICS", "MODE_TENSOR", "NA", "ApiEntry", "CompareOptions", "DumpTable", "MatchResult",
        "MatchNotes", "ResultNotes", "STATE_DEBUG", "STATE_INPUT", "STATE_OUTPUT", "STATE_PARAMETERS",
        "STATE_PARAMETERS_GRAD", "TWO_PROGRAMS_COMMENT", "pairing_note", "ROW_COLUMNS", "STAT_COLUMNS",
    ),
    ".result": ("ResultTable", "data_name_column", "stack_column", "whole_numbers"),
    ".errors": (
        "CompareFailed", "DumpFormatError", "InputError", "MappingError", "MsprobeError", "OutputError",
        "TensorReadError", "UnsafePathError", "UnsafePickleError", "UsageError", "GateFailed", "PluginFailed",
    ),
    ".files.validation": (
        "check_tensor_file", "confine", "dump_file_beside", "max_tensor_bytes", "read_yaml",
    ),
    ".files.jsonfile": ("read_json_file", "check_json_file"),
    ".files.npy_reader": ("NUMERIC_KINDS", "read_npy"),
    ".files.arena": ("current_arena", "Arena", "use_arena"),
    # a side file removed by a thread the run waits for (the default plugin chunked's children's)
    ".files.removals": ("remove_later",),
    # the document walk, for a loader of its own that reads dump.json as another program did (the classic plugin's)
    ".load.document": ("detect_kind", "flatten_dump", "split_api_key", "strip_call_number", "parse_header",
                       "walk_members"),
    ".load.flatten": ("FieldProblem", "Flattener"),
    ".match.matching": ("apply_dtype_gate", "join_on_keys", "mapped_golden_keys"),
    ".files.outputs": ("TEXT_ERRORS", "atomic_path", "output_error", "write_text_atomic", "run_stamp", "output_policy"),
    ".write.stage": ("remove_files", "write_attachments", "write_result"),
    ".load.discover": ("STEP_DIR", "discover_jobs", "holds_step_dirs", "warn_if_symlink", "list_dir"),
    ".match.data_mapping": ("load_data_mapping",),
    ".write.writers": ("any_formula_like", "write_csv_rows", "CSV_MAX_ROWS"),
    ".console.stages": (
        "Progress", "StageEvent", "clear_status", "file_sizes", "fraction_text", "run_status", "set_job", "size_text",
        "stage", "tick",
    ),
    ".metrics.tensor_paths": ("safe_tensor_path",),
    ".text.cells": ("neutralise", "numpy_float_text", "is_formula_like", "csv_column"),
    ".text.columns": ("RangeSequence", "TextColumn"),
    ".workers.gcpause": ("gc_paused",),
    ".load.dumpjson": ("load_stack",),
    ".files.schemas": ("validate",),
    ".console.logs": ("banner_end", "setup_logging"),
    ".run.finished": ("FinishedRun", "PartialSpec", "RunSummary"),
    ".running": ("run_host", "running_with"),
    ".text.strtod": ("pandas_strtod",),
    ".text.csv_rows": ("csv_line", "number_column"),
    ".text.floattext": ("float_texts",),
}
#: modules given as they are
_MODULES = {
    "result_columns": ".result_columns",
    # how a statistics cell is classified (its kind codes, classify_values, cells_at): the statistics metric set and
    # msprobe's verdict rule read the dumped statistics through it
    "stat_cells": ".text.statcells",
    # the names and locks of what a live run writes while it works (the default plugin sweep removes a killed run's)
    "leftovers": ".files.leftovers",
    # what a dump.json reader of its own needs to give the core's rows (the default plugin fast_scan's C scanner): the
    # dialects' member and field sets, the row helpers, the pure-Python loader it falls back to, the C scanner
    "dump_json": ".load.dumpjson_parts",
}

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
    from .cli.main import main
    from .console.logs import banner_end, setup_logging
    from .console.stages import (
        Progress,
        StageEvent,
        clear_status,
        file_sizes,
        fraction_text,
        run_status,
        set_job,
        size_text,
        stage,
        tick,
    )
    from .errors import (
        CompareFailed,
        DumpFormatError,
        GateFailed,
        InputError,
        MappingError,
        MsprobeError,
        OutputError,
        PluginFailed,
        TensorReadError,
        UnsafePathError,
        UnsafePickleError,
        UsageError,
    )
    from .files import leftovers
    from .files.arena import Arena, current_arena, use_arena
    from .files.jsonfile import check_json_file, read_json_file
    from .files.npy_reader import NUMERIC_KINDS, read_npy
    from .files.outputs import TEXT_ERRORS, atomic_path, output_error, output_policy, run_stamp, write_text_atomic
    from .files.removals import remove_later
    from .files.schemas import validate
    from .files.validation import check_tensor_file, confine, dump_file_beside, max_tensor_bytes, read_yaml
    from .host.defaults import BUILTIN_PLUGIN, default_plugin_names
    from .host.markers import hookimpl, hookspec
    from .host.ranks import CommOpSpec, rank_number
    from .host.registry import PluginHost, current_host, get_host, reset_host
    from .host.specs import (
        EXACT_MAPPER,
        AncestorLookup,
        CommandLineClaim,
        CompareJob,
        DtypeInfo,
        FrameworkSpec,
        HierarchySpec,
        MapperFunction,
        MapperSpec,
        MatchContext,
        MetricContext,
        MetricFunction,
        MetricSpec,
        NormalizerSpec,
        Register,
        RowNames,
        TensorMetricSpec,
        VerdictContext,
        VerdictSpec,
        WriterFunction,
        WriterSpec,
        default_canonical,
    )
    from .host.strategies import DumpIndex, EntryReader, FileIdentity, Strategy, StrategySpec, WholeTablesNeeded
    from .host.tensor_row import TensorRow
    from .load import dumpjson_parts as dump_json
    from .load.discover import STEP_DIR, discover_jobs, holds_step_dirs, list_dir, warn_if_symlink
    from .load.document import detect_kind, flatten_dump, parse_header, split_api_key, strip_call_number, walk_members
    from .load.dumpindex import index_table, key_hashes
    from .load.dumpjson import load_stack
    from .load.flatten import FieldProblem, Flattener
    from .match.data_mapping import load_data_mapping
    from .match.frameworks import dtype_compat, resolve_frameworks
    from .match.matching import apply_dtype_gate, join_on_keys, mapped_golden_keys
    from .metrics.tensor_paths import safe_tensor_path
    from .model import (
        MODE_MD5,
        MODE_STATISTICS,
        MODE_TENSOR,
        NA,
        ROW_COLUMNS,
        STAT_COLUMNS,
        STATE_DEBUG,
        STATE_INPUT,
        STATE_OUTPUT,
        STATE_PARAMETERS,
        STATE_PARAMETERS_GRAD,
        TWO_PROGRAMS_COMMENT,
        ApiEntry,
        CompareOptions,
        DumpTable,
        MatchNotes,
        MatchResult,
        ResultNotes,
        pairing_note,
    )
    from .options import DUMP_KINDS, OptionSpec, option_label
    from .pipeline.build import build_result
    from .pipeline.job import JobOutcome, raise_if_partly_failed, run_job
    from .pipeline.sink import Written
    from .pipeline.strategy import job_bytes, whole_tables
    from .pipeline.whole import WholeTables
    from .result import ResultTable, data_name_column, stack_column, whole_numbers
    from .run.finished import FinishedRun, PartialSpec, RunSummary
    from .run.frontend import run_compare
    from .run.jobs import job_partial
    from .running import run_host, running_with
    from .text import statcells as stat_cells
    from .text.cells import csv_column, is_formula_like, neutralise, numpy_float_text
    from .text.columns import RangeSequence, TextColumn
    from .text.csv_rows import csv_line, number_column
    from .text.floattext import float_texts
    from .text.strtod import pandas_strtod
    from .workers.executors import Executor, ExecutorRef, ExecutorSpec, InlineExecutor, executor_for, usable_cpus, using
    from .workers.gcpause import gc_paused
    from .write.stage import remove_files, write_attachments, write_result
    from .write.writers import CSV_MAX_ROWS, any_formula_like, write_csv_rows
