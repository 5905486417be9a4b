"""Tensor mode: read every matched tensor pair once and compute all metrics.

Pairs are grouped into chunks (largest first) and streamed through the run's
executor (a local process pool by default, a Dask cluster with the Dask plugin);
each worker reads a pair's two files into reusable memory (:mod:`msprobe_core.files.arena`),
computes the six metrics (and any plugin metrics) in one blocked pass, and returns
only the small result tuples. Where the workers leave a core idle, pair k+1 is read
in a thread while pair k is computed; otherwise the kernel is asked to prefetch the
next pair's files. Memory is bounded by ``parallelism × 2 pairs`` (+ ``2 ×
parallelism`` queued chunks of file names), whatever the dump size.
"""

from __future__ import annotations

import logging
import mmap
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msprobe_core.plugin import Arena, TensorReadError, check_tensor_file, max_tensor_bytes, use_arena

from .failures import failure_of, settle_failures
from .paths import TensorPaths as _TensorPaths

if TYPE_CHECKING:
    from msprobe_core.plugin import PluginHost, TensorRow

log = logging.getLogger("msprobe")

UNSUPPORTED = "unsupported"
N_METRICS = 6
CHUNK_PAIRS = 64
MIN_CHUNK_BYTES = 4 * 1024 * 1024
MAX_CHUNK_BYTES = 256 * 1024 * 1024
#: the sides of a pair as msprobe's tables name them (NPU: the target, Bench: the golden)
NPU_SIDE, BENCH_SIDE = "NPU", "Bench"

@dataclass(frozen=True)
class TensorTask:
    """One row's tensor pair: the two files and the frameworks that read them."""

    row: int
    npu_path: str
    bench_path: str
    npu_framework: str
    bench_framework: str
    #: bytes of both files when the caller already knows them (-1: look them up)
    nbytes: int = -1
    #: the shapes dump.json gives each side, squeezed (``None``: not known, not checked)
    npu_shape: tuple[int, ...] | None = None
    bench_shape: tuple[int, ...] | None = None
    #: whether dump.json gives each side a complex dtype (``None``: not known); a real row's file may not be complex
    npu_complex: bool | None = None
    bench_complex: bool | None = None
    #: the row as dump.json describes it, for the tensor metrics that ask for it (``None``: none asks)
    row_context: TensorRow | None = None


def is_complex_dtype(spec: Any, text: object) -> bool | None:
    """Whether a dump.json dtype is complex, as its framework's spec says; None when there is none or it is unknown."""
    if spec is None or not isinstance(text, str) or text in ("", "N/A"):
        return None
    family = spec.dtype_family(text)
    return None if family is None else family == "complex"


def squeezed_shape(text: object, memo: dict[object, tuple[int, ...] | None] | None = None
                   ) -> tuple[int, ...] | None:
    """The shape a dump.json cell (``"[2, 1, 3]"``) names, without its 1s (as a squeezed array has it); else None."""
    if memo is not None and text in memo:
        return memo[text]
    shape: tuple[int, ...] | None = None
    if isinstance(text, str) and text.startswith("[") and text.endswith("]") and len(text) < 1024:
        inner = text[1:-1].strip()
        try:
            dims = [int(d) for d in inner.split(",")] if inner else []
        except ValueError:
            dims = None
        if dims is not None and all(d >= 0 for d in dims):
            shape = tuple(d for d in dims if d != 1)
    if memo is not None:
        memo[text] = shape
    return shape


def no_reader(framework: str) -> str:
    """Why a tensor file of ``framework`` cannot be read: no installed plugin reads it, or no framework is known."""
    if not framework:
        return "the dump's framework is unknown (no 'framework' field, and no installed plugin is the default)"
    return f"no installed plugin reads {framework} tensors"


def resolved_specs(host: Any, target: Any, golden: Any) -> tuple[Any, Any]:
    """The framework spec of each side for a match that did not record the match stage's: its field, else the
    default framework (``None`` where no plugin has it)."""
    return host.framework(target.framework or None), host.framework(golden.framework or None)


