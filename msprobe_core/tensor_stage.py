"""Tensor mode: read every matched tensor pair once and compute all metrics.

Pairs are grouped into chunks (largest first) and streamed through the run's
executor (a local process pool by default, a Dask cluster with ``msprobe-dask``);
each worker reads pair k+1 in a thread while it computes the six metrics (and any
plugin metrics) of pair k in one pass, and returns only the small result tuples.
Memory is bounded by ``parallelism × 2 pairs`` (+ ``2 × parallelism`` queued chunks
of file names), whatever the dump size.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import TensorReadError
from .validation import check_tensor_file, max_tensor_bytes

log = logging.getLogger("msprobe")

UNSUPPORTED = "unsupported"
N_METRICS = 6
CHUNK_PAIRS = 64
MIN_CHUNK_BYTES = 4 * 1024 * 1024
MAX_CHUNK_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class TensorTask:
    """One row's tensor pair: the two files and the frameworks that read them."""

    row: int
    npu_path: str
    bench_path: str
    npu_framework: str
    bench_framework: str


def safe_tensor_path(base: Path | None, data_name: str) -> Path:
    """``base/data_name``, refusing names that leave ``base`` (``..``, absolute paths, symlinks out).

    Delegates to :func:`msprobe_core.validation.resolve_within`, the one helper every loader uses.
    """
    from .validation import resolve_within

    return resolve_within(base, data_name, what="data_name")


def _read(framework: str, path: str) -> Any:
    from .registry import get_host
    from .tensor_metrics import squeeze_loaded

    spec = get_host().framework(framework)
    if spec is None or spec.read_tensor is None:
        raise TensorReadError(f"no reader for {framework} tensors")
    if spec.tensor_suffix and not path.endswith(spec.tensor_suffix):
        raise TensorReadError(f"{framework} tensor files must end with {spec.tensor_suffix}")
    check_tensor_file(path, max_tensor_bytes())  # no FIFOs/devices, nothing over the byte cap
    return squeeze_loaded(spec.read_tensor(Path(path)))


PAGE = 4096


def _prefault(array: Any) -> Any:
    """Touch every page of a file-mapped array, so its I/O happens here (the reader thread), not in compute.

    Readers may return large storages as memory maps (pages read on first use); arrays
    that own their memory are returned untouched.
    """
    import mmap

    import numpy as np

    base = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if isinstance(base, mmap.mmap) and array.flags.c_contiguous and array.nbytes >= PAGE:
        flat = array.reshape(-1).view(np.uint8)
        int(flat[::PAGE].max())
    return array


def _load_pair(task: TensorTask) -> tuple[Any, Any] | str:
    """Both arrays of a pair (file-mapped pages already read), or the warning text of a read failure."""
    try:
        npu = _prefault(_read(task.npu_framework, task.npu_path))
        return npu, _prefault(_read(task.bench_framework, task.bench_path))
    except TensorReadError as exc:
        return f"{exc}"
    except (OSError, ValueError, MemoryError) as exc:
        return f"cannot read tensor: {exc}"


def _finish_pair(task: TensorTask, loaded: tuple[Any, Any] | str) -> tuple[int, tuple[Any, ...], str | None]:
    """Metrics of a loaded pair; a read failure gives ``unsupported`` cells and its warning."""
    from .registry import get_host
    from .tensor_metrics import compare_tensors

    if isinstance(loaded, str):
        return task.row, _unsupported_row(), loaded
    npu, bench = loaded
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


def compute_pair(task: TensorTask) -> tuple[int, tuple[Any, ...], str | None]:
    """Metrics of one pair; a read failure gives ``unsupported`` cells and a warning text."""
    return _finish_pair(task, _load_pair(task))


def _unsupported_row() -> tuple[Any, ...]:
    from .registry import get_host

    return (UNSUPPORTED,) * (N_METRICS + len(get_host().tensor_metrics))


def _iter_pairs(tasks: Sequence[TensorTask]) -> Iterator[tuple[int, tuple[Any, ...], str | None]]:
    """Results of ``tasks`` in order, reading pair k+1 in a thread while pair k is computed.

    At most two pairs are held at once: the one being computed and the one being read.
    """
    if len(tasks) <= 1:
        yield from (compute_pair(t) for t in tasks)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="msprobe-read") as reader:
        pending = reader.submit(_load_pair, tasks[0])
        for k, task in enumerate(tasks):
            loaded = pending.result()
            if k + 1 < len(tasks):
                pending = reader.submit(_load_pair, tasks[k + 1])
            result = _finish_pair(task, loaded)
            del loaded
            yield result


