"""Tensor mode as msprobe 8.3.3 computes it (spec compare-legacy.md §6.3-§6.4).

8.3.3 differs from 26.2.0 in ways that change cells, so the classic interface has its
own metric pass (tensor *reading* is the frameworks' readers, as in the core):

* tensors are not squeezed: a ``[1]`` tensor gives ``This is a 1-d tensor of length 1.``
  for Cosine, a 0-d tensor the 0-d message (repeated 16 times, as 8.3.3 writes it);
* relative errors add float64 machine epsilon where bench is 0, in the arrays' own dtype;
* every step leaves a message in ``Err_message`` and ``Accuracy Reached or Not`` is derived
  from Cosine and MaxAbsErr.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from msprobe_core.plugin import NA, DumpTable, TensorReadError, safe_tensor_path
from msprobe_core.plugin import result_columns as C

log = logging.getLogger("msprobe")

UNSUPPORTED = "unsupported"
SHAPE_UNMATCH = "shape unmatched"
NAN = "Nan"
FLOAT_EPSILON = float(np.finfo(float).eps)
COSINE_THRESHOLD = 0.9999
ZERO_D_MSG = (
    "This is type of 0-d tensor, can not calculate 'Cosine', 'EucDist', "
    "'One Thousandth Err Ratio' and 'Five Thousandths Err Ratio'. "
)
FUZZY_NOTE = " Fuzzy matching data, the comparison accuracy may be affected."
_FLOAT_TYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.longdouble))
INLINE_BYTES = 64 * 1024 * 1024


def format_value(value: Any) -> float:
    """8.3.3 ``format_value``: round through ``'{:.12f}'``."""
    return float(f"{value:.12f}")


def _relative_err(n: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if n.dtype not in _FLOAT_TYPES:
            n = n.astype(float)
        if b.dtype not in _FLOAT_TYPES:
            b = b.astype(float)
        n2, b2 = n.copy(), b.copy()
        zero = b2 == 0
        b2[zero] += FLOAT_EPSILON
        n2[zero] += FLOAT_EPSILON
        return np.abs(np.divide(n2 - b2, b2))


def _inf_nan(n: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """8.3.3 ``handle_inf_nan``: zero matching inf/nan positions; ``None`` when they differ."""
    nf, bf = n.astype(float), b.astype(float)
    n_inf, b_inf, n_nan, b_nan = np.isinf(nf), np.isinf(bf), np.isnan(nf), np.isnan(bf)
    if n_inf.any() or n_nan.any() or b_inf.any() or b_nan.any():
        if np.array_equal(n_inf, b_inf) and np.array_equal(n_nan, b_nan):
            n, b = n.copy(), b.copy()
            n[n_inf | n_nan] = 0
            b[b_inf | b_nan] = 0
        else:
            return None
    return n, b


def metrics(n: np.ndarray, b: np.ndarray) -> tuple[list[Any], str]:
    """The six metric cells and the accumulated message of one NPU/bench array pair."""
    if n.size == 0:
        return [UNSUPPORTED] * 6, "This is empty data, can not compare."
    msg = ""
    if not n.shape:
        msg = ZERO_D_MSG
    elif n.shape != b.shape:
        return [SHAPE_UNMATCH] * 6, "Shape of NPU and bench tensor do not match. Skipped."
    else:
        try:
            handled = _inf_nan(n, b)
        except (ValueError, TypeError):
            return [UNSUPPORTED] * 6, "Data is unreadable."
        if handled is None:
            return [NA] * 6, "The position of inf or nan in NPU and bench Tensor do not match."
        n, b = handled
        if n.dtype != b.dtype:
            msg = "Dtype of NPU and bench tensor do not match."
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rel = _relative_err(n, b)
        if not n.shape:
            if n.dtype == bool:
                n, b = n.astype(float), b.astype(float)
        else:
            n, b = n.reshape(-1).astype(float), b.reshape(-1).astype(float)
        zero_d = "This is type of 0-d tensor"
        cells: list[Any] = []
        # Cosine
        if zero_d in msg:
            cells.append(UNSUPPORTED)
            msg += msg
        elif len(n) == 1:
            cells.append(UNSUPPORTED)
            msg += "This is a 1-d tensor of length 1."
        else:
            num = n.dot(b)
            a_norm, b_norm = np.linalg.norm(n), np.linalg.norm(b)
            if a_norm <= FLOAT_EPSILON and b_norm <= FLOAT_EPSILON:
                cells.append(1.0)
            elif a_norm <= FLOAT_EPSILON:
                cells.append(NAN)
                msg += "Cannot compare by Cosine Similarity, All the data is Zero in npu dump data."
            elif b_norm <= FLOAT_EPSILON:
                cells.append(NAN)
                msg += "Cannot compare by Cosine Similarity, All the data is Zero in Bench dump data."
            else:
                cos = num / (a_norm * b_norm)
                if np.isnan(cos):
                    cells.append(NAN)
                    msg += "Cannot compare by Cosine Similarity, the dump data has NaN."
                else:
                    value = format_value(cos)
                    cells.append(round(value, 6) if value > COSINE_THRESHOLD else value)
        # EucDist
        if zero_d in msg:
            cells.append(UNSUPPORTED)
            msg += msg
        else:
            cells.append(float(np.linalg.norm(n - b, ord=2)))
        # MaxAbsErr
        value = np.max(np.abs(n - b))
        if np.isnan(value):
            cells.append(NAN)
            msg += "Cannot compare by MaxAbsError, the data contains nan/inf/-inf in dump data."
        else:
            cells.append(format_value(value))
        # MaxRelativeErr
        value = np.max(np.abs(rel))
        if np.isnan(value):
            cells.append(NAN)
            msg += "Cannot compare by MaxRelativeError, the data contains nan/inf/-inf in dump data."
        else:
            cells.append(format_value(value))
        # One Thousandth / Five Thousandths Err Ratio
        for threshold in (0.001, 0.005):
            if zero_d in msg:
                cells.append(UNSUPPORTED)
                msg += msg
            elif not np.size(rel):
                cells.append(NAN)
            else:
                cells.append(format_value(np.sum(rel < threshold) / np.size(rel)))
    return cells, msg


def accuracy(cos: Any, max_abs: Any) -> str:
    """``Accuracy Reached or Not`` from the Cosine and MaxAbsErr cells (§6.4)."""
    if cos == SHAPE_UNMATCH:
        return "Unmatched"
    if cos == "None" or max_abs == "None":
        return "None"
    if cos == NA or max_abs == NA:
        return "No"
    try:
        c, m = float(cos), float(max_abs)
    except (TypeError, ValueError):
        log.warning("Cosine or MaxAbsErr can not get float value.")
        return "None"
    if c < 0.99 and m > 0.001:
        return "No"
    if c < 0.9 or m > 1:
        return "No"
    return "Yes"


@dataclass(frozen=True)
class PairTask:
    """One row's tensor files and the frameworks that read them."""

    row: int
    npu_path: str
    bench_path: str
    npu_framework: str
    bench_framework: str
    error_file: str