class _Readers:
    """What reading and finishing pairs needs from the current plugin host, looked up once.

    A chunk reads thousands of files: the framework lookups, the byte cap and the
    plugin metrics are fetched here once instead of for every tensor. ``metrics``: the
    columns of the plugin metrics the run's options turned on (``None``: all registered).
    """

    def __init__(self, metrics: tuple[str, ...] | None = None, host: PluginHost | None = None) -> None:
        import numpy as np

        from .metrics import compare_tensors

        self.host = host if host is not None else _task_host()
        self.cap = max_tensor_bytes()
        self.squeeze = np.squeeze  # what msprobe does to every loaded tensor (the core's ``squeeze_loaded``)
        self.compare = compare_tensors
        self.metrics = [m for m in self.host.tensor_metrics if metrics is None or m.column in metrics]
        self._specs: dict[str, tuple[Any, str, bool]] = {}

    def read(self, framework: str, path: str, shape: tuple[int, ...] | None = None,
             complex_ok: bool | None = None) -> Any:
        """One tensor file as a squeezed array (a ``TensorReadError`` names what is wrong).

        ``shape``: what dump.json says the squeezed array is; ``complex_ok``: whether dump.json says
        the tensor is complex. A file contradicting either is refused: its metrics would describe
        some other tensor (a complex file in a real row would lose its imaginary part).
        """
        found = self._specs.get(framework)
        if found is None:
            spec = self.host.framework(framework)
            if spec is None or spec.read_tensor is None:
                raise TensorReadError(no_reader(framework))
            # a reader marked ``accepts_str`` gets the path as is; the others get a Path, as documented
            found = self._specs[framework] = (spec.read_tensor, spec.tensor_suffix,
                                              bool(getattr(spec.read_tensor, "accepts_str", False)))
        read_tensor, suffix, accepts_str = found
        if suffix and not path.endswith(suffix):
            raise TensorReadError(f"{framework} tensor files must end with {suffix}")
        check_tensor_file(path, self.cap)  # no FIFOs/devices, nothing over the byte cap
        array = self.squeeze(read_tensor(path if accepts_str else Path(path)))
        if shape is not None and array.shape != shape:
            raise TensorReadError(f"{path}: the file holds a tensor of shape {list(array.shape)} (squeezed), "
                                  f"dump.json says {list(shape)}")
        if complex_ok is False and array.dtype.kind == "c":
            raise TensorReadError(f"{path}: the file holds complex values ({array.dtype}), dump.json says the "
                                  "tensor is real")
        return array


PAGE = 4096


def _file_map(array: Any) -> mmap.mmap | None:
    """The memory map an array's memory belongs to, if any (arrays chain by ``.base``, and
    ``np.frombuffer`` of a map holds a memoryview of it)."""
    base = array.base
    while base is not None:
        if isinstance(base, mmap.mmap):
            return base
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    return None


def _prefault(array: Any) -> Any:
    """Touch every page of a file-mapped array, so its I/O happens here (the reader thread), not in compute.

    Readers may return large storages as memory maps (pages read on first use); arrays
    that own their memory or live in an arena are returned untouched.
    """
    if array.nbytes >= PAGE and array.flags.c_contiguous and _file_map(array) is not None:
        import numpy as np

        flat = array.reshape(-1).view(np.uint8)
        int(flat[::PAGE].max())
    return array


def _task_host() -> PluginHost:
    """The plugin host of a process that runs tensor pairs as an executor's task (a pool or Dask worker): that
    process's own, loaded there with the same plugins; the process that runs the stage passes its run's host."""
    from msprobe_core.plugin import get_host

    return get_host()


