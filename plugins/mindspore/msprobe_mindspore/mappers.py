"""The ``-am``, ``-cm`` and ``-lm`` mappers: :mod:`msprobe_mindspore.mapping` applied to the engine's tables.

msprobe 26.2.0 picks exactly one way of building the NPU compare keys, in the
order ``-am`` > ``-cm`` > data mapping (``-lm`` generates one and replaces any
``-dm``; the core's ``data-mapping`` mapper handles a plain ``-dm``). The three
mappers declare that order in the chain of mappers: ``api-mapping`` before
``cell-mapping`` before ``layer-mapping`` before the core's ``data-mapping``.

The data mapping ``-lm`` generates is attached to the match
(``notes.attachments``) and written by the core next to the result, as
``data_mapping_{timestamp}.yaml`` with the result's timestamp.

Independently of who builds the keys, while a data mapping is *active* (``-dm``
given, or ``-lm`` produced a non-empty mapping) msprobe joins with a left join
and no dtype gate; :func:`data_mapping_active` decides that for every mapper
here. Otherwise the mapped keys go to the join the other options ask for (the
``exact`` join, or ``-fm``'s fuzzy matcher). As in msprobe, the NPU keys start from the raw row names (not the
backward-renumbered ones) whenever a mapping builds them.

PyTorch targets: ``-am`` is refused (:class:`~msprobe_core.plugin.UsageError`),
``-lm`` is ignored (the next applicable mapper runs), ``-cm`` applies as it does
in msprobe's PyTorch comparator.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msprobe_core.plugin import (
    DUMP_KINDS,
    CompareOptions,
    DumpFormatError,
    DumpTable,
    MapperSpec,
    MatchContext,
    MatchResult,
    OptionSpec,
    UsageError,
    join_on_keys,
    load_data_mapping,
    mapped_golden_keys,
    read_json_file,
)

if TYPE_CHECKING:
    from . import mapping as M
else:
    class _Rules:
        """:mod:`msprobe_mindspore.mapping`, imported on first use: registering the mappers (every run) loads none
        of the rules and their YAML tables; a run without ``-am``/``-cm``/``-lm`` never does."""

        def __getattr__(self, name: str) -> Any:
            from . import mapping

            return getattr(mapping, name)

    M = _Rules()

log = logging.getLogger("msprobe")

#: The framework name this plugin registers.
FRAMEWORK = "mindspore"
API_MAPPER, CELL_MAPPER, LAYER_MAPPER = "api-mapping", "cell-mapping", "layer-mapping"
#: The core's ``data-mapping`` mapper (plain ``-dm``).
DATA_MAPPER = "data-mapping"

#: The options of this plugin: ``-am/-cm/-lm [yaml]`` on the command line, ``api_mapping=True``
#: (the flag alone) or a YAML path in Python; ``options.api_mapping`` is ``None``, ``True`` or the path.
API_MAPPING = OptionSpec("api_mapping", ("-am", "--api_mapping"), "Cross-framework API mapping [yaml].", bare=True,
                          kinds=DUMP_KINDS)
CELL_MAPPING = OptionSpec("cell_mapping", ("-cm", "--cell_mapping"), "Cell→Module mapping [yaml].", bare=True,
                          kinds=DUMP_KINDS)
LAYER_MAPPING = OptionSpec("layer_mapping", ("-lm", "--layer_mapping"), "Layer mapping yaml.", bare=True,
                          kinds=DUMP_KINDS)
OPTIONS = (API_MAPPING, CELL_MAPPING, LAYER_MAPPING)


@dataclass(frozen=True, slots=True)
class TableRow:
    """One row of a :class:`DumpTable` in the shape :class:`msprobe_mindspore.mapping.RowLike` asks for."""

    api: str
    name: str
    state: str
    dtype: str


def table_rows(table: DumpTable) -> list[TableRow]:
    """The rows of ``table`` as :class:`TableRow` objects, in dump order."""
    keys = [api.key for api in table.apis]
    return [
        TableRow(keys[a], name, state, dtype or "")
        for a, name, state, dtype in zip(table.row_api, table.name, table.state, table.dtype)
    ]


def is_mindspore_target(ctx: MatchContext) -> bool:
    """Whether msprobe would run its MindSpore comparator for this pair (target is mindspore/mindtorch)."""
    spec = ctx.host.framework(ctx.target.framework or None)
    return spec is not None and spec.name == FRAMEWORK


def _option_path(value: Any) -> Path | None:
    """The YAML path of an optional-value option (``True`` = the bare flag = no file)."""
    if value is None or value is True or value is False or value == "":
        return None
    return Path(value)


@lru_cache(maxsize=1)
def _builtin_table() -> dict[str, str]:
    return M.load_builtin_api_table()


def _primitive_table() -> dict[str, str]:
    return M.load_primitive_table()


# --------------------------------------------------------------------------------------------
# layer mapping (-lm) → a generated data mapping
# --------------------------------------------------------------------------------------------


def _layer_side(table: DumpTable, rows: list[TableRow]) -> M.LayerSide:
    doc = read_json_file(table.source, "dump")
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, dict):
        raise DumpFormatError("'data' must be a JSON object", path=table.source)
    stack, construct = M.load_stack_construct(table.source.parent)
    return M.LayerSide(list(data), construct, stack, M.detect_framework(doc), rows)


#: File name msprobe gives the data mapping ``-lm`` generates (``{timestamp}``: the run's timestamp).
GENERATED_MAPPING_NAME = "data_mapping_{timestamp}.yaml"


def generate_layer_mapping(ctx: MatchContext) -> dict[str, str]:
    """The data mapping ``-lm`` generates for this pair (compare-modes §4)."""
    rules_path = _option_path(ctx.options.layer_mapping)
    rules = M.load_layer_mapping_yaml(rules_path) if rules_path is not None else None
    npu = _layer_side(ctx.target, table_rows(ctx.target))
    bench = _layer_side(ctx.golden, table_rows(ctx.golden))
    if npu.stack is None or bench.stack is None:
        log.info("stack.json and construct.json not found; layer mapping generates an empty mapping.")
    return M.layer_mapping(npu, bench, rules)


def data_mapping_active(ctx: MatchContext) -> tuple[bool, dict[str, str] | None]:
    """Whether msprobe's data-mapping join (left join, no dtype gate) applies, and the ``-lm`` mapping.

    ``-lm`` (MindSpore targets only) replaces ``-dm`` entirely: active iff it
    generated a non-empty mapping. Otherwise active iff ``-dm`` was given (its
    file is read, so a malformed one fails even when ``-am``/``-cm`` build the keys).
    """
    if ctx.options.layer_mapping and is_mindspore_target(ctx):
        generated = generate_layer_mapping(ctx)
        return bool(generated), generated
    if getattr(ctx.options, "data_mapping", None):  # the default plugin 'data_mapping' may be off
        load_data_mapping(Path(ctx.options.data_mapping))
        return True, None
    return False, None


def _join(
    keys: list[str], ctx: MatchContext, active: bool, generated: dict[str, str] | None, *, mapped: bool = True
) -> MatchResult:
    """Pair rows on the target ``keys`` as msprobe does once a mapping built them.

    A data mapping active: left join, no dtype gate. Otherwise the join the other
    options ask for runs on these keys (the ``exact`` join, or ``-fm``'s fuzzy
    matcher, as msprobe fuzzy-matches on the mapped keys). With ``-lm`` the
    generated mapping goes with the match, to be written next to the result.

    ``mapped``: the keys were built from the raw row names, so the golden side is
    joined on its raw names too (:func:`~msprobe_core.plugin.mapped_golden_keys`;
    msprobe joins them with backward-re-numbered golden keys, see docs/differences.md).
    """
    golden_keys = mapped_golden_keys(ctx) if mapped else ctx.golden_keys
    if active:
        match = join_on_keys(keys, golden_keys)
        match.dtype_gate = False
    else:  # what the chain does after a data mapping (-fm's aligner, else exact names), on the mapped keys
        match = ctx.run_after(DATA_MAPPER, target_keys=keys, golden_keys=golden_keys)
    if generated is not None:
        match.notes.attachments.append((GENERATED_MAPPING_NAME, M.data_mapping_yaml_text(generated)))
    return match


# --------------------------------------------------------------------------------------------
# the three mappers
# --------------------------------------------------------------------------------------------


def run_api_mapping(ctx: MatchContext) -> MatchResult:
    """``-am [yaml]``: built-in MindSpore→PyTorch API renames, then the user entries (compare-modes §1)."""
    if not is_mindspore_target(ctx):
        spec = ctx.host.framework(ctx.target.framework or None)
        name = spec.name if spec is not None else (ctx.target.framework or "this")
        raise UsageError(
            f"Argument {API_MAPPING.label(short=True)} is not supported in {name} framework: API mapping maps the "
            "API names of a "
            "MindSpore target onto a PyTorch golden dump"
        )
    path = _option_path(ctx.options.api_mapping)
    entries = M.load_api_mapping_yaml(path) if path is not None else []
    npu_rows, bench_rows = table_rows(ctx.target), table_rows(ctx.golden)
    if path is not None:
        from .positions import warn_absent_positions

        warn_absent_positions(path, entries, npu_rows, bench_rows)
    keys = M.api_mapping_keys(npu_rows, ctx.target_keys, _builtin_table(), entries, bench_rows=bench_rows,
                              primitives=_primitive_table())
    active, generated = data_mapping_active(ctx)
    match = _join(keys, ctx, active, generated)
    note = _few_paired_note(match, npu_rows)
    if note:  # said in the run's summary, next to its counts
        match.notes.summary_notes.append(note)
    return match


def _few_paired_note(match: MatchResult, npu_rows: list[Any]) -> str | None:
    """What to say when ``-am`` paired under half of the target's rows: how many, and the calls whose rows no
    mapping carried, most rows first (``None`` when half or more were paired)."""
    total = len(match.target)
    paired = sum(1 for g in match.golden if g >= 0)
    if not total or paired * 2 >= total:
        return None
    unpaired: dict[str, int] = {}
    for t, g in zip(match.target, match.golden):
        if g < 0 and t < len(npu_rows):
            parts = npu_rows[t].api.split(".")
            if parts[0] in ("Cell", "Module") and len(parts) >= 4:
                api = f"{parts[0]} {parts[-3]}"  # a cell call: by its class
            else:
                api = ".".join(parts[:3] if parts[0] == "Primitive" else parts[:2])
            unpaired[api] = unpaired.get(api, 0) + 1
    top = sorted(unpaired.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    more = f", {len(unpaired) - len(top)} more" if len(unpaired) > len(top) else ""
    calls = ", ".join(f"{api} ({n})" for api, n in top)
    return (f"-am paired only {paired} of {total} target rows with a golden row; rows no mapping carried, by call: "
            f"{calls}{more}. An api_mapping.yaml for these calls, -lm or --auto-map may pair them")


def run_cell_mapping(ctx: MatchContext) -> MatchResult:
    """``-cm [yaml]``: ``Cell``→``Module`` and the cell-name rules of the file (compare-modes §2)."""
    path = _option_path(ctx.options.cell_mapping)
    cell_map = M.load_cell_mapping_yaml(path) if path is not None else None
    keys = M.cell_mapping_keys(table_rows(ctx.target), ctx.target_keys, cell_map)
    active, generated = data_mapping_active(ctx)
    return _join(keys, ctx, active, generated)


def run_layer_mapping(ctx: MatchContext) -> MatchResult:
    """``-lm [yaml]``: generate a data mapping from the two layer trees and compare with it (compare-modes §4).

    An empty generated mapping means a plain compare (renumbered names, dtype
    gate on), any ``-dm`` being dropped, as in msprobe. PyTorch targets ignore ``-lm``.
    """
    if not is_mindspore_target(ctx):
        return ctx.run_after(LAYER_MAPPER)
    generated = generate_layer_mapping(ctx)
    if not generated:
        return _join(list(ctx.target_keys), ctx, False, generated, mapped=False)
    keys = M.data_mapping_keys(table_rows(ctx.target), ctx.target_keys, generated)
    return _join(keys, ctx, True, generated)


def _given(value: Any) -> bool:
    return value is not None and value is not False


def mapper_specs() -> list[MapperSpec]:
    """The mappers this plugin registers, in chain order, ahead of the core's ``data-mapping``."""

    def am(options: CompareOptions) -> bool:
        return _given(options.api_mapping)

    def cm(options: CompareOptions) -> bool:
        return _given(options.cell_mapping)

    def lm(options: CompareOptions) -> bool:
        return _given(options.layer_mapping)

    return [
        # behind the core's --auto-map, which pairs by structure and needs no API renames
        MapperSpec(API_MAPPER, run_api_mapping, applies=am, before=(CELL_MAPPER,), after=("auto-map",)),
        MapperSpec(CELL_MAPPER, run_cell_mapping, applies=cm, before=(LAYER_MAPPER,)),
        MapperSpec(LAYER_MAPPER, run_layer_mapping, applies=lm, before=(DATA_MAPPER,)),
    ]
