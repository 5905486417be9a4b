"""msprobe-core hooks for MindSpore static-graph full kernel dumps (``--rank``/``--step``)."""

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

from .layout import DumpDir, group_dump_dirs, parse_id_list

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


@hookimpl
def msprobe_discover_jobs(target: Path, golden: Path, options: CompareOptions) -> list[CompareJob] | None:
    """Claim ``-tp/-gp`` directory pairs when ``--rank`` is given: one job per (rank, step) on both sides."""
    if options.rank is None or not (target.is_dir() and golden.is_dir()):
        return None
    ranks, steps = _ids(options.rank, "rank"), _ids(options.step, "step")
    npu_groups = group_dump_dirs(target, ranks, steps)
    bench_groups = group_dump_dirs(golden, ranks, steps)
    for rank, step in sorted(set(npu_groups) ^ set(bench_groups)):
        side = "target" if (rank, step) in npu_groups else "golden"
        log.warning("rank %d step %d exists only in the %s dump, skipped.", rank, step, side)
    common = sorted(set(npu_groups) & set(bench_groups))
    if not common:
        raise InputError(
            "no kernel dump (rank, step) is present in both dumps"
            + (f" for --rank {options.rank}" if options.rank else "")
            + (f" --step {options.step}" if options.step else ""),
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
