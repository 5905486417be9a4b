"""msprobe-core hooks for MindSpore static-graph full kernel dumps (``--rank``/``--step``).

A kernel compare goes through the ordinary stages: discovery makes one job per
(rank, step) found on both sides and notes its data directories on the job; the
loader turns each side's directories into a table of ``kernel`` kind whose rows
are the dumped tensors (npy mode) or ``statistic.csv`` rows; the ``kernel-records``
mapper pairs rows as msprobe does (compare key, then dump time order, outer join);
the ``kernel`` metric set builds msprobe's kernel table (its own columns and its
``Accuracy Reached or Not`` verdict); the core's writers write it.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msprobe_core import hookimpl
from msprobe_core.plugin import (
    CompareJob,
    CompareOptions,
    DumpTable,
    InputError,
    MapperSpec,
    MatchContext,
    MatchResult,
    MetricSpec,
    OptionSpec,
    RowNames,
    UsageError,
)

from .columns import KIND
from .roots import is_kernel_dump_root  # asked by every compare: the layout and the engine load for a kernel dump

if TYPE_CHECKING:
    from msprobe_core.plugin import HierarchySpec, Register, TensorMetricSpec

    from .layout import DumpDir

log = logging.getLogger("msprobe")
#: the name this plugin keeps its data under (``CompareJob.plugin_data``, ``DumpTable.plugin_data``)
PLUGIN = "kernel"


@dataclass
class KernelJob:
    """What discovery notes on a kernel job (``job.plugin_data["kernel"]``): each side's data directories
    of the job's (rank, step)."""

    target: list[Any]
    golden: list[Any]


@dataclass
class KernelSide:
    """What the loader keeps on a side's table (``table.plugin_data["kernel"]``): its records, the kind of
    dump (npy / statistic) and its real root."""

    records: list[Any]
    mode: str
    root: str

#: kernel dumps are MindSpore dumps (the framework the msprobe-mindspore plugin registers)
FRAMEWORK = "mindspore"
#: A kernel row is named by the path of its file, ``<OpType>.<op_name>.<task>.<stream>.<timestamp>.<input|output>.
#: <slot>.<format>.<dtype>.npy``; the table is sorted by name, and the timestamp restores execution order. The
#: op is the row's call (a gradient op's is in the backward pass); op, direction and slot name it for a reader.
ROW_NAMES = RowNames(
    r"^(?P<node>.+)\.\d+\.\d+\.(?P<order>\d+)\.(?P<io>input|output)\.(?P<slot>\d+)\.[^.]+\.[^.]+\.npy$",
    readable="{node} {io}.{slot}", backward=("grad",), suffix=".npy",
)


def _id_list(what: str) -> Any:
    def check(value: str) -> str:
        from .layout import parse_id_list

        try:
            parse_id_list(value, what)
        except UsageError as exc:
            raise ValueError(str(exc).removeprefix(f"--{what} ")) from None
        return value

    return check


RANK = OptionSpec("rank", ("--rank",), "Kernel dump ranks (1,2,3); alone: all.", bare="", validate=_id_list("rank"))
#: ``--step`` is the core's (it also selects the ``step<N>`` directories of msprobe's own dumps); here it picks
#: kernel dump steps, read as ``options.step`` (``--step``, the default plugin ``steps``'s option)
STEP_FLAG = "--step"


@hookimpl
def msprobe_register_hierarchies(register: Register[HierarchySpec]) -> None:
    """The scope in every kernel's name (``Default/network-WithLoss/…/0-Block/…``): the model tree of a kernel dump."""
    from .scopes import SCOPES

    register(SCOPES)


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``--rank [IDS]`` (a kernel compare; alone: every rank); ``--step IDS`` is the core's."""
    register(RANK)


def _keys_text(groups: dict[tuple[int, int], list[DumpDir]]) -> str:
    """``rank 0 steps 0,1; rank 1 step 0`` for the (rank, step) keys of a dump."""
    by_rank: dict[int, list[int]] = {}
    for rank, step in groups:
        by_rank.setdefault(rank, []).append(step)
    if not by_rank:
        return "no kernel data"
    return "; ".join(
        f"rank {rank} step{'s' if len(steps) > 1 else ''} {','.join(map(str, sorted(steps)))}"
        for rank, steps in sorted(by_rank.items())
    )


