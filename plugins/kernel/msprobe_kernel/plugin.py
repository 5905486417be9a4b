"""msprobe-core hooks for MindSpore static-graph full kernel dumps (``--rank``/``--step`` select ranks and steps)."""

from __future__ import annotations

import logging
import os
from functools import partial
from pathlib import Path
from typing import Any

from msprobe_core import hookimpl
from msprobe_core.errors import InputError, UsageError
from msprobe_core.model import CompareOptions
from msprobe_core.registry import CompareJob
from msprobe_core.result import ResultTable

from .layout import DumpDir, group_dump_dirs, is_kernel_dump_root, parse_id_list

log = logging.getLogger("msprobe")
MODE_KERNEL = "kernel"


def _ids(value: str | None, what: str) -> list[int]:
    if not value:
        return []
    try:
        return parse_id_list(value, what)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--{what} {value!r}: {exc}") from None


def _run_group(
    job: CompareJob, options: CompareOptions, host: Any, *, npu_dirs: list[DumpDir], bench_dirs: list[DumpDir]
) -> ResultTable | None:
    from .engine import compare_group  # pandas: imported only when a kernel compare runs

    df = compare_group(
        npu_dirs, bench_dirs, os.path.realpath(job.target), os.path.realpath(job.golden), workers=options.workers
    )
    if df is None:
        return None
    columns = [str(c) for c in df.columns]
    data = {c: df[c].tolist() for c in columns}
    return ResultTable(MODE_KERNEL, columns, data, [0] * len(df), meta={"target": job.target, "golden": job.golden})


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


@hookimpl
def msprobe_discover_jobs(target: Path, golden: Path, options: CompareOptions) -> list[CompareJob] | None:
    """Claim kernel dump roots: one job per (rank, step) present on both sides.

    ``--rank``/``--step`` select ranks and steps (left out or given without a value: all of them).
    """
    if not (target.is_dir() and golden.is_dir()):
        return None
    kernel = {flag: is_kernel_dump_root(path) for flag, path in (("-tp", target), ("-gp", golden))}
    if not any(kernel.values()):
        return None  # not a kernel dump: the core explains that --rank/--step do not apply
    if not all(kernel.values()):
        (dump, _), (other, other_path) = sorted((("-tp", target), ("-gp", golden)), key=lambda fp: not kernel[fp[0]])
        raise InputError(f"{dump} is a kernel dump (rank_<r>/<net>/<graph>/<step>/) but {other} is not",
                         path=other_path)
    ranks, steps = _ids(options.rank, "rank"), _ids(options.step, "step")
    npu_all, bench_all = group_dump_dirs(target), group_dump_dirs(golden)
    npu_groups = {k: v for k, v in npu_all.items() if _selected(k, ranks, steps)}
    bench_groups = {k: v for k, v in bench_all.items() if _selected(k, ranks, steps)}
    for rank, step in sorted(set(npu_groups) ^ set(bench_groups)):
        side = "target" if (rank, step) in npu_groups else "golden"
        log.warning("rank %d step %d exists only in the %s dump, skipped.", rank, step, side)
    common = sorted(set(npu_groups) & set(bench_groups))
    if not common:
        chosen = " ".join(f"--{w} {v}" for w, v in (("rank", options.rank), ("step", options.step)) if v)
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
            runner=partial(_run_group, npu_dirs=npu_groups[(rank, step)], bench_dirs=bench_groups[(rank, step)]),
        )
        for rank, step in common
    ]


def _selected(key: tuple[int, int], ranks: list[int], steps: list[int]) -> bool:
    return (not ranks or key[0] in ranks) and (not steps or key[1] in steps)
