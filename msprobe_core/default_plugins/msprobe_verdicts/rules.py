"""msprobe's verdict rule: ``Result`` (pass/warning/error) and ``Err_message`` per row.

Rows are grouped by the target API that produced them; per-row checkers and
per-API checkers (input vs output of one call) raise each row's level and add
messages, in a fixed order. Everything is vectorised over the whole table:
group aggregates use ``ufunc.reduceat`` over the contiguous rows of each API.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from itertools import repeat
from operator import contains, ne
from typing import TYPE_CHECKING, Any

import numpy as np

from msprobe_core.plugin import MODE_MD5, MODE_STATISTICS, MODE_TENSOR, NA
from msprobe_core.plugin import result_columns as C
from msprobe_core.plugin import stat_cells as _cells

from . import forms as F
from . import messages as M  # the messages the rules write (the summary reads them too)

if TYPE_CHECKING:
    from msprobe_core.plugin import FrameworkSpec, VerdictContext

PASS, WARNING, ERROR = 0, 1, 2
LEVEL_TEXT = ("pass", "warning", "error")


#: ``Requires_grad`` cells that say nothing: ``N/A`` (the dump has no flag, e.g. every MindSpore dump) or empty.
#: msprobe flags ``N/A`` vs ``True`` as inconsistent; an unknown flag cannot contradict the other side.
UNKNOWN_FLAG = frozenset({NA, "", None})

SKIP_ALL_OPS = frozenset(
    {"empty", "empty_like", "numpy", "to", "__setitem__", "empty_with_format", "new_empty_strided", "new_empty", "empty_strided"}
)
OUTPUT_ONLY_OPS = frozenset({"_reduce_scatter_base", "_all_gather_base", "all_to_all_single", "batch_isend_irecv"})


def _agg_values(values: Sequence[Any]) -> np.ndarray:
    """Numbers msprobe's aggregate helper would fold in; NaN where it skips the cell."""
    return _percent_columns(values)[0]


def _pct_values(values: Sequence[Any]) -> np.ndarray:
    """``float(x.strip('%')) / 100`` with 0 where it does not parse."""
    return _percent_columns(values)[1]


