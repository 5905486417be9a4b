"""What a finished compare says, in a few lines: verdict counts, worst rows, first divergence, files.

Everything here works on :class:`ResultView` — one result table as its cells
are written in the CSV (strings) — so a summary or report made right after a
compare and one made later from the CSV/xlsx files (``msprobe report``) are
identical. The same summary feeds the console block printed after every
compare, ``--json-summary`` and the HTML report.
"""

from __future__ import annotations

import csv
import heapq
import json
import math
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import result_columns as C
from ..errors import InputError
from ..model import MODE_KERNEL, MODE_MD5, MODE_STATISTICS, MODE_TENSOR
from ..result_columns import known_columns

#: Verdict levels, mildest first; ``--fail-on`` compares against this order.
VERDICTS = ("pass", "warning", "error")
VERDICT_LEVEL = {v: i for i, v in enumerate(VERDICTS)}

#: Thresholds of the built-in first-divergence rule (used until/unless ``-da`` gives an answer).
COSINE_MIN = 0.99
COSINE_HARD_MIN = 0.9
MAX_ABS_ERR_MIN = 0.001
MAX_ABS_ERR_HARD = 1.0
NORM_REL_ERR_MAX = 0.01

#: the dump modes a result table can have
MODES = (MODE_TENSOR, MODE_STATISTICS, MODE_MD5, MODE_KERNEL)


def plot_metrics(mode: str) -> tuple[str, ...]:
    """The metrics plotted along execution order for ``mode`` (the first one is also the heat-map default)."""
    return known_columns().plot_metrics(mode)


def main_metric(mode: str) -> tuple[str, bool] | None:
    """(main metric, True when larger is worse) used to rank the worst rows of ``mode``."""
    return known_columns().main_metric(mode)