def _load_pair(task: TensorTask, arenas: Sequence[Arena | None] = (None, None),
               readers: _Readers | None = None) -> tuple[Any, Any] | str:
    """Both arrays of a pair (file-mapped pages already read), or the warning text of a read failure.

    ``arenas``: where the readers put the NPU and the bench array (reset first); the arrays
    are valid until those arenas are reset again.
    """
    rd = readers or _Readers()
    side, path = NPU_SIDE, task.npu_path
    try:
        with use_arena(arenas[0]):
            npu = _prefault(rd.read(task.npu_framework, task.npu_path, task.npu_shape, task.npu_complex))
        side, path = BENCH_SIDE, task.bench_path
        with use_arena(arenas[1]):
            return npu, _prefault(rd.read(task.bench_framework, task.bench_path, task.bench_shape,
                                          task.bench_complex))
    except TensorReadError as exc:
        return unread_text(side, path, f"{exc}")
    except (OSError, ValueError, MemoryError) as exc:
        return unread_text(side, path, f"cannot read tensor: {exc}")


def unread_text(side: str, path: str, reason: str) -> str:
    """One line naming the side, the file and what is wrong with it (readers often start with the path)."""
    reason = reason[len(path) + 2:] if reason.startswith(f"{path}: ") else reason
    return f"{side} tensor file {path}: {reason}"


def _finish_pair(task: TensorTask, loaded: tuple[Any, Any] | str,
                 readers: _Readers | None = None) -> tuple[int, tuple[Any, ...], str | None]:
    """Metrics of a loaded pair; a read failure gives ``unsupported`` cells and its warning."""
    rd = readers or _Readers()
    if isinstance(loaded, str):
        return task.row, (UNSUPPORTED,) * (N_METRICS + len(rd.metrics)), loaded
    npu, bench = loaded
    if npu.size == 0:
        cells = (UNSUPPORTED,) * N_METRICS
    else:
        cells = tuple(rd.compare(npu, bench))
    if not rd.metrics:
        return task.row, cells, None
    extra = []
    for spec in rd.metrics:
        try:
            extra.append(spec.fn(npu, bench, task.row_context) if spec.row_context else spec.fn(npu, bench))
        except Exception as exc:  # a third-party metric must not stop the run, nor fail unseen
            extra.append(failure_of(spec.fn, exc))
    return task.row, cells + tuple(extra), None


def compute_pair(task: TensorTask, host: PluginHost | None = None) -> tuple[int, tuple[Any, ...], str | None]:
    """Metrics of one pair; a read failure gives ``unsupported`` cells and a warning text."""
    readers = _Readers(host=host)
    return _finish_pair(task, _load_pair(task, readers=readers), readers)


#: sets of four arenas (two pairs × two sides) kept for the next chunk this process runs
_FREE_ARENAS: list[list[Arena]] = []


def _take_arenas() -> list[Arena]:
    try:
        return _FREE_ARENAS.pop()
    except IndexError:
        return [Arena() for _ in range(4)]


def _iter_pairs(tasks: Sequence[TensorTask], read_ahead: bool = True, metrics: tuple[str, ...] | None = None,
                host: PluginHost | None = None) -> Iterator[tuple[int, tuple[Any, ...], str | None]]:
    """Results of ``tasks`` in order.

    ``read_ahead``: read pair k+1 in a thread while pair k is computed, for a process
    that has a core to spare. Without it (a pool already runs a worker per core, where
    the thread only adds GIL hand-offs) pairs are read and computed in turn, and the
    kernel is asked to start reading pair k+1's files (``posix_fadvise``) so that a
    cold page cache still overlaps disk and compute. At most two pairs are held at
    once, each in its own two arenas (reused from pair to pair and from chunk to
    chunk, so a worker does not fault in fresh pages for every tensor).
    """
    if not tasks:
        return
    rd = _Readers(metrics, host)
    arenas = _take_arenas()
    slots = (arenas[0:2], arenas[2:4])
    try:
        if len(tasks) == 1 or not read_ahead:
            for k, task in enumerate(tasks):
                if k + 1 < len(tasks):
                    _will_need(tasks[k + 1])
                yield _finish_pair(task, _load_pair(task, slots[0], rd), rd)
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1, thread_name_prefix="msprobe-read") as reader:
            pending = reader.submit(_load_pair, tasks[0], slots[0], rd)
            for k, task in enumerate(tasks):
                loaded = pending.result()
                if k + 1 < len(tasks):  # pair k-1 is finished: its slot is free
                    pending = reader.submit(_load_pair, tasks[k + 1], slots[(k + 1) % 2], rd)
                result = _finish_pair(task, loaded, rd)
                del loaded
                yield result
    finally:
        if len(_FREE_ARENAS) < 2:
            _FREE_ARENAS.append(arenas)


