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

from ..model import MODE_TENSOR, CompareOptions, DumpTable, MatchResult
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
    compare their operands across slots when that makes them agree (:mod:`msprobe_core.verdicts.forms`).
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
    #: as ``write_tensor(path, array)``; optional. Only test fixtures call it (:mod:`msprobe_core.testing`
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
    #: what the plugin that discovered the job notes for the loaders (``msprobe_load_dump`` gets the job)
    extra: dict[str, Any] = field(default_factory=dict)
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
    """An extra tensor-mode metric: ``fn(npu, bench) -> float | str`` on squeezed arrays.

    Its column is added to the runs whose options it ``applies`` to (every run by default).
    ``worse`` (``"lower"``: a lower value is worse, ``"higher"``: a larger magnitude is) and
    ``plot`` (the report plots it along execution order) describe the column to the summary
    and the report, as the core's metrics are described (:meth:`column_spec`).
    """

    column: str
    fn: Callable[[Any, Any], Any]
    applies: Callable[[CompareOptions], bool] = always_applies
    worse: str | None = None
    plot: bool = False
    plugin: str = ""

    def column_spec(self) -> ColumnSpec:
        """The metric's column, as the column registry holds it."""
        return ColumnSpec(self.column, METRIC, (MODE_TENSOR,), worse=self.worse,
                          plots=(MODE_TENSOR,) if self.plot else (), plugin=self.plugin)


@dataclass(frozen=True)
class WriterSpec:
    """An output format: ``write(table, path) -> [files]``.

    ``accepts_csv_tail``: the writer also takes ``write(table, path, tail=Tail)``, the
    rows from ``tail.start`` on already spelled as CSV by a forked child of the core's, and
    appends that text instead of spelling them.
    ``accepts_options``: the writer is called as ``write(table, path, options=CompareOptions)``
    (a writer with settings of its own reads them from the run's options).
    ``open_chunked``: the writer also takes a result part by part (a streamed compare):
    ``open_chunked(path, rows)`` returns a context manager with ``append(table)`` (the next rows, in
    order), ``commit() -> [files]`` and ``abort(exc)``, writing the same files ``write`` would; leaving it
    without ``commit`` must remove every file begun. Without it, a streamed compare builds whole tables.
    """

    name: str
    suffix: str
    write: WriterFunction
    accepts_csv_tail: bool = False
    accepts_options: bool = False
    open_chunked: Callable[[Path, int], Any] | None = None
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

    ``meta`` is the result's ``meta``: what a metric set notes there (per-row findings the
    verdict rules or the writer of the same plugin read) goes with the table. ``host``: the run's
    plugin host (its frameworks, tensor metrics and executors), for a metric set that asks it.
    """

    target: DumpTable
    golden: DumpTable
    match: MatchResult
    columns: dict[str, list[Any]]
    options: CompareOptions
    meta: dict[str, Any] = field(default_factory=dict)
    host: PluginHost | None = None


@dataclass
class VerdictContext:
    """What a verdict rule sees (``msprobe_register_verdicts``).

    ``columns``: every column so far, by name (metric columns, and what rules before this
    one gave); ``group_of_row``: the target API of each row; ``meta``: the result's ``meta``,
    where a rule may leave per-row findings for the writers (row colours…).
    """

    mode: str
    target: DumpTable
    golden: DumpTable
    match: MatchResult
    columns: dict[str, list[Any]]
    group_of_row: list[int]
    options: CompareOptions
    meta: dict[str, Any] = field(default_factory=dict)


# --- the chunked strategy (issue 33): how a job's stages run, and the index a loader gives to be streamed ---


class WholeTablesNeeded(Exception):
    """Raised by a :class:`Strategy`'s ``match`` or ``finish``, before any result file exists, when it cannot take
    the job: the core goes on from the match stage on whole tables (the reason in the message, on the debug log)."""


class Strategy(Protocol):
    """How a job's stages run, asked by the core's one orchestration of a job at each stage boundary.

    ``name`` is said on the debug log; ``index`` is what the load stage asks of the loader (``None``: tables;
    ``True``/``False``: a :class:`DumpIndex` where the loader gives one, backward calls renumbered or not).
    :meth:`match` and :meth:`finish` may raise :class:`WholeTablesNeeded` before any result file exists.
    """

    name: str

    @property
    def index(self) -> bool | None:
        """What the load stage asks of the loader (see the class)."""

    def match(self, target: Any, golden: Any, options: CompareOptions, host: PluginHost) -> Any:
        """The match stage on what the load gave (``None``: nothing matched, said on the console)."""

    def finish(self, matched: Any, job: CompareJob, options: CompareOptions, timestamp: str | None,
               host: PluginHost, run: Any) -> Any:
        """Metrics, verdicts and the write (``timestamp`` ``None``: build the table, write nothing); returns the
        job's ``Written`` (its table or ``None``, its files, its summary partial)."""


