"""Per-row evidence that the target departs from the golden run.

Every matched row of a result table is checked on what the dump recorded for
it (no tensor is read):

* ``dtype``      — the tensor's dtype differs (framework-neutral names, so ``Float32`` = ``torch.float32``);
* ``shape``      — the tensor's shape differs;
* ``nan_inf``    — one side's statistics hold NaN/Inf where the other's are finite;
* ``md5``        — md5 dumps: the checksums differ;
* ``argument``   — a non-tensor argument (a Python scalar, a string, a size, a peer rank…) has another value;
* ``statistics`` — a statistic moved by more than the row's tolerance (see :class:`DiffAnalyzeConfig`):
  ``|Δmax|``, ``|Δmin|``, ``|Δmean|`` relative to the tensor's range ``max|x|`` of both sides, or
  ``|Δnorm|`` relative to the norm.

Unmatched rows carry no evidence: a row without partner says nothing about values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from msprobe_core.plugin import NA
from msprobe_core.plugin import result_columns as C

from .config import DiffAnalyzeConfig

if TYPE_CHECKING:
    from msprobe_core.plugin import FrameworkSpec

STATS = C.STAT_NAMES
#: msprobe's relative-error column of each statistic.
REL_COLUMN = dict(zip(C.STAT_NAMES, C.STAT_RELATIVE_COLUMNS))
_DEVICE_WORDS = ("npu", "cpu", "cuda")


@dataclass
class Evidence:
    """One reason to think a row differs."""

    row: str
    side: str  # "input" or "output" (parameters count as inputs, parameter gradients as outputs)
    kind: str
    detail: dict[str, Any] = field(default_factory=dict)
    severity: float = 1.0  # how far past its threshold (statistics), else 1
    state: str = ""  # the row's state in the dump: input, parameters, output, parameters_grad

    @property
    def on_tensor(self) -> bool:
        """Evidence about a tensor's data (everything but a changed non-tensor argument)."""
        return self.kind != "argument"

    def summary(self) -> str:
        """A short human sentence."""
        d = self.detail
        where = self.row
        if self.kind == "dtype":
            return f"{where}: dtype {d['npu']} in the target, {d['bench']} in the golden run"
        if self.kind == "shape":
            return f"{where}: shape {d['npu']} in the target, {d['bench']} in the golden run"
        if self.kind == "nan_inf":
            side = "target" if d["side"] == "target" else "golden run"
            npu, bench = short_pair(d["npu"], d["bench"])
            return f"{where}: NaN/Inf in the {side} only ({d['stat']} {npu} vs {bench})"
        if self.kind == "md5":
            return f"{where}: md5 {d['npu']} vs {d['bench']}"
        if self.kind == "argument":
            npu, bench = short_pair(d["npu"], d["bench"], text=repr)
            return f"{where}: argument is {npu} in the target, {bench} in the golden run"
        npu, bench = short_pair(d["npu"], d["bench"])
        return (
            f"{where}: {d['stat']} {npu} vs {bench} moved {_pct(d['value'])} of "
            f"{'the norm' if d['stat'] == 'l2norm' else 'the range max|x|'} "
            f"(threshold {_pct(d['threshold'])}; msprobe {d['msprobe_metric']} {_short_cell(d['msprobe_value'])})"
        )

    def to_json(self) -> dict[str, Any]:
        """The evidence as written in the analysis JSON."""
        out: dict[str, Any] = {"row": self.row, "side": self.side, "kind": self.kind}
        out.update(self.detail)
        out["summary"] = self.summary()
        return out


def _pct(x: float) -> str:
    return f"{x * 100:.3g}%"


def short_pair(a: Any, b: Any, text: Any = str) -> tuple[str, str]:
    """Two numbers in 4 significant digits, more where 4 would spell them alike (the sentence is about their
    difference); anything but two finite floats as ``text`` spells it. The JSON keeps the exact values."""
    if not (isinstance(a, float) and isinstance(b, float) and math.isfinite(a) and math.isfinite(b)):
        return text(a), text(b)
    for digits in range(4, 18):
        sa, sb = f"{a:.{digits}g}", f"{b:.{digits}g}"
        if sa != sb or a == b:
            return sa, sb
    return repr(a), repr(b)


def _short_cell(cell: Any) -> str:
    """A metric cell (``16.136327302151024%``) in 4 significant digits."""
    body = str(cell)
    pct = body.endswith("%")
    try:
        value = float(body[:-1] if pct else body)
    except ValueError:
        return body
    return f"{value:.4g}{'%' if pct else ''}"


