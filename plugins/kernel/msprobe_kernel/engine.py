"""MindSpore static-graph full kernel dump compare (``msprobe compare -tp T -gp G --rank R [--step S]``).

Reproduces the table msprobe 26.2.0 writes for this mode (compare-modes.md §5):
one table per (rank, step) present on both sides, rows paired by
``op_name.task_id.io.slot`` plus the per-key order of the dump timestamps,
rows sorted by that key, and the columns of :data:`NPY_COLUMNS` (tensor dumps)
or :data:`STATISTIC_COLUMNS` (``statistic.csv`` dumps).

The verdict of this mode is the ``Accuracy Reached or Not`` column
(``Yes``/``No``/``None``/``Unmatched``, empty when a check failed); the
``Result`` column and the rule-based checkers of the dump.json compare are not
used here.

Cells hold what msprobe's csv shows: numpy scalars for max/min (so a float32
prints as ``3.0211627``), Python floats for mean/l2norm, ``""`` for cells
msprobe leaves empty. ±inf stays a float in the DataFrame;
:func:`write_kernel_results` writes it as `` inf``/`` -inf`` like msprobe.

The six metric cells of a pair of ``.npy`` files are tensor mode's: they are asked of the plugins through
``msprobe_compare_tensors`` (:class:`PairMetrics`), which the default plugin ``tensor_metrics`` declares and
answers. With that plugin turned off (the hook then is not declared) the table is still written: every metric cell
``N/A``, the verdict ``None``, and one warning naming the table.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from msprobe_core.plugin import InputError, TensorReadError, numpy_float_text
from msprobe_core.plugin import result_columns as C
from msprobe_kernel.columns import (
    ACCURACY_REACHED,
    METRIC_COLUMNS,
    NPY_COLUMNS,
    SIDE,
    STAT_DIFF_COLUMNS,
    STATISTIC_COLUMNS,
)
from msprobe_kernel.layout import (
    MAPPING_CSV,
    MODE_NPY,
    MODE_STATISTIC,
    STAT_HEADERS,
    STATISTIC_CSV,
    DumpDir,
    KernelRecord,
    dir_mode,
    group_dump_dirs,
    parse_id_list,
    read_npy_records,
    read_statistic_records,
)

if TYPE_CHECKING:
    from msprobe_core.plugin import PluginHost

logger = logging.getLogger("msprobe")

# Err_message texts (msprobe's, with their trailing newlines)
MSG_NOT_NDARRAY = "Dump file is not ndarray.\n"
MSG_READ_FAILED = "Dump file could not be read.\n"
MSG_EMPTY = "This is empty data, can not compare.\n"
MSG_SCALAR = "This is type of scalar data, can not compare.\n"
MSG_SHAPE = "Shape of NPU and bench Tensor do not match.\n"
MSG_DTYPE = "Dtype of NPU and bench Tensor do not match. Skipped.\n"
MSG_INF_NAN = "The position of inf or nan in NPU and bench Tensor do not match.\n"
MSG_STAT_SHAPE = "Tensor shapes do not match.\n"
MSG_ONE_ELEMENT = "This is a 1-d tensor of length 1."
MSG_COS_NPU_ZERO = "Cannot compare by Cosine Similarity, All the data is Zero in npu dump data."
MSG_COS_BENCH_ZERO = "Cannot compare by Cosine Similarity, All the data is Zero in Bench dump data."
MSG_COS_NAN = "Cannot compare by Cosine Similarity, the dump data has NaN."
MSG_MAX_ABS_NAN = "Cannot compare by MaxAbsError, the data contains nan/inf/-inf in dump data."
MSG_MAX_REL_NAN = "Cannot compare by MaxRelativeError, the data contains nan/inf/-inf in dump data."

YES, NO, NONE, UNMATCHED = "Yes", "No", "None", "Unmatched"
NAN_TEXT, NA_TEXT, UNSUPPORTED, SHAPE_UNMATCH = "Nan", "N/A", "unsupported", "shape unmatched"
_EPS64 = float(np.finfo(np.float64).eps)


class UnsafeDumpPath(InputError):
    """A dump file whose resolved path lies outside its dump root (e.g. a symlink pointing elsewhere)."""


@dataclass(frozen=True)
class RecordPair:
    npu: KernelRecord | None
    bench: KernelRecord | None


# --------------------------------------------------------------------------------------------------
# pairing


def _local_index(records: Iterable[KernelRecord]) -> dict[tuple[str, int], KernelRecord]:
    """Number the records of each compare key 0, 1, 2, ... in timestamp order."""
    ordered = sorted(records, key=lambda r: (r.timestamp, r.name))
    counters: dict[str, int] = {}
    out: dict[tuple[str, int], KernelRecord] = {}
    for rec in ordered:
        idx = counters.get(rec.compare_key, 0)
        counters[rec.compare_key] = idx + 1
        out[(rec.compare_key, idx)] = rec
    return out


def pair_records(npu: Iterable[KernelRecord], bench: Iterable[KernelRecord]) -> list[RecordPair]:
    """Outer join on (compare key, local index), sorted by key then index (what ``pd.merge(how="outer")`` gives)."""
    n_idx, b_idx = _local_index(npu), _local_index(bench)
    return [RecordPair(n_idx.get(k), b_idx.get(k)) for k in sorted(set(n_idx) | set(b_idx))]


# --------------------------------------------------------------------------------------------------
# npy mode


class PairMetrics:
    """The six metric cells of a pair of squeezed arrays, asked of the plugins (``msprobe_compare_tensors``).

    ``host``: the plugin host to ask (a metric set's ``MetricContext.host``; default: the process's). A call
    answers ``None`` when no plugin computes the cells (the default plugin ``tensor_metrics``, which declares the
    hook, turned off); then :attr:`missing` is set, so that the table says so once. Safe to call from several
    threads.
    """

    def __init__(self, host: PluginHost | None = None) -> None:
        if host is None:
            from msprobe_core.plugin import get_host

            host = get_host()
        # the default plugin tensor_metrics declares the hook: turned off, there is none to ask (an optional
        # implementation then sits on a caller without a spec, which would answer a list, not the first result)
        caller = getattr(host.pm.hook, "msprobe_compare_tensors", None)
        self._ask = caller if caller is not None and caller.spec is not None else None
        #: whether some pair got no answer (its cells are N/A)
        self.missing = False

    def __call__(self, n: np.ndarray, b: np.ndarray) -> Sequence[Any] | None:
        cells = self._ask(npu=n, bench=b) if self._ask is not None else None
        if cells is None:
            self.missing = True
        return cells

    def warn_missing(self, where: object) -> None:
        """One warning for the table of ``where`` (as tensor mode says it once per table) when some pair's metric
        cells were not computed."""
        if self.missing:
            logger.warning("%s: the kernel table's metric cells are not computed: each says %s and %s says %s (no "
                           "plugin answers msprobe_compare_tensors; the default plugin 'tensor_metrics' does, turned "
                           "off by -p no:tensor_metrics or MSPROBE_DISABLE_PLUGINS)",
                           where, NA_TEXT, ACCURACY_REACHED.name, NONE)


def load_npy_within(path: str, root: str) -> np.ndarray:
    """The array of one ``.npy`` file, refusing a file whose resolved path escapes ``root``.

    Uses the core's shared helpers: :func:`msprobe_core.plugin.confine` (symlinks
    out of the dump root are refused), :func:`~msprobe_core.plugin.check_tensor_file`
    (regular file within the tensor byte cap) and :func:`msprobe_core.plugin.read_npy`
    (no pickles, header checked against the file size before reading). Every
    failure raises :class:`~msprobe_core.plugin.TensorReadError`.
    """
    from msprobe_core.plugin import check_tensor_file, confine, max_tensor_bytes, read_npy

    real = confine(root, path, what="the file")
    cap = max_tensor_bytes()
    check_tensor_file(real, cap)
    data = read_npy(real, max_bytes=cap)
    declared = os.path.basename(path).rsplit(".", 2)[-2:-1]  # ...DefaultFormat.Float32.npy
    if data.dtype.kind == "c" and declared and _REAL_DTYPE.fullmatch(declared[0]):
        # its metrics would drop the imaginary part and describe some other tensor
        raise TensorReadError(f"{path}: the file holds complex values ({data.dtype}), its name says {declared[0]}")
    return data


#: the dtype part of a kernel file name that names a real (not complex) type
_REAL_DTYPE = re.compile(r"(?i)(b?float|u?int|double|half|bool)\d*")


def _shape_text(shape: tuple[int, ...]) -> str:
    return str(shape).replace("(", "[").replace(")", "]")


def _side_cells(data: object) -> tuple[object, object, object, object, object, object]:
    """Dtype, shape, max, min, mean, l2norm of one loaded array (msprobe's ``process_npy_file``)."""
    assert isinstance(data, np.ndarray)
    dtype, shape = str(data.dtype), _shape_text(data.shape)
    if data.size == 0:
        return dtype, shape, "", "", "", ""
    with np.errstate(all="ignore"):
        return (
            dtype,
            shape,
            np.max(data),
            np.min(data),
            float(np.mean(data)),
            float(np.linalg.norm(data)),
        )


def check_accuracy(cos: object, max_abs_err: object) -> str:
    """msprobe's ``check_accuracy``: the ``Accuracy Reached or Not`` verdict of a compared row.

    Note (msprobe quirk, kept): a Cosine of ``Nan`` parses as a float NaN and
    every comparison with it is false, so such a row can still be ``Yes``.
    """
    if cos == SHAPE_UNMATCH:
        return UNMATCHED
    if NONE in (cos, max_abs_err):
        return NONE
    if cos == NA_TEXT or max_abs_err == NA_TEXT:
        return NO
    try:
        c, m = float(cos), float(max_abs_err)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        logger.debug("Cosine or MaxAbsErr can not get float value.")
        return NONE
    if c < 0.99 and m > 0.001:
        return NO
    if c < 0.9 or m > 1:
        return NO
    return YES


def _validate(n: np.ndarray | object, b: np.ndarray | object) -> str:
    """msprobe's ``npy_data_check``: the Err_message of a pair that cannot be compared, else ``""``.

    Zeroes matching inf/nan positions of both arrays in place, as msprobe does.
    """
    if not isinstance(n, np.ndarray) or not isinstance(b, np.ndarray):
        return MSG_NOT_NDARRAY
    if n.size == 0 or b.size == 0:
        return MSG_EMPTY
    msg = ""
    if not n.shape or not b.shape:
        msg += MSG_SCALAR
    if n.shape != b.shape:
        msg += MSG_SHAPE
    if n.dtype != b.dtype:
        msg += MSG_DTYPE
    if msg:
        return msg
    try:
        nf, bf = n.astype(float), b.astype(float)
    except (TypeError, ValueError):
        return MSG_READ_FAILED
    n_inf, b_inf, n_nan, b_nan = np.isinf(nf), np.isinf(bf), np.isnan(nf), np.isnan(bf)
    if n_inf.any() or n_nan.any() or b_inf.any() or b_nan.any():
        if not (np.array_equal(n_inf, b_inf) and np.array_equal(n_nan, b_nan)):
            return MSG_INF_NAN
        bad = n_inf | n_nan
        n[bad] = 0
        b[bad] = 0
    return ""


def _metric_messages(n: np.ndarray, b: np.ndarray, cells: Sequence[object]) -> str:
    """The Err_message msprobe's metric functions add for a compared pair."""
    cos, _euc, max_abs, max_rel = cells[:4]
    msg = ""
    if cos == UNSUPPORTED:
        msg += MSG_ONE_ELEMENT
    elif cos == NAN_TEXT:
        with np.errstate(all="ignore"):
            na = float(np.linalg.norm(n.reshape(-1).astype(np.float64)))
            nb = float(np.linalg.norm(b.reshape(-1).astype(np.float64)))
        msg += MSG_COS_NPU_ZERO if na <= _EPS64 else MSG_COS_BENCH_ZERO if nb <= _EPS64 else MSG_COS_NAN
    if max_abs == NAN_TEXT:
        msg += MSG_MAX_ABS_NAN
    if max_rel == NAN_TEXT:
        msg += MSG_MAX_REL_NAN
    return msg


_READ_FAILED = object()


def _load_side(rec: KernelRecord | None, root: str) -> np.ndarray | object | None:
    if rec is None:
        return None
    try:
        return load_npy_within(rec.name, root)
    except TensorReadError as exc:  # unsafe path, pickled objects, truncated or oversized file
        logger.warning("Could not read %s: %s", rec.name, exc)
    except (OSError, ValueError, EOFError, MemoryError) as exc:
        logger.warning("Could not read %s: %s", rec.name, exc)
    return _READ_FAILED


def _npy_row(pair: RecordPair, npu_root: str, bench_root: str, metrics: PairMetrics | None = None) -> list[object]:
    """One row of the npy table: both sides' files read, checked and compared (``metrics``: default, the
    process host's)."""
    row: dict[str, object] = dict.fromkeys(NPY_COLUMNS, "")
    n = _load_side(pair.npu, npu_root)
    b = _load_side(pair.bench, bench_root)
    read_failed = False
    for prefix, rec, data in ((C.NPU, pair.npu, n), (C.BENCH, pair.bench, b)):
        if rec is None:
            continue
        row[SIDE[prefix]["name"]] = rec.name
        if data is _READ_FAILED:
            read_failed = True
            continue
        if isinstance(data, np.ndarray):
            try:
                cells = _side_cells(data)
            except (TypeError, ValueError) as exc:  # e.g. structured dtypes
                logger.warning("Cannot take statistics of %s: %s", rec.name, exc)
                read_failed = True
                continue
            keys = ("dtype", "shape", *C.STAT_NAMES)
            for key, val in zip(keys, cells, strict=True):
                row[SIDE[prefix][key]] = val
    if read_failed:
        row[C.ERR_MESSAGE] = MSG_READ_FAILED
        return list(row.values())
    msg = _validate(n, b)
    row[C.ERR_MESSAGE] = msg
    if msg:
        return list(row.values())
    assert isinstance(n, np.ndarray) and isinstance(b, np.ndarray)
    try:
        computed = (metrics or PairMetrics())(n, b)
        if computed is not None and len(computed) != len(METRIC_COLUMNS):  # a plugin's answer of another shape
            raise ValueError(f"msprobe_compare_tensors answered {len(computed)} cells, not {len(METRIC_COLUMNS)}")
    except Exception as exc:  # one bad tensor must not stop the run
        logger.warning("Metrics failed for %s: %s", row[C.NPU_NAME], exc)
        computed = [UNSUPPORTED] * len(METRIC_COLUMNS)
    if computed is None:  # no plugin computes them: N/A, and no verdict on metrics that are not there
        for col in METRIC_COLUMNS:
            row[col] = NA_TEXT
        row[ACCURACY_REACHED.name] = NONE
        return list(row.values())
    cells = list(computed)
    for col, val in zip(METRIC_COLUMNS, cells, strict=True):
        row[col] = val
    row[ACCURACY_REACHED.name] = check_accuracy(cells[0], cells[2])
    row[C.ERR_MESSAGE] = _metric_messages(n, b, cells)
    return list(row.values())


# --------------------------------------------------------------------------------------------------
# statistics mode


def _stat_value(text: object) -> np.float32:
    """A statistic.csv value as msprobe reads it: ``null``/``False`` -> 0, ``True`` -> 1, then float32."""
    if text is None:
        return np.float32("nan")
    s = str(text)
    s = {"null": "0", "False": "0", "True": "1"}.get(s, s)
    try:
        return np.float32(float(s))
    except ValueError:
        logger.warning("Statistic value %r is not a number.", text)
        return np.float32("nan")


def _relative_error_text(diff: np.float32, bench: np.float32) -> str:
    if bench != 0:
        with np.errstate(all="ignore"):
            r = diff / bench
        return NAN_TEXT if np.isnan(r) else numpy_float_text(abs(r * np.float32(100))) + "%"
    return NA_TEXT


def _stat_row(pair: RecordPair) -> list[object]:
    row: dict[str, object] = dict.fromkeys(STATISTIC_COLUMNS, "")
    values: dict[str, dict[str, np.float32]] = {}
    shapes: dict[str, str] = {}
    dtypes: dict[str, str] = {}
    for prefix, rec in ((C.NPU, pair.npu), (C.BENCH, pair.bench)):
        stats = rec.stats if rec is not None else {}
        cols = SIDE[prefix]
        if rec is not None:
            row[cols["name"]] = rec.name
            row[cols["csv_file"]] = rec.csv_file
            dtypes[prefix] = str(stats.get("Data Type") or "")
            shapes[prefix] = str(stats.get("Shape") or "").replace("(", "[").replace(")", "]")
            row[cols["dtype"]] = dtypes[prefix]
            row[cols["shape"]] = shapes[prefix]
        vals = {
            "max": _stat_value(stats.get("Max Value")),
            "min": _stat_value(stats.get("Min Value")),
            "mean": _stat_value(stats.get("Avg Value")),
            "l2norm": _stat_value(stats.get("L2Norm Value")),
        }
        values[prefix] = vals
        if rec is not None:
            for key, val in vals.items():
                row[cols[key]] = val
    msg = ""
    if pair.npu is None or pair.bench is None:
        # msprobe sees NaN dtype/shape on the missing side: both checks fail
        msg = MSG_STAT_SHAPE + MSG_DTYPE
    else:
        if not shapes[C.NPU] or not shapes[C.BENCH]:
            msg += MSG_SCALAR
        elif shapes[C.NPU] != shapes[C.BENCH]:
            msg += MSG_STAT_SHAPE
        if dtypes[C.NPU] != dtypes[C.BENCH]:
            msg += MSG_DTYPE
    row[C.ERR_MESSAGE] = msg
    if msg:
        return list(row.values())
    n, b = values[C.NPU], values[C.BENCH]
    with np.errstate(all="ignore"):
        diffs = {k: n[k] - b[k] for k in ("max", "min", "mean", "l2norm")}
    for col, key in zip(STAT_DIFF_COLUMNS[:4], ("max", "min", "mean", "l2norm"), strict=True):
        row[col] = diffs[key]
    for col, key in zip(STAT_DIFF_COLUMNS[4:], ("max", "min", "mean", "l2norm"), strict=True):
        row[col] = _relative_error_text(diffs[key], b[key])
    if np.isnan(n["max"]) and np.isnan(b["max"]):
        magnitude = 0.0
    else:
        with np.errstate(all="ignore"):
            magnitude = float(diffs["max"] / (max(n["max"], b["max"]) + 1e-10))
    row[ACCURACY_REACHED.name] = YES if magnitude <= 0.5 else NO
    return list(row.values())


# --------------------------------------------------------------------------------------------------
# driver


def _side_mode(dirs: Sequence[DumpDir]) -> str | None:
    modes = {dir_mode(d.path) for d in dirs} - {None}
    if len(modes) != 1:
        if len(modes) > 1:
            logger.error("Mixed npy and statistic.csv dumps in %s.", ", ".join(str(d.path) for d in dirs))
        return None
    return modes.pop()


def _read_records(dirs: Sequence[DumpDir], mode: str) -> list[KernelRecord]:
    reader: Callable[[Path], list[KernelRecord]] = read_npy_records if mode == MODE_NPY else read_statistic_records
    records: list[KernelRecord] = []
    for d in dirs:
        records.extend(reader(d.path))
    return records


def _default_workers() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def compare_kernel_dumps(
    target_root: str | os.PathLike[str],
    golden_root: str | os.PathLike[str],
    ranks: Sequence[int] | str | None = None,
    steps: Sequence[int] | str | None = None,
    *,
    workers: int | None = None,
) -> list[tuple[int, int, pd.DataFrame]]:
    """Compare two kernel dump roots; one ``(rank, step, table)`` per (rank, step) found on both sides.

    ``ranks``/``steps``: ids to keep (a ``--rank``/``--step`` string such as
    ``"0,1"`` is accepted too); ``None`` or empty means all. (rank, step) pairs
    present on one side only are skipped with a warning, as are pairs whose
    sides hold different kinds of dump (npy vs statistic.csv).
    """
    rank_ids = parse_id_list(ranks, "rank") if ranks is not None else []
    step_ids = parse_id_list(steps, "step") if steps is not None else []
    npu_root = os.path.realpath(target_root)
    bench_root = os.path.realpath(golden_root)
    npu_groups = group_dump_dirs(target_root, rank_ids, step_ids)
    bench_groups = group_dump_dirs(golden_root, rank_ids, step_ids)
    for key in sorted(set(npu_groups) ^ set(bench_groups)):
        side = "target" if key in npu_groups else "golden"
        logger.warning("rank %d step %d exists only in the %s dump, skipped.", key[0], key[1], side)
    results: list[tuple[int, int, pd.DataFrame]] = []
    for rank, step in sorted(set(npu_groups) & set(bench_groups)):
        df = compare_group(npu_groups[(rank, step)], bench_groups[(rank, step)], npu_root, bench_root, workers=workers)
        if df is not None:
            results.append((rank, step, df))
    return results


def _check_side_files(dirs: Sequence[DumpDir], root: str) -> None:
    """Refuse a ``statistic.csv``/``mapping.csv`` that is a symlink out of the dump root (read whole, not per row)."""
    from msprobe_core.plugin import UnsafePathError, confine

    for d in dirs:
        for name in (STATISTIC_CSV, MAPPING_CSV):
            path = d.path / name
            if path.is_symlink():
                try:
                    confine(root, path, what=name)
                except UnsafePathError as exc:
                    raise UnsafeDumpPath(str(exc), path=path) from None


def read_side(dirs: Sequence[DumpDir], root: str) -> tuple[str | None, list[KernelRecord]]:
    """The kind of dump (npy or statistic.csv) of one side's data dirs and their records.

    ``(None, [])`` when the side holds no usable data (or mixes both kinds, logged as an error).
    A ``statistic.csv``/``mapping.csv`` that is a symlink out of ``root`` is an :class:`UnsafeDumpPath`.
    """
    mode = _side_mode(dirs)
    if mode is None:
        return None, []
    _check_side_files(dirs, root)
    return mode, _read_records(dirs, mode)


def table_rows(
    pairs: Sequence[RecordPair], mode: str, npu_root: str, bench_root: str, *, workers: int | None = None,
    host: PluginHost | None = None,
) -> tuple[list[str], list[list[object]]]:
    """The columns and rows of the table of ``pairs`` (npy or statistics mode), rows in pair order.

    ``host``: the plugin host whose plugins compute the tensor metrics (default: the process's).
    """
    metrics: PairMetrics | None = None
    if mode == MODE_NPY:
        columns = NPY_COLUMNS
        metrics = PairMetrics(host)

        def work(p: RecordPair) -> list[object]:
            return _npy_row(p, npu_root, bench_root, metrics)

    else:
        columns = STATISTIC_COLUMNS
        work = _stat_row
    n_workers = workers or _default_workers()
    if n_workers > 1 and len(pairs) > 1:
        with ThreadPoolExecutor(max_workers=n_workers) as pool:
            rows = list(pool.map(work, pairs))
    else:
        rows = [work(p) for p in pairs]
    if metrics is not None:
        first = next((r for p in pairs for r in (p.npu, p.bench) if r is not None), None)
        metrics.warn_missing(os.path.dirname(first.name) if first is not None else npu_root)
    return columns, rows


def compare_group(
    npu_dirs: Sequence[DumpDir],
    bench_dirs: Sequence[DumpDir],
    npu_root: str,
    bench_root: str,
    *,
    workers: int | None = None,
) -> pd.DataFrame | None:
    """The result table of one (rank, step): the data dirs of both sides; ``None`` if nothing to compare."""
    npu_mode, bench_mode = _side_mode(npu_dirs), _side_mode(bench_dirs)
    where = f"{npu_dirs[0].path}" if npu_dirs else npu_root
    if npu_mode is None or bench_mode is None:
        logger.warning("%s: no usable kernel data, skipped.", where)
        return None
    if npu_mode != bench_mode:
        logger.error("%s: NPU mode %s not equal to bench mode %s.", where, npu_mode, bench_mode)
        return None
    _, npu_records = read_side(npu_dirs, npu_root)
    _, bench_records = read_side(bench_dirs, bench_root)
    pairs = pair_records(npu_records, bench_records)
    if not pairs:
        return None
    columns, rows = table_rows(pairs, npu_mode, npu_root, bench_root, workers=workers)
    return pd.DataFrame(rows, columns=columns, dtype=object)


__all__ = [
    "MODE_NPY",
    "MODE_STATISTIC",
    "NPY_COLUMNS",
    "PairMetrics",
    "STATISTIC_COLUMNS",
    "STAT_HEADERS",
    "UnsafeDumpPath",
    "check_accuracy",
    "compare_kernel_dumps",
    "load_npy_within",
    "pair_records",
    "compare_group",
    "read_side",
    "table_rows",
]
