"""What a finished compare says, in a few lines: verdict counts, worst rows, first divergence, files.

Everything here works on :class:`ResultView` — one result table as its cells
are written in the CSV (strings) — so a summary or report made right after a
compare and one made later from the CSV/xlsx files (``msprobe report``) are
identical. The same summary feeds the console block printed after every
compare, ``--json-summary`` and the HTML report.
"""

from __future__ import annotations

import csv
import functools
import heapq
import json
import math
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InputError

#: Verdict levels, mildest first; ``--fail-on`` compares against this order.
VERDICTS = ("pass", "warning", "error")
VERDICT_LEVEL = {v: i for i, v in enumerate(VERDICTS)}

#: Thresholds of the built-in first-divergence rule (used until/unless ``-da`` gives an answer).
COSINE_MIN = 0.99
COSINE_HARD_MIN = 0.9
MAX_ABS_ERR_MIN = 0.001
MAX_ABS_ERR_HARD = 1.0
NORM_REL_ERR_MAX = 0.01

MODE_TENSOR = "tensor"
MODE_STATISTICS = "statistics"
MODE_MD5 = "md5"
MODE_KERNEL = "kernel"

#: Per mode: the metrics plotted along execution order (first one is also the heat-map default).
PLOT_METRICS: dict[str, tuple[str, ...]] = {
    MODE_TENSOR: ("Cosine", "MaxRelativeErr"),
    MODE_KERNEL: ("Cosine", "MaxRelativeErr"),
    MODE_STATISTICS: ("NormRelativeErr", "Max diff"),
    MODE_MD5: (),
}
#: Per mode: (main metric, True when larger is worse) used to rank the worst rows.
MAIN_METRIC: dict[str, tuple[str, bool]] = {
    MODE_TENSOR: ("Cosine", False),
    MODE_KERNEL: ("Cosine", False),
    MODE_STATISTICS: ("NormRelativeErr", True),
}

_KERNEL_FILE = re.compile(
    r"^(?P<node>.+)\.\d+\.\d+\.(?P<stamp>\d+)\.(?:input|output)\.\d+\.[^.]+\.[^.]+\.npy$"
)


@dataclass
class ResultView:
    """One result table, cells spelled as in the CSV, plus where it came from.

    ``label`` names the part of a multi-part run (``rank1``, ``graph/step0/rank0``,
    ``rank 0 step 1``); it is empty for a single pair of files.
    """

    label: str
    mode: str
    columns: list[str]
    cells: Mapping[str, list[str]]
    files: list[Path] = field(default_factory=list)
    frameworks: tuple[str, str] | None = None
    level: str | None = None
    _verdicts: list[str] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.cells[self.columns[0]]) if self.columns else 0

    def column(self, name: str) -> list[str] | None:
        """The cells of column ``name`` (``None`` when the table has no such column)."""
        return self.cells.get(name)

    @property
    def names(self) -> list[str]:
        """``NPU Name`` of every row."""
        return self.cells.get("NPU Name") or [""] * len(self)

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
            bench = self.cells.get("Bench Name")
            if bench is None:
                cached = [False] * len(self)
            else:
                cached = list(map(_UNMATCHED.__contains__, map(str.strip, bench)))
            self.__dict__["_unmatched"] = cached
        return cached


_UNMATCHED = frozenset({"N/A", ""})


# -- building views ---------------------------------------------------------------------------


def detect_mode(columns: Sequence[str]) -> str:
    """The dump mode of a result table, from its header."""
    cols = set(columns)
    if "Accuracy Reached or Not" in cols and "Result" not in cols and ("Cosine" in cols or "Max diff" in cols):
        return MODE_KERNEL
    if "Cosine" in cols:
        return MODE_TENSOR
    if "Max diff" in cols:
        return MODE_STATISTICS
    if "NPU MD5" in cols:
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
            from .cells import csv_column

            cells = self._spelled[name] = csv_column(self._data[name])
        return cells

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def numbers(self, name: str) -> list[float | None] | None:
        """Column ``name`` as :func:`to_number` reads its cells, straight from a column that keeps
        its numbers (:class:`~msprobe_core.columns.CodedTextColumn`); ``None`` for any other column."""
        import numpy as np

        from .cells import neutralise
        from .columns import CodedTextColumn

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
    mode = table.mode if table.mode in PLOT_METRICS else detect_mode(columns)
    if not fw:
        fw = guess_frameworks(cells, mode)
    return ResultView(label, mode, columns, cells, list(files), tuple(fw) if fw else None, meta.get("level"))


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
    if "NPU Name" not in columns:
        raise InputError("not a compare result: no 'NPU Name' column", path=path)
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
            return header, list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read result ({exc})", path=path) from None


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
    finally:
        wb.close()
    if header is None:
        raise InputError("result workbook is empty", path=path)
    return header, rows