def number(value: Any) -> float | None:
    """A statistic as a float (``None`` when it is missing or not a number; bools are not numbers)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text in ("True", "False", "", NA, "None"):
            return None
        try:
            return float(text)
        except ValueError:
            return None
    return None


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def _same_argument(a: Any, b: Any, rtol: float) -> bool:
    if a == b or str(a) == str(b):
        return True
    if any(w in str(a).lower() for w in _DEVICE_WORDS) and any(w in str(b).lower() for w in _DEVICE_WORDS):
        return True  # devices differ between runs by design (npu:0 vs cuda:0)
    x, y = number(a), number(b)
    if x is not None and y is not None:
        if math.isnan(x) and math.isnan(y):
            return True
        return abs(x - y) <= rtol * max(abs(x), abs(y))
    return False


def _as_list(column: Any) -> list[Any]:
    return column if isinstance(column, list) else list(column)


class Columns:
    """The result-table columns the checks read, looked up once (rows are then plain list indexing)."""

    def __init__(self, data: dict[str, list[Any]]) -> None:
        self.data = data
        self.name = data[C.NPU_NAME]
        self.npu_dtype, self.bench_dtype = data[C.NPU_DTYPE], data[C.BENCH_DTYPE]
        self.npu_shape, self.bench_shape = data[C.NPU_SHAPE], data[C.BENCH_SHAPE]
        self.npu_md5, self.bench_md5 = data.get(C.NPU_MD5), data.get(C.BENCH_MD5)
        # every row is read: statistics held as arrays (msprobe_core.text.statcells) are spelled out once here
        self.npu_stats = [_as_list(data[C.stat_column(C.NPU, s)]) for s in STATS]
        self.bench_stats = [_as_list(data[C.stat_column(C.BENCH, s)]) for s in STATS]
        none = [None] * len(self.name)  # md5 tables have no relative-error columns
        self.rel = {s: data.get(REL_COLUMN[s], none) for s in STATS}


@dataclass
class RowCheck:
    """The verdict on one matched row: its evidence, and how far it moved even when below every threshold."""

    evidence: list[Evidence]
    error: float  # 0: identical as dumped; else the worst scaled statistic error (inf: differs in kind)
    tensor: bool  # both sides are tensors
    dtypes: tuple[str | None, str | None] = (None, None)
    eps: float = 0.0  # the coarser unit roundoff of the two dtypes
    #: the worst statistic whatever its size, as (error, stat, npu, bench, msprobe relative error, tolerance)
    worst: tuple[float, str, float, float, Any, float] | None = None
    name: str = ""
    side: str = ""

    def statistics_evidence(self, threshold: float | None = None) -> Evidence | None:
        """The ``statistics`` evidence of the worst statistic against ``threshold`` (default: its own tolerance)."""
        if self.worst is None:
            return None
        err, stat, x, y, rel, tol = self.worst
        tol = tol if threshold is None else threshold
        return Evidence(self.name, self.side, "statistics", {
            "stat": stat, "npu": x, "bench": y, "value": err, "threshold": tol,
            "msprobe_metric": REL_COLUMN[stat], "msprobe_value": rel,
        }, severity=err / tol if tol > 0 else math.inf)


def row_evidence(
    data: dict[str, list[Any]] | Columns,
    k: int,
    side: str,
    md5_mode: bool,
    frameworks: tuple[FrameworkSpec, FrameworkSpec],
    config: DiffAnalyzeConfig,
) -> list[Evidence]:
    """Evidence for result row ``k`` (a matched row) of a result table's columns ``data``."""
    return check_row(data, k, side, md5_mode, frameworks, config).evidence


