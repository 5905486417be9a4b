"""The Python API: ``compare`` and ``compare_distributed``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import UsageError
from .model import CompareOptions

_OPTION_NAMES = {f for f in CompareOptions.__dataclass_fields__}


def build_options(output_dir: str | Path | None, options: dict[str, Any]) -> CompareOptions:
    """Options from keyword arguments (``xlsx=True`` is accepted for ``output_format='xlsx'``)."""
    opts = dict(options)
    if opts.pop("xlsx", False):
        opts["output_format"] = "xlsx"
    if "is_print_compare_log" in opts:
        opts["tensor_log"] = opts.pop("is_print_compare_log")
    if "first_diff_analyze" in opts:
        opts["diff_analyze"] = opts.pop("first_diff_analyze")
    unknown = set(opts) - _OPTION_NAMES
    if unknown:
        raise UsageError(f"unknown compare option(s): {', '.join(sorted(unknown))}")
    for flag in ("fuzzy_match", "diff_analyze", "tensor_log"):
        if flag in opts and not isinstance(opts[flag], bool):
            raise UsageError(f"option {flag} must be True or False")
    if output_dir is not None:
        opts["output_dir"] = Path(output_dir)
    return CompareOptions(**opts)


def compare(target: str | Path, golden: str | Path, output_dir: str | Path | None = None, **options: Any):
    """Compare two dumps and return the result as a pandas DataFrame.

    ``target``/``golden`` are two ``dump.json`` (or ``debug.json``) files, or two
    step directories (then the rank results are concatenated, with a ``Rank``
    column first). When ``output_dir`` is given the result files are written
    there too, exactly as the CLI writes them.
    """
    from .engine import compare_job, run_jobs
    from .registry import get_host

    opts = build_options(output_dir, options)
    host = get_host()
    jobs = host.discover_jobs(Path(target), Path(golden), opts)
    if output_dir is not None:
        from .tailbuild import finish_removals

        try:
            tables = [o.table for o in run_jobs(jobs, opts, host)]
        finally:
            finish_removals()  # the output directory holds only the results when this returns
    else:
        from .executors import executor_for

        with executor_for(opts, host):  # one executor (pool, cluster client) for every job
            tables = [compare_job(job, opts, host) for job in jobs]
    frames = []
    import pandas as pd

    for job, table in zip(jobs, tables):
        if table is None:
            continue
        df = table.to_dataframe()
        if len(jobs) > 1:
            df.insert(0, "Rank", job.label)
        frames.append(df)
    if not frames:
        return pd.DataFrame()
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def compare_distributed(npu_dump_dir: str | Path, bench_dump_dir: str | Path, output_path: str | Path, **options: Any):
    """Compare two step directories rank by rank, writing one result per rank; returns the joined DataFrame."""
    if not Path(npu_dump_dir).is_dir() or not Path(bench_dump_dir).is_dir():
        raise UsageError("compare_distributed needs two step directories")
    if "suffix" in options:
        raise UsageError("argument 'suffix' is not supported for compare_distributed")
    return compare(npu_dump_dir, bench_dump_dir, output_path, **options)
