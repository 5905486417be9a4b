"""The data model every stage shares: a flat, columnar table of dump rows.

A dump.json holds nested API/module entries; the loader walks them once and produces a :class:`DumpTable` with one
row per leaf (tensor or non-tensor argument), stored column-wise so later stages can work on whole columns. Tensors
are never loaded here: a row only knows the file name of its tensor (``data_name``) and the directory it lives in
(``tensor_dir``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the host's types: not imported by the data model itself
    from .host.specs import FrameworkSpec

#: Placeholder written for cells that have no value on that side.
NA = "N/A"

#: Dump modes, named as the result tables need them.
MODE_TENSOR = "tensor"
MODE_STATISTICS = "statistics"
MODE_MD5 = "md5"

#: the row columns of a :class:`DumpTable`, in field order
ROW_COLUMNS = (
    "row_api", "name", "state", "dtype", "shape", "requires_grad",
    "max", "min", "mean", "norm", "md5", "data_name",
)
#: the statistics columns among them (lists, or a loader's lean column of the same values, held as arrays)
STAT_COLUMNS = ("max", "min", "mean", "norm")

# The states of a row (``DumpTable.state``): what part of an API call it holds.
#: a row of an argument of the call
STATE_INPUT = "input"
#: a row of a result of the call
STATE_OUTPUT = "output"
#: a row of a module's parameter
STATE_PARAMETERS = "parameters"
#: a row of the gradient of a module's parameter (a ``parameters_grad`` entry)
STATE_PARAMETERS_GRAD = "parameters_grad"
#: a row of a ``debug.json`` value (``msprobe.save``)
STATE_DEBUG = "debug"


@dataclass(slots=True)  # 100k+ per dump: no per-instance __dict__
class ApiEntry:
    """One ``data`` key of a dump: an API or module call.

    ``prefix``/``call``/``direction`` come from splitting the key as msprobe
    does (``Functional.linear`` / ``0.forward`` / ``forward``); ``first_row``
    and ``n_rows`` locate its rows in the owning table.
    """

    key: str
    prefix: str
    call: str
    direction: str
    first_row: int = 0
    n_rows: int = 0

    # without a __dict__, pickle protocols 0 and 1 need the state spelled out
    def __getstate__(self) -> tuple:
        return (self.key, self.prefix, self.call, self.direction, self.first_row, self.n_rows)

    def __setstate__(self, state: tuple) -> None:
        self.key, self.prefix, self.call, self.direction, self.first_row, self.n_rows = state


@dataclass
class DumpTable:
    """All rows of one dump file, column-wise, in dump order.

    Columns hold the values as the result table needs them: dtype/shape are
    strings or ``None`` (shown as ``N/A``), ``requires_grad`` is ``"True"``,
    ``"False"`` or ``None``, statistics are the raw JSON values (``None`` when
    missing) and ``data_name`` is ``"-1"`` when the row has no tensor file.
    The four statistics columns are lists, or (from the C loader, the default plugin
    ``fast_scan``) a lean column holding the same values as arrays, which reads as that list.
    """

    source: Path
    kind: str  # "dump" or "debug": which json the table came from
    task: str
    mode: str
    framework: str
    level: str | None = None
    apis: list[ApiEntry] = field(default_factory=list)
    row_api: list[int] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    state: list[str] = field(default_factory=list)
    dtype: list[str | None] = field(default_factory=list)
    shape: list[str | None] = field(default_factory=list)
    requires_grad: list[str | None] = field(default_factory=list)
    max: Sequence[Any] = field(default_factory=list)
    min: Sequence[Any] = field(default_factory=list)
    mean: Sequence[Any] = field(default_factory=list)
    norm: Sequence[Any] = field(default_factory=list)
    md5: list[str | float | int | None] = field(default_factory=list)  # a number: an xor checksum of a 0-d tensor
    data_name: list[str] = field(default_factory=list)
    stack: dict[str, list[str]] | None = None
    tensor_dir: Path | None = None
    #: what the file held that the loader did not understand: records ``{"file", "kind", "name", "count",
    #: "first"}`` (:mod:`msprobe_core.load.dialects`), for the console and the run's summary
    unrecognised: list[dict[str, Any]] = field(default_factory=list)
    #: the older shapes the loader recognised and mapped (one line each, for the log)
    dialects: list[str] = field(default_factory=list)
    #: what plugins keep on the table, one value per plugin, under the plugin's name (docs/plugins.md,
    #: "A plugin's own data"); the core never reads it
    plugin_data: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.name)

    def api_key(self, row: int) -> str:
        """The dump.json key of the API that owns ``row``."""
        return self.apis[self.row_api[row]].key


def pairing_note(golden_rows: int, paired: int) -> dict[str, int]:
    """The :attr:`MatchNotes.pairing` of a match that paired ``paired`` distinct rows of a golden table of
    ``golden_rows``."""
    return {"golden_rows": int(golden_rows), "golden_unmatched": max(0, int(golden_rows) - int(paired))}


#: The comment line (without ``# ``) by which a data-mapping file says it pairs two programs (``--auto-map`` writes
#: it): given back with ``-dm``, the compare sets :attr:`MatchNotes.two_programs` too and judges as the run that wrote it
TWO_PROGRAMS_COMMENT = "two programs: number arguments equal up to float64 rounding are one number"


@dataclass
class MatchNotes:
    """What the match stage and the mappers say about a match, for the stages after it (one typed field each).

    A mapper that wraps another's match passes its notes on (``MatchResult(t, g, notes=match.notes)``).
    """

    #: the (target, golden) :class:`~msprobe_core.host.specs.FrameworkSpec` the match stage resolved (``None``:
    #: no match stage ran; the stages after it resolve them from the tables)
    frameworks: tuple[FrameworkSpec | None, FrameworkSpec | None] | None = None
    #: the match stage's account of the golden side, ``{"golden_rows": N, "golden_unmatched": M}`` (a result
    #: lists the target's rows only, so the golden rows no target row took are known only here; the run's
    #: summary says when many found no counterpart)
    pairing: dict[str, int] | None = None
    #: lines a mapper writes for the run's summary (its account of how it paired the rows)
    summary_notes: list[str] = field(default_factory=list)
    #: files a mapper attaches to the match, ``(file name prefix, text)``: written next to the result as
    #: ``<prefix>_<timestamp>.yaml`` (``--auto-map``'s proposal, ``-lm``'s generated mapping)
    attachments: list[tuple[str, str]] = field(default_factory=list)
    #: for a part of a bigger result (the default plugin ``chunked``'s tails and chunks): whether each
    #: statistics column of the whole result holds only numbers (:func:`msprobe_core.plugin.whole_numbers`)
    whole_numbers: dict[str, bool] | None = None
    #: set by a mapper that pairs two different programs of the same math (two libraries' implementations): a
    #: number argument equal up to float64 rounding (one computes it, the other writes it out) is then no
    #: inconsistency of the row's verdict (docs/differences.md, "Differences of form")
    two_programs: bool = False
    #: what plugins keep with the match, one value per plugin under its name (docs/plugins.md, "A plugin's own
    #: data"); the core never reads it
    plugin_data: dict[str, Any] = field(default_factory=dict)


@dataclass
class ResultNotes:
    """What the stages say about a result beyond its cells (``ResultTable.meta``; the metric sets and verdict
    rules see the same object as ``ctx.meta``), one typed field each."""

    #: the dump files the result compares
    target: Path | None = None
    golden: Path | None = None
    #: the match's :attr:`MatchNotes.attachments`, written next to the result
    attachments: list[tuple[str, str]] = field(default_factory=list)
    #: the match's :attr:`MatchNotes.pairing`, for the run's summary
    pairing: dict[str, int] | None = None
    #: the match's :attr:`MatchNotes.summary_notes`, for the run's summary
    summary_notes: list[str] = field(default_factory=list)
    #: the rows whose tensor could not be read, with why (the tensor stage notes them, the verdict rules say so)
    unread_tensors: dict[int, str] = field(default_factory=dict)
    #: no verdict rule judged the rows (the one that would is a turned-off default plugin's): verdict cells ``N/A``
    not_judged: bool = False
    #: the mode of the dumps when the result was compared in another (``-da`` compares a tensor dump's
    #: statistics: the summary reports the dump as it is); ``None``: the result's own mode
    dump_mode: str | None = None
    #: what plugins keep with the result, one value per plugin under its name (docs/plugins.md, "A plugin's own
    #: data"): a metric set's per-row findings for its verdict rule or writer; the core never reads it
    plugin_data: dict[str, Any] = field(default_factory=dict)


@dataclass
class MatchResult:
    """Pairs of row indices, in output order.

    ``target[i]`` is a row of the target table; ``golden[i]`` the row of the
    golden table it is paired with, or -1 when it has no partner.
    """

    target: list[int]
    golden: list[int]
    dtype_gate: bool = True
    notes: MatchNotes = field(default_factory=MatchNotes)


class _OptionValues:
    """What :class:`CompareOptions` adds to its fields: plugin options read as attributes.

    ``options.rank`` is the value of the ``--rank`` option a plugin declared:
    ``plugins["rank"]`` when given, else its declared default.
    """

    plugins: dict[str, Any]

    def __getattr__(self, name: str) -> Any:  # only called for names that are not fields
        if name.startswith("__"):
            raise AttributeError(name)
        values = self.__dict__.get("plugins")
        if values is not None and name in values:
            return values[name]
        from .options import declared_default

        return declared_default(name)

    def with_values(self, **values: Any) -> CompareOptions:
        """A copy with some option values changed, core fields and plugin options alike."""
        from dataclasses import fields, replace

        names = {f.name for f in fields(self)}  # type: ignore[arg-type]
        core = {k: v for k, v in values.items() if k in names}
        plugin = {k: v for k, v in values.items() if k not in names}
        if plugin:
            core["plugins"] = {**self.plugins, **plugin}
        return replace(self, **core)  # type: ignore[type-var]


def _options_model() -> type:
    """:class:`CompareOptions`, one field per core option declaration (``msprobe_core.options``)."""
    from dataclasses import make_dataclass

    from .options import CORE_OPTIONS, FLAG, INT, PATH

    types = {FLAG: bool, INT: "int | None", PATH: Path}
    specs = [s for s in CORE_OPTIONS if s.attribute]
    model = make_dataclass(
        "CompareOptions",
        [(s.name, types.get(s.kind, Any), field(default=s.default)) for s in specs]
        + [("plugins", dict[str, Any], field(default_factory=dict)),
           ("extra", dict[str, Any], field(default_factory=dict)),
           ("plugin_data", dict[str, Any], field(default_factory=dict))],
        bases=(_OptionValues,),
        kw_only=True,
        namespace={"__module__": __name__},
    )
    model.__doc__ = """Everything that changes how one compare runs, in one place.

    One field per core option (:data:`msprobe_core.options.CORE_OPTIONS`:
    ``output_dir``, ``output_format``, ``fuzzy_match``, ``data_mapping``…); the
    options plugins declare are in
    ``plugins`` and read as attributes too. ``extra`` holds the values the Python API's ``extra=`` gives that
    name no option (read by the plugin that owns the name); ``plugin_data`` what a plugin carries through the
    run, one value per plugin under its name (docs/plugins.md, "A plugin's own data"). The CLI and the Python API build it through
    :meth:`msprobe_core.host.registry.PluginHost.build_options`.
    """
    return model


CompareOptions = _options_model()