@hookimpl(tryfirst=True)
def msprobe_discover_jobs(target: Path, golden: Path, options: CompareOptions) -> list[CompareJob] | None:
    """Claim kernel dump roots: one job per (rank, step) present on both sides.

    ``--rank``/``--step`` select ranks and steps (left out or given without a value: all of them). Asked before
    the other discoveries (``tryfirst``), so that ``--rank`` given for dumps of another layout (the MindSpore
    plugin's mixed graph/pynative dumps) is refused, whatever order the plugins were installed in.
    """
    kernel = {flag: is_kernel_dump_root(path) for flag, path in (("-tp", target), ("-gp", golden))}
    if not any(kernel.values()):
        _refuse_kernel_options(options, target)
        return None
    from .layout import group_dump_dirs, parse_id_list

    if not all(kernel.values()):
        (dump, _), (other, other_path) = sorted((("-tp", target), ("-gp", golden)), key=lambda fp: not kernel[fp[0]])
        raise InputError(f"{dump} is a kernel dump (rank_<r>/<net>/<graph>/<step>/) but {other} is not",
                         path=other_path)
    ranks, steps = parse_id_list(options.rank, "rank"), parse_id_list(getattr(options, "step", None), "step")
    npu_all, bench_all = group_dump_dirs(target), group_dump_dirs(golden)
    npu_groups = {k: v for k, v in npu_all.items() if _selected(k, ranks, steps)}
    bench_groups = {k: v for k, v in bench_all.items() if _selected(k, ranks, steps)}
    for rank, step in sorted(set(npu_groups) ^ set(bench_groups)):
        side = "target" if (rank, step) in npu_groups else "golden"
        log.warning("rank %d step %d exists only in the %s dump, skipped.", rank, step, side)
    common = sorted(set(npu_groups) & set(bench_groups))
    if common:  # else the error below says what each side has
        _name_absent(ranks, steps, npu_all, bench_all)
    if not common:
        chosen = " ".join(f"--{w} {v}" for w, v in (("rank", options.rank), ("step", getattr(options, "step", None))) if v)
        raise InputError(
            "no kernel dump (rank, step) is present in both dumps"
            + (f" for {chosen}" if chosen else "")
            + f" (target: {_keys_text(npu_all)}; golden: {_keys_text(bench_all)})",
            path=target,
        )
    out = Path(options.output_dir)
    return [
        CompareJob(
            target,
            golden,
            out,
            f"compare_result_{rank}_{step}",
            label=f"rank {rank} step {step}",
            kind=KIND,
            plugin_data={PLUGIN: KernelJob(npu_groups[(rank, step)], bench_groups[(rank, step)])},
        )
        for rank, step in common
    ]


@hookimpl
def msprobe_load_dump(path: Path, options: CompareOptions, job: CompareJob | None) -> DumpTable | None:
    """One side of a kernel job: its data directories as a table of ``kernel`` kind (empty when unusable)."""
    dirs = job.plugin_data.get(PLUGIN) if job is not None else None
    if not isinstance(dirs, KernelJob):
        return None
    from .engine import read_side  # pandas: imported only when a kernel compare runs

    root = os.path.realpath(path)
    mode, records = read_side(dirs.target if path == job.target else dirs.golden, root)
    n = len(records)
    return DumpTable(
        source=Path(path), kind=KIND, task=KIND, mode=KIND, framework=FRAMEWORK,
        row_api=[0] * n, name=[r.name for r in records],
        plugin_data={PLUGIN: KernelSide(records, mode, root)},
    )


def _side(table: DumpTable) -> KernelSide:
    """The kernel data :func:`msprobe_load_dump` kept on ``table``."""
    return table.plugin_data[PLUGIN]


def pair_kernel_rows(ctx: MatchContext) -> MatchResult:
    """msprobe's pairing: compare key, then the order of the dump times; an outer join sorted by key.

    A golden row without a partner has target index -1. Sides holding different kinds of
    dump (npy vs statistic.csv) pair nothing, with an error.
    """
    from .engine import pair_records

    t, g = _side(ctx.target), _side(ctx.golden)
    if t.mode != g.mode:
        log.error("%s: NPU mode %s not equal to bench mode %s.", ctx.target.source, t.mode, g.mode)
        return MatchResult([], [], dtype_gate=False)
    t_row = {id(r): i for i, r in enumerate(t.records)}
    g_row = {id(r): i for i, r in enumerate(g.records)}
    pairs = pair_records(t.records, g.records)
    return MatchResult(
        [t_row[id(p.npu)] if p.npu is not None else -1 for p in pairs],
        [g_row[id(p.bench)] if p.bench is not None else -1 for p in pairs],
        dtype_gate=False,
    )