def _read(framework: str, path: str) -> np.ndarray:
    from msprobe_core.plugin import get_host

    spec = get_host().framework(framework or None)
    if spec is None or spec.read_tensor is None:
        raise OSError(f"no reader for {framework or 'default'} tensors")
    if not os.path.isfile(path):
        raise OSError(f"{path} not found")
    array = np.asarray(spec.read_tensor(Path(path)))
    return array if array.flags.writeable else array.copy()


def compute(task: PairTask) -> tuple[int, list[Any], str]:
    """Read one pair and compute its cells (a read failure gives ``unsupported`` and 8.3.3's message)."""
    try:
        n = _read(task.npu_framework, task.npu_path)
        b = _read(task.bench_framework, task.bench_path)
    except Exception as exc:  # noqa: BLE001 - any reader failure only fails this row, as in 8.3.3
        log.warning("tensor read failed, row marked unsupported: %s: %s", task.npu_path, exc)
        return task.row, [UNSUPPORTED] * 6, f"Dump file: {task.error_file} not found or read failed."
    try:
        cells, msg = metrics(n, b)
    except (ValueError, TypeError, MemoryError) as exc:
        log.warning("tensor compare failed for %s: %s", task.npu_path, exc)
        return task.row, [UNSUPPORTED] * 6, "Data is unreadable."
    return task.row, cells, msg


def _chunk(tasks: list[PairTask]) -> list[tuple[int, list[Any], str]]:
    return [compute(t) for t in tasks]