_KERNEL_FILE = re.compile(
    r"^(?P<node>.+)\.\d+\.\d+\.(?P<stamp>\d+)\.(?:input|output)\.\d+\.[^.]+\.[^.]+\.npy$"
)


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

        Dump tables are written in execution order already; kernel tables are sorted
        by name, so their rows are put back in the order of the dump timestamp each
        ``.npy`` file name carries.
        """
        if self.mode != MODE_KERNEL:
            return list(range(len(self)))
        stamps = []
        for i, name in enumerate(self.names):
            m = _KERNEL_FILE.match(name.replace("\\", "/").rsplit("/", 1)[-1])
            stamps.append((int(m.group("stamp")) if m else -1, i))
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


# -- building views ---------------------------------------------------------------------------


def detect_mode(columns: Sequence[str]) -> str:
    """The dump mode of a result table, from its header.

    Kernel tables have ``Accuracy Reached or Not`` and no ``Result``; so have the classic
    (msprobe 8.x) tensor tables, which also have the requires_grad columns a kernel dump lacks.
    """
    cols = set(columns)
    if (C.ACCURACY_REACHED in cols and C.RESULT not in cols and C.REQUIRES_GRAD_CONSISTENT not in cols
            and (C.COSINE in cols or C.MAX_DIFF in cols)):
        return MODE_KERNEL
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

    def __init__(self, data: Mapping[str, Sequence[Any]], columns: Sequence[str]) -> None:
        self._data = data
        self._columns = list(columns)
        self._spelled: dict[str, list[str]] = {}

    def __getitem__(self, name: str) -> list[str]:
        cells = self._spelled.get(name)
        if cells is None:
            if name not in self._data or name not in self._columns:
                raise KeyError(name)
            from ..text.cells import csv_column

            cells = self._spelled[name] = csv_column(self._data[name])
        return cells

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def numbers(self, name: str) -> list[float | None] | None:
        """Column ``name`` as :func:`to_number` reads its cells, straight from a column that keeps
        its numbers (:class:`~msprobe_core.text.columns.CodedTextColumn`); ``None`` for any other column."""
        import numpy as np

        from ..text.cells import neutralise
        from ..text.columns import CodedTextColumn

        column = self._data.get(name) if name in self._columns else None
        if not isinstance(column, CodedTextColumn) or column.suffix not in ("", "%"):
            return None
        values, codes = column.numbers(), column.codes
        # the same operation to_number applies to the text repr(x) + "%": float(repr(x)) == x, times 0.01
        out = (values * 0.01).tolist() if column.suffix else values.tolist()
        if column.suffix:  # "-x%" is formula-like: the CSV cell is neutralised ("'-x%") and reads as no number
            for i in ((codes == 0) & np.signbit(values)).nonzero()[0].tolist():
                out[i] = None
        label_numbers = [to_number(neutralise(text)) for text in column.labels]
        for code in set(codes.tolist()) - {0}:
            number = label_numbers[code]
            for i in (codes == code).nonzero()[0].tolist():
                out[i] = number
        return [None if v != v else v for v in out]

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)


def view_from_table(table: Any, label: str = "", files: Iterable[Path] = ()) -> ResultView:
    """A view of an in-memory :class:`~msprobe_core.result.ResultTable` (cells spelled as in the CSV, lazily)."""
    columns = [str(c) for c in table.columns]
    cells = SpelledColumns(table.data, columns)
    meta = getattr(table, "meta", {}) or {}
    fw = meta.get("frameworks")
    if not fw:
        pairs = getattr(table, "pairs", None)
        specs = (getattr(pairs, "notes", None) or {}).get("frameworks") if pairs is not None else None
        if specs and len(specs) == 2:
            fw = tuple(getattr(s, "name", str(s)) for s in specs)
    mode = table.mode if table.mode in MODES else detect_mode(columns)
    if not fw:
        fw = guess_frameworks(cells, mode)
    dump_mode = meta.get("dump_mode")
    return ResultView(label, mode, columns, cells, list(files), tuple(fw) if fw else None, meta.get("level"),
                      dump_mode if dump_mode and dump_mode != mode else None)


_RANK_IN_NAME = re.compile(r"(?:^|_)(rank\d*|proc\d+|\d+_\d+)_\d{14}(?:_part_\d+)?$")


def label_from_path(path: Path) -> str:
    """``rank1`` from ``compare_result_rank1_20260101120000.csv``; ``rank 0 step 1`` for kernel names."""
    m = _RANK_IN_NAME.search(path.stem)
    if not m:
        return ""
    tag = m.group(1)
    if re.fullmatch(r"\d+_\d+", tag):
        rank, step = tag.split("_")
        return f"rank {rank} step {step}"
    return tag


def read_result_file(path: Path, label: str | None = None) -> ResultView:
    """Read a compare result (``.csv`` or ``.xlsx``) back into a view."""
    path = Path(path)
    if not path.is_file():
        raise InputError("result file does not exist", path=path)
    if path.suffix.lower() == ".xlsx":
        columns, rows = _read_xlsx(path)
    elif path.suffix.lower() == ".csv":
        columns, rows = _read_csv(path)
    else:
        raise InputError("a result file must be .csv or .xlsx", path=path)
    if C.NPU_NAME not in columns:
        raise InputError(f"not a compare result: no '{C.NPU_NAME}' column", path=path)
    cells = {c: [] for c in columns}
    lists = [cells[c] for c in columns]
    width = len(columns)
    for row in rows:
        if len(row) < width:
            row = list(row) + [""] * (width - len(row))
        for lst, v in zip(lists, row):
            lst.append(v)
    mode = detect_mode(columns)
    return ResultView(label if label is not None else label_from_path(path), mode, columns, cells, [path],
                      guess_frameworks(cells, mode))


def _read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None:
                raise InputError("result file is empty", path=path)
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read result ({exc})", path=path) from None
    width = len(header)
    rows = [row for row in rows if row]  # blank lines are no rows (as pandas reads them)
    for k, row in enumerate(rows, 1):
        if len(row) != width:  # e.g. a bare carriage return in a cell started a row of its own
            raise InputError(f"row {k} has {len(row)} fields where the header has {width}: not a well-formed "
                             "result table", path=path)
    return header, rows


def _xlsx_text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, float):
        if math.isinf(v):
            return " inf" if v > 0 else " -inf"
        return repr(v)
    return str(v)


def _read_xlsx(path: Path) -> tuple[list[str], list[list[str]]]:
    from openpyxl import load_workbook

    try:
        wb = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many kinds for a broken workbook
        raise InputError(f"cannot read xlsx result ({exc})", path=path) from None
    header: list[str] | None = None
    rows: list[list[str]] = []
    try:
        for ws in wb.worksheets:  # results past the row limit continue on further sheets
            it = ws.iter_rows(values_only=True)
            head = next(it, None)
            if head is None:
                continue
            head_s = [_xlsx_text(h) for h in head]
            if header is None:
                header = head_s
            elif head_s != header:
                continue
            rows.extend([_xlsx_text(v) for v in r] for r in it)
    except Exception as exc:  # noqa: BLE001 - a sheet is parsed as it is read: broken XML, entity bombs…
        raise InputError(f"cannot read xlsx result ({exc})", path=path) from None
    finally:
        wb.close()
    if header is None:
        raise InputError("result workbook is empty", path=path)
    return header, rows


def guess_frameworks(cells: Mapping[str, list[str]], mode: str = "") -> tuple[str, str] | None:
    """(target, golden) framework names guessed from the dtype spellings (``torch.*`` / ``Float32``):
    the first registered framework (the default one first) whose spec knows a dtype of the column.

    Kernel dumps come from MindSpore's static graph mode only.
    """
    if mode == MODE_KERNEL:
        return ("mindspore", "mindspore")
    specs = _framework_specs()

    def guess(col: str) -> str:
        for v in (cells.get(col) or [])[:2000]:
            for spec in specs:
                if spec.dtype_info(v) is not None:
                    return spec.name
        return ""

    t, g = guess(C.NPU_DTYPE), guess(C.BENCH_DTYPE)
    return (t, g) if t or g else None


def _framework_specs() -> list[Any]:
    """The registered framework specs, the default one first (they know every dtype; the plugin host is made
    here when none exists yet, as for ``msprobe report``)."""
    from ..host.registry import get_host

    return sorted(get_host().frameworks, key=lambda f: not f.is_default)


# -- per-row helpers --------------------------------------------------------------------------


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


def node_of(name: str) -> tuple[str, str]:
    """The API/module call a row belongs to, and its direction (``forward``/``backward``/``-``).

    ``Functional.linear.0.forward.input.1`` → ``Functional.linear.0.forward``;
    ``Module.fc.Linear.forward.0.output.0`` → ``Module.fc.Linear.forward.0``;
    ``Module.fc.Linear.parameters_grad.weight`` → ``Module.fc.Linear.parameters_grad`` (backward);
    a kernel ``.npy`` path → ``<OpType>.<op_name>``; anything else is its own node.
    """
    if name.endswith(".npy"):
        base = name.replace("\\", "/").rsplit("/", 1)[-1]
        m = _KERNEL_FILE.match(base)
        node = m.group("node") if m else base
        return node, ("backward" if "Gradients" in node or "grad" in node.lower() else "forward")
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


def _verdict_of_result(text: str) -> str:
    v = text.strip().lower()
    if v in ("error", "different", "fail", "failed"):
        return "error"
    if v == "warning":
        return "warning"
    return "pass"


def row_verdicts(view: ResultView) -> list[str]:
    """Each row's verdict: the ``Result`` column, else ``Accuracy Reached or Not`` (No → error).

    Classic spellings are folded in: ``Different`` (md5) is an error, ``Warning`` a
    warning, an empty or ``N/A`` Result a pass.
    """
    n = len(view)
    out = ["pass"] * n
    res = view.column(C.RESULT)
    if res is not None:
        memo: dict[str, str] = {}  # a Result column holds a handful of distinct texts
        for v in set(res):
            memo[v] = _verdict_of_result(v)
        out = list(map(memo.__getitem__, res))
    acc = view.column(C.ACCURACY_REACHED)
    if acc is not None:
        for i, v in enumerate(acc):
            s = v.strip().lower()
            level = "error" if s == "no" else "warning" if s == "unmatched" else "pass"
            if VERDICT_LEVEL[level] > VERDICT_LEVEL[out[i]]:
                out[i] = level
    return out


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


# -- first divergence ---------------------------------------------------------------------------


@dataclass
class Divergence:
    """The first divergent node of one view (or of the whole run)."""

    node: str
    row: str
    label: str
    index: int
    reason: str
    source: str = "threshold"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "node": self.node,
            "row": self.row,
            "rank": self.label,
            "index": self.index,
            "reason": self.reason,
            "source": self.source,
        }


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def _threshold_reason(view: ResultView, i: int, nums: dict[str, list[float | None]]) -> str | None:
    mode = view.mode
    if mode in (MODE_TENSOR, MODE_KERNEL):
        cos = nums[C.COSINE][i] if C.COSINE in nums else None
        mae = nums[C.MAX_ABS_ERR][i] if C.MAX_ABS_ERR in nums else None
        if cos is not None and cos < COSINE_HARD_MIN:
            return f"{C.COSINE} {_fmt(cos)} < {COSINE_HARD_MIN}"
        if cos is not None and mae is not None and cos < COSINE_MIN and mae > MAX_ABS_ERR_MIN:
            return f"{C.COSINE} {_fmt(cos)} < {COSINE_MIN} and {C.MAX_ABS_ERR} {_fmt(mae)} > {MAX_ABS_ERR_MIN}"
        if mae is not None and mae > MAX_ABS_ERR_HARD:
            return f"{C.MAX_ABS_ERR} {_fmt(mae)} > {MAX_ABS_ERR_HARD:g}"
    elif mode == MODE_STATISTICS and C.NORM_RELATIVE_ERR in nums:
        rel = nums[C.NORM_RELATIVE_ERR][i]
        if rel is not None and abs(rel) > NORM_REL_ERR_MAX:
            if abs(rel) == math.inf:  # the golden L2 norm is 0: no percentage to give
                diff = view.cells[C.L2NORM_DIFF][i].strip() if C.L2NORM_DIFF in view.cells else ""
                return (f"{C.NORM_RELATIVE_ERR} inf: the golden L2 norm is 0"
                        + (f", {C.L2NORM_DIFF} {diff}" if diff else ""))
            return f"{C.NORM_RELATIVE_ERR} {abs(rel) * 100:.4g}% > {NORM_REL_ERR_MAX * 100:g}%"
    return None


def _dtype_of(view: ResultView, side: int, dtype: str) -> tuple[str, str | None]:
    """(framework-neutral name, family) of a dtype of one side of ``view``: as the side's framework spec
    describes it, else the first spec that knows it (``torch.float32`` and ``Float32`` are both ``float32``)."""
    specs = view.__dict__.get("_dtype_specs")
    if specs is None:
        every = _framework_specs()
        names = view.frameworks or ("", "")
        specs = view.__dict__["_dtype_specs"] = tuple(
            [f for f in every if f.name == names[k]] + [f for f in every if f.name != names[k]] for k in (0, 1)
        )
    for spec in specs[side]:
        info = spec.dtype_info(dtype)
        if info is not None:
            return info.canonical, info.family
    from ..host.registry import default_canonical

    return default_canonical(dtype), None


def _drift_reason(view: ResultView, i: int) -> str | None:
    """Floating-point dtype drift or shape drift between the two sides of a matched row."""
    cols = view.cells
    nd, bd = cols.get(C.NPU_DTYPE), cols.get(C.BENCH_DTYPE)
    ns, bs = cols.get(C.NPU_SHAPE), cols.get(C.BENCH_SHAPE)
    if nd is not None and bd is not None and ns is not None and bs is not None and nd[i] == bd[i] and ns[i] == bs[i]:
        return None  # the common case, decided without parsing anything
    if nd is not None and bd is not None:
        a, b = nd[i].strip(), bd[i].strip()
        (ca, fa), (cb, fb) = _dtype_of(view, 0, a), _dtype_of(view, 1, b)
        if ca != cb and fa == fb == "float":
            return f"dtype drift: NPU {a} vs Bench {b}"
    if ns is not None and bs is not None:
        a, b = ns[i].strip(), bs[i].strip()
        if a not in ("", "N/A") and b not in ("", "N/A") and a.replace(" ", "") != b.replace(" ", ""):
            return f"shape drift: NPU {a} vs Bench {b}"
    return None


#: Error messages that do not by themselves mean the numbers differ: requires_grad flags, and dtype spellings
#: (a floating-point dtype change is caught by the drift rule; an integer width change is not a divergence).
_NOT_NUMERIC = ("Required_Grad", "Requires_grad inconsistent", "dtype of NPU and Bench", "Dtype of NPU and bench")
_LEVEL_PREFIX = re.compile(r"^\s*(error|warning)\s*:\s*", re.IGNORECASE)


def plain_messages(messages: Iterable[str], verdict: str) -> list[str]:
    """``Err_message`` sentences as a reason quotes them after the row's verdict.

    The level prefix a sentence repeats (``error: …`` on an ``error`` row) and its final
    full stop are dropped, so ``Result error: The shape … are inconsistent`` does not
    stutter; a sentence of another level keeps its prefix (``warning: …``). Repeated
    sentences are given once.
    """
    out: list[str] = []
    for message in messages:
        text = message.strip()
        m = _LEVEL_PREFIX.match(text)
        if m and m.group(1).lower() == verdict:
            text = text[m.end():]
        text = text.rstrip(" .;")
        if text and text not in out:
            out.append(text)
    return out


def _verdict_text(view: ResultView, i: int, messages: Sequence[str]) -> str:
    """``Result error: <messages>`` (or ``Accuracy Reached or Not is No``): the cell that made row ``i`` an error."""
    verdict = view.verdicts()[i]
    res = view.column(C.RESULT)
    acc = view.column(C.ACCURACY_REACHED)
    if res is not None and _verdict_of_result(res[i]) == verdict:
        head = f"{C.RESULT} {res[i].strip()}"
    elif acc is not None:
        head = f"{C.ACCURACY_REACHED} is {acc[i].strip()}"
    else:
        head = f"verdict {verdict}"
    return f"{head}: {'; '.join(messages)}" if messages else head


def first_divergence_of(view: ResultView) -> Divergence | None:
    """First row in execution order that diverges, and why.

    A row diverges when its verdict is ``error`` for a numeric reason (not only a
    requires_grad or dtype-spelling message), when its two sides differ in
    floating-point dtype or in shape (dtypes compared framework-neutrally, so
    ``Float32`` equals ``torch.float32``), or when a metric
    crosses a threshold: tensor/kernel — Cosine < 0.9, or Cosine < 0.99 with
    MaxAbsErr > 0.001, or MaxAbsErr > 1 (the classic "accuracy not reached"
    rule); statistics — relative L2-norm error > 1 %; md5 — a differing CRC
    (an ``error`` verdict). Unmatched rows are skipped.

    When no row diverges by these rules but some row is an ``error`` (say, for a
    requires_grad flag only), the first ``error`` row in execution order is named
    (``source`` ``verdict``; a matched row before an unmatched one), so a table with
    errors always has a first divergence.
    """
    verdicts = view.verdicts()
    names = view.names
    unmatched = view.unmatched()
    msgs = view.column(C.ERR_MESSAGE) or [""] * len(view)
    nums: dict[str, list[float | None]] = {}
    for col in (C.COSINE, C.MAX_ABS_ERR, C.NORM_RELATIVE_ERR):
        parsed = view.numbers(col)
        if parsed is not None:
            nums[col] = parsed
    first_error: tuple[int, int] | None = None
    first_unmatched_error: tuple[int, int] | None = None
    for pos, i in enumerate(view.order()):
        if unmatched[i]:
            if first_unmatched_error is None and verdicts[i] == "error":
                first_unmatched_error = (pos, i)
            continue
        reason = _drift_reason(view, i) or _threshold_reason(view, i, nums)
        if verdicts[i] == "error":
            messages = plain_messages(err_messages(msgs[i]), "error")
            numeric = [m for m in messages if not any(k in m for k in _NOT_NUMERIC)]
            if reason is None and (numeric or not messages):
                reason = _verdict_text(view, i, numeric)
            elif reason is not None and messages:
                reason = f"{reason} ({_verdict_text(view, i, messages)})"
            elif first_error is None:
                first_error = (pos, i)
        if reason:
            return Divergence(node_of(names[i])[0], names[i], view.label, pos, reason)
    fallback = first_error or first_unmatched_error
    if fallback is None:
        return None
    pos, i = fallback
    text = _verdict_text(view, i, plain_messages(err_messages(msgs[i]), "error"))
    which = "the first error row, unmatched" if unmatched[i] else "the first error row"
    return Divergence(node_of(names[i])[0], names[i], view.label, pos,
                      f"{text} ({which}; no row drifts in dtype or shape or crosses a metric threshold)",
                      source="verdict")


def _evidence_rows(node: Mapping[str, Any]) -> list[str]:
    """The rows an analysis node's evidence is about: its ``row`` first, then its evidence, most telling kind first."""
    rows: list[str] = []
    if isinstance(node.get("row"), str) and node["row"]:
        rows.append(node["row"])
    evidence = [e for e in node.get("evidence") or () if isinstance(e, dict) and isinstance(e.get("row"), str)]
    evidence.sort(key=lambda e: _EVIDENCE_ORDER.get(str(e.get("kind")), 9))
    rows.extend(e["row"] for e in evidence if e["row"] not in rows)
    return rows


