"""Tensor mode: read every matched tensor pair once and compute all metrics.

Pairs are streamed through a pool of worker processes; each worker reads the
two files of one pair, computes the six metrics (and any plugin metrics) in
one pass and returns only the small result tuple, so memory stays bounded by
``workers × in-flight pairs`` whatever the dump size.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import TensorReadError

log = logging.getLogger("msprobe")

UNSUPPORTED = "unsupported"
N_METRICS = 6
INLINE_BYTES = 64 * 1024 * 1024
CHUNK_PAIRS = 16


@dataclass(frozen=True)
class TensorTask:
    """One row's tensor pair: the two files and the frameworks that read them."""

    row: int
    npu_path: str
    bench_path: str
    npu_framework: str
    bench_framework: str


def safe_tensor_path(base: Path | None, data_name: str) -> Path:
    """``base/data_name``, refusing names that leave ``base`` (``..``, absolute paths, symlinks out)."""
    if base is None:
        raise TensorReadError("the dump has no dump_tensor_data directory")
    if not data_name or "\x00" in data_name or os.path.isabs(data_name):
        raise TensorReadError(f"data_name '{data_name}' is not a plain file name")
    root = os.path.realpath(base)
    full = os.path.realpath(os.path.join(root, data_name))
    if os.path.commonpath([root, full]) != root:
        raise TensorReadError(f"data_name '{data_name}' resolves outside {base}")
    return Path(full)


def _read(framework: str, path: str) -> Any:
    from .registry import get_host
    from .tensor_metrics import squeeze_loaded

    spec = get_host().framework(framework)
    if spec is None or spec.read_tensor is None:
        raise TensorReadError(f"no reader for {framework} tensors")
    if spec.tensor_suffix and not path.endswith(spec.tensor_suffix):
        raise TensorReadError(f"{framework} tensor files must end with {spec.tensor_suffix}")
    return squeeze_loaded(spec.read_tensor(Path(path)))


def compute_pair(task: TensorTask) -> tuple[int, tuple[Any, ...], str | None]:
    """Metrics of one pair; a read failure gives ``unsupported`` cells and a warning text."""
    from .registry import get_host
    from .tensor_metrics import compare_tensors

    try:
        npu = _read(task.npu_framework, task.npu_path)
        bench = _read(task.bench_framework, task.bench_path)
    except TensorReadError as exc:
        return task.row, _unsupported_row(), f"{exc}"
    except (OSError, ValueError, MemoryError) as exc:
        return task.row, _unsupported_row(), f"cannot read tensor: {exc}"
    if npu.size == 0:
        cells = (UNSUPPORTED,) * N_METRICS
    else:
        cells = tuple(compare_tensors(npu, bench))
    extra = []
    for spec in get_host().tensor_metrics:
        try:
            extra.append(spec.fn(npu, bench))
        except Exception:  # a third-party metric must not stop the run
            extra.append(UNSUPPORTED)
    return task.row, cells + tuple(extra), None


def _unsupported_row() -> tuple[Any, ...]:
    from .registry import get_host

    return (UNSUPPORTED,) * (N_METRICS + len(get_host().tensor_metrics))


def _chunks(tasks: Sequence[TensorTask], size: int) -> Iterator[list[TensorTask]]:
    for k in range(0, len(tasks), size):
        yield list(tasks[k : k + size])


def _run_chunk(chunk: list[TensorTask]) -> list[tuple[int, tuple[Any, ...], str | None]]:
    return [compute_pair(t) for t in chunk]


def run_tasks(tasks: Sequence[TensorTask], workers: int | None) -> dict[int, tuple[tuple[Any, ...], str | None]]:
    """Compute every task, in a process pool when it pays; returns row → (cells, warning)."""
    results: dict[int, tuple[tuple[Any, ...], str | None]] = {}
    total = 0
    for t in tasks:
        try:
            total += os.path.getsize(t.npu_path) + os.path.getsize(t.bench_path)
        except OSError:
            pass
    n_workers = workers if workers is not None else (os.cpu_count() or 1)
    if n_workers <= 1 or total < INLINE_BYTES or len(tasks) < 4:
        for t in tasks:
            row, cells, warn = compute_pair(t)
            results[row] = (cells, warn)
        return results
    import multiprocessing as mp

    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
    size = max(1, min(CHUNK_PAIRS, len(tasks) // (n_workers * 4) or 1))
    with ProcessPoolExecutor(max_workers=n_workers, mp_context=ctx) as pool:
        for chunk_result in pool.map(_run_chunk, _chunks(tasks, size)):
            for row, cells, warn in chunk_result:
                results[row] = (cells, warn)
    return results


def tensor_metric_columns(ctx: Any) -> dict[str, list[Any]]:
    """The metric columns of tensor mode for a matched table (the built-in tensor metric set)."""
    from .registry import get_host
    from .result import TENSOR_METRIC_COLUMNS

    target, golden, match = ctx.target, ctx.golden, ctx.match
    host = get_host()
    names = TENSOR_METRIC_COLUMNS + [m.column for m in host.tensor_metrics]
    width = len(names)
    cells: list[tuple[Any, ...]] = []
    tasks: list[TensorTask] = []
    warnings: list[str] = []
    for k, (i, j) in enumerate(zip(match.target, match.golden)):
        nd = target.data_name[i]
        if nd == "-1" or j < 0 or golden.data_name[j] == "-1":
            cells.append((UNSUPPORTED,) * width)
            continue
        try:
            npu_path = safe_tensor_path(target.tensor_dir, nd)
            bench_path = safe_tensor_path(golden.tensor_dir, golden.data_name[j])
        except TensorReadError as exc:
            warnings.append(f"{target.name[i]}: {exc}")
            cells.append((UNSUPPORTED,) * width)
            continue
        cells.append(())
        tasks.append(TensorTask(k, str(npu_path), str(bench_path), target.framework, golden.framework))
    for row, (row_cells, warn) in run_tasks(tasks, ctx.options.workers).items():
        cells[row] = row_cells
        if warn:
            warnings.append(f"{target.name[match.target[row]]}: {warn}")
    for w in warnings:
        log.warning("tensor read failed, row marked unsupported: %s", w)
    columns = {name: [c[n] for c in cells] for n, name in enumerate(names)}
    if ctx.options.tensor_log:
        _log_rows(target, match, columns, names)
    return columns


def _log_rows(target: Any, match: Any, columns: dict[str, list[Any]], names: list[str]) -> None:
    for k, i in enumerate(match.target):
        name = target.name[i]
        log.info("start compare: %s", name)
        if match.golden[k] < 0:
            log.info("[%s] Compare result: %s", name, "Bench api/module unmatched.")
            continue
        values = ", ".join(f"{c} {columns[c][k]}" for c in names)
        log.info("[%s] Compare result: %s", name, values)