def run(tasks: Sequence[PairTask], workers: int | None = None) -> dict[int, tuple[list[Any], str]]:
    """Compute every pair, in a process pool when the tensors are large."""
    total = 0
    for t in tasks:
        for p in (t.npu_path, t.bench_path):
            try:
                total += os.path.getsize(p)
            except OSError:
                pass
    n_workers = workers if workers is not None else (os.cpu_count() or 1)
    out: dict[int, tuple[list[Any], str]] = {}
    if n_workers <= 1 or total < INLINE_BYTES or len(tasks) < 4:
        for t in tasks:
            row, cells, msg = compute(t)
            out[row] = (cells, msg)
        return out
    import multiprocessing as mp

    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
    size = max(1, min(16, len(tasks) // (n_workers * 4) or 1))
    chunks = [list(tasks[k : k + size]) for k in range(0, len(tasks), size)]
    with ProcessPoolExecutor(max_workers=n_workers, mp_context=ctx) as pool:
        for result in pool.map(_chunk, chunks):
            for row, cells, msg in result:
                out[row] = (cells, msg)
    return out


def tensor_columns(data: dict[str, list[Any]], matched: list[bool], target: DumpTable, golden: DumpTable,
                   workers: int | None, fuzzy: bool, log_rows: bool) -> None:
    """Tensor mode: the six metric cells of every row and its ``Err_message`` (§6.3), into ``data``.

    ``data`` holds the base cells (:func:`msprobe_classic.table.base_columns`, with the tensor
    files ``_npu_data``/``_bench_data``); ``log_rows`` logs every row as 8.3.3's
    ``is_print_compare_log`` does.
    """
    from .vocabulary import ERR, NO_BENCH, REQ_GRAD_CONSIST, REQ_GRAD_MSG, TENSOR_METRICS

    n = len(matched)
    err = []
    for k in range(n):
        msg = "" if matched[k] else NO_BENCH
        if not data[REQ_GRAD_CONSIST][k]:
            msg = REQ_GRAD_MSG
        err.append(msg)
    npu_data, bench_data = data.pop("_npu_data"), data.pop("_bench_data")
    # 8.3.3 looks data files up by NPU name: a repeated name uses its last pair
    pair_of = {name: (a, b) for name, a, b in zip(data[C.NPU_NAME], npu_data, bench_data)}
    cells: list[list[Any]] = [[]] * n
    msgs = [""] * n
    tasks: list[PairTask] = []
    for k, name in enumerate(data[C.NPU_NAME]):
        npu_dn, bench_dn = pair_of[name]
        if str(npu_dn) == "-1":
            cells[k], msgs[k] = [UNSUPPORTED] * 6, "NPU does not have data file."
        elif str(bench_dn) == "-1":
            cells[k], msgs[k] = [UNSUPPORTED] * 6, "Bench does not have data file."
        elif bench_dn == NA:
            cells[k], msgs[k] = [UNSUPPORTED] * 6, "Bench api/module unmatched."
        else:
            error_file = str([npu_dn, bench_dn])
            try:
                npu_path = safe_tensor_path(target.tensor_dir, npu_dn)
                bench_path = safe_tensor_path(golden.tensor_dir, bench_dn)
            except TensorReadError:
                cells[k], msgs[k] = [UNSUPPORTED] * 6, f"Dump file: {error_file} not found or read failed."
                continue
            tasks.append(PairTask(k, str(npu_path), str(bench_path), target.framework, golden.framework, error_file))
    for row, (row_cells, row_msg) in run(tasks, workers).items():
        cells[row], msgs[row] = row_cells, row_msg
    names = data[C.NPU_NAME]
    bench_names = data[C.BENCH_NAME]
    for c, col in enumerate(TENSOR_METRICS):
        data[col] = [row[c] for row in cells]
    for k in range(n):
        msg = err[k] + msgs[k]
        if fuzzy and names[k] != bench_names[k] and bench_names[k] != NA:
            msg += FUZZY_NOTE
        err[k] = msg
        if log_rows:
            log.info("start compare: %s", names[k])
            if "does not have data file" in msgs[k] or "Bench api/module unmatched" in msgs[k]:
                log.info("[%s] Compare result: %s ", names[k], msg)
            else:
                c = cells[k]
                log.info(
                    "[%s] Compare result: cosine %s, euc_dist %s, max_abs_err %s, max_relative_err %s, "
                    "one_thousand_err_ratio %s, five_thousand_err_ratio %s, %s",
                    names[k], c[0], c[1], c[2], c[3], c[4], c[5], msg,
                )
    data[ERR] = err
