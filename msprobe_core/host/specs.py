"""The types plugins register and the contexts their code is handed: what a plugin declares to the host.

Each ``msprobe_register_*`` hook receives a ``register`` callback (:class:`Register`) that takes one of these specs;
the host collects them. Plugins import every name from ``msprobe_core.plugin``. A mapper gets a :class:`MatchContext`,
a metric set a :class:`MetricContext`, a verdict rule a :class:`VerdictContext`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..model import MODE_TENSOR, CompareOptions, DumpTable, MatchResult, ResultNotes
from ..options import DUMP_KINDS  # the kinds a normaliser or mapper handles unless it declares others
from ..result_columns import METRIC, ColumnSpec

if TYPE_CHECKING:
    from ..result import ResultTable
    from .registry import PluginHost

#: what one ``register`` callback takes (a spec type, or :class:`click.Command` for commands)
SpecT = TypeVar("SpecT", contravariant=True)


class Register(Protocol[SpecT]):
    """The ``register`` callback an ``msprobe_register_*`` hook receives: ``register(spec)``, once per spec.

    Each hook names the spec type it takes (``Register[MapperSpec]`` for ``msprobe_register_mappers``); the host
    validates the spec, refuses a duplicate name and remembers which plugin registered it (``msprobe plugins``).
    """

    def __call__(self, spec: SpecT, /) -> None:
        """Register one spec."""


class MapperFunction(Protocol):
    """``MapperSpec.run``: pair the rows of both tables, ``run(ctx) -> MatchResult``.

    ``ctx`` is a :class:`MatchContext`; a mapper that only rewrites keys returns ``ctx.run_after(name, ...)``.
    """

    def __call__(self, ctx: MatchContext, /) -> MatchResult:
        """The pairs of target and golden rows (golden ``-1``: unmatched)."""


class MetricFunction(Protocol):
    """``MetricSpec.compute``: the metric columns of one matched table, ``compute(ctx) -> {column: cells}``.

    ``ctx`` is a :class:`MetricContext`; one list of cells per column, one cell per matched target row
    (every column of the result, in order, for a ``whole_table`` set).
    """

    def __call__(self, ctx: MetricContext, /) -> dict[str, list[Any]]:
        """The columns this set computes, by name."""


class WriterFunction(Protocol):
    """``WriterSpec.write``: write one result table, ``write(table, path) -> [files]``.

    Writes atomically (``msprobe_core.plugin.atomic_path``) and returns every file it created. A writer
    declared ``accepts_options`` is also given ``options=CompareOptions``, one declared ``accepts_csv_tail``
    ``tail=Tail`` (both keywords, see :class:`WriterSpec`).
    """

    def __call__(self, table: ResultTable, path: Path, /, **keywords: Any) -> list[Path]:
        """The files written (the result first)."""

#: the dtype families a :class:`DtypeInfo` may name
DTYPE_FAMILIES = ("float", "int", "bool", "complex")


@dataclass(frozen=True)
class DtypeInfo:
    """One tensor dtype of a framework, as the core needs to know it.

    ``canonical``: the framework-neutral name (``float32``, ``bfloat16``, ``int64``…): the same
    dtype of two frameworks has the same one. ``family``: ``float``, ``int``, ``bool`` or
    ``complex``. ``read_as``: the dtype a tensor of this dtype has once read, as msprobe compares
    it (``float32`` for ``bfloat16`` and the 8-bit floats, which the readers widen; ``None``: the
    canonical name). ``eps``: the unit roundoff of a float dtype (the first-divergence analysis
    allows more change for a coarser dtype; 0 where none is known).
    """

    canonical: str
    family: str
    read_as: str | None = None
    eps: float = 0.0

    def __post_init__(self) -> None:
        if self.family not in DTYPE_FAMILIES:
            raise ValueError(f"dtype {self.canonical!r}: family must be one of {', '.join(DTYPE_FAMILIES)}")


def default_canonical(dtype: str) -> str:
    """The framework-neutral name of a dtype no spec lists: its last dotted component, lower-cased."""
    return dtype.rsplit(".", 1)[-1].lower()


@dataclass(frozen=True)
class FrameworkSpec:
    """What the core needs to know about one framework's dumps; the only source of dtype knowledge.

    ``float_dtypes``: the float dtypes msprobe's same-framework dtype gate lets pair with each other. ``dtypes``:
    every tensor dtype of the framework, by the name its dumps give it (``torch.float32``, ``Float32``), as a
    :class:`DtypeInfo`; a name not listed is no tensor dtype (``<class 'int'>``, ``torch.Size``…). The core asks the
    spec through :meth:`dtype_info`, :meth:`canonical`, :meth:`dtype_family`, :meth:`is_integer`, :meth:`read_dtype`
    and :meth:`same_dtype`. ``commutative_calls``: the calls whose two tensor operands give the same result in either
    order, as a dump names a call without number and direction (``Tensor.__add__``); the first divergence and ``-da``
    compare their operands across slots when that makes them agree (the default plugin ``msprobe_verdicts``).
    """

    name: str
    aliases: tuple[str, ...] = ()
    golden_frameworks: tuple[str, ...] = ()
    float_dtypes: frozenset[str] = frozenset()
    tensor_suffix: str = ""
    read_tensor: Callable[[Path], Any] | None = None
    dtypes: Mapping[str, DtypeInfo] = field(default_factory=dict, hash=False)
    #: How the reference msprobe run turned a statistic's text into a number when this framework is the target
    #: (``None``: correctly rounded, ``float()``). Only statistics mode's ``<S> diff``/``<S>RelativeErr`` use it.
    parse_statistic: Callable[[str], float | None] | None = None
    is_default: bool = False
    #: Writes a numpy array as one tensor file of this framework (a name ending with ``tensor_suffix``),
    #: as ``write_tensor(path, array)``; optional. Only test fixtures call it (msprobe-testing's ``msprobe_testing``
    #: writes the tensor-mode dumps of a framework through it): the core never writes dumps.
    write_tensor: Callable[[Path, Any], None] | None = None
    commutative_calls: frozenset[str] = frozenset()
    plugin: str = ""

    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def dtype_info(self, dtype: str) -> DtypeInfo | None:
        """The description of a tensor dtype of this framework (``None``: not one of its tensor dtypes)."""
        return self.dtypes.get(dtype)

    def canonical(self, dtype: str) -> str:
        """A framework-neutral spelling of ``dtype`` (``float32``, ``bfloat16``, ``int64``…).

        A dtype the spec does not list keeps the last dotted component of its name, lower-cased.
        """
        info = self.dtypes.get(dtype)
        return info.canonical if info is not None else default_canonical(dtype)

    def dtype_family(self, dtype: str) -> str | None:
        """``float``, ``int``, ``bool`` or ``complex`` (``None``: not a tensor dtype of this framework)."""
        info = self.dtypes.get(dtype)
        return info.family if info is not None else None

    def is_integer(self, dtype: str) -> bool:
        """Whether ``dtype`` is one of the framework's integer tensor dtypes (signed or not, any width)."""
        return self.dtype_family(dtype) == "int"

    def read_dtype(self, dtype: str) -> str:
        """The dtype a tensor of ``dtype`` has once read (``bfloat16`` → ``float32``), framework-neutral."""
        info = self.dtypes.get(dtype)
        if info is None:
            return self.canonical(dtype)
        return info.read_as or info.canonical

    def same_dtype(self, dtype: str, other: FrameworkSpec, other_dtype: str) -> bool:
        """Whether ``dtype`` of this framework and ``other_dtype`` of ``other`` are the same dtype.

        The same canonical name; or two integer dtypes: across frameworks the integer width does not
        count (torch wants int64 indices and labels, MindSpore uses int32; the width changes no
        value, and the statistics columns show whether the values agree).
        """
        if self.canonical(dtype) == other.canonical(other_dtype):
            return True
        return other.name != self.name and self.is_integer(dtype) and other.is_integer(other_dtype)