#: Evidence kinds of the analysis, most telling first (as its reasons cite them).
_EVIDENCE_ORDER = {"nan_inf": 0, "dtype": 1, "shape": 2, "md5": 3, "argument": 4, "statistics": 5}


def _find_row(views: Sequence[ResultView], label: str, op: str, wanted: Sequence[str]
              ) -> tuple[ResultView, int, str] | None:
    """The view (same label first), execution position and name of the row of call ``op`` to name.

    The first of ``wanted`` (the rows the analysis' evidence is about) that the view holds; else
    the call's first output row (what the call computed); else its first row.
    """
    ordered = [v for v in views if v.label == label] + [v for v in views if v.label != label]
    prefix = op + "."
    rank = {r: k for k, r in enumerate(wanted)}
    for v in ordered:
        names = v.names
        best: tuple[int, int, str] | None = None  # (preference, position, name)
        for pos, i in enumerate(v.order()):
            name = names[i]
            if name != op and not name.startswith(prefix):
                continue
            pref = rank.get(name)
            if pref is None:
                pref = len(wanted) + (0 if ".output." in name[len(op):] else 1)
            if best is None or pref < best[0]:
                best = (pref, pos, name)
                if pref == 0:
                    break
        if best is not None:
            return v, best[1], best[2]
    return None