def check_row(
    data: dict[str, list[Any]] | Columns,
    k: int,
    side: str,
    md5_mode: bool,
    frameworks: tuple[FrameworkSpec, FrameworkSpec],
    config: DiffAnalyzeConfig,
) -> RowCheck:
    """Check result row ``k`` (a matched row): evidence past the thresholds, and the raw error.

    ``frameworks``: the specs of the two sides' frameworks, which know their dtypes (which are
    tensor dtypes, their family and unit roundoff).
    """
    cols = data if isinstance(data, Columns) else Columns(data)
    name = cols.name[k]
    tf, gf = frameworks
    nd, bd = cols.npu_dtype[k], cols.bench_dtype[k]
    n_known, b_known = isinstance(nd, str) and nd != NA, isinstance(bd, str) and bd != NA
    nc = tf.canonical(nd) if n_known else None
    bc = gf.canonical(bd) if b_known else None
    ni = tf.dtype_info(nd) if n_known else None
    bi = gf.dtype_info(bd) if b_known else None
    n_tensor, b_tensor = ni is not None, bi is not None
    if not n_tensor or not b_tensor:
        if nc is None and bc is None:
            return RowCheck([], 0.0, False)  # a null on both sides
        a, b = cols.npu_stats[0][k], cols.bench_stats[0][k]
        ns, bs = cols.npu_shape[k], cols.bench_shape[k]
        if n_tensor != b_tensor or not _same_argument(a, b, config.argument_rtol) or (
            a is None and b is None and ns != bs
        ):
            shown_a = a if a is not None else ns
            shown_b = b if b is not None else bs
            ev = Evidence(name, side, "argument", {"npu": _plain(shown_a), "bench": _plain(shown_b)})
            return RowCheck([ev], math.inf, False, (nc, bc))
        return RowCheck([], 0.0, False, (nc, bc))
    out: list[Evidence] = []
    assert ni is not None and bi is not None
    if nc != bc and (ni.family != bi.family or ni.family in ("float", "complex")):
        # an integer's width (int32 indices vs int64) changes no value: the statistics below say if values moved
        out.append(Evidence(name, side, "dtype", {"npu": nd, "bench": bd}))
    ns, bs = cols.npu_shape[k], cols.bench_shape[k]
    if ns != bs:
        out.append(Evidence(name, side, "shape", {"npu": ns, "bench": bs}))
    if md5_mode:
        nm = cols.npu_md5[k] if cols.npu_md5 is not None else None
        bm = cols.bench_md5[k] if cols.bench_md5 is not None else None
        if nm != bm:
            out.append(Evidence(name, side, "md5", {"npu": nm, "bench": bm}))
        return RowCheck(out, math.inf if out else 0.0, True, (nc, bc))
    n_raw = [c[k] for c in cols.npu_stats]
    b_raw = [c[k] for c in cols.bench_stats]
    nv = [number(v) for v in n_raw]
    bv = [number(v) for v in b_raw]
    for s, x, y in zip(STATS, nv, bv):
        if x is None or y is None:
            continue
        if _finite(x) != _finite(y) or (not _finite(x) and str(x) != str(y)):
            out.append(Evidence(name, side, "nan_inf", {
                "side": "target" if not _finite(x) else "golden", "stat": s, "npu": _plain(x), "bench": _plain(y),
            }))
            return RowCheck(out, math.inf, True, (nc, bc))
    if all(x is None for x in nv) or all(y is None for y in bv):
        if [str(v) for v in n_raw] != [str(v) for v in b_raw]:  # e.g. bool tensors: True/False statistics
            out.append(Evidence(name, side, "statistics", {
                "stat": "max", "npu": _plain(n_raw[0]), "bench": _plain(b_raw[0]), "value": 1.0,
                "threshold": 0.0, "msprobe_metric": REL_COLUMN["max"], "msprobe_value": cols.rel["max"][k],
            }))
        return RowCheck(out, math.inf if out else 0.0, True, (nc, bc))
    scale = max((abs(v) for v in (nv[0], nv[1], bv[0], bv[1]) if _finite(v)), default=0.0)
    eps = max(ni.eps, bi.eps)
    tol = config.tolerance(eps)
    worst: tuple[float, str, float, float] | None = None
    for s, x, y in zip(STATS, nv, bv):
        if not (_finite(x) and _finite(y)) or x == y:
            continue
        denom = max(abs(x), abs(y)) if s == "l2norm" else scale
        err = abs(x - y) / denom if denom > 0 else math.inf
        if worst is None or err > worst[0]:
            worst = (err, s, x, y)
    check = RowCheck(out, 0.0, True, (nc, bc), eps, name=name, side=side)
    if worst is not None:
        err, s, x, y = worst
        check.worst = (err, s, x, y, cols.rel[s][k], tol)
        if err > tol:
            out.append(check.statistics_evidence())  # type: ignore[arg-type]
    check.error = math.inf if out and (worst is None or worst[0] <= tol) else (worst[0] if worst else 0.0)
    return check


def _plain(value: Any) -> Any:
    """A JSON-safe rendering of a dumped value (NaN/Inf as text)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value