def _run_chunk(chunk: list[TensorTask]) -> list[tuple[int, tuple[Any, ...], str | None]]:
    """The executor task: every pair of one chunk, read-ahead overlapped with compute."""
    return list(_iter_pairs(chunk))


def _pair_bytes(task: TensorTask) -> int:
    try:
        return os.path.getsize(task.npu_path) + os.path.getsize(task.bench_path)
    except OSError:
        return 0


def plan_chunks(tasks: Sequence[TensorTask], sizes: Sequence[int], parallelism: int) -> list[list[int]]:
    """Indices of ``tasks`` grouped into chunks, largest pairs first.

    A chunk holds up to ``CHUNK_PAIRS`` pairs and about ``total / (4 × parallelism)``
    bytes (between ``MIN_CHUNK_BYTES`` and ``MAX_CHUNK_BYTES``), so every worker gets
    several chunks and the big pairs start first (longest-first balancing); a pair
    larger than that is a chunk of its own.
    """
    total = sum(sizes)
    target = min(MAX_CHUNK_BYTES, max(MIN_CHUNK_BYTES, total // max(1, 4 * parallelism)))
    order = sorted(range(len(tasks)), key=lambda k: (-sizes[k], k))
    chunks: list[list[int]] = []
    current: list[int] = []
    current_bytes = 0
    for k in order:
        if current and (current_bytes + sizes[k] > target or len(current) >= CHUNK_PAIRS):
            chunks.append(current)
            current, current_bytes = [], 0
        current.append(k)
        current_bytes += sizes[k]
    if current:
        chunks.append(current)
    return chunks


def run_tasks(
    tasks: Sequence[TensorTask],
    workers: int | None = None,
    *,
    executor: Any = None,
    quiet: bool = True,
) -> dict[int, tuple[tuple[Any, ...], str | None]]:
    """Compute every task; returns row → (cells, warning).

    ``executor`` (default: a local pool of ``workers`` processes) runs chunks of
    pairs (:func:`plan_chunks`) with at most ``2 × parallelism`` chunks in flight;
    each worker holds at most two pairs at a time (:func:`_iter_pairs`), so memory
    is bounded by ``parallelism × 2 × largest pair`` whatever the dump size. Below
    ``executor.inline_bytes`` of tensors everything runs in this process. The
    result never depends on the executor: cells are keyed by row.
    """
    from contextlib import ExitStack

    from .executors import LocalExecutor
    from .progress import Progress

    sizes = [_pair_bytes(t) for t in tasks]
    total = sum(sizes)
    results: dict[int, tuple[tuple[Any, ...], str | None]] = {}
    with ExitStack() as stack:
        if executor is None:
            executor = stack.enter_context(LocalExecutor(workers))
        bar = stack.enter_context(Progress(len(tasks), unit="tensor pairs", total_bytes=total, quiet=quiet))
        parallelism = executor.parallelism()
        if parallelism <= 1 or len(tasks) < 2 or total < executor.inline_bytes:
            for (row, cells, warn), nbytes in zip(_iter_pairs(tasks), sizes):
                results[row] = (cells, warn)
                bar.advance(1, nbytes)
            return results
        plan = plan_chunks(tasks, sizes, parallelism)
        chunks = [[tasks[k] for k in idx] for idx in plan]
        for n, chunk_result in executor.map_unordered(_run_chunk, chunks):
            for row, cells, warn in chunk_result:
                results[row] = (cells, warn)
            bar.advance(len(chunk_result), sum(sizes[k] for k in plan[n]))
    return results


def tensor_metric_columns(ctx: Any) -> dict[str, list[Any]]:
    """The metric columns of tensor mode for a matched table (the built-in tensor metric set)."""
    from .executors import executor_for
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
    with executor_for(ctx.options) as executor:
        done = run_tasks(tasks, executor=executor, quiet=ctx.options.quiet)
    for row, (row_cells, warn) in sorted(done.items()):  # row order, whatever the executor
        cells[row] = row_cells
        if warn:
            warnings.append(f"{target.name[match.target[row]]}: {warn}")
    for w in warnings:
        log.warning("tensor read failed, row marked unsupported: %s", w)
    columns = {name: [c[n] for c in cells] for n, name in enumerate(names)}
    if ctx.options.tensor_log:
        from .tensor_log import canonicalisers, log_tensor_rows

        log_tensor_rows(target, golden, match, columns, names, fuzzy=ctx.options.fuzzy_match,
                        canonical=canonicalisers(host, target, golden))
    return columns