def _analysis_divergence(views: Sequence[ResultView], analysis: Any) -> Divergence | None:
    """The answer of ``-da`` (its ``diff_analyze_*.json``, as a path or a parsed document), when it has one.

    Per rank the first node whose ``role`` is ``cause`` is taken (else the first node);
    across ranks a cause beats a propagated divergence, then the earliest step and
    position win. The row named is the one the node's evidence is about (its ``row``).
    Nodes that are not in ``views`` (a stale file) are ignored.
    """
    if not analysis:
        return None
    if isinstance(analysis, Divergence):
        return analysis
    if isinstance(analysis, (str, Path)):
        analysis = read_analysis(Path(analysis))
    if not isinstance(analysis, dict):
        return None
    best: tuple[tuple[int, int, int], Divergence] | None = None
    for rank_key, nodes in analysis.items():
        if not isinstance(nodes, list):
            continue
        nodes = [n for n in nodes if isinstance(n, dict) and n.get("op_name")]
        if not nodes:
            continue
        node = next((n for n in nodes if n.get("role") == "cause"), nodes[0])
        op = str(node["op_name"])
        label = str(rank_key).replace("_", "") if str(rank_key).startswith("rank_") else str(rank_key)
        hit = _find_row(views, label, op, _evidence_rows(node))
        if hit is None:  # a stale or foreign analysis file: its node is not in these results
            continue
        view, pos, row = hit
        why = node.get("reason") or node.get("why") or "first diff node found by -da"
        if not isinstance(why, str):
            why = json.dumps(why)
        cand = Divergence(op, row, view.label, pos, why, source="diff_analyze")
        key = (0 if node.get("role", "cause") == "cause" else 1, _step_of(view.label), pos)
        if best is None or key < best[0]:
            best = (key, cand)
    return best[1] if best else None