def guess_frameworks(cells: Mapping[str, list[str]], mode: str = "") -> tuple[str, str] | None:
    """(target, golden) framework names guessed from the dtype spellings (``torch.*`` / ``Float32``).

    Kernel dumps come from MindSpore's static graph mode only.
    """
    if mode == MODE_KERNEL:
        return ("mindspore", "mindspore")
    def guess(col: str) -> str:
        for v in (cells.get(col) or [])[:2000]:
            if v.startswith("torch."):
                return "pytorch"
            if v[:1].isupper() and v in _MS_DTYPES:
                return "mindspore"
        return ""

    t, g = guess("NPU Dtype"), guess("Bench Dtype")
    return (t, g) if t or g else None


_MS_DTYPES = {
    "Float16", "Float32", "Float64", "BFloat16", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32",
    "UInt64", "Bool", "Complex64", "Complex128",
}  # fmt: skip


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
    res = view.column("Result")
    if res is not None:
        memo: dict[str, str] = {}  # a Result column holds a handful of distinct texts
        for v in set(res):
            memo[v] = _verdict_of_result(v)
        out = list(map(memo.__getitem__, res))
    acc = view.column("Accuracy Reached or Not")
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
        cos = nums["Cosine"][i] if "Cosine" in nums else None
        mae = nums["MaxAbsErr"][i] if "MaxAbsErr" in nums else None
        if cos is not None and cos < COSINE_HARD_MIN:
            return f"Cosine {_fmt(cos)} < {COSINE_HARD_MIN}"
        if cos is not None and mae is not None and cos < COSINE_MIN and mae > MAX_ABS_ERR_MIN:
            return f"Cosine {_fmt(cos)} < {COSINE_MIN} and MaxAbsErr {_fmt(mae)} > {MAX_ABS_ERR_MIN}"
        if mae is not None and mae > MAX_ABS_ERR_HARD:
            return f"MaxAbsErr {_fmt(mae)} > {MAX_ABS_ERR_HARD:g}"
    elif mode == MODE_STATISTICS and "NormRelativeErr" in nums:
        rel = nums["NormRelativeErr"][i]
        if rel is not None and abs(rel) > NORM_REL_ERR_MAX:
            return f"NormRelativeErr {abs(rel) * 100:.4g}% > {NORM_REL_ERR_MAX * 100:g}%"
    return None


@functools.lru_cache(maxsize=1024)
def canonical_dtype(dtype: str) -> str:
    """A framework-neutral dtype spelling: ``torch.float32`` and ``Float32`` are both ``float32``."""
    return dtype.strip().rsplit(".", 1)[-1].lower()


def _drift_reason(view: ResultView, i: int) -> str | None:
    """Floating-point dtype drift or shape drift between the two sides of a matched row."""
    cols = view.cells
    nd, bd = cols.get("NPU Dtype"), cols.get("Bench Dtype")
    ns, bs = cols.get("NPU Tensor Shape"), cols.get("Bench Tensor Shape")
    if nd is not None and bd is not None and ns is not None and bs is not None and nd[i] == bd[i] and ns[i] == bs[i]:
        return None  # the common case, decided without parsing anything
    if nd is not None and bd is not None:
        a, b = nd[i].strip(), bd[i].strip()
        ca, cb = canonical_dtype(a), canonical_dtype(b)
        if ca != cb and "float" in ca and "float" in cb:
            return f"dtype drift: NPU {a} vs Bench {b}"
    if ns is not None and bs is not None:
        a, b = ns[i].strip(), bs[i].strip()
        if a not in ("", "N/A") and b not in ("", "N/A") and a.replace(" ", "") != b.replace(" ", ""):
            return f"shape drift: NPU {a} vs Bench {b}"
    return None


