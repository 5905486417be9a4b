"""The columns of the classic result table, as msprobe 8.3.3 writes them (spec compare-legacy.md §5-§6).

The classic metric sets (``MetricSpec(..., whole_table=True)``) of this plugin build every
column of a classic table but the verdicts, from the core's loaded tables and matched row
pairs: ``None``-valued dtypes/shapes/statistics become the text ``None``, missing bench cells
``N/A``, statistics diffs are numbers with ``x%`` relative errors. The verdict columns
(``Result``, ``Err_message``, ``Accuracy Reached or Not``) come from the verdict rules
(:mod:`.verdicts`), which the core places after ``Requires_grad Consistent``.
"""

from __future__ import annotations

import math
from typing import Any

from msprobe_core.plugin import (
    MODE_MD5,
    MODE_STATISTICS,
    MODE_TENSOR,
    NA,
    DumpTable,
    MatchResult,
    data_name_column,
    pandas_strtod,
    stack_column,
)
from msprobe_core.plugin import result_columns as C

from .vocabulary import (  # noqa: F401 - the table's names, imported from here by the other modules
    ACCURACY,
    BASIC,
    DATA_NAME,
    DIFFERENT,
    EPSILON,
    ERR,
    MAGNITUDE,
    MD5_COLUMNS,
    NAN_TEXT,
    NEED_CHECK,
    NO_BENCH,
    PASS,
    REQ_GRAD_CONSIST,
    REQ_GRAD_MSG,
    RESULT,
    STACK,
    STAT_VALUES,
    STATS_DIFFS,
    TENSOR_METRICS,
    VERDICT_COLUMNS,
    WARNING,
)


def header(mode: str, stack: bool) -> list[str]:
    """The 8.3.3 columns of a result table of ``mode`` (§5.1)."""
    if mode == MODE_TENSOR:
        cols = BASIC + TENSOR_METRICS + STAT_VALUES + [REQ_GRAD_CONSIST, ACCURACY, ERR]
    elif mode == MODE_STATISTICS:
        cols = BASIC + STATS_DIFFS + STAT_VALUES + [REQ_GRAD_CONSIST, RESULT, ERR]
    else:
        cols = BASIC + MD5_COLUMNS + [REQ_GRAD_CONSIST, RESULT]
    if stack:
        cols.append(STACK)
    if mode == MODE_TENSOR:
        cols.append(DATA_NAME)
    return cols


def _text(value: str | None) -> str:
    return "None" if value is None else value


def _stat(value: Any) -> Any:
    """A statistic cell as 8.3.3 keeps it (``None`` → ``'None'``, NaN → ``'Nan'``)."""
    if value is None:
        return "None"
    if isinstance(value, float) and value != value:
        return NAN_TEXT
    if isinstance(value, str) and value.lower() == "nan":
        return NAN_TEXT
    return value


def _number(value: Any) -> float | None:
    """``pd.to_numeric(str(value), errors='coerce')`` as pandas 2.0 computes it; ``None`` when not numeric."""
    return pandas_strtod(str(value))


def _is_num_or_nan(value: Any) -> bool:
    return _number(value) is not None or str(value).lower() == "nan"


def base_columns(target: DumpTable, golden: DumpTable, match: MatchResult) -> dict[str, list[Any]]:
    """Name, dtype, shape, requires_grad and statistics (or md5) cells of every matched row, 8.3.3's spelling.

    Tensor mode also gets ``_npu_data``/``_bench_data``, the tensor file of each side (not columns).
    """
    mode = target.mode
    ti, gi = match.target, match.golden
    data: dict[str, list[Any]] = {c: [] for c in BASIC}
    if mode == MODE_MD5:
        data.update({c: [] for c in MD5_COLUMNS})
    else:
        data.update({c: [] for c in STAT_VALUES})
    consistent = data[REQ_GRAD_CONSIST] = []
    for i, j in zip(ti, gi):
        has = j >= 0
        data[C.NPU_NAME].append(target.name[i])
        data[C.NPU_DTYPE].append(_text(target.dtype[i]))
        data[C.NPU_SHAPE].append(_text(target.shape[i]))
        npu_rg = NA if target.requires_grad[i] is None else target.requires_grad[i]
        data[C.NPU_REQUIRES_GRAD].append(npu_rg)
        if has:
            data[C.BENCH_NAME].append(golden.name[j])
            data[C.BENCH_DTYPE].append(_text(golden.dtype[j]))
            data[C.BENCH_SHAPE].append(_text(golden.shape[j]))
            bench_rg = NA if golden.requires_grad[j] is None else golden.requires_grad[j]
        else:
            for c in (C.BENCH_NAME, C.BENCH_DTYPE, C.BENCH_SHAPE):
                data[c].append(NA)
            bench_rg = NA
        data[C.BENCH_REQUIRES_GRAD].append(bench_rg)
        consistent.append(npu_rg == bench_rg)
        if mode == MODE_MD5:
            data[C.NPU_MD5].append(NA if target.md5[i] is None else target.md5[i])
            data[C.BENCH_MD5].append(NA if not has or golden.md5[j] is None else golden.md5[j])
        else:
            for side, table, k in (("NPU", target, i), ("Bench", golden, j)):
                for stat, values in (("max", table.max), ("min", table.min), ("mean", table.mean), ("l2norm", table.norm)):
                    data[f"{side} {stat}"].append(_stat(values[k]) if k >= 0 else NA)
    if mode == MODE_TENSOR:
        data["_npu_data"] = [target.data_name[i] for i in ti]
        data["_bench_data"] = [golden.data_name[j] if j >= 0 else NA for j in gi]
    return data