def read_analysis(path: Path) -> Any:
    """The parsed ``diff_analyze_*.json`` (``None`` when it cannot be read: the summary then does without)."""
    from ..errors import MsprobeError
    from ..load.dumpjson import read_json_file

    try:
        return read_json_file(path, "analysis")
    except MsprobeError:
        return None


def _step_of(label: str) -> int:
    m = re.search(r"step\s*(\d+)", label)
    return int(m.group(1)) if m else 0


def first_divergence(views: Sequence[ResultView], analysis: Any = None) -> tuple[Divergence | None, list[Divergence]]:
    """The run's first divergence and each view's own.

    The answer of ``-da`` when it has one; else a divergence found by the rules of
    :func:`first_divergence_of` beats a mere first ``error`` row, then the earliest step
    wins, then the earliest position in execution order (ranks run side by side, so
    their positions are comparable), then the first view. Among the parts of a mixed
    graph/pynative dump, a divergence that arises in its part beats one carried into
    its part (:func:`carried_in`).
    """
    per_view = [d for d in (first_divergence_of(v) for v in views) if d is not None]
    chosen = _analysis_divergence(views, analysis)
    if chosen is None and per_view:
        carried = _carried_rule(views)
        chosen = min(per_view, key=lambda d: (d.source == "verdict", _step_of(d.label), carried(d), d.index))
    return chosen, per_view