def kernel_columns(ctx: Any) -> dict[str, list[Any]]:
    """msprobe's kernel table for the matched rows (``MetricSpec(whole_table=True)``): every column, in order."""
    from .engine import RecordPair, table_rows

    t, g = _side(ctx.target), _side(ctx.golden)
    pairs = [
        RecordPair(t.records[i] if i >= 0 else None, g.records[j] if j >= 0 else None)
        for i, j in zip(ctx.match.target, ctx.match.golden)
    ]
    columns, rows = table_rows(pairs, t.mode, t.root, g.root, workers=ctx.options.workers, host=ctx.host)
    return {c: [row[k] for row in rows] for k, c in enumerate(columns)}


@hookimpl
def msprobe_register_mappers(register: Register[MapperSpec]) -> None:
    """``kernel-records``: the pairing of kernel tables."""
    register(MapperSpec("kernel-records", pair_kernel_rows, kinds=(KIND,)))


@hookimpl
def msprobe_register_metrics(register: Register[MetricSpec | TensorMetricSpec]) -> None:
    """The ``kernel`` table: msprobe's columns and ``Accuracy Reached or Not`` verdict; for the summary and the
    report, how its rows are named (execution order, calls), how a result read back is recognised, and that its
    rows are judged on error relative to the golden tensor (kernel outputs range from variances near 0.3 to
    logits near 1e4: no absolute floor fits them all)."""
    from .columns import DECLARED, is_kernel_header

    # kernel dumps come from MindSpore's graph mode only: a kernel result read back names it on both sides
    register(MetricSpec(KIND, kernel_columns, whole_table=True, columns=DECLARED,
                        frameworks=(FRAMEWORK, FRAMEWORK), row_names=ROW_NAMES, recognizes=is_kernel_header,
                        relative_errors=True))


def _name_absent(ranks: list[int], steps: list[int], npu: dict[tuple[int, int], Any],
                 bench: dict[tuple[int, int], Any]) -> None:
    """One warning naming each rank of ``--rank`` and step of ``--step`` that neither dump has.

    msprobe compares what it finds and says nothing of the rest; a rank asked for and not
    compared would pass unnoticed. A step counts as present when one of the requested ranks has it.
    """
    present = set(npu) | set(bench)
    have_ranks = {r for r, _ in present}
    have_steps = {s for r, s in present if not ranks or r in ranks}
    named = []
    for label, ids, have in ((RANK.label(), ranks, have_ranks), (STEP_FLAG, steps, have_steps)):
        absent = [i for i in dict.fromkeys(ids) if i not in have]
        if absent:
            named.append(f"{label} {','.join(map(str, absent))}")
    if named:
        log.warning("%s: in neither dump, not compared (target: %s; golden: %s).",
                    " and ".join(named), _keys_text(npu), _keys_text(bench))


def _selected(key: tuple[int, int], ranks: list[int], steps: list[int]) -> bool:
    return (not ranks or key[0] in ranks) and (not steps or key[1] in steps)


def _refuse_kernel_options(options: CompareOptions, target: Path) -> None:
    """``--rank`` given for dumps that are not kernel dumps: say what it is for (``--step`` is the core's, which
    refuses it where the dumps hold no steps)."""
    given = [spec.label() for spec in (RANK,) if getattr(options, spec.name) is not None]
    if not given:
        return
    one = len(given) == 1
    raise UsageError(
        f"{'/'.join(given)} {'is an option' if one else 'are options'} of MindSpore kernel dump compares "
        "(rank_<r>/<net>/<graph>/<step>/ directories below the two dump paths) and this is not a kernel dump; "
        f"leave {'it' if one else 'them'} out "
        + ("(a pair of files is one compare)" if target.is_file() else "(every rank directory of a step directory is compared)"),
        path=target,
    )