#: Error messages that do not by themselves mean the numbers differ: requires_grad flags, and dtype spellings
#: (a floating-point dtype change is caught by the drift rule; an integer width change is not a divergence).
_NOT_NUMERIC = ("Required_Grad", "Requires_grad inconsistent", "dtype of NPU and Bench", "Dtype of NPU and bench")


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
    """
    verdicts = view.verdicts()
    names = view.names
    unmatched = view.unmatched()
    msgs = view.column("Err_message") or [""] * len(view)
    nums: dict[str, list[float | None]] = {}
    for col in ("Cosine", "MaxAbsErr", "NormRelativeErr"):
        parsed = view.numbers(col)
        if parsed is not None:
            nums[col] = parsed
    acc = view.column("Accuracy Reached or Not")
    for pos, i in enumerate(view.order()):
        if unmatched[i]:
            continue
        reason = _drift_reason(view, i) or _threshold_reason(view, i, nums)
        if verdicts[i] == "error":
            messages = err_messages(msgs[i])
            numeric = [m for m in messages if not any(k in m for k in _NOT_NUMERIC)]
            if reason is None and (numeric or not messages):
                text = "; ".join(numeric)
                if not text and acc is not None:
                    text = f"Accuracy Reached or Not is {acc[i].strip()}"
                reason = f"Result error: {text or 'error'}"
            elif reason is not None and messages:
                reason = f"{reason} (Result error: {'; '.join(messages)})"
        if reason:
            return Divergence(node_of(names[i])[0], names[i], view.label, pos, reason)
    return None


def _find_node(views: Sequence[ResultView], label: str, op: str) -> tuple[ResultView, int, str] | None:
    """The view (same label first), execution position and row name of the first row of call ``op``."""
    ordered = [v for v in views if v.label == label] + [v for v in views if v.label != label]
    for v in ordered:
        names = v.names
        for pos, i in enumerate(v.order()):
            if names[i] == op or names[i].startswith(op + "."):
                return v, pos, names[i]
    return None


def _analysis_divergence(views: Sequence[ResultView], analysis: Any) -> Divergence | None:
    """The answer of ``-da`` (its ``diff_analyze_*.json``, as a path or a parsed document), when it has one.

    Per rank the first node whose ``role`` is ``cause`` is taken (else the first node);
    across ranks a cause beats a propagated divergence, then the earliest step and
    position win. Nodes that are not in ``views`` (a stale file) are ignored.
    """
    if not analysis:
        return None
    if isinstance(analysis, Divergence):
        return analysis
    if isinstance(analysis, (str, Path)):
        try:
            analysis = json.loads(Path(analysis).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
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
        hit = _find_node(views, label, op)
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


def _step_of(label: str) -> int:
    m = re.search(r"step\s*(\d+)", label)
    return int(m.group(1)) if m else 0


def first_divergence(views: Sequence[ResultView], analysis: Any = None) -> tuple[Divergence | None, list[Divergence]]:
    """The run's first divergence and each view's own.

    The earliest step wins, then the earliest position in execution order (ranks run
    side by side, so their positions are comparable), then the first view.
    """
    per_view = [d for d in (first_divergence_of(v) for v in views) if d is not None]
    chosen = _analysis_divergence(views, analysis)
    if chosen is None and per_view:
        chosen = min(per_view, key=lambda d: (_step_of(d.label), d.index))
    return chosen, per_view


# -- the summary --------------------------------------------------------------------------------


def _worst_rows(views: Sequence[ResultView], limit: int = 10) -> list[dict[str, Any]]:
    """The ``limit`` rows with the worst main metric (md5: the non-passing rows, errors first)."""
    cands: list[tuple[float, int, int]] = []
    metric_of: dict[int, str] = {}
    for vi, view in enumerate(views):
        metric = MAIN_METRIC.get(view.mode)
        if metric is None:  # md5 / unknown: the non-passing rows in order
            cands.extend((-VERDICT_LEVEL[v], vi, i) for i, v in enumerate(view.verdicts()) if v != "pass")
            metric_of[vi] = "Result"
            continue
        col, larger_worse = metric
        parsed = view.numbers(col)
        if parsed is None:
            continue
        metric_of[vi] = col
        if larger_worse:
            best = heapq.nsmallest(limit, ((-abs(x), vi, i) for i, x in enumerate(parsed) if x is not None))
        else:
            best = heapq.nsmallest(limit, ((x, vi, i) for i, x in enumerate(parsed) if x is not None))
        cands.extend(best)
    out = []
    for _, vi, i in heapq.nsmallest(limit, cands):
        view, col = views[vi], metric_of[vi]
        verdict = view.verdicts()[i]
        value = verdict if col == "Result" else view.cells[col][i].strip()
        out.append({"rank": view.label, "name": view.names[i], "metric": col, "value": value, "result": verdict})
    return out


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
    that the loader did not understand (see :mod:`msprobe_core.dialects`); listed under that key.
    """
    counts = dict.fromkeys(VERDICTS, 0)
    total = unmatched = 0
    parts = []
    modes: list[str] = []
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
        if view.mode not in modes:
            modes.append(view.mode)
        fw = {"target": view.frameworks[0], "golden": view.frameworks[1]} if view.frameworks else None
        if fw and fw not in frameworks:
            frameworks.append(fw)
        parts.append({
            "rank": view.label,
            "mode": view.mode,
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
    return {
        "schema": "msprobe-core/summary/1",
        "modes": modes,
        "frameworks": frameworks,
        "rows": total,
        "matched": total - unmatched,
        "unmatched": unmatched,
        "verdicts": counts,
        "worst_verdict": VERDICTS[worst_level] if total else None,
        "first_divergence": chosen.as_dict() if chosen else None,
        "first_divergence_by_rank": [d.as_dict() for d in per_view],
        "worst_rows": _worst_rows(views),
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


def format_summary(summary: dict[str, Any]) -> str:
    """The console block printed after a compare."""
    lines = ["", "Compare summary"]
    modes = ", ".join(summary["modes"]) or "-"
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
        lines.append("  first divergence: none found (no error verdict, no metric past its threshold)")
    worst = summary["worst_rows"]
    if worst:
        lines.append(f"  worst rows by {worst[0]['metric']}:")
        names = [short_name(w["name"]) for w in worst]
        width = max(len(n) for n in names)
        rwidth = max(len(w["rank"]) for w in worst)
        for k, (w, name) in enumerate(zip(worst, names), 1):
            rank = f"{w['rank']:<{rwidth}}  " if rwidth else ""
            lines.append(f"    {k:>2}. {rank}{name:<{width}}  {w['value']:<22} {w['result']}")
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
    from .errors import OutputError
    from .writers import atomic_path

    path = Path(path)
    try:
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise OutputError(f"cannot write summary ({exc.strerror or exc})", path=path) from None
    return path