@dataclass(frozen=True)
class StrategySpec:
    """A way to run a big job's stages (``msprobe_register_strategies``), besides the core's whole tables.

    ``choose(job, options, host, on_worker) -> Strategy | None`` is asked, in ascending ``order``, for every job
    that writes its result and whose larger dump file is at least the size from which the core offers it
    (``MSPROBE_STREAM_MIN_BYTES`` for a serial run's job, ``MSPROBE_RANK_STREAM_MIN_BYTES`` on a pool worker);
    the first strategy returned runs the job, none: whole tables.
    """

    name: str
    choose: Callable[[CompareJob, CompareOptions, PluginHost, bool], Strategy | None]
    order: int = 100
    plugin: str = ""


@dataclass(frozen=True)
class FileIdentity:
    """What says that a file is still the one indexed: size, modification time, inode and device."""

    size: int
    mtime_ns: int
    inode: int
    device: int

    @classmethod
    def of(cls, st: Any) -> FileIdentity:
        """The identity of a file from its ``os.stat_result``."""
        return cls(st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


class EntryReader(Protocol):
    """What :meth:`DumpIndex.open_reader` gives: a context manager reading runs of entries into tables."""

    def __enter__(self) -> EntryReader:
        """Open the file (raise :class:`~msprobe_core.plugin.InputError` when it changed since it was indexed)."""

    def __exit__(self, *exc: object) -> None:
        """Close the file."""

    def read(self, runs: Sequence[tuple[int, int]]) -> DumpTable:
        """The table of the entries of ``runs`` (``(first, stop)`` entry numbers, ascending), in that order, their
        rows numbered from 0: the rows the whole table has for those entries, ``apis`` and ``row_api`` included."""


@dataclass
class DumpIndex:
    """The index of one dump (pass 1 of a chunked compare): where each entry (API) is, what matching needs, no rows.

    A loader opts in to the chunked strategy by returning one from ``msprobe_load_dump`` when the ``index``
    argument is not ``None`` (see ``docs/plugins.md``, "Being compared chunk by chunk"); ``index`` says whether the
    compare keys are backward-renumbered. Per entry: ``offsets`` (where the loader finds it again; the built-in
    loader's file offsets, one more element), ``key_hash`` (of the entry's key), ``head`` (the hash state of the
    compare head: the key, or with ``renumbered`` the renumbered key), ``rank`` (the backward rank, -1: not
    renumbered), ``n_rows``; ``first_row`` is their running sum (one more element: the row count). Per row:
    ``suffix`` (id into ``suffixes``: the name after the key, or ``\\x01`` + the whole compare key), ``dtype`` (0:
    ``None``, else id + 1 into ``dtypes``), ``flags`` (bit k: statistic k (Max, Min, Mean, Norm) is an int or a
    float; bit k + 4: a float). ``reader(index)``: an :class:`EntryReader` of the entries (pass 2); ``whole(index)``:
    the whole table (the fallback to whole tables). Both are pickled with the index: give module-level functions
    or classes. :func:`~msprobe_core.plugin.index_table` makes one from a table a loader has read.
    """

    source: Path
    kind: str
    task: str
    mode: str
    framework: str
    level: str | None
    identity: FileIdentity
    renumbered: bool
    offsets: Any
    key_hash: Any
    head: Any
    rank: Any
    n_rows: Any
    first_row: Any
    suffix: Any
    dtype: Any
    flags: Any
    suffixes: list[bytes]
    dtypes: list[str | None]
    tensor_dir: Path | None = None
    stack: Any = None  # the target's stack once attached (for the built-in loader: records or a StackIndex)
    extra: dict[str, Any] = field(default_factory=dict)
    #: whether two rows have one compare-key hash, once :meth:`repeats_a_row` has looked (``None``: not yet)
    repeated_rows: bool | None = None
    reader: Callable[[DumpIndex], EntryReader] | None = None
    whole: Callable[[DumpIndex], DumpTable] | None = None
    #: the two-process load sends it pickled, whole
    pickled_whole = True

    def __len__(self) -> int:
        return len(self.suffix)

    @property
    def n_apis(self) -> int:
        """The number of entries."""
        return len(self.n_rows)

    def row_hashes(self, start: int = 0, stop: int | None = None) -> Any:
        """The compare-key hash of every row of entries ``start:stop`` (a uint64 numpy array)."""
        import numpy as np

        from .._dumpscan import row_hashes

        stop = self.n_apis if stop is None else stop
        r0, r1 = int(self.first_row[start]), int(self.first_row[stop])
        suffix = np.ascontiguousarray(self.suffix[r0:r1], dtype=np.uint32)  # the scanner's width (kept narrower)
        raw = row_hashes(np.ascontiguousarray(self.head[start:stop], dtype=np.uint64),
                         np.ascontiguousarray(self.n_rows[start:stop], dtype=np.int32), suffix, self.suffixes)
        return np.frombuffer(raw, dtype=np.uint64)

    def all_row_hashes(self) -> Any:
        """:meth:`row_hashes` of every row, computed :data:`INDEX_STEP` entries at a time into one array."""
        import numpy as np

        out = np.empty(len(self), dtype=np.uint64)
        for a0 in range(0, self.n_apis, INDEX_STEP):
            a1 = min(a0 + INDEX_STEP, self.n_apis)
            out[int(self.first_row[a0]): int(self.first_row[a1])] = self.row_hashes(a0, a1)
        return out

    def repeats_a_row(self) -> bool:
        """Whether two rows have one compare-key hash (looked at once, then kept in :attr:`repeated_rows`)."""
        if self.repeated_rows is None:
            hashes = self.all_row_hashes()
            hashes.sort()
            self.repeated_rows = any_repeat(hashes)
        return self.repeated_rows

    def api_of_rows(self, rows: Any) -> Any:
        """The entry of each row number of ``rows``."""
        import numpy as np

        return np.searchsorted(self.first_row, rows, side="right") - 1

    def same_file(self) -> bool:
        """Whether the file is still the one indexed (size, mtime, inode, device)."""
        try:
            return FileIdentity.of(self.source.stat()) == self.identity
        except OSError:
            return False

    @staticmethod
    def hashes_available() -> bool:
        """Whether row hashes can be computed here (the compiled extension ``msprobe_core._dumpscan`` is built):
        without it no index is matched and every compare runs on whole tables."""
        try:
            from .. import _dumpscan  # noqa: F401
        except ImportError:
            return False
        return True

    def open_reader(self) -> EntryReader:
        """A reader of this index's entries (pass 2), from the loader's ``reader``."""
        if self.reader is None:
            raise WholeTablesNeeded(f"{self.source}: its loader gives no reader of entries")
        return self.reader(self)

    def whole_table(self) -> DumpTable:
        """The whole table of the indexed dump, from the loader's ``whole`` (what a fallback to whole tables reads)."""
        if self.whole is None:
            raise WholeTablesNeeded(f"{self.source}: its loader gives no whole table")
        table = self.whole(self)
        table.tensor_dir = self.tensor_dir
        return table


#: entries (or elements) whose row hashes are computed or compared at a time: the temporaries stay small
INDEX_STEP = 1 << 18


def any_repeat(ordered: Any) -> bool:
    """Whether a sorted array holds a value twice (compared :data:`INDEX_STEP` elements at a time)."""
    return any(bool((ordered[i + 1: i + INDEX_STEP + 1] == ordered[i: i + INDEX_STEP][: len(ordered) - i - 1]).any())
               for i in range(0, max(len(ordered) - 1, 0), INDEX_STEP))
