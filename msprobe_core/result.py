"""Assembling the result table: columns in msprobe's order, cell values as it writes them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import result_columns as C
from .model import MODE_TENSOR, NA, DumpTable, MatchResult, ResultNotes

if TYPE_CHECKING:
    from .text.columns import StackColumn

# the column groups, as the registry declares them (kept importable from here)
COMMON_COLUMNS = C.COMMON_COLUMNS
TENSOR_METRIC_COLUMNS = C.TENSOR_METRIC_COLUMNS
STATS_METRIC_COLUMNS = C.STATS_METRIC_COLUMNS
STAT_VALUE_COLUMNS = C.STAT_VALUE_COLUMNS
MD5_COLUMNS = C.MD5_COLUMNS
TAIL_COLUMNS = C.TAIL_COLUMNS
STACK_COLUMN = C.STACK_INFO


def result_columns(mode: str, with_stack: bool, extra_metrics: list[str] | None = None,
                   columns: C.ColumnRegistry | None = None) -> list[str]:
    """Column headers, in order, for a result table of ``mode`` (``extra_metrics``: plugin tensor metrics).

    ``columns``: the registry to read (the plugin host's; default the core's columns).
    """
    registry = C.CORE_COLUMNS if columns is None else columns
    return registry.layout(mode, with_optional=(STACK_COLUMN,) if with_stack else (),
                           extra=extra_metrics if mode == MODE_TENSOR and extra_metrics else ())


@dataclass
class ResultTable:
    """A finished (or finishing) result: ordered columns of cell values, plus provenance.

    A column is a list of cells or a lean column of :mod:`msprobe_core.text.columns`
    (statistics diffs, relative errors, stack text), a Sequence that reads as that list.
    Columns are not changed in place: a column may be shared with a dump table.
    """

    mode: str
    columns: list[str]
    data: dict[str, list[Any]]
    group_of_row: list[int]
    pairs: MatchResult | None = None
    #: what the stages say about the result beyond its cells (:class:`~msprobe_core.model.ResultNotes`)
    meta: ResultNotes = field(default_factory=ResultNotes)

    def __len__(self) -> int:
        return len(self.group_of_row)

    def rows(self):
        """Iterate rows as lists of cells in column order."""
        cols = [self.data[c] for c in self.columns]
        return zip(*cols)

    def to_dataframe(self):
        """The table as a pandas DataFrame (object columns, values as written)."""
        import pandas as pd

        # lean columns (msprobe_core.text.columns) as the lists they stand for: pandas sees the same cells either way
        data = {c: self.data[c] if isinstance(self.data[c], list) else list(self.data[c]) for c in self.columns}
        return pd.DataFrame(data, columns=self.columns)


def _is_identity(idx: list[int], n: int) -> bool:
    """Whether ``idx`` is ``0, 1, …, n-1`` (every row of a table, in order: the usual target side)."""
    return len(idx) == n and (n == 0 or (idx[0] == 0 and idx[-1] == n - 1 and idx == list(range(n))))


def _pick(
    values: Sequence[Any], idx: list[int], missing: Any = NA, none: Any = NA, identity: bool = False
) -> Sequence[Any]:
    """``values[j]`` for each ``j`` of ``idx`` (``missing`` where ``j`` is -1, ``none`` for ``None`` values).

    A list, or what the ``pick`` of a column held as arrays gives (the default plugin ``fast_scan``'s statistics).

    ``identity`` says that ``idx`` is every row in order (:func:`_is_identity`): a list
    needing no change is then returned itself, not copied (result columns are not
    changed in place; the dump table and the result share it).
    """
    if not idx:
        return []
    pick = getattr(values, "pick", None)  # a statistics column held as arrays (a loader's lean column)
    if pick is not None:
        return pick(idx, missing, none, identity)
    first = idx[0]
    if isinstance(values, list) and 0 <= first and idx[-1] - first == len(idx) - 1 and (
            identity or idx == list(range(first, first + len(idx)))):
        # consecutive rows (every row, or the usual part of a big result): those only, no per-row lookup
        seg = values if identity else values[first:first + len(idx)]
        if none is None or None not in seg:
            return seg
        return [none] * len(seg) if seg.count(None) == len(seg) else [none if v is None else v for v in seg]
    if len(idx) * 4 < len(values):  # a few rows of a big table (a part built by a tail, the chunked plugin's): look at those only
        if none is None:
            return [values[j] if j >= 0 else missing for j in idx]
        return [missing if j < 0 else none if values[j] is None else values[j] for j in idx]
    has_none = none is not None and None in values
    source = [none if v is None else v for v in values] if has_none else list(values)
    source.append(missing)  # idx -1 picks this last cell: the missing value, with no per-row test
    return list(map(source.__getitem__, idx))


def numeric_column(values: Sequence[Any], whole: bool | None = None) -> Sequence[Any]:
    """A statistics column as msprobe's table holds it: all ints become floats when the column is all numbers.

    msprobe builds each statistics column with pandas, which stores a column holding
    only ints and floats (no text, ``N/A``, ``None`` or bool) as float64, so an int
    statistic next to float ones reads ``63.0``; the statistics diffs and the
    written cells then see that float. ``whole``: for a part of a bigger column,
    what :func:`all_numbers` says of the whole (the decision is the whole column's).
    """
    numeric = getattr(values, "numeric", None)  # a statistics column held as arrays
    if numeric is not None:
        return numeric(whole)
    if whole is None:
        whole = all_numbers(values)
    return [float(v) for v in values] if whole else values


def all_numbers(values: Sequence[Any]) -> bool:
    """Whether a statistics column holds only ints and floats, at least one float (pandas makes it float64)."""
    if hasattr(values, "all_numbers"):
        return values.all_numbers()
    has_float = False
    for v in values:
        t = type(v)
        if t is float:
            has_float = True
        elif t is not int:
            return False
    return has_float


#: (DumpTable statistics field, the statistic as the columns name it)
_STAT_FIELDS = tuple(zip(("max", "min", "mean", "norm"), C.STAT_NAMES))


def _stat_columns(target: DumpTable, golden: DumpTable, match: MatchResult, identity: tuple[bool, bool] | None = None):
    """(column name, picked cells) of the eight statistics columns, in the table's order.

    ``identity``: :func:`_is_identity` of both sides' rows, when the caller knows it already.
    """
    ti, gi = match.target, match.golden
    t_all, g_all = identity or (_is_identity(ti, len(target)), _is_identity(gi, len(golden)))
    for side, table, idx, every in ((C.NPU, target, ti, t_all), (C.BENCH, golden, gi, g_all)):
        for attr, label in _STAT_FIELDS:
            yield C.stat_column(side, label), _pick(getattr(table, attr), idx, none=None, identity=every)


def whole_numbers(target: DumpTable, golden: DumpTable, match: MatchResult) -> dict[str, bool]:
    """Whether each statistics column of the result of ``match`` holds only numbers (:func:`all_numbers`): the
    column-wide facts a part of the result is built with (``MatchNotes.whole_numbers``) so that its cells are
    spelled as the whole table's are."""
    return {name: all_numbers(cells) for name, cells in _stat_columns(target, golden, match)}


def base_columns(target: DumpTable, golden: DumpTable, match: MatchResult) -> dict[str, list[Any]]:
    """Name, dtype, shape, requires_grad and statistics cells of both sides."""
    ti, gi = match.target, match.golden
    t_all, g_all = _is_identity(ti, len(target)), _is_identity(gi, len(golden))
    data: dict[str, list[Any]] = {
        C.NPU_NAME: _pick(target.name, ti, identity=t_all),
        C.BENCH_NAME: _pick(golden.name, gi, identity=g_all),
        C.NPU_DTYPE: _pick(target.dtype, ti, identity=t_all),
        C.BENCH_DTYPE: _pick(golden.dtype, gi, identity=g_all),
        C.NPU_SHAPE: _pick(target.shape, ti, identity=t_all),
        C.BENCH_SHAPE: _pick(golden.shape, gi, identity=g_all),
        C.NPU_REQUIRES_GRAD: _pick(target.requires_grad, ti, identity=t_all),
        C.BENCH_REQUIRES_GRAD: _pick(golden.requires_grad, gi, identity=g_all),
    }
    whole = match.notes.whole_numbers or {}
    for name, cells in _stat_columns(target, golden, match, (t_all, g_all)):
        data[name] = numeric_column(cells, whole.get(name))
    data[C.NPU_MD5] = _pick(target.md5, ti, identity=t_all)
    data[C.BENCH_MD5] = _pick(golden.md5, gi, identity=g_all)
    data[C.REQUIRES_GRAD_CONSISTENT] = [
        a == b for a, b in zip(data[C.NPU_REQUIRES_GRAD], data[C.BENCH_REQUIRES_GRAD])
    ]
    return data


def stack_column(target: DumpTable, match: MatchResult) -> StackColumn:
    """``NPU_Stack_Info``: the stack of each API on its first row only, ``N/A`` elsewhere (spelled when read)."""
    import numpy as np

    from .text.columns import StackColumn  # lazily, as numpy: see the module's imports

    stack = target.stack or {}
    # only the rows of this result: a part of a big result (a tail) must not convert the whole table's column
    apis = np.fromiter(map(target.row_api.__getitem__, match.target), dtype=np.int64, count=len(match.target))
    first = np.ones(len(apis), dtype=bool)  # the first row of each run of one API carries its stack
    first[1:] = apis[1:] != apis[:-1]
    lines: list[Any] = [None] * len(apis)
    entries = target.apis
    for i, api in zip(np.flatnonzero(first).tolist(), apis[first].tolist()):
        lines[i] = stack.get(entries[api].key)
    return StackColumn(lines)


def data_name_column(target: DumpTable, golden: DumpTable, match: MatchResult) -> list[str]:
    """``Data_name``: ``str([npu_file, bench_file])`` per row."""
    return [
        str([target.data_name[i], golden.data_name[j] if j >= 0 else NA])
        for i, j in zip(match.target, match.golden)
    ]
