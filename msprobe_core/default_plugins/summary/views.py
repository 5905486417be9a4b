"""One result table as its cells are written (:class:`ResultView`), and reading those cells.

Everything the summary and the report compute works on a :class:`ResultView`, the table's
cells as the CSV spells them (strings), so a summary made right after a compare and one made
later from the result files (:mod:`msprobe_core.default_plugins.summary.result_files`) are identical. The
helpers here read cells: numbers, verdicts, error messages, the node a row belongs to.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msprobe_core.plugin import MODE_MD5, MODE_STATISTICS, MODE_TENSOR
from msprobe_core.plugin import result_columns as C

from .modes import mode_frameworks, recognised_mode, result_modes, row_names, verdict_columns

if TYPE_CHECKING:
    from msprobe_core.plugin import RowNames

#: Verdict levels, mildest first; ``--fail-on`` compares against this order.
VERDICTS = ("pass", "warning", "error")
VERDICT_LEVEL = {v: i for i, v in enumerate(VERDICTS)}


def plot_metrics(mode: str) -> tuple[str, ...]:
    """The metrics plotted along execution order for ``mode`` (the first one is also the heat-map default)."""
    return C.known_columns().plot_metrics(mode)


def main_metric(mode: str) -> tuple[str, bool] | None:
    """(main metric, True when larger is worse) used to rank the worst rows of ``mode``."""
    return C.known_columns().main_metric(mode)


@dataclass
class ResultHead:
    """What names one result and where it came from: the fields its summary partial
    (:class:`~msprobe_core.default_plugins.summary.accumulate.ViewPartial`) and its report sample
    (:class:`~msprobe_core.default_plugins.report.sampling.ViewSample`) share with the :class:`ResultView` they stand for."""

    label: str
    mode: str
    columns: list[str]
    files: list[Path] = field(default_factory=list)
    frameworks: tuple[str, str] | None = None
    level: str | None = None
    dump_mode: str | None = None


def head_of(view: Any) -> tuple:
    """The :class:`ResultHead` fields of a view or chunk, in order (lists copied)."""
    return (view.label, view.mode, list(view.columns), list(view.files), view.frameworks, view.level,
            view.dump_mode)


@dataclass
class ResultView:
    """One result table, cells spelled as in the CSV, plus where it came from.

    ``label`` names the part of a multi-part run (``rank1``, ``graph/step0/rank0``,
    ``rank 0 step 1``); it is empty for a single pair of files. ``mode`` is how the
    table compares its rows (it decides the metrics); ``dump_mode`` is the mode of the
    dumps themselves when that differs (``-da`` compares a tensor dump on its statistics).
    """

    label: str
    mode: str
    columns: list[str]
    cells: Mapping[str, list[str]]
    files: list[Path] = field(default_factory=list)
    frameworks: tuple[str, str] | None = None
    level: str | None = None
    dump_mode: str | None = None
    _verdicts: list[str] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.cells[self.columns[0]]) if self.columns else 0

    def column(self, name: str) -> list[str] | None:
        """The cells of column ``name`` (``None`` when the table has no such column)."""
        return self.cells.get(name)

    @property
    def names(self) -> list[str]:
        """``NPU Name`` of every row."""
        return self.cells.get(C.NPU_NAME) or [""] * len(self)

    def verdicts(self) -> list[str]:
        """``pass``/``warning``/``error`` of every row (see :func:`row_verdicts`)."""
        if self._verdicts is None:
            self._verdicts = row_verdicts(self)
        return self._verdicts

    def invalidate(self) -> None:
        """Forget what was derived from the cells (call after changing them)."""
        self._verdicts = None
        self.__dict__.pop("_numbers", None)
        self.__dict__.pop("_unmatched", None)

    def numbers(self, name: str) -> list[float | None] | None:
        """Column ``name`` parsed with :func:`to_number` (cached; ``None`` when there is no such column)."""
        cache = self.__dict__.setdefault("_numbers", {})
        if name not in cache:
            fast = getattr(self.cells, "numbers", None)
            parsed = fast(name) if fast is not None else None
            if parsed is None:
                cells = self.cells.get(name)
                parsed = None if cells is None else [to_number(c) for c in cells]
            cache[name] = parsed
        return cache[name]

    def order(self) -> list[int]:
        """Row indices in execution order.

        Dump tables are written in execution order already; a plugin's mode whose rows are
        named by their files (``MetricSpec.row_names``) may sort them otherwise, and its row
        names' grammar puts them back (:meth:`~msprobe_core.host.specs.RowNames.order_key`).
        """
        grammar = row_names(self.mode)
        if grammar is None:
            return list(range(len(self)))
        stamps = [(grammar.order_key(name), i) for i, name in enumerate(self.names)]
        return [i for _, i in sorted(stamps)]

    def unmatched(self) -> list[bool]:
        """True for rows whose golden side is missing (``Bench Name`` is ``N/A``; cached like :meth:`verdicts`)."""
        cached = self.__dict__.get("_unmatched")
        if cached is None:
            bench = self.cells.get(C.BENCH_NAME)
            if bench is None:
                cached = [False] * len(self)
            else:
                cached = list(map(_UNMATCHED.__contains__, map(str.strip, bench)))
            self.__dict__["_unmatched"] = cached
        return cached


_UNMATCHED = frozenset({"N/A", ""})


def detect_mode(columns: Sequence[str]) -> str:
    """The dump mode of a result table, from its header: a plugin's mode whose metric set recognises it
    (``MetricSpec.recognizes``), else the core's mode its metric columns say."""
    plugin_mode = recognised_mode(columns)
    if plugin_mode is not None:
        return plugin_mode
    cols = set(columns)
    if C.COSINE in cols:
        return MODE_TENSOR
    if C.MAX_DIFF in cols:
        return MODE_STATISTICS
    if C.NPU_MD5 in cols:
        return MODE_MD5
    return "unknown"