#: Labels of the parts of a mixed graph/pynative dump (``graph/step0/rank0``): the parts of one
#: step run one after the other, so a part can receive a divergence that arose in another.
_MIXED_PART = re.compile(r"^(?:graph|pynative)/")


def is_mixed_layout(views: Sequence[ResultView]) -> bool:
    """Whether ``views`` are the graph and pynative parts of a mixed dump."""
    return len(views) > 1 and all(_MIXED_PART.match(v.label) for v in views)


def carried_in(view: ResultView, d: Divergence) -> str | None:
    """Why the first divergence ``d`` of ``view`` was carried into that part from outside it, or ``None``.

    A divergence at a call's parameters was there before the call ran (weights loaded or
    updated differently, e.g. by an earlier step); one at an input of the part's very
    first call was handed over by code outside the part. Neither arises in the part.
    """
    rest = d.row[len(d.node):] if d.row.startswith(d.node) else ""
    if rest.startswith(".parameters.") and "parameters_grad" not in d.node:
        return "its parameters already differ when the call starts (set before this part ran, e.g. by an earlier step)"
    if rest.startswith(".input.") and len(view):
        if node_of(view.names[view.order()[0]])[0] == d.node:
            return "an input of the part's first call already differs (handed over from outside the part)"
    return None


def _carried_rule(views: Sequence[ResultView]) -> Any:
    """``d -> 0 | 1``: 1 when ``d`` was carried into its part of a mixed graph/pynative dump."""
    if not is_mixed_layout(views):
        return lambda d: 0
    by_label = {v.label: v for v in views}
    return lambda d: int(d.label in by_label and carried_in(by_label[d.label], d) is not None)


# -- the summary --------------------------------------------------------------------------------

MD5_METRIC = "MD5"


def _worst_rows(views: Sequence[ResultView], limit: int = 10) -> list[dict[str, Any]]:
    """The ``limit`` worst rows: the worst verdict first, then the worst main metric.

    Within a verdict, rows with a number come before rows without one (those only
    when not ``pass``: a metric cell like ``shape unmatched`` on an error row), which
    follow in execution order. A relative error that is infinite while the absolute
    difference is finite (a zero golden statistic) ranks and shows as that difference.
    md5 tables: the non-passing rows, errors first, in execution order, shown as
    ``<target MD5> vs <golden MD5>``.
    """
    # (−verdict level, 0 numbered / 1 not, sort value, view, row)
    cands: list[tuple[int, int, float, int, int]] = []
    for vi, view in enumerate(views):
        verdicts = view.verdicts()
        bad = [i for i, v in enumerate(verdicts) if v != "pass"]  # usually few: ranked on their own
        metric = main_metric(view.mode)
        parsed = view.numbers(metric[0]) if metric is not None else None
        sort_value = _sort_value(view, metric, parsed)
        unnumbered = []
        for i in bad:
            level = -VERDICT_LEVEL[verdicts[i]]
            if parsed is not None and parsed[i] is not None:
                cands.append((level, 0, sort_value(i), vi, i))
            else:
                unnumbered.append(i)
        if unnumbered:
            position = _positions(view) if view.mode == MODE_KERNEL else None
            cands.extend((-VERDICT_LEVEL[verdicts[i]], 1, float(position[i] if position else i), vi, i)
                         for i in unnumbered)
        if parsed is not None and len(bad) < limit:  # passing rows are listed only after every other one
            best = heapq.nsmallest(limit + len(bad), _keyed_rows(view, metric, parsed))  # type: ignore[arg-type]
            cands.extend((0, 0, key, vi, i) for key, i in best if verdicts[i] == "pass")
    out = []
    for _, numbered, _, vi, i in heapq.nsmallest(limit, cands):
        view = views[vi]
        metric = main_metric(view.mode)
        if numbered == 0:
            col, value = _numbered_cell(view, i, metric[0])  # type: ignore[index]
        else:
            col, value = _unnumbered_cell(view, i, metric[0] if metric else None)
        out.append({"rank": view.label, "name": view.names[i], "metric": col, "value": value,
                    "result": view.verdicts()[i]})
    return out