#: pairs smaller than this get no read-ahead hint: four system calls cost more than they overlap
WILL_NEED_MIN = 1 << 20


def _will_need(task: TensorTask) -> None:
    """Ask the kernel to read both files of ``task`` in the background (a hint: errors are ignored)."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None or 0 <= task.nbytes < WILL_NEED_MIN:
        return
    for path in (task.npu_path, task.bench_path):
        try:  # only regular files are opened, as by the reader (check_tensor_file)
            if not stat.S_ISREG(os.stat(path).st_mode):
                continue
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            advise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
        except OSError:
            pass
        finally:
            os.close(fd)


@dataclass(frozen=True)
class _Chunk:
    """One executor task: pairs to compute in order, whether to read ahead in a thread, the plugin metrics."""

    tasks: list[TensorTask]
    read_ahead: bool
    metrics: tuple[str, ...] | None = None


def _run_chunk(chunk: _Chunk) -> list[tuple[int, tuple[Any, ...], str | None]]:
    """The executor task: every pair of one chunk."""
    return list(_iter_pairs(chunk.tasks, chunk.read_ahead, chunk.metrics))


def _pair_bytes(task: TensorTask) -> int:
    if task.nbytes >= 0:
        return task.nbytes
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
    *,
    executor: Any = None,
    quiet: bool = True,
    metrics: tuple[str, ...] | None = None,
    host: PluginHost | None = None,
) -> dict[int, tuple[tuple[Any, ...], str | None]]:
    """Compute every task; returns row → (cells, warning).

    ``metrics``: the columns of the plugin tensor metrics to add (``None``: every registered one); ``host``: the
    run's plugin host, whose readers and metrics the pairs computed in this process use (tasks on other processes
    use theirs).

    ``executor`` (default: this process, one pair after another) runs chunks of
    pairs (:func:`plan_chunks`) with at most ``2 × parallelism`` chunks in flight;
    each worker holds at most two pairs at a time (:func:`_iter_pairs`), so memory
    is bounded by ``parallelism × 2 × largest pair`` whatever the dump size. Below
    ``executor.inline_bytes`` of tensors everything runs in this process. The
    result never depends on the executor: cells are keyed by row.
    """
    from contextlib import ExitStack

    from msprobe_core.plugin import InlineExecutor, Progress, usable_cpus

    sizes = [_pair_bytes(t) for t in tasks]
    total = sum(sizes)
    results: dict[int, tuple[tuple[Any, ...], str | None]] = {}
    with ExitStack() as stack:
        if executor is None:
            executor = stack.enter_context(InlineExecutor())
        bar = stack.enter_context(Progress(len(tasks), unit="tensor pairs", total_bytes=total, quiet=quiet))
        parallelism = executor.parallelism()
        cpus = usable_cpus()
        if parallelism <= 1 or len(tasks) < 2 or total < executor.inline_bytes:
            for (row, cells, warn), nbytes in zip(_iter_pairs(tasks, cpus > 1, metrics, host), sizes):
                results[row] = (cells, warn)
                bar.advance(1, nbytes)
            return results
        plan = plan_chunks(tasks, sizes, parallelism)
        # a reader thread per worker only pays where the workers leave cores idle
        chunks = [_Chunk([tasks[k] for k in idx], parallelism < cpus, metrics) for idx in plan]
        for n, chunk_result in executor.map_unordered(_run_chunk, chunks):
            for row, cells, warn in chunk_result:
                results[row] = (cells, warn)
            bar.advance(len(chunk_result), sum(sizes[k] for k in plan[n]))
    return results


def _row_context(target: Any, golden: Any, i: int, j: int, t_name: str, g_name: str) -> TensorRow:
    """What a tensor metric with ``row_context`` gets of target row ``i`` and golden row ``j``."""
    from msprobe_core.plugin import NA, TensorRow

    def text(value: Any) -> str | None:
        return None if value is None or value == NA else str(value)

    return TensorRow(target.name[i], golden.name[j], text(target.dtype[i]), text(golden.dtype[j]),
                     text(target.shape[i]), text(golden.shape[j]), t_name or "", g_name or "")


def tensor_metric_columns(ctx: Any) -> dict[str, list[Any]]:
    """The metric columns of tensor mode for a matched table (the built-in tensor metric set)."""
    from msprobe_core.plugin import executor_for
    from msprobe_core.plugin import result_columns as C

    target, golden, match, host = ctx.target, ctx.golden, ctx.match, ctx.host
    if host is None:
        raise TypeError("the tensor metric set needs the run's host (MetricContext.host)")
    extra = tuple(m.column for m in host.tensor_metrics_for(ctx.options))
    with_row = any(m.row_context for m in host.tensor_metrics_for(ctx.options))  # else no row travels to workers
    names = C.TENSOR_METRIC_COLUMNS + list(extra)
    width = len(names)
    cells: list[tuple[Any, ...]] = []
    tasks: list[TensorTask] = []
    warnings: list[str] = []
    # rows whose data could not be read: not compared, which the verdicts must say (no silent ``pass``)
    unread: dict[int, str] = ctx.meta.unread_tensors
    tensor_path = _TensorPaths()
    shapes: dict[object, tuple[int, ...] | None] = {}
    # the frameworks the match stage resolved (a dump.json without a ``framework`` field: from its dtypes, else
    # the default framework), not the tables' own fields, which are empty then
    t_spec, g_spec = match.notes.frameworks or resolved_specs(host, target, golden)
    t_name, g_name = (spec.name if spec is not None else table.framework
                      for spec, table in ((t_spec, target), (g_spec, golden)))
    for k, (i, j) in enumerate(zip(match.target, match.golden)):
        nd = target.data_name[i]
        if nd == "-1" or j < 0 or golden.data_name[j] == "-1":
            cells.append((UNSUPPORTED,) * width)
            continue
        side, name = NPU_SIDE, nd
        try:
            npu_path = tensor_path(target.tensor_dir, nd)
            side, name = BENCH_SIDE, golden.data_name[j]
            bench_path = tensor_path(golden.tensor_dir, golden.data_name[j])
        except TensorReadError as exc:
            unread[k] = unread_text(side, name, f"{exc}")
            warnings.append(f"{target.name[i]}: {unread[k]}")
            cells.append((UNSUPPORTED,) * width)
            continue
        cells.append(())
        known = tensor_path.sizes
        nbytes = known[npu_path] + known[bench_path] if npu_path in known and bench_path in known else -1
        tasks.append(TensorTask(k, npu_path, bench_path, t_name, g_name, nbytes,
                                squeezed_shape(target.shape[i], shapes), squeezed_shape(golden.shape[j], shapes),
                                is_complex_dtype(t_spec, target.dtype[i]), is_complex_dtype(g_spec, golden.dtype[j]),
                                _row_context(target, golden, i, j, t_name, g_name) if with_row else None))
    with executor_for(ctx.options, host) as executor:
        done = run_tasks(tasks, executor=executor, quiet=ctx.options.quiet, metrics=extra, host=host)
    for row, (row_cells, warn) in sorted(done.items()):  # row order, whatever the executor
        cells[row] = row_cells
        if warn:
            unread[row] = warn
            warnings.append(f"{target.name[match.target[row]]}: {warn}")
    for w in warnings:
        log.warning("tensor read failed, row not compared (Result warning): %s", w)
    columns = {name: [c[n] for c in cells] for n, name in enumerate(names)}
    settle_failures(columns, host.tensor_metrics_for(ctx.options), UNSUPPORTED)
    # who watches the computed rows (-tensor_log: the default plugin tensor_log) is told through a hook
    host.pm.hook.msprobe_tensor_rows_compared(target=target, golden=golden, match=match, columns=columns,
                                              names=list(names), options=ctx.options, host=host)
    return columns