class SpelledColumns(Mapping[str, list[str]]):
    """The columns of an in-memory result, each spelled as in the CSV only when first read.

    A summary reads a handful of columns of a table that may hold millions of cells;
    spelling all of them again after the writer did (what a plain dict would need)
    cost as much as writing the file.
    """

    def __init__(self, data: Mapping[str, Sequence[Any]], columns: Sequence[str], start: int = 0,
                 stop: int | None = None) -> None:
        self._data = data
        self._columns = list(columns)
        self._spelled: dict[str, list[str]] = {}
        #: the rows ``start:stop`` of the table's columns (``stop`` ``None``: to the end), see :meth:`rows`
        self._range = (start, stop)

    def rows(self, start: int, stop: int) -> SpelledColumns:
        """The cells of rows ``start:stop`` (relative to these cells), spelled only when read, as these are."""
        base = self._range[0]
        sub = SpelledColumns(self._data, self._columns, base + start, base + stop)
        # what these cells spelled already, sliced: a column's cells are the same spelled whole or by rows
        sub._spelled = {name: cells[start:stop] for name, cells in self._spelled.items()}
        return sub

    def __getitem__(self, name: str) -> list[str]:
        cells = self._spelled.get(name)
        if cells is None:
            if name not in self._data or name not in self._columns:
                raise KeyError(name)
            from msprobe_core.plugin import csv_column

            column = self._data[name]
            start, stop = self._range
            if start == 0 and stop is None:
                cells = csv_column(column)
            else:
                spell = getattr(column, "csv_texts", None)  # a lean column spells just these rows
                cells = spell(start, stop) if spell is not None else csv_column(column[start:stop])
            self._spelled[name] = cells
        return cells

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def numbers(self, name: str) -> list[float | None] | None:
        """Column ``name`` as :func:`to_number` reads its cells, straight from a column that keeps its numbers
        (its ``csv_numbers``: the statistics held as arrays, the statistics diffs); ``None`` for any other column."""
        column = self._data.get(name) if name in self._columns else None
        read_back = getattr(column, "csv_numbers", None)  # a lean column of numbers reads its own
        if read_back is not None:
            return read_back(*self._range, to_number)
        return None

    def texts_at(self, name: str, rows: Sequence[int]) -> list[str]:
        """Cells ``rows`` (ascending, relative to these cells) of column ``name``, spelled as :meth:`__getitem__`
        spells them, without spelling the other rows (the HTML report of a large result keeps a few)."""
        spelled = self._spelled.get(name)
        if spelled is not None:
            return [spelled[i] for i in rows]
        if name not in self._data or name not in self._columns:
            raise KeyError(name)
        from msprobe_core.plugin import csv_column

        base = self._range[0]
        at = [base + i for i in rows]
        column = self._data[name]
        spell_at = getattr(column, "csv_texts_at", None)  # a column held as arrays: these rows, as it spells them
        if spell_at is not None:
            return spell_at(at)
        spell = getattr(column, "csv_texts", None)
        if spell is None:  # a list or an array: csv_column spells cell by cell, whichever cells it is given
            return csv_column([column[i] for i in at])
        out: list[str] = []  # another lean column: its own spelling, run by run of consecutive rows
        k = 0
        while k < len(at):
            j = k + 1
            while j < len(at) and at[j] == at[j - 1] + 1:
                j += 1
            out += spell(at[k], at[j - 1] + 1)
            k = j
        return out

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)


def view_from_table(table: Any, label: str = "", files: Iterable[Path] = ()) -> ResultView:
    """A view of an in-memory :class:`~msprobe_core.result.ResultTable` (cells spelled as in the CSV, lazily)."""
    columns = [str(c) for c in table.columns]
    cells = SpelledColumns(table.data, columns)
    meta = getattr(table, "meta", None)
    specs = getattr(getattr(getattr(table, "pairs", None), "notes", None), "frameworks", None)
    fw = tuple(getattr(s, "name", str(s)) for s in specs) if specs and len(specs) == 2 else None
    mode = table.mode if table.mode in result_modes() else detect_mode(columns)
    if not fw:
        fw = guess_frameworks(cells, mode)
    dump_mode = getattr(meta, "dump_mode", None)
    return ResultView(label, mode, columns, cells, list(files), tuple(fw) if fw else None, None,
                      dump_mode if dump_mode and dump_mode != mode else None)


