"""The columns of a result table, each declared once.

Every column msprobe writes is declared here, with the header as msprobe spells it, the dump
modes whose tables have it, its kind (:data:`IDENTITY`, :data:`STATISTIC`, :data:`METRIC`,
:data:`VERDICT`) and, for a metric, which way its values are worse, whether the summary ranks
rows by it and whether the report plots it. The module-level names (``NPU_NAME``,
``MAX_RELATIVE_ERR``…) are the header texts; every other module reads them from here, so a
header is spelled in one place.

:data:`CORE_COLUMNS` holds the core's columns in declaration order. That order is also the order
of the columns in a tensor, statistics or md5 table (:meth:`ColumnRegistry.layout`); a plugin's
mode orders its own columns (its metric set says how), and declares for its mode the core columns
its tables show.

Plugins declare the columns of their metric sets through the same types: a
:class:`~msprobe_core.host.specs.TensorMetricSpec` describes its one column
(:meth:`~msprobe_core.host.specs.TensorMetricSpec.column_spec`), a
:class:`~msprobe_core.host.specs.MetricSpec` lists the columns of its mode (names declared here,
or :class:`ColumnSpec` of its own). The plugin host collects them into its own
:class:`ColumnRegistry` (``host.columns``, a copy of :data:`CORE_COLUMNS` plus the plugins'),
which the summary and the report read through :func:`known_columns`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from .model import MODE_MD5, MODE_STATISTICS, MODE_TENSOR

__all__ = [
    "BENCH",
    "CORE_COLUMNS",
    "HIGHER",
    "IDENTITY",
    "LOWER",
    "METRIC",
    "NPU",
    "STATISTIC",
    "VERDICT",
    "ColumnRegistry",
    "ColumnSpec",
    "known_columns",
]

#: what a column is: which row it is (names, dtypes, shapes, flags, stack, file names)…
IDENTITY = "identity"
#: …a value dumped for one side (max, min, mean, l2norm, MD5)…
STATISTIC = "statistic"
#: …a comparison of the two sides (Cosine, Max diff, MaxRelativeErr…)…
METRIC = "metric"
#: …or what the comparison concludes (Result, Err_message, a plugin's own verdict column…)
VERDICT = "verdict"
KINDS = (IDENTITY, STATISTIC, METRIC, VERDICT)

#: the two sides, as the headers spell them
NPU, BENCH = "NPU", "Bench"
#: which way a metric's value is worse: a lower value (Cosine) or a larger magnitude (an error)
LOWER, HIGHER = "lower", "higher"

#: the dumped statistics, as the headers spell them
STAT_NAMES = ("max", "min", "mean", "l2norm")


@dataclass(frozen=True)
class ColumnSpec:
    """One column of a result table.

    ``name``: the header, as msprobe spells it. ``kind``: :data:`IDENTITY`, :data:`STATISTIC`,
    :data:`METRIC` or :data:`VERDICT`. ``modes``: the dump modes whose tables have it.
    ``side``: :data:`NPU` or :data:`BENCH` for a column holding one side's value. ``of``: what a
    side's column holds (``name``, ``dtype``, ``shape``, ``requires_grad``, a statistic,
    ``MD5``…; a column of one side and the other side's column of the same ``of`` are twins), or
    the statistic a statistics-mode metric compares. ``worse``: for a metric, :data:`LOWER` when
    a lower value is worse, :data:`HIGHER` when a larger magnitude is. ``ranks``: the modes whose
    summary ranks rows by this metric (its main metric). ``plots``: the modes whose report plots
    it along execution order. ``stand_in``: the column shown and ranked instead when this
    relative error is infinite (a zero golden statistic) while that one is finite. ``best``: the
    value of a metric that means no difference at all (Cosine 1); a metric whose larger magnitude
    is worse means none at 0 without saying so. ``optional``: present only in some tables of its modes (the stack column, with a
    ``stack.json``). ``levels``: for a verdict column of a plugin, ``(cell, level)`` pairs: the cells (compared
    stripped, in any case) that make a row a ``warning`` or an ``error`` (any other cell is a pass; the summary,
    the report and ``--fail-on`` read them). ``plugin``: who declared it (empty for the core).
    """

    name: str
    kind: str
    modes: tuple[str, ...] = ()
    side: str | None = None
    of: str | None = None
    worse: str | None = None
    ranks: tuple[str, ...] = ()
    plots: tuple[str, ...] = ()
    stand_in: str | None = None
    best: float | None = None
    optional: bool = False
    levels: tuple[tuple[str, str], ...] = ()
    plugin: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"column {self.name!r}: kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        if self.worse not in (None, LOWER, HIGHER):
            raise ValueError(f"column {self.name!r}: worse must be {LOWER!r}, {HIGHER!r} or None")


class ColumnRegistry:
    """Columns by name, in declaration order; the first declaration of a name wins.

    Declaring a known name again only adds the new declaration's modes, and the modes it ranks
    and plots, to it (a plugin's mode that shows a core column).
    """

    def __init__(self, specs: Iterable[ColumnSpec] = ()) -> None:
        self._specs: dict[str, ColumnSpec] = {}
        for spec in specs:
            self.add(spec)

    def add(self, spec: ColumnSpec) -> ColumnSpec:
        """Declare ``spec`` (or add its modes, ranked and plotted modes to the column of that name); returns the
        column as held."""
        held = self._specs.get(spec.name)
        if held is None:
            self._specs[spec.name] = spec
            return spec
        added = {f: tuple(m for m in getattr(spec, f) if m not in getattr(held, f)) for f in ("modes", "ranks", "plots")}
        if any(added.values()):
            held = self._specs[spec.name] = replace(held, **{f: getattr(held, f) + ms for f, ms in added.items()})
        return held

    def verdict_levels(self) -> list[ColumnSpec]:
        """The verdict columns that declare which of their cells are warnings and errors (``levels``)."""
        return [s for s in self._specs.values() if s.kind == VERDICT and s.levels]

    def copy(self) -> ColumnRegistry:
        """A registry holding the same columns (to be extended without changing this one)."""
        return ColumnRegistry(self._specs.values())

    def get(self, name: str) -> ColumnSpec | None:
        """The column named ``name`` (``None`` when nobody declared it)."""
        return self._specs.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[ColumnSpec]:
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

    def names(self, *, mode: str | None = None, kind: str | None = None, side: str | None = None,
              of: str | None = None, plugin: str | None = None) -> list[str]:
        """The names of the columns that match every filter given, in declaration order."""
        return [
            s.name for s in self._specs.values()
            if (mode is None or mode in s.modes) and (kind is None or s.kind == kind)
            and (side is None or s.side == side) and (of is None or s.of == of)
            and (plugin is None or s.plugin == plugin)
        ]

    def column_of(self, side: str, of: str) -> str:
        """The column holding ``of`` for ``side`` (``column_of(NPU, "max")`` is ``NPU max``)."""
        for s in self._specs.values():
            if s.side == side and s.of == of:
                return s.name
        raise KeyError(f"no column holds {of!r} for {side}")

    def twin(self, name: str) -> str | None:
        """The other side's column of a side's column (``Bench max`` for ``NPU max``), if declared."""
        spec = self._specs.get(name)
        if spec is None or spec.side is None:
            return None
        other = BENCH if spec.side == NPU else NPU
        return next((s.name for s in self._specs.values() if s.side == other and s.of == spec.of), None)

    def layout(self, mode: str, *, with_optional: Iterable[str] = (), extra: Sequence[str] = ()) -> list[str]:
        """The headers of a dump.json table of ``mode``, in order.

        The core's columns of the mode in declaration order (the optional ones only when named in
        ``with_optional``), and the ``extra`` metric columns (plugin tensor metrics) right after the
        mode's last core metric. A mode of a plugin's metric set has the core columns every
        dump.json table has, with the columns the plugin declared for the mode after the names.
        """
        wanted = set(with_optional)
        specs = [s for s in self._specs.values() if not s.optional or s.name in wanted]
        cols = [s for s in specs if mode in s.modes and not s.plugin]
        if not cols:
            cols = [s for s in specs if not s.plugin and all(m in s.modes for m in _DUMP_JSON)]
            extra = [s.name for s in specs if s.plugin and mode in s.modes] + list(extra)
        names = [s.name for s in cols]
        ends = max((k for k, s in enumerate(cols) if s.kind == METRIC),
                   default=max((k for k, s in enumerate(cols) if s.kind == IDENTITY and s.side is not None
                                and not s.optional), default=-1)) + 1
        return names[:ends] + [n for n in extra if n not in names] + names[ends:]

    def main_metric(self, mode: str) -> tuple[str, bool] | None:
        """(the metric the summary ranks rows of ``mode`` by, True when a larger magnitude is worse)."""
        for s in self._specs.values():
            if mode in s.ranks:
                return s.name, s.worse == HIGHER
        return None

    def plot_metrics(self, mode: str) -> tuple[str, ...]:
        """The metrics the report plots for ``mode``: its main metric first, then the others declared to."""
        main = self.main_metric(mode)
        first = [main[0]] if main is not None and mode in self._specs[main[0]].plots else []
        return tuple(first + [s.name for s in self._specs.values() if mode in s.plots and s.name not in first])

    def stand_in(self, name: str) -> str | None:
        """The absolute-difference column that stands in for the relative error ``name`` when it is infinite."""
        spec = self._specs.get(name)
        return spec.stand_in if spec is not None else None

    def best(self, name: str) -> float | None:
        """The value of metric ``name`` that means no difference (its ``best``; 0 for a larger-is-worse metric)."""
        spec = self._specs.get(name)
        if spec is None:
            return None
        if spec.best is not None:
            return spec.best
        return 0.0 if spec.worse == HIGHER else None


CORE_COLUMNS = ColumnRegistry()

_ALL = (MODE_TENSOR, MODE_STATISTICS, MODE_MD5)
_DUMP_JSON = (MODE_TENSOR, MODE_STATISTICS, MODE_MD5)  # the modes of dump.json tables
_VALUES = (MODE_TENSOR, MODE_STATISTICS)  # tables with the statistic values
_TENSOR = (MODE_TENSOR,)  # tables with the tensor metrics
_STATS = (MODE_STATISTICS,)  # tables with the statistics diffs


def _declare(name: str, kind: str, modes: tuple[str, ...], **fields: object) -> str:
    CORE_COLUMNS.add(ColumnSpec(name, kind, modes, **fields))  # type: ignore[arg-type]
    return name


# --- the order of a tensor / statistics / md5 table (each mode's columns keep this order)
NPU_NAME = _declare("NPU Name", IDENTITY, _ALL, side=NPU, of="name")
BENCH_NAME = _declare("Bench Name", IDENTITY, _ALL, side=BENCH, of="name")
NPU_DTYPE = _declare("NPU Dtype", IDENTITY, _ALL, side=NPU, of="dtype")
BENCH_DTYPE = _declare("Bench Dtype", IDENTITY, _ALL, side=BENCH, of="dtype")
NPU_SHAPE = _declare("NPU Tensor Shape", IDENTITY, _ALL, side=NPU, of="shape")
BENCH_SHAPE = _declare("Bench Tensor Shape", IDENTITY, _ALL, side=BENCH, of="shape")
NPU_REQUIRES_GRAD = _declare("NPU Requires_grad", IDENTITY, _DUMP_JSON, side=NPU, of="requires_grad")
BENCH_REQUIRES_GRAD = _declare("Bench Requires_grad", IDENTITY, _DUMP_JSON, side=BENCH, of="requires_grad")

COSINE = _declare("Cosine", METRIC, _TENSOR, worse=LOWER, ranks=_TENSOR, plots=_TENSOR, best=1.0)
EUC_DIST = _declare("EucDist", METRIC, _TENSOR, worse=HIGHER)
MAX_ABS_ERR = _declare("MaxAbsErr", METRIC, _TENSOR, worse=HIGHER)
MAX_DIFF = _declare("Max diff", METRIC, _STATS, of="max", worse=HIGHER, plots=(MODE_STATISTICS,))
MIN_DIFF = _declare("Min diff", METRIC, _STATS, of="min", worse=HIGHER)
MEAN_DIFF = _declare("Mean diff", METRIC, _STATS, of="mean", worse=HIGHER)
L2NORM_DIFF = _declare("L2norm diff", METRIC, _STATS, of="l2norm", worse=HIGHER)
# in tensor tables the largest element-wise relative error; in statistics tables that of the max
MAX_RELATIVE_ERR = _declare("MaxRelativeErr", METRIC, _VALUES, of="max", worse=HIGHER, plots=_TENSOR)
MIN_RELATIVE_ERR = _declare("MinRelativeErr", METRIC, _STATS, of="min", worse=HIGHER)
MEAN_RELATIVE_ERR = _declare("MeanRelativeErr", METRIC, _STATS, of="mean", worse=HIGHER)
NORM_RELATIVE_ERR = _declare("NormRelativeErr", METRIC, _STATS, of="l2norm", worse=HIGHER,
                             ranks=(MODE_STATISTICS,), plots=(MODE_STATISTICS,), stand_in=L2NORM_DIFF)
ONE_THOUSANDTH_ERR_RATIO = _declare("One Thousandth Err Ratio", METRIC, _TENSOR, worse=LOWER, best=1.0)
FIVE_THOUSANDTHS_ERR_RATIO = _declare("Five Thousandths Err Ratio", METRIC, _TENSOR, worse=LOWER, best=1.0)

NPU_MAX = _declare("NPU max", STATISTIC, _VALUES, side=NPU, of="max")
NPU_MIN = _declare("NPU min", STATISTIC, _VALUES, side=NPU, of="min")
NPU_MEAN = _declare("NPU mean", STATISTIC, _VALUES, side=NPU, of="mean")
NPU_L2NORM = _declare("NPU l2norm", STATISTIC, _VALUES, side=NPU, of="l2norm")
BENCH_MAX = _declare("Bench max", STATISTIC, _VALUES, side=BENCH, of="max")
BENCH_MIN = _declare("Bench min", STATISTIC, _VALUES, side=BENCH, of="min")
BENCH_MEAN = _declare("Bench mean", STATISTIC, _VALUES, side=BENCH, of="mean")
BENCH_L2NORM = _declare("Bench l2norm", STATISTIC, _VALUES, side=BENCH, of="l2norm")
NPU_MD5 = _declare("NPU MD5", STATISTIC, (MODE_MD5,), side=NPU, of="MD5")
BENCH_MD5 = _declare("BENCH MD5", STATISTIC, (MODE_MD5,), side=BENCH, of="MD5")

REQUIRES_GRAD_CONSISTENT = _declare("Requires_grad Consistent", VERDICT, _DUMP_JSON)
RESULT = _declare("Result", VERDICT, _DUMP_JSON)
ERR_MESSAGE = _declare("Err_message", VERDICT, _ALL)
STACK_INFO = _declare("NPU_Stack_Info", IDENTITY, _DUMP_JSON, side=NPU, of="stack", optional=True)
DATA_NAME = _declare("Data_name", IDENTITY, (MODE_TENSOR,), of="files")

# --- groups other modules use, derived from the declarations above
#: the columns every dump.json table starts with (names, dtypes, shapes, requires_grad flags)
COMMON_COLUMNS = [n for n in CORE_COLUMNS.names(mode=MODE_MD5, kind=IDENTITY) if n != STACK_INFO]
#: the metric columns of tensor mode, in order
TENSOR_METRIC_COLUMNS = CORE_COLUMNS.names(mode=MODE_TENSOR, kind=METRIC)
#: the metric columns of statistics mode, in order (the diffs, then the relative errors)
STATS_METRIC_COLUMNS = CORE_COLUMNS.names(mode=MODE_STATISTICS, kind=METRIC)
#: ``<S> diff`` and ``<S>RelativeErr`` of each statistic of :data:`STAT_NAMES`
STAT_DIFF_COLUMNS = tuple(STATS_METRIC_COLUMNS[:len(STAT_NAMES)])
STAT_RELATIVE_COLUMNS = tuple(STATS_METRIC_COLUMNS[len(STAT_NAMES):])
#: the eight statistic value columns (NPU then Bench)
STAT_VALUE_COLUMNS = CORE_COLUMNS.names(mode=MODE_STATISTICS, kind=STATISTIC)
#: the checksum columns of md5 mode
MD5_COLUMNS = CORE_COLUMNS.names(mode=MODE_MD5, kind=STATISTIC)
#: the verdict columns that end every dump.json table
TAIL_COLUMNS = CORE_COLUMNS.names(mode=MODE_STATISTICS, kind=VERDICT)


def stat_column(side: str, stat: str) -> str:
    """The column of one side's statistic (``stat_column(NPU, "max")`` is ``NPU max``)."""
    return CORE_COLUMNS.column_of(side, stat)


def known_columns() -> ColumnRegistry:
    """The columns the run knows: its plugin host's (core and plugins), else (outside a run) the core's."""
    from .running import run_host

    host = run_host()
    return host.columns if host is not None else CORE_COLUMNS