@dataclass
class CompareJob:
    """One pair of dump files to compare, and where its result goes."""

    target: Path
    golden: Path
    output_dir: Path
    stem: str
    label: str = ""
    #: what the plugin that discovered the job notes for its loader, under the plugin's name (docs/plugins.md)
    plugin_data: dict[str, Any] = field(default_factory=dict)
    #: the ``DumpTable.kind`` its tables will have, when its discovery knows it ("": known once loaded);
    #: options declared for other kinds (``OptionSpec.kinds``) are refused for the run
    kind: str = ""
    #: why the job cannot run, when its discovery found a side's file absent ("": it can); the run skips it
    missing: str = ""
    #: what the job's files held that the loader did not understand (records of
    #: :mod:`msprobe_core.load.dialects`, set by the load stage), for the run's summary
    unrecognised: list[dict[str, Any]] = field(default_factory=list)
    #: the ``step<N>`` directory of a step-by-step run the job belongs to ("": not such a run)
    step: str = ""
    #: the steps only one run of a step-by-step run has (``[{"step", "side", "path"}]``; on every job of that run)
    steps_absent: list[dict[str, Any]] | None = None
    #: the ``diff_analyze_*.json`` that ``-da`` wrote for the job's step ("": none)
    step_analysis: str = ""
    #: the ``diff_analyze_*.json`` whose answer is the run's (-da of a step-by-step run: the earliest step's)
    analysis_file: str = ""


