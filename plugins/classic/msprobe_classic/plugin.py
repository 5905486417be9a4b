"""msprobe-classic's hook implementations (entry point ``classic``): msprobe 8.3.3 through the core's stages.

A classic compare runs the core engine's stages (discover → load → normalise → match →
metrics → verdicts → write); what 8.3.3 does differently is registered here, and is active
only for options the classic interface built (:func:`msprobe_classic.settings.is_classic`):

* ``msprobe_claim_command_line``: ``msprobe -f pytorch|mindspore compare -i compare.json …`` (:mod:`.cli`);
* ``msprobe_load_dump``: every ``data`` key is read (:mod:`.loader`), the ``-f`` framework for dumps
  that name none, the stack file compare.json names;
* a normaliser giving *(name, shape)* compare keys, and the mapper ``classic`` at the head of the
  chain: 8.3.3's fuzzy matcher (``-f``), the ``-am/-cm/-lm`` joins with shapes, 8.3.3's dtype gate
  (:mod:`.matching`);
* one whole-table metric set per dump mode: the classic columns and cells (:mod:`.table`, :mod:`.tensor`);
* the verdict rules ``classic`` (``Accuracy Reached or Not``, ``Result``, ``Err_message``; instead of the
  core's ``msprobe`` rule) and ``classic-highlight`` (red/yellow rows) (:mod:`.verdicts`);
* the writer ``classic-xlsx``: the workbook with its fills, and the advisor (:mod:`.xlsx`, :mod:`.advisor`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from msprobe_core.plugin import (
    MODE_MD5,
    MODE_STATISTICS,
    MODE_TENSOR,
    CommandLineClaim,
    CompareJob,
    CompareOptions,
    DumpTable,
    MapperSpec,
    MetricSpec,
    NormalizerSpec,
    VerdictSpec,
    WriterSpec,
    hookimpl,
)

from .settings import CLASSIC_MAPPER, WRITER, is_classic, settings_of

if TYPE_CHECKING:
    from msprobe_core.plugin import (
        MatchContext,
        MatchResult,
        MetricContext,
        Register,
        ResultTable,
        TensorMetricSpec,
        VerdictContext,
    )


@hookimpl
def msprobe_claim_command_line(args: list[str]) -> CommandLineClaim | None:
    """``msprobe -f FRAMEWORK compare -i compare.json …`` and ``msprobe compare -i compare.json …``."""
    from .cli import claim

    return claim(args)


@hookimpl
def msprobe_load_dump(path: Path, options: CompareOptions, job: CompareJob | None) -> DumpTable | None:
    """Classic compares read every ``data`` key, as 8.3.3 does."""
    settings = settings_of(options)
    if settings is None or path.is_dir():
        return None
    from .loader import load_legacy_dump

    table = load_legacy_dump(path)
    if not table.framework and settings.framework:
        table.framework = settings.framework
    if job is not None and path == job.target:
        if not settings.stack:
            table.stack = {}  # no NPU_Stack_Info: no stack.json is read (the core reads one beside a dump it finds)
        elif settings.stack_path is not None:
            from msprobe_core.plugin import load_stack

            table.stack = load_stack(settings.stack_path)
    return table


def classic_keys(table: DumpTable, side: str, keys: list[str], options: CompareOptions) -> list[str]:
    """8.3.3's (name, shape) compare keys (:func:`msprobe_classic.matching.classic_keys`) in a classic run; any
    other run's keys as they are, without importing the matching."""
    if not is_classic(options):
        return keys
    from .matching import classic_keys as keys_of

    return keys_of(table, side, keys, options)


def classic_match(ctx: MatchContext) -> MatchResult:
    """The ``classic`` mapper (:func:`msprobe_classic.matching.classic_match`; imported when a classic run pairs)."""
    from .matching import classic_match as match

    return match(ctx)


@hookimpl
def msprobe_register_normalizers(register: Register[NormalizerSpec]) -> None:
    """(name, shape) compare keys for classic compares, after every other normaliser."""
    register(NormalizerSpec("classic-name-shape", classic_keys, order=10_000))


@hookimpl
def msprobe_register_mappers(register: Register[MapperSpec]) -> None:
    """``classic``, ahead of every other mapper: 8.3.3's ``-f``, mapping joins and dtype gate."""
    register(MapperSpec(CLASSIC_MAPPER, classic_match, applies=is_classic,
                        before=("api-mapping", "cell-mapping", "layer-mapping", "data-mapping", "fuzzy", "exact")))


def classic_columns(ctx: MetricContext) -> dict[str, Any]:
    """The classic metric set (:func:`msprobe_classic.table.classic_columns`; imported when a classic run needs it)."""
    from .table import classic_columns as columns

    return columns(ctx)


def classic_verdicts(ctx: VerdictContext) -> dict[str, Any]:
    """The ``classic`` verdict rule (:func:`msprobe_classic.verdicts.classic_verdicts`)."""
    from .verdicts import classic_verdicts as verdicts

    return verdicts(ctx)


def highlight_rows(ctx: VerdictContext) -> dict[str, Any]:
    """The ``classic-highlight`` verdict rule (:func:`msprobe_classic.verdicts.highlight_rows`)."""
    from .verdicts import highlight_rows as rows

    return rows(ctx)


def highlights(options: CompareOptions) -> bool:
    """Whether a run is a classic one with highlighting on (``-nhl``/``highlight=False``: off)."""
    settings = settings_of(options)
    return settings is not None and settings.highlight


def write_classic(table: ResultTable, path: Path, options: CompareOptions) -> list[Path]:
    """The ``classic-xlsx`` writer (:func:`msprobe_classic.xlsx.write_classic`)."""
    from .xlsx import write_classic as write

    return write(table, path, options)


@hookimpl
def msprobe_register_metrics(register: Register[MetricSpec | TensorMetricSpec]) -> None:
    """The classic table of each dump mode (every column but the verdicts), for classic runs."""
    from .vocabulary import ACCURACY_COLUMN

    for mode in (MODE_TENSOR, MODE_STATISTICS, MODE_MD5):
        columns = (ACCURACY_COLUMN,) if mode == MODE_TENSOR else ()
        register(MetricSpec(mode, classic_columns, whole_table=True, applies=is_classic, columns=columns))


@hookimpl
def msprobe_register_verdicts(register: Register[VerdictSpec]) -> None:
    """8.3.3's verdict columns (instead of the core's rule) and its red/yellow highlighting."""
    register(VerdictSpec("classic", classic_verdicts, applies=is_classic, replaces=("msprobe",)))
    register(VerdictSpec("classic-highlight", highlight_rows, applies=highlights, after=("classic",)))


@hookimpl
def msprobe_register_writers(register: Register[WriterSpec]) -> None:
    """``classic-xlsx``: the classic workbook (fills, more sheets past 1,048,500 rows) and the advisor."""
    register(WriterSpec(WRITER, ".xlsx", write_classic, accepts_options=True))