def _sort_value(view: ResultView, metric: tuple[str, bool] | None, parsed: list[float | None] | None
                ) -> Any:
    """``row → number``, smaller is worse: the main metric (negated when larger is worse), an infinite relative
    error replaced by its finite absolute difference (the column's ``stand_in``, :mod:`msprobe_core.result_columns`)."""
    if metric is None or parsed is None:
        return lambda i: 0.0
    if not metric[1]:
        return parsed.__getitem__
    fallback = _absolute_fallback(view, metric[0])
    if fallback is None:
        return lambda i: -abs(parsed[i])  # type: ignore[arg-type]

    def value(i: int) -> float:
        x = abs(parsed[i])  # type: ignore[arg-type]
        return -(x if x != math.inf else _sort_abs(x, fallback[i]))

    return value


def _keyed_rows(view: ResultView, metric: tuple[str, bool], parsed: list[float | None]
                ) -> Iterator[tuple[float, int]]:
    """``(sort value, row)`` of every row with a number, as :func:`_sort_value` ranks them (inlined: all rows)."""
    if not metric[1]:
        return ((x, i) for i, x in enumerate(parsed) if x is not None)
    fallback = _absolute_fallback(view, metric[0])
    if fallback is None:
        return ((-abs(x), i) for i, x in enumerate(parsed) if x is not None)
    return ((-abs(x) if x not in _INFINITE else -_sort_abs(x, fallback[i]), i)
            for i, x in enumerate(parsed) if x is not None)


_INFINITE = (math.inf, -math.inf)


def _positions(view: ResultView) -> list[int]:
    """Each row's position in execution order."""
    position = [0] * len(view)
    for pos, i in enumerate(view.order()):
        position[i] = pos
    return position


def _absolute_fallback(view: ResultView, metric: str) -> list[float | None] | None:
    # an infinite relative error (a zero golden statistic) would rank every zero-golden row first
    col = known_columns().stand_in(metric)
    return view.numbers(col) if col else None


def _sort_abs(x: float, diff: float | None) -> float:
    """The size of an infinite relative error for ranking: the absolute difference when that is finite."""
    return abs(diff) if diff is not None and math.isfinite(diff) else abs(x)


def _numbered_cell(view: ResultView, i: int, metric: str) -> tuple[str, str]:
    """(metric, value) of a row ranked by its number: the metric cell, or the absolute difference that stood in."""
    x = view.numbers(metric)[i]  # type: ignore[index]
    fallback = known_columns().stand_in(metric)
    if x is not None and abs(x) == math.inf and fallback and (main_metric(view.mode) or ("", False))[1]:
        d = view.numbers(fallback)
        if d is not None and d[i] is not None and math.isfinite(d[i]):  # type: ignore[arg-type]
            return fallback, view.cells[fallback][i].strip()
    return metric, view.cells[metric][i].strip()


def _unnumbered_cell(view: ResultView, i: int, metric: str | None) -> tuple[str, str]:
    """(metric, value) of a non-passing row whose main metric is no number (or whose table has none)."""
    npu, bench = view.column(C.NPU_MD5), view.column(C.BENCH_MD5)
    if metric is None and npu is not None and bench is not None:
        return MD5_METRIC, f"{npu[i].strip() or '-'} vs {bench[i].strip() or '-'}"
    if metric is not None and metric in view.cells:
        return metric, view.cells[metric][i].strip()
    return "", ""


def worst_rows_metric(worst: Sequence[Mapping[str, Any]]) -> str:
    """The metric a worst-rows list is headed by: the first row's main metric (rows that show another say so)."""
    fallbacks = {s.stand_in for s in known_columns() if s.stand_in}
    for w in worst:
        if w["metric"] and w["metric"] not in fallbacks:
            return str(w["metric"])
    return str(worst[0]["metric"]) if worst else ""


