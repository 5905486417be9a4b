"""Every hook msprobe-core calls, with its contract.

Built-in behaviour (the dump.json loader, the exact matcher, the metric sets,
the CSV and xlsx writers) is registered through these same hooks, exactly as a
third-party plugin would do it; see ``msprobe_core.builtin``.

Registry hooks receive a ``register`` callback instead of returning lists, so
the plugin manager can validate entries, reject duplicates and remember which
plugin registered what (shown by ``msprobe plugins``). Each one is typed by the
spec it takes: ``msprobe_core.plugin.Register[MapperSpec]`` and so on. Plugins
import every name these contracts mention from ``msprobe_core.plugin``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    import click
    import pluggy

    from ..console.stages import StageEvent
    from ..model import CompareOptions, DumpTable
    from ..options import OptionSpec
    from ..pipeline.job import JobOutcome
    from ..run.context import RunContext
    from ..workers.executors import Executor, ExecutorSpec
    from .registry import PluginHost
    from .specs import (
        CommandLineClaim,
        CompareJob,
        FrameworkSpec,
        HierarchySpec,
        MapperSpec,
        MetricSpec,
        NormalizerSpec,
        Register,
        TensorMetricSpec,
        VerdictSpec,
        WriterSpec,
    )
    from .strategies import DumpIndex, StrategySpec

from .markers import PROJECT, hookimpl, hookspec

__all__ = ["PROJECT", "hookimpl", "hookspec"]


@hookspec
def msprobe_register_frameworks(register: Register[FrameworkSpec]) -> None:
    """Describe a framework whose dumps can be compared.

    Call ``register(FrameworkSpec(...))`` (see :class:`msprobe_core.plugin.FrameworkSpec`):
    the names a dump's ``framework`` field may hold, which golden frameworks a
    target of this framework can be compared with, its dtypes (``dtypes``: each one's
    canonical name, family, dtype once read and unit roundoff, the only dtype knowledge
    the core has; ``float_dtypes``: msprobe's same-framework gate group), and how to
    read one tensor file.

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def msprobe_discover_jobs(
    target: Path, golden: Path, options: CompareOptions
) -> list[CompareJob] | None:
    """Turn the two paths the user gave into compare jobs, or return ``None`` if not yours.

    Called with the paths of ``-tp``/``-gp``. The first plugin that recognises
    the layout (a file pair, a step directory with rank dirs, a kernel dump
    root, a graph/pynative mixed dump…) returns the list of jobs, each with its
    own output name. Raise :class:`msprobe_core.plugin.InputError` for a layout
    you own but that is broken (e.g. rank counts differ).

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def msprobe_load_dump(path: Path, options: CompareOptions, job: CompareJob | None,
                      index: bool | None) -> DumpTable | DumpIndex | None:
    """Load one side of a compare into a :class:`~msprobe_core.plugin.DumpTable`, or return ``None``.

    ``path`` is ``job.target`` or ``job.golden`` (usually a dump file); ``job`` is the
    :class:`~msprobe_core.plugin.CompareJob` being loaded, whose ``plugin_data[<plugin name>]``
    holds what the plugin that discovered it noted there (``None`` when a file is loaded on its
    own). Implementations may leave out the ``job`` argument. The table is an index
    of rows; tensors are not read here (rows carry the file name of their tensor,
    read lazily by the framework's reader). Its ``kind`` selects the normalisers and
    mappers that apply (see :class:`~msprobe_core.plugin.MapperSpec`) and its
    ``mode`` the metric set. Raise :class:`msprobe_core.plugin.InputError` for a file
    you claim but cannot read.

    ``index`` is not ``None`` when the chunked strategy asks for the file's index instead of a table (the value:
    whether backward calls are renumbered): a loader opts in to being compared chunk by chunk by returning a
    :class:`~msprobe_core.plugin.DumpIndex` then (``index_table`` makes one from a table; the default plugin
    ``fast_scan`` gives one for any file its C scanner indexes), or returns its table as always. A loader that gives tables
    only leaves the argument out (declared, it must have no default value: pluggy passes no argument that has
    one).

    .. versionadded:: 0.1
    """


# --- pair_loading (issue 33): the two sides of a job loaded at once ---------------------------------------------


@hookspec(firstresult=True)
def msprobe_load_pair(
    load: Callable[[Path], DumpTable | DumpIndex],
    target: Path,
    golden: Path,
    meanwhile: Callable[[DumpTable | DumpIndex], None],
) -> tuple[DumpTable | DumpIndex, DumpTable | DumpIndex] | None:
    """Both sides of a job, ``(load(target), load(golden))``, loaded this plugin's way, or ``None``.

    Called once per job by the load stage; ``load(path)`` is the plugins' loader (``msprobe_load_dump``).
    An implementation may load the two at once (the default plugin ``pair_loading`` loads the target in a forked
    child); it must give what a serial load gives, and raise the target's error before the golden's.
    ``meanwhile(golden)`` (it never raises) may be called after the golden is loaded and before the target is
    taken: work that fills the wait. ``None``: the core loads the target, then the golden, and calls no
    ``meanwhile``.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_register_normalizers(register: Register[NormalizerSpec]) -> None:
    """Register name normalisers: ``register(NormalizerSpec(name, fn, order=…))``.

    ``fn(table, side, keys, options) -> list[str]`` returns new compare keys
    for every row of ``table`` (``side`` is ``"target"`` or ``"golden"``).
    Normalisers run in ascending ``order`` before any mapper, on tables of the
    ``kinds`` they declare (default ``dump`` and ``debug``); return ``keys``
    unchanged when the options say you do not apply.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_register_mappers(register: Register[MapperSpec]) -> None:
    """Register mappers that pair target rows with golden rows: ``register(MapperSpec(...))``.

    Mappers form one chain, ordered by what each declares: ``before=("exact",)``
    puts it ahead of the mapper named ``exact``, ``after=(...)`` behind the ones
    named (names no installed plugin registers are ignored). The first mapper of
    the chain that handles the tables' ``kind`` and whose ``applies(options)`` is
    true runs: ``run(ctx) -> MatchResult`` where ``ctx`` is a
    :class:`msprobe_core.plugin.MatchContext` (both tables, their normalised
    keys, the options). A mapper that only rewrites keys hands on to the rest of
    the chain with ``ctx.run_after(its_name, target_keys=...)``.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_register_metrics(register: Register[MetricSpec | TensorMetricSpec]) -> None:
    """Register metric calculators: ``register(MetricSpec(...))``.

    A metric set belongs to one dump mode (``tensor``, ``statistics``,
    ``md5``, or a plugin's, e.g. ``kernel``) and fills its columns for the whole
    matched table at once; ``MetricSpec(whole_table=True)`` builds every column
    of the result itself (no core columns or verdicts are added). Extra tensor
    metrics (``register(TensorMetricSpec(...))``) add a column after the
    built-in six for the runs whose options they ``apply`` to; a metric that
    raises yields ``unsupported``. Both declare their columns to the column
    registry (``msprobe_core.plugin.result_columns``): ``MetricSpec(columns=...)``,
    ``TensorMetricSpec(worse=..., plot=...)``.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_register_verdicts(register: Register[VerdictSpec]) -> None:
    """Register verdict rules: ``register(VerdictSpec(name, judge, ...))``.

    Once the metric columns of a result exist, every rule whose ``modes`` holds the
    dump mode and whose ``applies(options)`` is true runs, in chain order (``before=``/
    ``after=`` name other rules, as for mappers): ``judge(ctx) -> dict[column, cells]``
    where ``ctx`` is a :class:`msprobe_core.plugin.VerdictContext` (the columns so far,
    both tables, the matched pairs, each row's API group, the options, and the result's
    ``meta``, where a rule may leave per-row findings for the writers). The columns it
    returns replace the table's of that name or are new: new ones follow ``Requires_grad
    Consistent``, in the order the rules give them. A rule that applies keeps the rules
    named in its ``replaces`` from running. The core's own ``Result``/``Err_message`` are
    the rule ``msprobe``.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_register_writers(register: Register[WriterSpec]) -> None:
    """Register result writers: ``register(WriterSpec(name, suffix, write))``.

    ``write(table: ResultTable, path: Path) -> list[Path]`` must write
    atomically (see :func:`msprobe_core.plugin.atomic_path`) and return the
    files it created. A writer declared ``WriterSpec(..., accepts_csv_tail=True)``
    is also called as ``write(table, path, tail=Tail)`` with the last rows
    already spelled as CSV by a forked child (see :class:`msprobe_core.plugin.WriterSpec`).

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_register_executors(register: Register[ExecutorSpec]) -> None:
    """Register executors, the places independent tasks run: ``register(ExecutorSpec(...))``.

    ``ExecutorSpec(name, create)`` (see :class:`msprobe_core.plugin.ExecutorSpec`):
    ``create(options) -> Executor`` builds the executor selected by
    ``--executor NAME`` (``options.executor``; ``options.scheduler`` holds
    ``--scheduler ADDRESS``). The run's executor spreads rank pairs and tensor
    chunks; tasks are module-level functions with picklable arguments and
    their results never depend on where they ran. The built-in ``local``
    executor is a process pool on this machine.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_register_hierarchies(register: Register[HierarchySpec]) -> None:
    """Say how a dump nests its calls in modules/cells/scopes: ``register(HierarchySpec(...))``.

    :class:`~msprobe_core.plugin.HierarchySpec` ``(name, load, source=..., modules=...)``:
    ``load(dump, mode, framework)`` reads what the dump keeps of its hierarchy once and returns a
    lookup ``node -> ancestors`` (outermost first), or ``None`` when the dump is not its kind. The
    summary's first divergence gets its ``path`` from the first lookup that knows the node, and the
    HTML report's model tree is built from the same lookups. The default plugin ``hierarchy`` registers
    ``construct.json`` (node -> enclosing call) and ``stack.json`` (calling code); the kernel plugin registers
    the scope in kernel names.

    .. versionadded:: 0.1
    """


# --- hierarchy (issue 33): what a hierarchy source may keep of the run's reads instead of reading a file again ---
@hookspec
def msprobe_stack_read(path: Path, stack: Any, key_hash: Any) -> None:
    """The compare read a target's ``stack.json`` at ``path`` (for the result's stack column): a plugin that reads
    the dump's calling code later in the run (a hierarchy source) may keep ``stack`` instead of reading the file
    again.

    ``stack``: the file's ``{call: frames}`` dict (``key_hash`` ``None``), or, for a target read in chunks, the
    per-entry stack its strategy made (``stack.stacks(entries, keys)``: the default plugin ``chunked``'s) with
    ``key_hash`` the index's key hash of each entry (:func:`msprobe_core.plugin.key_hashes`). Called once per read,
    in the process that read it; keep it only until ``msprobe_run_released``.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_run_released() -> None:
    """Let go of what was kept of the run's reads (``msprobe_stack_read``): called when a run starts (what an
    earlier run that stopped early kept) and once the run-finished hooks are done, also when a gate failed.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """Declare options of ``msprobe compare`` and :func:`msprobe_core.compare`: ``register(OptionSpec(...))``.

    One :class:`msprobe_core.plugin.OptionSpec` per option (Python name, flags,
    kind of value, default, help line, validation) gives the command-line flag
    (listed under the plugin's name in ``msprobe compare --help``), the keyword of
    the Python API (in its signature and docstring) and the attribute every hook
    reads from the options (``options.<name>``). A name, alias or flag another
    option already has is refused with a warning; core options come first.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_register_commands(register: Register[click.Command]) -> None:
    """Add sub-commands to ``msprobe``: ``register(command)`` with a :class:`click.Command`.

    Every sub-command but the core's own ``compare`` and ``plugins`` arrives this way
    (``msprobe report`` and ``msprobe merge_result`` are default plugins'): ``msprobe
    --help`` lists each with the first paragraph of its help, so registering one must
    stay light (import the command's module, never numpy or pandas: do that in the
    command's body). A name a built-in command or an earlier plugin has is refused
    with a warning; ``-p no:NAME`` takes the plugin's commands away with it.

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def msprobe_claim_command_line(args: list[str]) -> CommandLineClaim | None:
    """Take over a command line that is not in ``msprobe``'s own syntax, before it is parsed.

    ``args`` is the command line after ``msprobe`` (``--debug`` removed). The hook is
    called only for a command line the core cannot parse itself: one that starts with an
    option the ``msprobe`` group does not have (``msprobe -f pytorch compare ...``), or a
    built-in command given an option it does not declare (``msprobe compare -i x.json``).
    Return a :class:`~msprobe_core.plugin.CommandLineClaim` for a form that is yours (what
    to run, and the command whose ``--help`` its usage errors name), else ``None``. What
    ``run`` raises is reported as for every command: one line and an exit status.

    .. versionadded:: 0.1
    """


# --- the chunked strategy (issue 33) ---


@hookspec
def msprobe_register_strategies(register: Register[StrategySpec]) -> None:
    """Register ways to run a big job's stages: ``register(StrategySpec(name, choose, order=…))``.

    The core runs every job on whole tables unless a registered strategy takes it: for a job that writes its
    result and whose larger dump file is at least the size from which the core offers it, each
    :class:`~msprobe_core.plugin.StrategySpec`'s ``choose(job, options, host, on_worker)`` is asked in ascending
    ``order`` and the first :class:`~msprobe_core.plugin.Strategy` returned runs the job (its ``index`` says what
    the load asks of the loaders: tables, or each dump's :class:`~msprobe_core.plugin.DumpIndex`). A strategy
    hands a job back to whole tables by raising :class:`~msprobe_core.plugin.WholeTablesNeeded` before any
    result file exists. The default plugin ``chunked`` registers the chunk-by-chunk strategy.

    .. versionadded:: 0.1
    """


# -- diff_analyze, steps (issue 33): ways to run and discover that default plugins take over ---------------------
@hookspec(firstresult=True)
def msprobe_run_jobs(jobs: list[CompareJob], options: CompareOptions, host: PluginHost,
                     run: RunContext, executor: Executor) -> list[JobOutcome] | None:
    """Run the jobs of a compare your own way, or return ``None`` to leave them to the plain compare.

    Called once per run, after the output directory is prepared, the run's timestamp taken (``run.stamp``) and
    the run's ``executor`` opened (the stages' current one; every path of ``jobs`` and ``options`` is absolute
    when its workers do not share this directory), with every job the discovery made. The first plugin that
    returns a list of :class:`~msprobe_core.plugin.JobOutcome` (one per job, in order) has run them: its files
    are the run's outputs. Return ``None`` when the options do not ask for your way of running (the default
    plugin ``diff_analyze`` takes the run only with ``-da``) or the jobs are not ones you can run; then the next
    plugin is asked, and the plain compare (every job through the pipeline, one after the other) runs when none
    takes it. The default plugin ``parallel_jobs`` (``trylast``) runs several rank pairs as ``executor`` tasks.
    A runner that took the run raises :class:`~msprobe_core.plugin.MsprobeError` for a failure that stops it.

    .. versionadded:: 0.1
    """


# --------------------------------------------------------------------------- stage events (issue 33: the default
# plugin 'progress' listens; the core's stages send them through msprobe_core.console.stages)
@hookspec
def msprobe_stage_started(event: StageEvent) -> None:
    """A run, a job of it, one of its stages or a piece of counted work began: ``event`` says which
    (:class:`msprobe_core.plugin.StageEvent`: ``kind`` ``run``, ``job``, ``stage`` or ``count``, its ``name``,
    words and numbers). Called in the process doing the work (a forked worker too), as it happens; a new stage
    ends the one before. Return nothing; keep it cheap (it runs inside the stages). A listener that raises is
    warned about once and not called again for the run: the compare goes on.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_stage_advanced(event: StageEvent) -> None:
    """The current stage moved (``kind`` ``stage``: ``detail`` says how far, ``chunk 3/23 (13%)``) or counted
    work did (``kind`` ``count``: ``done`` of ``total`` units, ``done_bytes`` of ``total_bytes``). Sent at most
    every few thousand rows and, for counted work, at most twenty times a second; as for
    ``msprobe_stage_started``.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_stage_finished(event: StageEvent) -> None:
    """A run or a piece of counted work ended (the same ``key`` as its start; counted work with its final
    ``done``), or (``kind`` ``stage``) the current stage is done with the terminal: output outside the log (the
    summary) follows. As for ``msprobe_stage_started``.

    .. versionadded:: 0.1
    """


# --------------------------------------------------------------------------- a run's output directories (issue 33:
# the default plugin 'sweep' removes what killed runs left there)
@hookspec
def msprobe_output_dirs_ready(directories: list[Path]) -> None:
    """A run is about to write into ``directories``: tidy them before it takes its timestamp there.

    Called once per run in the run's process, before anything is written: ``msprobe compare`` gives its output
    directory and then each job's (those not made yet are given too; an implementation skips what it cannot
    list), :func:`~msprobe_core.plugin.run_compare` with ``stages_only`` each job's, ``msprobe merge_result`` its
    output directory (when it runs as the command). The default plugin ``sweep`` removes the temporary files, run
    locks and side directories that killed runs of this program left (names of the shapes
    :mod:`msprobe_core.plugin.leftovers` gives them, that no live process holds). The return value is ignored; an
    installed plugin's implementation that raises is named in a warning and the run goes on.

    .. versionadded:: 0.1
    """


# --------------------------------------------------------------------------- a plugin's own hooks (issue 33: the
# hooks only a default plugin calls are declared by it: tensor_metrics', summary's, plugins_command's)
@hookspec(historic=True)
def msprobe_add_hookspecs(pluginmanager: pluggy.PluginManager) -> None:
    """Declare hooks of your own, for the plugins that extend yours: ``pluginmanager.add_hookspecs(module)``, a
    module of functions marked with :data:`msprobe_core.plugin.hookspec` (pytest's ``pytest_addhooks``).

    Called once for each plugin, when it is registered (a historic hook). Declare the hooks your plugin calls
    (``host.pm.hook.NAME(...)``) and no other plugin does. An implementation of a hook that a plugin which may be
    absent declares is marked ``@hookimpl(optionalhook=True)``: without it, a hook no plugin declares is a
    misspelt one, and its plugin is skipped. The default plugin ``tensor_metrics`` declares
    ``msprobe_tensor_rows_compared``, ``summary`` declares ``msprobe_mapping_options``, ``plugins_command``
    declares ``msprobe_list_plugins``.

    .. versionadded:: 0.1
    """


# the run-finished hooks and those added after them (msprobe_core.host.run_hookspecs), and the default plugin
# known_plugins' (msprobe_core.host.hint_hookspecs): hooks of this module too, declared apart to keep it short
from .hint_hookspecs import *  # noqa: E402, F403
from .run_hookspecs import (  # noqa: E402
    msprobe_check_run,
    msprobe_csv_tail,
    msprobe_plugins_loaded,
    msprobe_read_index_stack,
    msprobe_register_partials,
    msprobe_run_finished,
    msprobe_run_gate,
    msprobe_run_outputs,
    msprobe_run_terminal_summary,
    msprobe_summarize,
    msprobe_write_report,
)

__all__ += [
    "msprobe_check_run",
    "msprobe_csv_tail",
    "msprobe_register_partials",
    "msprobe_run_outputs",
    "msprobe_run_finished",
    "msprobe_run_terminal_summary",
    "msprobe_run_gate",
    "msprobe_summarize",
    "msprobe_write_report",
    "msprobe_plugins_loaded",
    "msprobe_read_index_stack",
]