#: the built-in mapper at the end of the chain: rows paired by their names, call numbers included
EXACT_MAPPER = "exact"


@dataclass
class MatchContext:
    """What a mapper sees: both tables, their normalised keys, the options and helpers."""

    target: DumpTable
    golden: DumpTable
    target_keys: list[str]
    golden_keys: list[str]
    options: CompareOptions
    cross_framework: bool
    host: PluginHost

    def run_after(self, mapper: str, **changes: Any) -> MatchResult:
        """The match of the next applicable mapper after ``mapper`` in the chain (what would run without it).

        ``changes`` replace fields of this context first (``target_keys=...``: keys a mapping rewrote).
        """
        ctx = replace(self, **changes) if changes else self
        return self.host.mapper_for(ctx.options, kind=ctx.target.kind, after=mapper).run(ctx)


def always_applies(options: CompareOptions) -> bool:
    """The default ``applies`` of a spec: every run."""
    return True


@dataclass(frozen=True)
class MapperSpec:
    """A way of pairing rows, and its place in the chain of mappers.

    The first mapper of the chain that handles the tables' ``kinds`` and whose
    ``applies(options)`` is true runs. ``before``/``after`` name the mappers this
    one goes ahead of / behind (see ``msprobe_register_mappers``).
    """

    name: str
    run: MapperFunction
    applies: Callable[[CompareOptions], bool] = always_applies
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    kinds: tuple[str, ...] = DUMP_KINDS
    plugin: str = ""


@dataclass(frozen=True)
class NormalizerSpec:
    """A compare-key rewrite applied to every row of both sides (of the ``kinds`` it handles) before mapping."""

    name: str
    fn: Callable[[DumpTable, str, list[str], CompareOptions], list[str]]
    order: int = 0
    kinds: tuple[str, ...] = DUMP_KINDS
    plugin: str = ""


@dataclass(frozen=True)
class MetricSpec:
    """The metric columns of one dump mode, computed for the whole table.

    ``whole_table``: ``compute`` returns every column of the result, in order (the core
    adds no name, statistics, stack or ``Data_name`` columns; only the verdict rules of
    its mode add theirs, see ``msprobe_register_verdicts``). ``applies(options)``: the
    runs this set computes the mode's columns for (every run by default; a set with its
    own ``applies`` is asked first). ``splittable``: a part of the matched rows that starts
    at an API's first row gives the same cells as the whole table, so a big result
    may be built in two processes. ``columns``: the
    mode's columns, declared to the host's column registry (``host.columns``).
    """

    mode: str
    compute: MetricFunction
    whole_table: bool = False
    splittable: bool = False
    #: the columns of this mode's tables (every column a ``whole_table`` set may return): names the
    #: core declares (``msprobe_core.plugin.result_columns``) or ``result_columns.ColumnSpec``
    #: of the plugin's own; a name the core does not declare counts as a metric
    columns: tuple[str | ColumnSpec, ...] = ()
    #: the runs this set is for; a set with an ``applies`` goes before the one of its mode without
    applies: Callable[[CompareOptions], bool] = always_applies
    #: ``(target, golden)`` framework names of every result of this mode, for a mode only one framework
    #: dumps: what the summary and the report name when a result's files (read back) do not say
    frameworks: tuple[str, str] | None = None
    #: the grammar of the row names of this mode when each row is one dumped file: the summary and the report
    #: restore execution order and each row's call from it (``None``: rows are in execution order already)
    row_names: RowNames | None = None
    #: whether a result header read back (its column names, ``msprobe report``) is a table of this mode;
    #: asked before the core's own modes are guessed from the metric columns
    recognizes: Callable[[Sequence[str]], bool] | None = None
    #: the first-divergence rule judges a row of this mode on its error relative to the golden tensor, not
    #: on the absolute ``MaxAbsErr > 1`` floor, and the mode's ``error`` verdict alone (an absolute rule)
    #: names a row only when no row crosses a threshold
    relative_errors: bool = False
    plugin: str = ""


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


