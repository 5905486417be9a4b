"""The built-in plugin: the core options, generic dump.json loading, layouts, matching, metrics and writers.

It is registered through the same hooks as any third-party plugin (see
``msprobe_core.host.hookspecs``); frameworks, framework-specific mappings and
kernel dumps come from the plugins under ``plugins/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .host.hookspecs import hookimpl
from .host.specs import EXACT_MAPPER, MapperSpec, MatchContext, MetricSpec, NormalizerSpec, VerdictSpec, WriterSpec
from .model import MODE_MD5, MODE_STATISTICS, CompareOptions, DumpTable, MatchResult

if TYPE_CHECKING:
    from .host.specs import Register, TensorMetricSpec
    from .options import OptionSpec
    from .result import ResultTable


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """The framework-neutral options of ``msprobe compare`` (:data:`msprobe_core.options.CORE_OPTIONS`)."""
    from .options import CORE_OPTIONS

    for spec in CORE_OPTIONS:
        register(spec)


@hookimpl(trylast=True)
def msprobe_discover_jobs(target: Path, golden: Path, options: CompareOptions) -> list | None:
    """File pairs, step directories with rank/proc dirs, and graph/pynative mixed dumps."""
    from .load import discover  # the stages load when a run needs them, not when `--help` lists the plugins

    return discover.discover_jobs(target, golden, options)


@hookimpl(trylast=True)
def msprobe_load_dump(path: Path, options: CompareOptions) -> DumpTable | None:
    """Any msprobe ``dump.json`` / ``debug.json``, by the pure-Python loader (the default plugin ``fast_scan``
    reads the files its C scanner understands, and indexes them for a chunked compare, before this is asked)."""
    if path.is_dir():
        return None
    from .load.document import detect_kind
    from .load.dumpjson import load_dump_file

    table = load_dump_file(path, detect_kind(path))
    table.tensor_dir = path.parent / "dump_tensor_data"
    return table


def _renumber(table: DumpTable, side: str, keys: list[str], options: CompareOptions) -> list[str]:
    # -fm (the default plugin 'fuzzy') pairs calls as the dump numbers them: msprobe renumbers no backward call
    if getattr(options, "fuzzy_match", False):
        return keys
    from .match.naming import renumber_backward

    return renumber_backward(table, keys)


@hookimpl
def msprobe_register_normalizers(register: Register[NormalizerSpec]) -> None:
    """Backward re-numbering of dump.json names (off with fuzzy matching; debug.json has no backward calls)."""
    register(NormalizerSpec("backward-renumbering", _renumber, order=100, kinds=("dump",)))


def _exact(ctx: MatchContext) -> MatchResult:
    from .match.matching import join_on_keys

    return join_on_keys(ctx.target_keys, ctx.golden_keys)


@hookimpl
def msprobe_register_mappers(register: Register[MapperSpec]) -> None:
    """The end of the chain: exact names, which always apply (the default plugins ``automap``, ``data_mapping``
    and ``fuzzy`` put their mappers ahead of it)."""
    register(MapperSpec(EXACT_MAPPER, _exact))


def _stats_columns(ctx: Any) -> dict[str, list[Any]]:
    from .metrics.stats_metrics import stat_diffs
    from .result import REL_COLUMNS_ORDER
    from .result_columns import BENCH, NPU, stat_column

    data = ctx.columns
    frameworks = ctx.match.notes.frameworks
    parse = frameworks[0].parse_statistic if frameworks else None
    out: dict[str, list[Any]] = {}
    for stat, diff_col, rel_col in REL_COLUMNS_ORDER:
        diff, rel = stat_diffs(data[stat_column(NPU, stat)], data[stat_column(BENCH, stat)], parse)
        out[diff_col] = diff
        out[rel_col] = rel
    return out


def _md5_columns(ctx: Any) -> dict[str, list[Any]]:
    return {}


@hookimpl
def msprobe_register_metrics(register: Register[MetricSpec | TensorMetricSpec]) -> None:
    """The metric sets of statistics and md5 mode (tensor mode's is the default plugin ``tensor_metrics``'s)."""
    register(MetricSpec(MODE_STATISTICS, _stats_columns, splittable=True))
    register(MetricSpec(MODE_MD5, _md5_columns, splittable=True))


def _msprobe_verdicts(ctx: Any) -> dict[str, list[str]]:
    # the rules (numpy) are imported when rows are judged, not when the plugins register (which may come
    # before the CLI's interrupt handling is in place)
    from .verdicts.rules import msprobe_verdicts

    return msprobe_verdicts(ctx)


@hookimpl
def msprobe_register_verdicts(register: Register[VerdictSpec]) -> None:
    """``Result`` and ``Err_message`` of the three dump modes, as msprobe 26.2.0 judges rows (``msprobe``)."""
    register(VerdictSpec("msprobe", _msprobe_verdicts))


def _write_csv(table: ResultTable, path: Path, tail: Any = None) -> list[Path]:
    # the writers (numpy, through the cells' spelling) load when a result is written, not when the plugins
    # register: `msprobe compare --help` imports no numpy
    from .write.writers import write_csv

    return write_csv(table, path, tail=tail)


@hookimpl
def msprobe_register_writers(register: Register[WriterSpec]) -> None:
    """CSV (default; takes rows spelled elsewhere, see ``StrategySpec.tail``; the default plugin ``chunked`` writes
    it part by part); the default plugin ``xlsx`` adds xlsx."""
    register(WriterSpec("csv", ".csv", _write_csv, accepts_csv_tail=True))
