"""``-tensor_log`` / ``is_print_compare_log``: one pair of log lines per tensor-mode row (compare-core §9.3).

For every row, in result order::

    start compare: <npu name>
    [<npu name>] Compare result: <msg>                                  (no tensor file, or unmatched)
    [<npu name>] Compare result: Cosine <v>, EucDist <v>, MaxAbsErr <v>, MaxRelativeErr <v>,
        One Thousandth Err Ratio <v>, Five Thousandths Err Ratio <v>[, <plugin metric> <v>…], <msg>

``<msg>`` is the message msprobe works out for the row and then drops from the
result table (compare-legacy §6.3, compare-core §7.4 "dead messages"); it is
rebuilt here from the row's cells, its dump statistics and dtypes, so the
workers that compute the metrics need not send it back. Newlines and tabs in a
line become ``_``.

The plugin declares ``-tensor_log`` and logs the rows when the tensor stage reports them
(``msprobe_tensor_rows_compared``); turned off (``-p no:tensor_log``), ``-tensor_log`` is no option.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from msprobe_core.plugin import (
    DUMP_KINDS,
    NA,
    CompareOptions,
    DumpTable,
    FrameworkSpec,
    MatchResult,
    OptionSpec,
    Register,
    hookimpl,
)

log = logging.getLogger("msprobe")

NO_NPU_FILE = "NPU does not have data file."
NO_BENCH_FILE = "Bench does not have data file."
UNMATCHED = "Bench api/module unmatched."
EMPTY = "This is empty data, can not compare."
SHAPE = "Shape of NPU and bench tensor do not match. Skipped."
INF_NAN = "The position of inf or nan in NPU and bench Tensor do not match."
DTYPE = "Dtype of NPU and bench tensor do not match."
ZERO_D = (
    "This is type of 0-d tensor, can not calculate 'Cosine', 'EucDist', "
    "'One Thousandth Err Ratio' and 'Five Thousandths Err Ratio'."
)
COSINE_NPU_ZERO = "Cannot compare by Cosine Similarity, All the data is Zero in npu dump data."
COSINE_BENCH_ZERO = "Cannot compare by Cosine Similarity, All the data is Zero in Bench dump data."
COSINE_NAN = "Cannot compare by Cosine Similarity, the dump data has NaN."
MAX_ABS_NAN = "Cannot compare by MaxAbsError, the data contains nan/inf/-inf in dump data."
MAX_REL_NAN = "Cannot compare by MaxRelativeError, the data contains nan/inf/-inf in dump data."
FUZZY = "Fuzzy matching data, the comparison accuracy may be affected."

UNSUPPORTED = "unsupported"
SHAPE_UNMATCHED = "shape unmatched"
NAN = "Nan"

_NO_METRICS = (NO_NPU_FILE, NO_BENCH_FILE, UNMATCHED)


def _read_dtype(dtype: str | None, framework: FrameworkSpec) -> str | None:
    """The dtype a tensor has once read, as its framework says (readers widen bfloat16 to float32)."""
    if dtype is None or dtype == NA:
        return None
    return framework.read_dtype(dtype)


def _is_zero(value: Any) -> bool:
    try:
        return float(value) == 0.0
    except (TypeError, ValueError):
        return False


def _empty_shape(shape: str | None) -> bool:
    if not shape:
        return False
    inner = shape.strip("[]() ")
    return any(part.strip() == "0" for part in inner.split(",")) if inner else False


def row_message(
    target: DumpTable,
    golden: DumpTable,
    i: int,
    j: int,
    cells: Sequence[Any],
    *,
    fuzzy: bool = False,
    frameworks: tuple[FrameworkSpec, FrameworkSpec] | None = None,
) -> str:
    """msprobe's per-row compare message for target row ``i`` paired with golden row ``j`` (-1: none).

    ``cells`` are the row's six built-in metric cells; ``frameworks`` the two sides'
    framework specs, which know their dtypes (default: a spec that knows none).
    """
    if target.data_name[i] == "-1":
        return NO_NPU_FILE
    if j < 0:
        return UNMATCHED
    if golden.data_name[j] == "-1":
        return NO_BENCH_FILE
    six = list(cells[:6])
    parts: list[str] = []
    if all(c == UNSUPPORTED for c in six):
        if _empty_shape(target.shape[i]):
            parts.append(EMPTY)
        else:
            parts.append(f"Dump file: {[target.data_name[i], golden.data_name[j]]} not found or read failed.")
    elif all(c == SHAPE_UNMATCHED for c in six):
        parts.append(SHAPE)
    elif all(c == NA for c in six):
        parts.append(INF_NAN)
    else:
        if six[0] == UNSUPPORTED and six[2] != UNSUPPORTED:
            parts.append(ZERO_D)
        tf, gf = frameworks or (_UNKNOWN, _UNKNOWN)
        nd, bd = _read_dtype(target.dtype[i], tf), _read_dtype(golden.dtype[j], gf)
        if nd is not None and bd is not None and nd != bd:
            parts.append(DTYPE)
        if six[0] == NAN:
            if _is_zero(target.norm[i]):
                parts.append(COSINE_NPU_ZERO)
            elif _is_zero(golden.norm[j]):
                parts.append(COSINE_BENCH_ZERO)
            else:
                parts.append(COSINE_NAN)
        if six[2] == NAN:
            parts.append(MAX_ABS_NAN)
        if six[3] == NAN:
            parts.append(MAX_REL_NAN)
    if fuzzy and target.name[i] != golden.name[j]:
        parts.append(FUZZY)
    return " ".join(parts)


#: the spec of a framework no plugin describes: no dtype is known, names keep their last dotted part
_UNKNOWN = FrameworkSpec("")


def format_line(name: str, message: str, metrics: Sequence[tuple[str, Any]] | None) -> str:
    """The ``[<name>] Compare result: …`` line (``metrics`` ``None``: the message alone)."""
    if metrics is None:
        text = f"[{name}] Compare result: {message}"
    else:
        values = ", ".join(f"{column} {value}" for column, value in metrics)
        text = f"[{name}] Compare result: {values}, {message}"
    return text.replace("\n", "_").replace("\t", "_")


def log_tensor_rows(
    target: DumpTable,
    golden: DumpTable,
    match: MatchResult,
    columns: dict[str, list[Any]],
    names: Sequence[str],
    *,
    fuzzy: bool = False,
    frameworks: tuple[FrameworkSpec, FrameworkSpec] | None = None,
    logger: logging.Logger | None = None,
) -> None:
    """Log ``start compare`` and the compare result of every row (``names``: metric columns in order)."""
    out = logger or log
    for k, (i, j) in enumerate(zip(match.target, match.golden)):
        name = target.name[i]
        out.info("start compare: %s", name.replace("\n", "_").replace("\t", "_"))
        cells = [columns[c][k] for c in names]
        message = row_message(target, golden, i, j, cells, fuzzy=fuzzy, frameworks=frameworks)
        metrics = None if message in _NO_METRICS else list(zip(names, cells))
        out.info("%s", format_line(name, message, metrics))


def framework_specs(host: Any, target: DumpTable, golden: DumpTable) -> tuple[FrameworkSpec, FrameworkSpec]:
    """The framework specs of the two sides (one that knows no dtype where no plugin describes the framework)."""
    specs = [host.framework(table.framework or None) or _UNKNOWN for table in (target, golden)]
    return specs[0], specs[1]


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``-tensor_log/--is_print_compare_log`` (``is_print_compare_log`` in the Python API, msprobe's keyword)."""
    register(OptionSpec("tensor_log", ("-tensor_log", "--is_print_compare_log"), "Log every tensor compare.",
                        kind="flag", default=False, aliases=("is_print_compare_log",), kinds=DUMP_KINDS))


@hookimpl(optionalhook=True)  # the default plugin tensor_metrics' hook: absent with that plugin off
def msprobe_tensor_rows_compared(target: DumpTable, golden: DumpTable, match: MatchResult,
                                 columns: dict[str, list[Any]], names: list[str], options: CompareOptions,
                                 host: Any) -> None:
    """With ``-tensor_log``: the two log lines of every row of a tensor-mode table."""
    if not getattr(options, "tensor_log", False):
        return
    log_tensor_rows(target, golden, match, columns, names, fuzzy=getattr(options, "fuzzy_match", False),
                    frameworks=match.notes.frameworks or framework_specs(host, target, golden))