def guess_frameworks(cells: Mapping[str, list[str]], mode: str = "") -> tuple[str, str] | None:
    """(target, golden) framework names guessed from the dtype spellings (``torch.*`` / ``Float32``):
    the first registered framework (the default one first) whose spec knows a dtype of the column.

    A mode only one framework dumps has them from its metric set (``MetricSpec.frameworks``).
    """
    declared = mode_frameworks(mode)
    if declared is not None:
        return declared
    specs = framework_specs()

    def guess(col: str) -> str:
        for v in (cells.get(col) or [])[:2000]:
            for spec in specs:
                if spec.dtype_info(v) is not None:
                    return spec.name
        return ""

    t, g = guess(C.NPU_DTYPE), guess(C.BENCH_DTYPE)
    return (t, g) if t or g else None


def framework_specs() -> list[Any]:
    """The run's framework specs, the default one first (they know every dtype; none outside a run)."""
    from msprobe_core.plugin import run_host

    host = run_host()
    return [] if host is None else sorted(host.frameworks, key=lambda f: not f.is_default)


def to_number(text: str) -> float | None:
    """A cell as a number: ``12.5%`` is 0.125, ``inf``/`` -inf`` are infinite; other text is ``None``."""
    s = text.strip()
    if not s:
        return None
    scale = 1.0
    if s.endswith("%"):
        s, scale = s[:-1], 0.01
    try:
        v = float(s)
    except ValueError:
        return None
    if v != v:
        return None
    return v * scale


def node_of(name: str, grammar: RowNames | None = None) -> tuple[str, str]:
    """The API/module call a row belongs to, and its direction (``forward``/``backward``/``-``).

    ``Functional.linear.0.forward.input.1`` → ``Functional.linear.0.forward``;
    ``Module.fc.Linear.forward.0.output.0`` → ``Module.fc.Linear.forward.0``;
    ``Module.fc.Linear.parameters_grad.weight`` → ``Module.fc.Linear.parameters_grad`` (backward);
    a row of a mode named by its files: what its ``grammar`` (:func:`view_grammar`) says; anything else is
    its own node.
    """
    found = grammar.node(name) if grammar is not None else None
    if found is not None:
        return found
    tokens = name.split(".")
    for i in range(len(tokens) - 1, -1, -1):
        tok = tokens[i]
        if tok in ("forward", "backward"):
            end = i + 1
            if end + 1 < len(tokens) and tokens[end].isdigit() and tokens[end + 1] in ("input", "output", "parameters"):
                end += 1
            return ".".join(tokens[:end]), tok
        if tok == "parameters_grad":
            return ".".join(tokens[: i + 1]), "backward"
    if tokens and tokens[-1] == "debug":
        return name, ("backward" if "grad" in name else "forward")
    return name, "-"


def verdict_of_result(text: str) -> str:
    """The verdict a ``Result`` cell stands for (``pass``/``warning``/``error``; classic spellings folded in)."""
    v = text.strip().lower()
    if v in ("error", "different", "fail", "failed"):
        return "error"
    if v == "warning":
        return "warning"
    return "pass"


def row_verdicts(view: ResultView) -> list[str]:
    """Each row's verdict: the ``Result`` column, raised by each verdict column a plugin declares with
    its warning and error cells (``ColumnSpec.levels``).

    Classic spellings are folded in: ``Different`` (md5) is an error, ``Warning`` a
    warning, an empty or ``N/A`` Result a pass.
    """
    n = len(view)
    out = ["pass"] * n
    res = view.column(C.RESULT)
    if res is not None:
        memo: dict[str, str] = {}  # a Result column holds a handful of distinct texts
        for v in set(res):
            memo[v] = verdict_of_result(v)
        out = list(map(memo.__getitem__, res))
    for spec in verdict_columns():
        cells = view.column(spec.name)
        if cells is None:
            continue
        levels = {cell.lower(): level for cell, level in spec.levels}
        for i, v in enumerate(cells):
            level = levels.get(v.strip().lower(), "pass")
            if VERDICT_LEVEL[level] > VERDICT_LEVEL[out[i]]:
                out[i] = level
    return out


def levelled_verdict(view: ResultView) -> str | None:
    """The first verdict column of ``view`` that a plugin declares with levels (``None``: none)."""
    return next((spec.name for spec in verdict_columns() if view.column(spec.name) is not None), None)


def view_grammar(view: ResultView) -> RowNames | None:
    """The row-name grammar of ``view``'s mode (``None``: dump names, see :func:`node_of`)."""
    return row_names(view.mode)


def err_messages(text: str) -> list[str]:
    """The messages of an ``Err_message`` cell (a JSON array in 26.x, free text in the classic tables)."""
    s = text.strip()
    if not s or s == "[]":
        return []
    if s.startswith("["):
        try:
            val = json.loads(s)
            if isinstance(val, list):
                return [str(x) for x in val]
        except ValueError:
            pass
    return [line.strip() for line in s.splitlines() if line.strip()]