def summarize(
    views: Sequence[ResultView],
    *,
    files: Iterable[Path | str] = (),
    analysis: Any = None,
    errors: Iterable[str] = (),
    unrecognised: Iterable[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The summary of a run as a JSON-ready dict (also what the console block and the report show).

    ``unrecognised``: records ``{"file", "kind", "name", "count", "first"}`` of what the dumps held
    that the loader did not understand (see :mod:`msprobe_core.load.dialects`); listed under that key.
    """
    counts = dict.fromkeys(VERDICTS, 0)
    total = unmatched = 0
    parts = []
    modes: list[str] = []
    compared_as: list[str] = []
    frameworks: list[dict[str, str]] = []
    for view in views:
        vc = dict.fromkeys(VERDICTS, 0)
        for v in view.verdicts():
            vc[v] += 1
        um = sum(view.unmatched())
        for k in VERDICTS:
            counts[k] += vc[k]
        total += len(view)
        unmatched += um
        dump_mode = view.dump_mode or view.mode
        if dump_mode not in modes:
            modes.append(dump_mode)
        if view.mode not in compared_as:
            compared_as.append(view.mode)
        fw = {"target": view.frameworks[0], "golden": view.frameworks[1]} if view.frameworks else None
        if fw and fw not in frameworks:
            frameworks.append(fw)
        parts.append({
            "rank": view.label,
            "mode": dump_mode,
            "compared_as": view.mode,
            "rows": len(view),
            "matched": len(view) - um,
            "unmatched": um,
            "verdicts": vc,
            "files": [str(Path(f).resolve()) for f in view.files],
        })
    chosen, per_view = first_divergence(views, analysis)
    all_files = [str(Path(f).resolve()) for v in views for f in v.files]
    for f in files:
        s = str(Path(f).resolve())
        if s not in all_files:
            all_files.append(s)
    worst_level = max((VERDICT_LEVEL[k] for k in VERDICTS if counts[k]), default=0)
    worst = _worst_rows(views)
    return {
        "schema": "msprobe-core/summary/1",
        "modes": modes,
        "compared_as": compared_as,
        "frameworks": frameworks,
        "rows": total,
        "matched": total - unmatched,
        "unmatched": unmatched,
        "verdicts": counts,
        "worst_verdict": VERDICTS[worst_level] if total else None,
        "first_divergence": chosen.as_dict() if chosen else None,
        "first_divergence_by_rank": [d.as_dict() for d in per_view],
        "worst_rows": worst,
        "worst_rows_metric": worst_rows_metric(worst),
        "ranks": parts,
        "files": all_files,
        "errors": list(errors),
        "unrecognised": [dict(r) for r in unrecognised],
    }


def short_name(name: str, limit: int = 96) -> str:
    """A row name for the console: the file name of a kernel path, middle-elided past ``limit``."""
    if "/" in name or "\\" in name:
        name = name.replace("\\", "/").rsplit("/", 1)[-1]
    if len(name) > limit:
        keep = (limit - 1) // 2
        name = name[:keep] + "…" + name[-keep:]
    return name


def mode_text(summary: Mapping[str, Any]) -> str:
    """``tensor``, or ``tensor (compared as statistics)`` when the tables compare the dumps otherwise (``-da``)."""
    modes = ", ".join(summary["modes"]) or "-"
    compared = ", ".join(summary.get("compared_as") or ())
    return f"{modes} (compared as {compared})" if compared and compared != modes else modes


def format_summary(summary: dict[str, Any]) -> str:
    """The console block printed after a compare."""
    lines = ["", "Compare summary"]
    modes = mode_text(summary)
    fws = ", ".join(f"{f['target'] or '?'} vs {f['golden'] or '?'}" for f in summary["frameworks"]) or "-"
    lines.append(f"  dump mode: {modes}; frameworks (target vs golden): {fws}")
    nparts = len(summary["ranks"])
    lines.append(
        f"  rows: {summary['rows']} ({summary['matched']} matched, {summary['unmatched']} unmatched)"
        + (f" in {nparts} results" if nparts > 1 else "")
    )
    v = summary["verdicts"]
    lines.append(f"  verdicts: pass {v['pass']}, warning {v['warning']}, error {v['error']}")
    fd = summary["first_divergence"]
    if fd:
        where = f" [{fd['rank']}]" if fd["rank"] else ""
        lines.append(f"  first divergence{where}: {fd['node']}")
        lines.append(f"    row {short_name(fd['row'])}: {fd['reason']}")
    else:
        lines.append("  first divergence: none found (no error verdict, no dtype or shape drift, no metric past its threshold)")
    worst = summary["worst_rows"]
    if worst:
        metric = summary.get("worst_rows_metric") or worst_rows_metric(worst)
        header = f"worst rows by {metric}" if metric else "worst rows"
        lines.append(f"  {header}{' (target vs golden)' if metric == MD5_METRIC else ''}:")
        names = [short_name(w["name"]) for w in worst]
        values = [w["value"] if w["metric"] == metric else f"{w['value']} ({w['metric']})" for w in worst]
        width = max(len(n) for n in names)
        vwidth = max(22, *(len(v) for v in values))
        rwidth = max(len(w["rank"]) for w in worst)
        for k, (w, name, value) in enumerate(zip(worst, names, values), 1):
            rank = f"{w['rank']:<{rwidth}}  " if rwidth else ""
            lines.append(f"    {k:>2}. {rank}{name:<{width}}  {value:<{vwidth}} {w['result']}")
    unknown = summary.get("unrecognised") or []
    if unknown:
        kinds: dict[str, int] = {}
        for r in unknown:
            kinds[r["kind"]] = kinds.get(r["kind"], 0) + int(r["count"])
        lines.append("  not understood in the dumps (not compared, named in the warnings above): "
                     + ", ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in kinds.items()))
    if summary["files"]:
        lines.append("  files:")
        lines.extend(f"    {f}" for f in summary["files"])
    return "\n".join(lines)


def gate_failures(summary: dict[str, Any], fail_on: str) -> int:
    """How many rows have the verdict ``fail_on`` or worse."""
    level = VERDICT_LEVEL[fail_on]
    return sum(n for k, n in summary["verdicts"].items() if VERDICT_LEVEL[k] >= level)


def write_json_summary(summary: dict[str, Any], path: Path) -> Path:
    """Write the summary as JSON, atomically."""
    from ..errors import OutputError
    from ..files.outputs import TEXT_ERRORS
    from ..write.writers import atomic_path

    path = Path(path)
    try:
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8",
                           errors=TEXT_ERRORS)
    except OSError as exc:
        raise OutputError(f"cannot write summary ({exc.strerror or exc})", path=path) from None
    return path
