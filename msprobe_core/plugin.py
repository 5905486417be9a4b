"""Everything a plugin author imports from msprobe-core, in one module (``from msprobe_core.plugin import ...``).

A plugin imports from here (and ``hookimpl`` also from ``msprobe_core``) and from no other module of the core:
the names below are the core's stable public surface for plugins, at most 120 of them: the specs a plugin
registers and the typed callables they hold, the contexts its code is handed, the data model, the errors, the
safe readers and :func:`run_compare` (the supported entry for a front end of a plugin's own). Every other module
of ``msprobe_core`` may move; what this repository's own plugins need beyond this is in ``msprobe_core.unstable``,
which says so (``tests/test_plugin_api.py`` checks the count, the docstrings and that the plugins keep to these
modules; ``docs/plugins.md`` "What a plugin imports" says what each name is for).

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
    # hooks, what plugins register, and the typed callables in it
    ".host.hookspecs": ("hookimpl",),
    ".host.specs": (
        "CommandLineClaim", "CompareJob", "DtypeInfo", "FrameworkSpec", "HierarchySpec", "MapperFunction", "MapperSpec",
        "MatchContext", "MetricContext", "MetricFunction", "MetricSpec", "NormalizerSpec", "Register", "RowNames",
        "TensorMetricSpec", "VerdictContext", "VerdictSpec", "WriterFunction", "WriterSpec",
    ),
    ".options": ("DUMP_KINDS", "OptionSpec"),
    ".workers.executors": ("Executor", "ExecutorRef", "ExecutorSpec"),
    ".analysis.comm": ("CommOpSpec",),
    # the plugin host (tests: a host with your plugin registered) and the entry for a front end of your own
    ".host.registry": ("PluginHost", "reset_host"),
    ".run.frontend": ("run_compare",),
    # the run-finished hooks: the finished run, the summary on it, a per-job partial (msprobe_core.run.finished)
    ".run.finished": ("FinishedRun", "PartialSpec", "RunSummary"),
    # the data model
    ".model": (
        "MODE_MD5", "MODE_STATISTICS", "MODE_TENSOR", "NA", "ApiEntry", "CompareOptions", "DumpTable", "MatchResult",
    ),
    ".result": ("ResultTable",),
    ".errors": (
        "DumpFormatError", "GateFailed", "InputError", "MappingError", "MsprobeError", "OutputError", "TensorReadError",
        "UnsafePathError", "UnsafePickleError", "UsageError",
    ),
    # reading input safely, pairing rows, writing files
    ".files.validation": ("check_tensor_file", "confine", "dump_file_beside", "max_tensor_bytes", "parse_share",
                          "read_yaml"),
    ".files.jsonfile": ("read_json_file",),
    ".files.npy_reader": ("read_npy",),
    ".files.arena": ("current_arena",),
    ".load.document": ("detect_kind", "flatten_dump", "split_api_key", "strip_call_number"),
    ".match.matching": ("join_on_keys",),
    ".match.seqalign": ("align", "align_in_gaps"),
    ".files.outputs": ("TEXT_ERRORS", "atomic_path"),
    # the plugin host of the run in progress (what a plugin's code run inside a compare asks)
    ".running": ("run_host",),
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
    from .errors import (
        DumpFormatError,
        GateFailed,
        InputError,
        MappingError,
        MsprobeError,
        OutputError,
        TensorReadError,
        UnsafePathError,
        UnsafePickleError,
        UsageError,
    )
    from .files.arena import current_arena
    from .files.jsonfile import read_json_file
    from .files.npy_reader import read_npy
    from .files.outputs import TEXT_ERRORS, atomic_path
    from .files.validation import (
        check_tensor_file,
        confine,
        dump_file_beside,
        max_tensor_bytes,
        parse_share,
        read_yaml,
    )
    from .host.hookspecs import hookimpl
    from .host.registry import PluginHost, reset_host
    from .host.specs import (
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
    )
    from .load.document import detect_kind, flatten_dump, split_api_key, strip_call_number
    from .match.matching import join_on_keys
    from .match.seqalign import align, align_in_gaps
    from .model import MODE_MD5, MODE_STATISTICS, MODE_TENSOR, NA, ApiEntry, CompareOptions, DumpTable, MatchResult
    from .options import DUMP_KINDS, OptionSpec
    from .result import ResultTable
    from .run.finished import FinishedRun, PartialSpec, RunSummary
    from .run.frontend import run_compare
    from .running import run_host
    from .workers.executors import Executor, ExecutorRef, ExecutorSpec
