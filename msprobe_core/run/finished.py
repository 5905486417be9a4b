"""What the core does once a run's jobs are done: the run-finished hooks, and the per-job partials they read.

The core prints no summary, writes no report and applies no gate itself: it hands a :class:`FinishedRun` to the
plugins, in four steps (``msprobe_core.host.hookspecs``, "the run-finished hooks"):

1. ``msprobe_run_outputs(run)``: each plugin names the files it will write (the JSON summary, the HTML report),
   gathered in ``run.outputs`` before anything is written (the summary lists them among the run's files);
2. ``msprobe_run_finished(run)``: the plugins compute and write; the ``summary`` plugin's implementation is
   ``tryfirst`` and puts the run's :class:`RunSummary` on ``run.summary``, which the others then read;
3. the core's "ends successfully" banner (a run where some job failed has none), then
   ``msprobe_run_terminal_summary(run)``: what a plugin prints for the user (the summary text);
4. ``msprobe_run_gate(run)``: each gate returns why the run fails it, or ``None``; any reason ends the command
   with exit status 3 (:class:`~msprobe_core.errors.GateFailed`, the reasons joined by ``"; "``). A run where some
   job failed is not gated (it exits 1 anyway).

A plugin that needs something of each job's result where the job ran (on a worker, without the table coming
back) registers a :class:`PartialSpec` (``msprobe_register_partials``): the run feeds every job's result to the
spec's sink and hands its partial back on the job's outcome; ``run.partial(name, outcome)`` reads it.

Each implementation is called in pluggy's order (``tryfirst``/``trylast`` place it; hook wrappers are not called
on these hooks), an installed plugin's through the guard of plugin code: its ``MsprobeError`` ends the command
with that error's line, any other exception with one naming the plugin and the hook.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..host.registry import PluginHost
    from ..model import CompareOptions
    from ..pipeline.sink import ResultSink

log = logging.getLogger("msprobe")

#: what a :class:`PartialSpec` is asked for a run: ``(options, command-line values, number of jobs)`` -> a
#: picklable factory of one job's sink, or ``None`` when this run needs none
SinkChoice = Callable[["CompareOptions", Mapping[str, Any], int], "Callable[[], ResultSink] | None"]


@dataclass(frozen=True)
class PartialSpec:
    """A per-job partial a plugin makes where each job runs (``msprobe_register_partials``).

    ``name``: what ``FinishedRun.partial(name, outcome)`` reads it by. ``sink(options, values, jobs)``: a picklable
    factory ``() -> ResultSink`` (:mod:`msprobe_core.pipeline.sink`: ``feed_table``, ``finish``, and optionally
    ``continued``/``absorb``) for a run with these options, these command-line values (``values``: every option by
    name, also those that are no field of the options) and this many jobs; ``None``: this run needs no partial.
    ``replaces``: names of other specs whose partial this one's also is (a sink that makes the same partial and
    more, e.g. the summary's plus the report's sample): theirs is then not made, and reading them gives this one's.
    """

    name: str
    sink: SinkChoice
    replaces: tuple[str, ...] = ()
    plugin: str = ""


@dataclass
class RunSummary:
    """What the ``summary`` plugin made of a finished run, for the plugins after it (report, gate, JSON file).

    ``data``: the summary as ``--json-summary`` writes it (verdict counts, worst rows, first divergence, files,
    ``modules``, ``unpaired``…); ``text``: the lines printed for the user; ``analysis``: the ``-da`` answer (a path
    or a document, ``None`` without ``-da``); ``hierarchy``: the run's model hierarchy (``RunHierarchy``: each
    result's module paths); ``module_stats``: per result label, its calls' counts (the report's model tree);
    ``results``: the summary partial of each result, in job order (its label, mode, frameworks and files).
    """

    data: dict[str, Any]
    text: str = ""
    analysis: Any = None
    hierarchy: Any = None
    module_stats: list[tuple[str, Any]] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)


@dataclass
class FinishedRun:
    """One compare once its jobs are done, as the run-finished hooks see it (see the module's doc).

    ``outcomes``: every job's :class:`~msprobe_core.pipeline.job.JobOutcome` (its files, its error, its partials);
    ``options``: the run's options (a plugin's own options are attributes); ``values``: every option value of the
    command line by option name (also those that are no attribute, e.g. ``report``); ``inputs``: the two paths as
    given (``None``: from the Python API's jobs); ``started``: when the run began (``time.time()``); ``failed``:
    some job failed (``CompareFailed``): what was written is still summarised, nothing is gated; ``outputs``: the
    files the plugins said they will write (step 1); ``summary``: set by the ``summary`` plugin (step 2).
    """

    outcomes: list[Any]
    options: CompareOptions
    values: Mapping[str, Any] = field(default_factory=dict)
    inputs: tuple[Path, Path] | None = None
    started: float | None = None
    failed: bool = False
    outputs: list[Path] = field(default_factory=list)
    summary: RunSummary | None = None
    #: partial name -> the name of the spec whose sink made it (its own, or the one that replaces it)
    partial_names: dict[str, str] = field(default_factory=dict)
    #: whether the jobs' partials are one sink's (a single partial per outcome) or a :class:`Partials` each
    single_partial: str | None = None

    def partial(self, name: str, outcome: Any) -> Any:
        """The partial ``name`` of one job's outcome (``None``: the run made none, or the job had no result)."""
        made_by = self.partial_names.get(name)
        found = getattr(outcome, "partial", None)
        if made_by is None or found is None:
            return None
        if isinstance(found, Partials):
            return found.get(made_by)
        return found if made_by == self.single_partial else None


class Partials(dict):
    """One job's partials, by the name of the spec whose sink made each (a :class:`SinkSet`'s ``finish``)."""


@dataclass(frozen=True)
class SinkSet:
    """A picklable factory of several specs' sinks fed together (the run's one ``summary_sink``)."""

    factories: tuple[tuple[str, Callable[[], Any]], ...]

    def __call__(self) -> _Sinks:
        return _Sinks({name: make() for name, make in self.factories})


class _Sinks:
    """Several sinks as one: each is fed every part; ``finish`` gives their :class:`Partials`."""

    def __init__(self, sinks: dict[str, Any]) -> None:
        self.sinks = sinks
        if all(callable(getattr(s, "continued", None)) and callable(getattr(s, "absorb", None))
               for s in sinks.values()):
            self.continued = self._continued  # a streamed compare may hand later chunks to a worker
            self.absorb = self._absorb

    def feed_table(self, table: Any, start: int = 0) -> None:
        for sink in self.sinks.values():
            sink.feed_table(table, start)

    def finish(self, files: Iterable[Path] | None) -> Partials:
        kept = None if files is None else list(files)
        return Partials({name: sink.finish(kept) for name, sink in self.sinks.items()})

    def _continued(self, start: int) -> _Sinks:
        return _Sinks({name: sink.continued(start) for name, sink in self.sinks.items()})

    def _absorb(self, partial: Partials) -> None:
        for name, sink in self.sinks.items():
            sink.absorb(partial[name])


def partial_specs(host: PluginHost) -> list[PartialSpec]:
    """Every :class:`PartialSpec` the plugins register, in pluggy's order (a failing plugin's are skipped)."""
    from dataclasses import replace
    from functools import partial

    from ..errors import MsprobeError
    from ..host.loading import RegistrationFailed, call_registry_hook
    from ..host.plugin_calls import PluginCode, guarded_sink_factory
    from ..host.registry import is_core_plugin

    hook = "msprobe_register_partials"
    found: list[PartialSpec] = []
    for impl in reversed(host.pm.hook.msprobe_register_partials.get_hookimpls()):
        try:
            specs = call_registry_hook(impl, hook)
        except RegistrationFailed as failed:
            if is_core_plugin(impl.plugin_name):
                raise
            log.warning("plugin '%s': %s failed: %s; what it registers there is skipped", impl.plugin_name, hook,
                        failed)
            continue
        for spec in specs:
            if not is_core_plugin(impl.plugin_name):  # its choice is plugin code: a bug there is named as its
                owner, what = host.owner_label(impl.plugin_name), f"partial '{spec.name}' (PartialSpec.sink)"
                spec = replace(spec, sink=PluginCode(spec.sink, owner, what, passes=(MsprobeError,), adapt=partial(
                    guarded_sink_factory, owner=owner, what=what)))
            found.append(replace(spec, plugin=impl.plugin_name))
    return found


def choose_partials(host: PluginHost, options: CompareOptions, values: Mapping[str, Any],
                    jobs: int) -> tuple[Callable[[], Any] | None, dict[str, str], str | None]:
    """The run's summary sink (one spec's factory, a :class:`SinkSet` of several, or ``None``), which spec makes
    each partial name, and the name of the one spec when there is one (see :meth:`FinishedRun.partial`)."""
    wanted: dict[str, tuple[PartialSpec, Callable[[], Any]]] = {}
    for spec in partial_specs(host):
        factory = spec.sink(options, values, jobs)
        if factory is not None and spec.name not in wanted:
            wanted[spec.name] = (spec, factory)
    replaced = {name: spec.name for spec, _ in wanted.values() for name in spec.replaces}
    made = {name: pair for name, pair in wanted.items() if name not in replaced}
    names = {name: name for name in made}
    names.update((name, by) for name, by in replaced.items() if by in made)
    if not made:
        return None, {}, None
    if len(made) == 1:
        (name, (_spec, factory)), = made.items()
        return factory, names, name
    return SinkSet(tuple((name, factory) for name, (_spec, factory) in made.items())), names, None


def finish_run(host: PluginHost, run: FinishedRun, announce: Callable[[], None] | None = None) -> FinishedRun:
    """The four run-finished steps (see the module's doc); raises ``GateFailed`` (exit 3) when a gate says so.

    ``announce``: the core's banner, called after every file is written and before the terminal summary."""
    try:
        return _finish(host, run, announce)
    finally:
        host.notify("msprobe_run_released")  # what was kept of the targets' stack.json for the summary's paths


def _finish(host: PluginHost, run: FinishedRun, announce: Callable[[], None] | None) -> FinishedRun:
    from ..console.stages import clear_status
    from ..errors import GateFailed

    for files in call_each(host, "msprobe_run_outputs", run):
        run.outputs.extend(Path(f) for f in files or ())
    call_each(host, "msprobe_run_finished", run)
    clear_status()  # the progress line goes before anything is printed for good
    if announce is not None and not run.failed:
        announce()
    call_each(host, "msprobe_run_terminal_summary", run)
    if run.failed:
        return run
    reasons = [str(r) for r in reversed(call_each(host, "msprobe_run_gate", run)) if r]
    if reasons:
        raise GateFailed("; ".join(reasons))
    return run


def call_each(host: PluginHost, hook: str, run: FinishedRun) -> list[Any]:
    """Every implementation of ``hook`` called with ``run`` in pluggy's order (``tryfirst`` first), each installed
    plugin's through the guard of plugin code: its ``MsprobeError`` (an ``OutputError`` naming its file) goes through
    as it is, anything else is reported as that plugin's failure; returns what each returned, in call order."""
    from ..errors import MsprobeError
    from ..host.plugin_calls import PluginCode
    from ..host.registry import is_core_plugin

    results = []
    for impl in reversed(getattr(host.pm.hook, hook).get_hookimpls()):  # the order pluggy calls them in
        if impl.hookwrapper or getattr(impl, "wrapper", False):
            continue  # these hooks take plain implementations (order them with tryfirst/trylast)
        function = impl.function
        if not is_core_plugin(impl.plugin_name):
            function = PluginCode(function, host.owner_label(impl.plugin_name), hook, passes=(MsprobeError,))
        results.append(function(*[run for _name in impl.argnames]))
    return results