def _percent_columns(values: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Both readings of a metric column at once: (aggregate reading, ``strip('%')`` reading).

    The aggregate reading keeps numbers and ``x%`` texts (as ``x / 100``), NaN elsewhere;
    the other parses any text after stripping ``%`` (0 where it does not parse). The few
    distinct non-percent texts (``N/A``, ``Nan``, ``0``…) are parsed once each.
    """
    coded = _coded_percent_columns(values)
    if coded is not None:
        return coded
    n = len(values)
    agg = np.full(n, np.nan)
    pct = np.zeros(n)
    other: dict[Any, float] = {}
    for i, v in enumerate(values):
        t = type(v)
        if t is str and v.endswith("%"):
            try:
                agg[i] = pct[i] = float(v[:-1]) / 100
                continue
            except ValueError:
                pass
        elif t is float or t is int:
            agg[i] = v
        key = (t, v)
        parsed = other.get(key)
        if parsed is None:
            try:
                parsed = float(str(v).strip("%")) / 100
            except ValueError:
                parsed = 0.0
            other[key] = parsed
        pct[i] = parsed
    return agg, pct


def _coded_percent_columns(values: Sequence[Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_percent_columns` of a lean ``x%`` column, from its numbers (no text is spelled or parsed).

    Its number cells are ``repr(x) + "%"``, which both readings turn into ``x / 100``;
    its few labels are read as text, once each.
    """
    # the statistics metric set's relative errors: a coded column (numbers(), codes, labels) of suffix "%"
    if getattr(values, "suffix", None) != "%" or getattr(values, "codes", None) is None:
        return None
    codes = values.codes
    agg = values.numbers() / 100
    pct = agg.copy()
    for code in np.flatnonzero(np.bincount(codes[codes != 0])).tolist():  # np.unique would import numpy.ma
        rows = codes == code
        label_agg, label_pct = _percent_columns([values.labels[code]])
        agg[rows] = label_agg[0]
        pct[rows] = label_pct[0]
    return agg, pct


def _is_inf_nan(values: Sequence[Any]) -> np.ndarray:
    kind, num = _cells.classify_values(values)
    is_float = kind == _cells.FLOAT
    out = np.zeros(len(values), dtype=bool)
    if is_float.any():
        out[is_float] = ~np.isfinite(num[is_float])
    texts = np.flatnonzero(kind == _cells.STR).tolist()
    for i, text in zip(texts, _cells.cells_at(values, texts)):
        out[i] = text.strip().lower() in ("inf", "-inf", "nan")
    return out


class _Groups:
    """Contiguous row segments of one API each."""

    def __init__(self, group_of_row: np.ndarray) -> None:
        n = len(group_of_row)
        change = np.ones(n, dtype=bool)
        if n:
            change[1:] = group_of_row[1:] != group_of_row[:-1]
        self.starts = np.flatnonzero(change)
        self.id = np.cumsum(change) - 1
        self.n = len(self.starts)

    def fold(self, values: np.ndarray, mask: np.ndarray, start: float, use_max: bool) -> np.ndarray:
        if not self.n:
            return np.zeros(0)
        v = np.where(mask, values, np.nan)
        ufunc = np.fmax if use_max else np.fmin
        return ufunc(ufunc.reduceat(v, self.starts), start)

    def first(self, mask: np.ndarray) -> np.ndarray:
        """Index of the first row in each group where ``mask`` holds, or -1."""
        if not self.n:
            return np.zeros(0, dtype=np.int64)
        big = np.iinfo(np.int64).max
        idx = np.where(mask, np.arange(len(mask)), big)
        first = np.minimum.reduceat(idx, self.starts)
        return np.where(first == big, -1, first)


def compute_verdicts(
    mode: str,
    columns: dict[str, list[Any]],
    group_of_row: Sequence[int],
    dtype_equal: Sequence[bool] | None = None,
    cross_framework: bool | None = None,
    unread: Mapping[int, str] | None = None,
    scalar_rtol: float = 0.0,
) -> tuple[list[str], list[str]]:
    """Return the ``Result`` and ``Err_message`` columns for a finished result table.

    ``scalar_rtol``: how far apart (relatively) two number arguments may be and still be the same argument; 0 (as
    msprobe judges): any difference is an inconsistency. Two different programs pass ``forms.SCALAR_RTOL``.

    ``unread``: rows (tensor mode) whose tensor file could not be read → what went wrong. Such a row
    was not compared: it is a ``warning`` whose first message names the file, whatever the other rules
    find (msprobe leaves it ``pass``, as an md5 row without a checksum would not be).

    ``dtype_equal`` (one bool per row) replaces the DType checker's string
    comparison of ``NPU Dtype`` and ``Bench Dtype``; the engine passes it for
    cross-framework pairs, whose dtype names are spelled differently
    (``Float32`` vs ``torch.float32``). ``None`` compares the strings, as msprobe does.
    ``cross_framework`` (default: whether ``dtype_equal`` is given): the two sides are different frameworks,
    whose backward hooks may record other tensors under one name (PyTorch's ``linear`` backward on the
    flattened view, in ``addmm``'s argument order): a backward row whose shapes differ is then a warning that
    says so, never judged on its values (msprobe makes it a shape error).
    """
    names = columns[C.NPU_NAME]
    n = len(names)
    level = np.zeros(n, dtype=np.int8)
    messages: dict[int, list[str]] = {}
    if n == 0:
        return [], []

    def flag(rows: np.ndarray, lvl: int, msg: str) -> None:
        for r in np.flatnonzero(rows) if rows.dtype == bool else rows:
            r = int(r)
            messages.setdefault(r, []).append(msg)
        if rows.dtype == bool:
            level[rows] = np.maximum(level[rows], lvl)
        elif len(rows):
            level[rows] = np.maximum(level[rows], lvl)

    bench_names = columns[C.BENCH_NAME]
    # the per-row tests below are the same operators mapped at C speed (no Python step per row)
    matched = _truths(map(ne, bench_names, repeat(NA)), n) & _truths(map(ne, bench_names, repeat("")), n)

    if mode == MODE_MD5:
        a, b = columns[C.NPU_MD5], columns[C.BENCH_MD5]
        for i in range(n):
            if a[i] != b[i]:
                soft = a[i] in (NA, "Nan", "") or b[i] in (NA, "Nan", "")
                messages.setdefault(i, []).append(M.MSG_MD5_WARN if soft else M.MSG_MD5_ERR)
                level[i] = WARNING if soft else ERROR
        return _finish(level, messages)

    for r, reason in sorted((unread or {}).items()):  # first: it explains every other cell of the row
        messages.setdefault(r, []).append(M.MSG_UNREAD.format(reason))
        level[r] = max(level[r], WARNING)
    groups = _Groups(np.asarray(group_of_row))
    is_out = _truths(map(contains, names, repeat(".output.")), n)
    is_in = ~is_out
    first_in = groups.first(is_in)
    skip_all = np.zeros(groups.n, dtype=bool)
    out_only = np.zeros(groups.n, dtype=bool)
    for g, r in enumerate(first_in):
        if r >= 0:
            parts = names[r].split(".")
            op = parts[1] if len(parts) > 1 else ""
            skip_all[g] = op in SKIP_ALL_OPS
            out_only[g] = op in OUTPUT_ONLY_OPS
    row_skip = skip_all[groups.id]
    row_out_only = out_only[groups.id]
    row_check = ~row_skip & (~row_out_only | is_out)
    apart = np.zeros(n, dtype=bool)  # backward tensors the two frameworks record with other shapes
    folded = np.zeros(n, dtype=bool)  # forward tensors one framework holds with its leading dimensions folded
    if cross_framework is None:
        cross_framework = dtype_equal is not None
    if cross_framework:
        shapes_t, shapes_g = columns[C.NPU_SHAPE], columns[C.BENCH_SHAPE]
        apart = np.array([".backward." in names[i] and shapes_t[i] != shapes_g[i] for i in range(n)], dtype=bool)
        apart &= matched
        folded = matched & ~apart & _folded_same_values(columns, n)
        apart |= folded
    group_check = ~(skip_all | out_only)
    first_out = groups.first(is_out)
    has_out = first_out >= 0

    def group_rows(cond: np.ndarray) -> np.ndarray:
        sel = cond & group_check & has_out
        return first_out[sel]

    # 1 InfNan
    bench_bad = _is_inf_nan(columns[C.BENCH_MAX]) | _is_inf_nan(columns[C.BENCH_MIN])
    npu_bad = _is_inf_nan(columns[C.NPU_MAX]) | _is_inf_nan(columns[C.NPU_MIN])
    flag(row_check & ~bench_bad & npu_bad, ERROR, M.MSG_INF_NAN)
    # 2 OneThousandth / RelativeErr
    if mode == MODE_TENSOR:
        ratio = _agg_values(columns[C.ONE_THOUSANDTH_ERR_RATIO])
        mi = groups.fold(ratio, is_in, 1.0, use_max=False)
        mo = groups.fold(ratio, is_out, 1.0, use_max=False)
        flag(group_rows((mi > 0.9) & (mo < 0.1)), ERROR, M.MSG_ONE_THOUSANDTH)
    elif mode == MODE_STATISTICS:
        norm_agg, pct = _percent_columns(columns[C.NORM_RELATIVE_ERR])
        i_max = np.abs(groups.fold(norm_agg, is_in, 0.0, use_max=True))
        pct = np.abs(pct)
        with np.errstate(invalid="ignore"):
            rows = row_check & is_out & group_check[groups.id] & (i_max[groups.id] < 0.1) & (pct > 0.5)
        flag(rows & ~apart, ERROR, M.MSG_NORM_REL)
    # 3 RequiresGrad: an unknown flag (MindSpore dumps record none) is no inconsistency
    nrg, brg = columns[C.NPU_REQUIRES_GRAD], columns[C.BENCH_REQUIRES_GRAD]
    rg = _truths(map(ne, nrg, brg), n)
    for i in np.flatnonzero(rg).tolist():
        rg[i] = nrg[i] not in UNKNOWN_FLAG and brg[i] not in UNKNOWN_FLAG
    flag(row_check & matched & rg, ERROR, M.MSG_REQUIRES_GRAD)
    # 4 Parameters
    nd, bd = columns[C.NPU_DTYPE], columns[C.BENCH_DTYPE]
    nshape = columns[C.NPU_SHAPE]
    nmax, bmax = columns[C.NPU_MAX], columns[C.BENCH_MAX]
    par = np.zeros(n, dtype=bool)
    scalars = np.flatnonzero(np.asarray(nshape, dtype=object) == "[]").tolist()
    for i, n_max, b_max in zip(scalars, _cells.cells_at(nmax, scalars), _cells.cells_at(bmax, scalars)):
        par[i] = "class" in str(nd[i]) and "class" in str(bd[i]) and n_max != b_max and not (
            scalar_rtol and _same_number(n_max, b_max, scalar_rtol))
    flag(row_check & is_in & matched & par, ERROR, M.MSG_PARAMETERS)
    # 5 DType
    dt = _truths(map(ne, nd, bd), n) if dtype_equal is None else ~_truths(dtype_equal, n)
    for i in np.flatnonzero(dt).tolist():
        dt[i] = "qkv" not in bench_names[i] and "gate_up" not in bench_names[i]
    not_na = _truths(map(ne, names, repeat(NA)), n)
    flag(row_check & matched & not_na & dt, ERROR, M.MSG_DTYPE)
    # 6 Shape
    bshape = columns[C.BENCH_SHAPE]
    sh = _truths(map(ne, nshape, bshape), n)
    flag(row_check & matched & sh & ~apart, ERROR, M.MSG_SHAPE)
    flag(row_check & apart & ~folded, WARNING, M.MSG_SHAPE_RECORDED_APART)
    flag(row_check & folded, WARNING, M.MSG_SHAPE_FOLDED)
    # 7 warnings
    if mode == MODE_TENSOR:
        cos = _agg_values(columns[C.COSINE])
        mi = groups.fold(cos, is_in, 1.0, use_max=False)
        mo = groups.fold(cos, is_out, 1.0, use_max=False)
        flag(group_rows((mi > 0.9) & (mi - mo > 0.1)), WARNING, M.MSG_COSINE_WARN)
    elif mode == MODE_STATISTICS:
        agg = norm_agg
        i = np.abs(groups.fold(agg, is_in, 0.0, use_max=True))
        o = np.abs(groups.fold(agg, is_out, 0.0, use_max=True))
        with np.errstate(divide="ignore", invalid="ignore"):
            cond = ((i == 0) & (o > 0.1)) | ((i != 0) & (o / np.where(i == 0, 1, i) > 10))
        flag(group_rows(cond), WARNING, M.MSG_REL_WARN)
    return _finish(level, messages)


def _truths(values: Any, n: int) -> np.ndarray:
    """The first ``n`` results of a rule's test (bools, an iterable), as a bool array."""
    return np.fromiter(values, dtype=bool, count=n)


def _same_number(a: Any, b: Any, rtol: float) -> bool:
    """Whether two recorded number arguments are one number up to ``rtol`` (``1/math.sqrt(d)`` against ``d**-0.5``);
    booleans and text are never numbers here."""
    if isinstance(a, (bool, str)) or isinstance(b, (bool, str)):
        return False
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return False
    return bool(np.isfinite(x) and np.isfinite(y) and abs(x - y) <= rtol * max(abs(x), abs(y)))


def _finish(level: np.ndarray, messages: dict[int, list[str]]) -> tuple[list[str], list[str]]:
    result = list(map(LEVEL_TEXT.__getitem__, level.tolist()))
    err = ["[]"] * len(result)
    spelled: dict[tuple[str, ...], str] = {}  # a handful of distinct message lists: one string each
    for r, msgs in messages.items():
        key = tuple(msgs)
        text = spelled.get(key)
        if text is None:
            text = spelled[key] = json.dumps(msgs)
        err[r] = text
    return result, err


def msprobe_verdicts(ctx: VerdictContext) -> dict[str, list[str]]:
    """The verdict rule ``msprobe``: ``Result`` and ``Err_message`` as msprobe 26.2.0 judges rows."""
    dtype_equal = dtype_equal_column(ctx.columns, ctx.match.notes.frameworks)
    result, err = compute_verdicts(ctx.mode, ctx.columns, ctx.group_of_row, dtype_equal,
                                   unread=ctx.meta.unread_tensors or None,
                                   scalar_rtol=F.SCALAR_RTOL if ctx.match.notes.two_programs else 0.0)
    return {C.RESULT: result, C.ERR_MESSAGE: err}


def dtype_equal_column(
    columns: dict[str, list[Any]], frameworks: tuple[FrameworkSpec, FrameworkSpec] | None
) -> list[bool] | None:
    """Per row, whether both sides hold the same dtype, for cross-framework pairs only.

    Same-framework pairs return ``None`` (the DType checker compares the strings).
    Across frameworks the two frameworks' specs decide (:meth:`FrameworkSpec.same_dtype`):
    ``Float32`` and ``torch.float32`` are the same dtype, and so are two integer dtypes.
    """
    if frameworks is None or frameworks[0] is frameworks[1]:
        return None
    tf, gf = frameworks
    return [
        a == b or (a != NA and b != NA and tf.same_dtype(a, gf, b))
        for a, b in zip(columns[C.NPU_DTYPE], columns[C.BENCH_DTYPE])
    ]


def _folded_same_values(columns: Mapping[str, Sequence[Any]], n: int) -> np.ndarray:
    """Rows whose two shapes hold the same elements with the same last dimension, the leading dimensions folded
    otherwise (one framework's layer flattens batch and sequence around its matmul), and whose statistics agree.
    A shape that gains or loses a last dimension, or ends in a 1 (``[3, 6, 1]`` against ``[3, 6, 1, 1]``, which
    broadcast otherwise), is no such row."""
    shapes_t, shapes_g = columns[C.NPU_SHAPE], columns[C.BENCH_SHAPE]
    stats = [(columns.get(C.stat_column(C.NPU, s)), columns.get(C.stat_column(C.BENCH, s))) for s in C.STAT_NAMES]
    out = np.zeros(n, dtype=bool)
    if any(a is None or b is None for a, b in stats):
        return out
    for i in range(n):
        a, b = str(shapes_t[i]), str(shapes_g[i])
        if a == b or not F.same_elements_other_shape(a, b):
            continue
        da, db = F.shape_dims(a), F.shape_dims(b)
        if not da or not db or da[-1] != db[-1] or da[-1] == 1:
            continue
        out[i] = F.stats_agree([_float(t[i]) for t, _ in stats], [_float(g[i]) for _, g in stats], F.FORM_RTOL)
    return out


def _float(cell: Any) -> float | None:
    try:
        return float(cell)
    except (TypeError, ValueError):
        return None