@dataclass(frozen=True)
class RowNames:
    """How a mode names its rows when each row is one dumped file (``MetricSpec.row_names``).

    ``pattern``: a regular expression that the file name of a row's name (its last path component) matches,
    written in the syntax Python and JavaScript share (the report's page gets it with ``(?P<g>`` spelled
    ``(?<g>``). Its group ``node`` is the call the row belongs to; its group ``order``, an integer, puts the
    rows in execution order (a row it does not match goes first). ``readable``: the short name the report
    shows for a matching file name, a ``str.format`` template over the groups. ``backward``: texts (any
    case) whose presence in a node puts it in the backward pass. ``suffix``: the ending of the row names
    that are such files (other rows of the mode, if any, are named as dump rows are; empty: every row).
    """

    pattern: str
    readable: str = "{node}"
    backward: tuple[str, ...] = ()
    suffix: str = ""

    def match(self, name: str) -> re.Match[str] | None:
        """The pattern's match on the file name of row name ``name`` (``None``: not this grammar's)."""
        return _compiled(self.pattern).match(file_name(name))

    def node(self, name: str) -> tuple[str, str] | None:
        """The call of row ``name`` (its file name when the pattern does not match) and its direction
        (``None``: ``name`` is not a file name of this grammar, see ``suffix``)."""
        if not name.endswith(self.suffix):
            return None
        m = self.match(name)
        node = m.group("node") if m else file_name(name)
        low = node.lower()
        return node, ("backward" if any(t.lower() in low for t in self.backward) else "forward")

    def order_key(self, name: str) -> int:
        """The execution-order key of row ``name`` (``-1`` when the pattern does not match)."""
        m = self.match(name)
        return int(m.group("order")) if m else -1

    def js_pattern(self) -> str:
        """The pattern in JavaScript's spelling of named groups."""
        return self.pattern.replace("(?P<", "(?<")


def file_name(name: str) -> str:
    """The last component of a path-like row name (either separator)."""
    return name.replace("\\", "/").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class TensorMetricSpec:
    """An extra tensor-mode metric: ``fn(npu, bench) -> float | str`` on squeezed arrays (``row_context=True``:
    ``fn(npu, bench, row)``, ``row`` the row's :class:`~msprobe_core.host.tensor_row.TensorRow`).

    Its column is added to the runs whose options it ``applies`` to (every run by default). ``worse`` (``"lower"``:
    a lower value is worse, ``"higher"``: a larger magnitude is) and ``plot`` (the report plots it along execution
    order) describe the column to the summary and the report, as the core's metrics are (:meth:`column_spec`)."""

    column: str
    fn: Callable[..., Any]
    applies: Callable[[CompareOptions], bool] = always_applies
    worse: str | None = None
    plot: bool = False
    plugin: str = ""
    row_context: bool = False

    def column_spec(self) -> ColumnSpec:
        """The metric's column, as the column registry holds it."""
        return ColumnSpec(self.column, METRIC, (MODE_TENSOR,), worse=self.worse,
                          plots=(MODE_TENSOR,) if self.plot else (), plugin=self.plugin)


@dataclass(frozen=True)
class WriterSpec:
    """An output format: ``write(table, path) -> [files]``.

    ``accepts_csv_tail``: the writer also takes ``write(table, path, tail=tail)``, the rows from ``tail.start`` on
    already spelled as CSV elsewhere (``StrategySpec.tail``), and appends that text instead of spelling them.
    ``accepts_options``: called as ``write(table, path, options=CompareOptions)`` (settings of its own are there).
    ``open_chunked(path, rows)``: the result part by part (a streamed compare; without it, whole tables; the core's
    CSV: the plugin ``chunked``'s), a context manager with ``append(table)`` (the next rows, in order), ``commit() ->
    [files]`` and ``abort(exc)`` writing the files ``write`` would; leaving it without ``commit`` removes all begun.
    ``open_sheets(path, styles)``: sheets for a plugin's own layout (classic's workbook), a context manager with
    ``add_sheet``, ``append(row, style)``, ``append_rows``; style ``k``: ``styles[k-1]``, a hex fill or ``"header"``.
    """

    name: str
    suffix: str
    write: WriterFunction
    accepts_csv_tail: bool = False
    accepts_options: bool = False
    open_chunked: Callable[[Path, int], Any] | None = None
    open_sheets: Callable[[Path, Sequence[str]], Any] | None = None
    plugin: str = ""