def ordered(data: dict[str, Any], mode: str, stack: bool) -> dict[str, Any]:
    """The columns of ``data`` in 8.3.3's order (:func:`header`); the verdict columns are left to the verdict rules."""
    verdicts = VERDICT_COLUMNS[mode]
    return {c: data[c] for c in header(mode, stack) if c not in verdicts}


def with_stack_and_data_name(data: dict[str, Any], target: DumpTable, golden: DumpTable, match: MatchResult,
                             stack: bool) -> None:
    """Add ``NPU_Stack_Info`` (with ``stack``: the stack on each API's first row) and, in tensor mode, ``Data_name``."""
    if stack:
        data[STACK] = stack_column(target, match)
    if target.mode == MODE_TENSOR:
        data[DATA_NAME] = data_name_column(target, golden, match)


def _pct(value: float) -> str:
    return f"{repr(float(abs(value)))}%"


def stats_columns(data: dict[str, list[Any]], matched: list[bool]) -> list[bool]:
    """Statistics mode: the diff and relative-error cells (§6.1); returns, per row, whether a diff is
    large against its statistic (``Result`` ``Warning``, decided by the verdict rule)."""
    n = len(matched)
    warn = [False] * n
    for stat, diff_col, rel_col in (
        ("max", C.MAX_DIFF, C.MAX_RELATIVE_ERR),
        ("min", C.MIN_DIFF, C.MIN_RELATIVE_ERR),
        ("mean", C.MEAN_DIFF, C.MEAN_RELATIVE_ERR),
        ("l2norm", C.L2NORM_DIFF, C.NORM_RELATIVE_ERR),
    ):
        npu, bench = data[f"NPU {stat}"], data[f"Bench {stat}"]
        diffs, rels = [], []
        for k in range(n):
            a, b = npu[k], bench[k]
            if not matched[k] or not (_is_num_or_nan(a) and _is_num_or_nan(b)):
                diffs.append(NA)
                rels.append(NA)
                continue
            x, y = _number(a), _number(b)
            d = math.nan if x is None or y is None else x - y
            if d != d:
                diffs.append(NAN_TEXT)
                rels.append(NAN_TEXT)
                continue
            diffs.append(d)
            if y == 0:
                rels.append(NA)
            else:
                rels.append(_pct(d / float(b) * 100))
            top = max(x, y) if x == x and y == y else math.nan
            dd = _number(repr(d))
            if dd is not None and abs(dd) / (abs(top) + EPSILON) > MAGNITUDE:
                warn[k] = True
        data[diff_col] = diffs
        data[rel_col] = rels
    return warn


def classic_columns(ctx: Any) -> dict[str, list[Any]]:
    """The classic metric set of every dump mode (``MetricSpec(whole_table=True)``): all columns but the verdicts.

    ``ctx`` is the core's :class:`~msprobe_core.plugin.MetricContext`. Statistics mode leaves its
    per-row ``Warning`` findings in its :class:`~.settings.ClassicFindings` for the verdict rule.
    """
    from .settings import findings_of, settings_of

    settings = settings_of(ctx.options)
    target, golden, match, options = ctx.target, ctx.golden, ctx.match, ctx.options
    data = base_columns(target, golden, match)
    matched = [j >= 0 for j in match.golden]
    if target.mode == MODE_STATISTICS:
        findings_of(ctx.meta).magnitude_warnings = stats_columns(data, matched)
    elif target.mode == MODE_TENSOR:
        from .tensor import tensor_columns

        tensor_columns(data, matched, target, golden, options.workers, getattr(options, "fuzzy_match", False),
                       getattr(options, "tensor_log", False))
    with_stack_and_data_name(data, target, golden, match, settings.stack)
    return ordered(data, target.mode, settings.stack)
