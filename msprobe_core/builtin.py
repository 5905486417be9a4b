"""The built-in plugin: the core options, generic dump.json loading, layouts, matching and the CSV writer.

It is registered through the same hooks as any third-party plugin (see
``msprobe_core.host.hookspecs``); frameworks, framework-specific mappings and
kernel dumps come from the plugins under ``plugins/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .host.hookspecs import hookimpl
from .host.specs import EXACT_MAPPER, MapperSpec, MatchContext, NormalizerSpec, WriterSpec
from .model import CompareOptions, DumpTable, MatchResult

if TYPE_CHECKING:
    from .host.specs import Register
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
    """File pairs and step directories with rank/proc dirs (other layouts are the plugins', asked first)."""
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