#: the dump modes the core's result tables have (the default ``modes`` of a :class:`VerdictSpec`)
RESULT_MODES = ("tensor", "statistics", "md5")


@dataclass(frozen=True)
class VerdictSpec:
    """Verdict rules: columns judged from a result's metric columns (see ``msprobe_register_verdicts``).

    ``judge(ctx) -> dict[column, cells]`` gets a :class:`msprobe_core.plugin.VerdictContext`.
    Every rule of the table's mode whose ``applies(options)`` is true runs, in the order
    ``before``/``after`` give (otherwise registration order); one that runs keeps those
    named in ``replaces`` from running.
    """

    name: str
    judge: Callable[..., dict[str, Sequence[Any]]]
    modes: tuple[str, ...] = RESULT_MODES
    applies: Callable[[CompareOptions], bool] = always_applies
    replaces: tuple[str, ...] = ()
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    plugin: str = ""


#: what a hierarchy source gives for one node: its enclosing modules/cells/scopes, outermost first
#: (the node itself not included; ``None``: the source does not know the node)
AncestorLookup = Callable[[str], "Sequence[str] | None"]


@dataclass(frozen=True)
class HierarchySpec:
    """Where a dump says which module/cell/scope encloses a call (see ``msprobe_register_hierarchies``).

    ``load(dump, mode, framework) -> AncestorLookup | None`` is called once per side of a result:
    ``dump`` is that side's dump file or directory (``None`` when only result files are at hand),
    ``mode`` the result's dump mode, ``framework`` the side's framework name (``""``: unknown). It
    reads what it needs once (a ``construct.json``, nothing when the scope is in the names) and
    returns a lookup, or ``None`` when the dump is not its kind. ``source`` names it in the summary
    (``path_source``); ``modules``: whether the names it gives are modules of the model (``False`` for
    calling code, shown as such). Specs are asked in registration order (plugins first); the first
    lookup that knows a node gives its path.
    """

    name: str
    load: Callable[[Path | None, str, str], AncestorLookup | None]
    source: str = ""
    modules: bool = True
    plugin: str = ""


@dataclass(frozen=True)
class CommandLineClaim:
    """A command line a plugin takes over (``msprobe_claim_command_line``).

    ``run()`` does the work (its errors are reported as every command's are);
    ``command_path`` is the command a usage error tells the user to ask ``--help`` of.
    """

    run: Callable[[], None]
    command_path: str = "msprobe"


@dataclass
class MetricContext:
    """What a metric set sees: both tables, the pairs, the cells so far and the options.

    ``meta``: the result's :class:`~msprobe_core.model.ResultNotes`; what a metric set keeps in its
    ``plugin_data[<plugin name>]`` (findings its verdict rules or writer read) goes with the table. ``host``: the
    run's plugin host (its frameworks, tensor metrics and executors), for a metric set that asks it.
    """

    target: DumpTable
    golden: DumpTable
    match: MatchResult
    columns: dict[str, list[Any]]
    options: CompareOptions
    meta: ResultNotes = field(default_factory=ResultNotes)
    host: PluginHost | None = None


@dataclass
class VerdictContext:
    """What a verdict rule sees (``msprobe_register_verdicts``).

    ``columns``: every column so far, by name (metric columns, and what rules before this
    one gave); ``group_of_row``: the target API of each row; ``meta``: the result's ``ResultNotes``, where
    a rule may leave per-row findings for its writer (row colours…) in ``plugin_data[<plugin name>]``.
    """

    mode: str
    target: DumpTable
    golden: DumpTable
    match: MatchResult
    columns: dict[str, list[Any]]
    group_of_row: list[int]
    options: CompareOptions
    meta: ResultNotes = field(default_factory=ResultNotes)
