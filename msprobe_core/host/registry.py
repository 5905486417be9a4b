"""Plugin manager and the typed façade the engine calls hooks through.

Built-ins are registered first, then every plugin found in the ``msprobe_core.plugins`` entry-point group (unless
``MSPROBE_DISABLE_PLUGIN_AUTOLOAD=1``; only those of the distributions named in
``MSPROBE_PLUGIN_DISTRIBUTIONS=dist,dist`` when it is set), then those named in ``MSPROBE_LOAD_PLUGINS=mod,mod``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pluggy

from ..errors import InputError, UsageError
from ..model import CompareOptions, DumpTable
from ..options import OptionSet, OptionSpec
from ..result_columns import CORE_COLUMNS, METRIC, ColumnRegistry, ColumnSpec
from . import hookspecs
from .decisions import chain_mappers
from .defaults import (
    BUILTIN_PLUGIN,
    CORE_PLUGINS,  # noqa: F401 (plugins and tests import it from here)
    is_core_plugin,
    register_default_plugins,
    turned_off_note,
    turned_off_specs,
    warn_unknown_disabled,
)
from .event_calls import EventCalls
from .hints import PluginHints
from .loading import (
    DISTRIBUTIONS_ENV,  # noqa: F401 (tests and plugins import it from here)
    ENTRY_POINT_GROUP,  # noqa: F401 (tests and plugins import it from here)
    LOAD_ENV,
    RegistrationFailed,
    call_registry_hook,
    failure_text,
    import_named_modules,
    load_entry_points,
    normalized_distribution,
    unknown_hooks,
)
from .lookups import RegistryLookups
from .plugin_calls import HOOK_RESULTS as _HOOK_RESULTS
from .plugin_calls import PluginCode, guard_spec, guard_watchers
from .specs import (
    CompareJob,
    FrameworkSpec,
    MapperSpec,
    MetricSpec,
    NormalizerSpec,
    TensorMetricSpec,
    VerdictSpec,
    WriterSpec,
    always_applies,
)
from .strategies import StrategySpec


class PluginHost(RegistryLookups, EventCalls, PluginHints):
    """Owns the pluggy manager and the registries collected from it (what the stages ask of them:
    :class:`~msprobe_core.host.lookups.RegistryLookups`)."""

    def __init__(self, *, autoload: bool | None = None, extra_plugins: Sequence[object] = ()) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        # each plugin declares its own hooks as it is registered (msprobe_add_hookspecs: pytest's pytest_addhooks)
        self.pm.hook.msprobe_add_hookspecs.call_historic(kwargs={"pluginmanager": self.pm})
        # loaded by name, as every plugin is: the built-in plugin wires the stages into specs, and the
        # stages ask this host for plugins (an import of it here would close that loop)
        self.pm.register(importlib.import_module("msprobe_core.builtin"), name=BUILTIN_PLUGIN)
        #: the plugin names turned off (``-p no:NAME``, ``MSPROBE_DISABLE_PLUGINS``)
        self.disabled = register_default_plugins(self.pm)
        if autoload is None:
            autoload = os.environ.get("MSPROBE_DISABLE_PLUGIN_AUTOLOAD", "") not in ("1", "true", "yes")
        self.dists: dict[int, tuple[str, str]] = {}
        self.broken: dict[str, str] = {}
        #: plugins loaded whose registration hook raised (what it registers there is skipped)
        self.failed_hooks: dict[str, str] = {}
        #: plugins whose stage-event listener failed: no more events are sent to them
        self.quiet_listeners: set[str] = set()
        found = load_entry_points(self.pm, self.dists, self.broken) if autoload else set()
        warn_unknown_disabled(self.disabled, found)
        for name, module in import_named_modules(os.environ.get(LOAD_ENV, "")):
            self._register(module, name)
        for plugin in extra_plugins:  # an object is named by its class (pluggy would name it by its id)
            self._register(plugin, getattr(plugin, "__name__", None) or type(plugin).__name__)
        for name, why in unknown_hooks(self.pm).items():  # a misspelt hook is its plugin's failure
            if is_core_plugin(name):
                raise RuntimeError(f"{name}: {why}")
            self._drop(name, why)
        guard_watchers(self.pm, is_core_plugin, self._watcher_failed)
        self.monitors = []  # who watches the calls made impl by impl here (MSPROBE_TRACE_PLUGINS: 'trace')
        self.pm.hook.msprobe_plugins_loaded(host=self)
        self.frameworks: list[FrameworkSpec] = []
        self.mappers: list[MapperSpec] = []
        self.normalizers: list[NormalizerSpec] = []
        self.metrics: dict[str, MetricSpec] = {}
        #: metric sets for some runs only (their own ``applies``), asked before ``metrics``
        self.conditional_metrics: list[MetricSpec] = []
        self.verdicts: list[VerdictSpec] = []
        self.tensor_metrics: list[TensorMetricSpec] = []
        #: every column the core and the plugins' metric sets declare (:mod:`msprobe_core.result_columns`)
        self.columns: ColumnRegistry = CORE_COLUMNS.copy()
        self.writers: dict[str, WriterSpec] = {}
        self.executors: dict[str, Any] = {}
        #: what the plugins register through the registry hooks a plugin declares (``msprobe_add_hookspecs``), by
        #: hook: a ``msprobe_register_*`` hook, collected with the checks of the core's (diff_analyze's comm ops)
        self.registered: dict[str, list[Any]] = {}
        #: where dumps say which module encloses a call (``msprobe_register_hierarchies``), plugins first
        self.hierarchies: list[Any] = []
        #: ways big jobs may run besides whole tables (``msprobe_register_strategies``): by order, a name's first
        self.strategies: list[StrategySpec] = []
        self.options = OptionSet()
        self.commands: dict[str, Any] = {}
        self._commands_collected = False
        #: the normalised names of the distributions of this repository (their options are settled first)
        self.first_party = self.first_party_distributions()
        self._collect()

    # -- registry collection -------------------------------------------------
    def _collect(self) -> None:
        declared: list[OptionSpec] = []
        registries: list[tuple[str, Callable[[Any, str], None]]] = [
            ("msprobe_register_frameworks", self._add_framework),
            ("msprobe_register_mappers", self._add_mapper),
            ("msprobe_register_normalizers", self._add_normalizer),
            ("msprobe_register_metrics", self._add_metric),
            ("msprobe_register_verdicts", self._add_verdict),
            ("msprobe_register_writers", self._add_writer),
            ("msprobe_register_executors", self._add_executor),
            ("msprobe_register_hierarchies", self._add_hierarchy),
            ("msprobe_register_strategies", lambda spec, plugin: self.strategies.append(_with_plugin(spec, plugin))),
            # an option is always its registering plugin's (which decides who keeps a clashing flag)
            ("msprobe_register_options", lambda spec, plugin: declared.append(replace(spec, plugin=plugin))),
        ]
        for hook, caller in sorted(vars(self.pm.hook).items()):  # a plugin's own registry hooks, as the core's
            if hook.startswith("msprobe_register_") and getattr(caller.spec, "namespace", hookspecs) is not hookspecs:
                into = self.registered.setdefault(hook, [])
                registries.append((hook, lambda spec, plugin, into=into: into.append(_with_plugin(spec, plugin))))
        for hook, add in registries:
            # pluggy calls later-registered plugins first: plugins register before the built-ins
            for impl in reversed(getattr(self.pm.hook, hook).get_hookimpls()):
                for spec in self._registered(impl, hook):
                    add(self._guarded(spec, impl.plugin_name), impl.plugin_name)
        self._add_options(declared)
        self.normalizers.sort(key=lambda n: n.order)
        self.strategies = sorted({s.name: s for s in reversed(self.strategies)}.values(), key=lambda s: s.order)
        # a turned-off default plugin's mappers keep their places (by name: ``run_after``, ``before=``)
        taken = {m.name for m in self.mappers}
        absent = [m for m in turned_off_specs("msprobe_register_mappers", sorted(self.disabled)) if m.name not in taken]
        ordered = chain_mappers(self.mappers, absent)
        #: every mapper's name in chain order, turned-off default plugins' included
        self.mapper_places = [m.name for m in ordered]
        self.mappers = [m for m in ordered if not any(m is a for a in absent)]
        self.verdicts = chain_mappers(self.verdicts)

    def _add_options(self, declared: list[OptionSpec]) -> None:
        """Core options first, then the first-party plugins', then the others', each group in load order.

        An option whose name or flag is taken keeps its first owner: a third-party plugin cannot take
        ``--rank`` from a plugin of this repository, whatever its name. ``--help`` lists the groups
        by plugin name, as before.
        """
        import logging

        from ..options import default_problem, remember_defaults

        loaded = {name: i for i, (name, _) in enumerate(self.pm.list_name_plugin())}
        for spec in sorted(declared, key=lambda s: (self._tier(s.plugin), loaded.get(s.plugin, len(loaded)))):
            spec = self.with_help(spec)
            refused = default_problem(spec) or self.options.add(spec)
            if refused:
                logging.getLogger("msprobe").warning("plugin '%s': option '%s' is ignored: %s", spec.plugin,
                                                     spec.name, refused)
        self.options.specs.sort(key=lambda s: (self._tier(s.plugin), "" if self._tier(s.plugin) == 0 else s.plugin))
        remember_defaults(self.options)
        self.options.install_hint = partial(self.install_hint, "option")

    def _tier(self, plugin: str) -> int:
        """0: the core; 1: a plugin of a first-party distribution (:attr:`first_party`); 2: others."""
        if is_core_plugin(plugin):
            return 0
        found = self.pm.get_plugin(plugin)
        dist = self.dists.get(id(found)) if found is not None else None
        return 1 if dist is not None and normalized_distribution(dist[0]) in self.first_party else 2

    def register_commands(self, builtin: Sequence[str]) -> dict[str, Any]:
        """The sub-commands plugins add (``msprobe_register_commands``), once; ``builtin`` names are refused."""
        if self._commands_collected:
            return self.commands
        self._commands_collected = True
        import logging

        def add(command: Any, plugin: str) -> None:
            name = getattr(command, "name", None)
            if not name or name in builtin or name in self.commands:
                logging.getLogger("msprobe").warning("plugin '%s': command '%s' is ignored (the name is taken)",
                                                     plugin, name)
                return
            self.commands[name] = command

        for impl in reversed(self.pm.hook.msprobe_register_commands.get_hookimpls()):
            for command in self._registered(impl, "msprobe_register_commands"):
                add(command, impl.plugin_name)
        return self.commands

    def _registered(self, impl: Any, hook: str) -> list[Any]:
        """What one plugin's registry hook registers: all of it, or nothing when the hook fails."""
        if is_core_plugin(impl.plugin_name):  # the core's own registrations: a failure is a bug, raised
            return self._monitored(hook, impl, lambda: call_registry_hook(impl, hook))
        try:
            return self._monitored(hook, impl, lambda: call_registry_hook(impl, hook))
        except RegistrationFailed as failed:
            self._skip(impl.plugin_name, f"{hook} failed: {failed}")
            return []

    def _guarded(self, spec: Any, plugin: str) -> Any:
        """``spec`` with its code called through the one guard of plugin code (the core's own specs as they are)."""
        return spec if is_core_plugin(plugin) else guard_spec(spec, self.owner_label(plugin))

    def _watcher_failed(self, plugin: str, hook: str, exc: BaseException) -> None:
        if plugin not in self.failed_hooks:  # said once; the run goes on with the other watchers
            self._skip(plugin, f"{hook} failed: {failure_text(exc)}", then="the run goes on without it")

    def owner_label(self, plugin: str) -> str:
        """How a message names a plugin: ``plugin 'name'``, and its distribution when that is named otherwise."""
        distribution = self.distribution_of(plugin)
        return f"plugin '{plugin}'" + (f" (distribution {distribution})" if distribution != plugin else "")

    def _skip(self, plugin: str, why: str, then: str = "what it registers there is skipped") -> None:
        import logging

        self.failed_hooks.setdefault(plugin, why)
        logging.getLogger("msprobe").warning("plugin '%s': %s; %s", plugin, why, then)

    def _register(self, plugin: object, name: str | None) -> None:
        """Register a plugin named by ``MSPROBE_LOAD_PLUGINS`` or handed in; one pluggy refuses is skipped."""
        if self.pm.is_registered(plugin):
            return  # also an installed entry point, or named twice: loaded once
        try:
            self.pm.register(plugin, name=name)
        except Exception as exc:  # pluggy's check of its hook signatures: the plugin's mistake
            label = name or self.pm.get_canonical_name(plugin)
            self._drop(label, failure_text(exc), registered=False)

    def _drop(self, name: str, why: str, *, registered: bool = True) -> None:
        """Skip the whole plugin ``name`` (unregistered, listed by ``msprobe plugins`` with ``why``), with a warning."""
        import logging

        if registered:
            self.pm.unregister(name=name)
        self.broken[name] = why
        logging.getLogger("msprobe").warning("plugin '%s': %s; the plugin is skipped", name, why)

    def _add_framework(self, spec: FrameworkSpec, plugin: str) -> None:
        if any(set(spec.names()) & set(f.names()) for f in self.frameworks):
            # pluggy calls later-registered plugins first, so the first one seen wins
            return
        self.frameworks.append(_with_plugin(spec, plugin))

    def _add_mapper(self, spec: MapperSpec, plugin: str) -> None:
        if any(m.name == spec.name for m in self.mappers):
            return
        self.mappers.append(_with_plugin(spec, plugin))

    def _add_normalizer(self, spec: NormalizerSpec, plugin: str) -> None:
        if any(n.name == spec.name for n in self.normalizers):
            return
        self.normalizers.append(_with_plugin(spec, plugin))

    def _add_metric(self, spec: MetricSpec | TensorMetricSpec, plugin: str) -> None:
        if isinstance(spec, TensorMetricSpec):
            if all(m.column != spec.column for m in self.tensor_metrics):
                spec = _with_plugin(spec, plugin)
                self.columns.add(spec.column_spec())
                self.tensor_metrics.append(spec)
            return
        conditional = spec.applies is not always_applies
        if not conditional and spec.mode in self.metrics:
            return
        spec = _with_plugin(spec, plugin)
        for column in spec.columns:
            if isinstance(column, str):
                column = ColumnSpec(column, METRIC, (spec.mode,))
            elif spec.mode not in column.modes:
                column = replace(column, modes=(*column.modes, spec.mode))
            self.columns.add(_with_plugin(column, spec.plugin))
        if conditional:
            self.conditional_metrics.append(spec)
        else:
            self.metrics[spec.mode] = spec

    def _add_verdict(self, spec: VerdictSpec, plugin: str) -> None:
        if all(v.name != spec.name for v in self.verdicts):
            self.verdicts.append(_with_plugin(spec, plugin))

    def _add_writer(self, spec: WriterSpec, plugin: str) -> None:
        self.writers.setdefault(spec.name, _with_plugin(spec, plugin))

    def _add_executor(self, spec: Any, plugin: str) -> None:
        self.executors.setdefault(spec.name, _with_plugin(spec, plugin))

    # -- typed façade --------------------------------------------------------
    def _add_hierarchy(self, spec: Any, plugin: str) -> None:
        """A :class:`~msprobe_core.host.specs.HierarchySpec` (first one registered under a name wins)."""
        if all(s.name != spec.name for s in self.hierarchies):
            self.hierarchies.append(_with_plugin(spec, plugin))

    def discover_jobs(self, target: Path, golden: Path, options: CompareOptions) -> list[CompareJob]:
        """Jobs for the two user paths (first plugin that claims the layout).

        A directory no loaded plugin understood, of a layout a known plugin that is not loaded claims, is refused
        naming that plugin and how to install it.
        """
        try:
            jobs = self._first_result("msprobe_discover_jobs", target=target, golden=golden, options=options)
        except InputError as exc:
            refused = self.install_hint("layout", exc.path) if exc.path else None
            if refused is not None:
                raise InputError(refused, path=exc.path) from None
            raise
        if jobs is None:
            raise UsageError(f"no installed plugin recognises the dump layout of {target} and {golden}")
        return jobs

    def load_dump(self, path: Path, options: CompareOptions, job: CompareJob | None = None,
                  index: bool | None = None) -> DumpTable:
        """Load one side of a job (``path`` is ``job.target`` or ``job.golden``) through the first loader that claims it.

        ``index``: a streamed compare's request for the file's index (see ``msprobe_load_dump``).

        An ``OSError`` escaping a loader (a plugin that opens an unreadable file
        to sniff it) is an input error naming the file, not a crash.
        """
        try:
            table = self._first_result("msprobe_load_dump", path=path, options=options, job=job, index=index)
        except OSError as exc:
            from ..errors import InputError, os_reason

            raise InputError(f"cannot read file ({os_reason(exc)})", path=getattr(exc, "filename", None) or path) from None
        if table is None:
            raise UsageError(f"no installed plugin can read {path}")
        return table

    def load_pair(self, load: Callable[[Path], Any], target: Path, golden: Path,
                  meanwhile: Callable[[Any], None]) -> tuple[Any, Any]:
        """``(load(target), load(golden))``: through the first plugin that loads a pair its way
        (``msprobe_load_pair``: the default plugin ``pair_loading``), else the target, then the golden, here."""
        pair = self._first_result("msprobe_load_pair", load=load, target=target, golden=golden, meanwhile=meanwhile)
        if pair is None:
            return load(target), load(golden)
        return pair

    def csv_tail(self, path: Path, columns: list[Any], start: int, stop: int) -> Any:
        """A tail spelling the second half of a CSV file elsewhere (``msprobe_csv_tail``: the default plugin
        ``forking``), else ``None``: the writer spells every row."""
        return self._first_result("msprobe_csv_tail", path=path, columns=columns, start=start, stop=stop)

    def run_jobs(self, jobs: list[CompareJob], options: CompareOptions, run: Any, executor: Any) -> list[Any] | None:
        """The outcomes of the plugin that ran the jobs its own way (``msprobe_run_jobs``: ``-da``, several rank
        pairs at once), else ``None``."""
        return self._first_result("msprobe_run_jobs", jobs=jobs, options=options, host=self, run=run,
                                  executor=executor)

    def _first_result(self, hook: str, **kwargs: Any) -> Any:
        """pluggy's first-result call, made one implementation at a time through the guard of plugin code
        (:mod:`~msprobe_core.host.plugin_calls`): one calling ``sys.exit()`` or returning junk is named."""
        for impl in reversed(getattr(self.pm.hook, hook).get_hookimpls()):  # the order pluggy calls them in
            function = impl.function
            if not is_core_plugin(impl.plugin_name):
                function = PluginCode(function, self.owner_label(impl.plugin_name), hook, _HOOK_RESULTS[hook])
            result = self._monitored(hook, impl, partial(function, *[kwargs[name] for name in impl.argnames]))
            if result is not None:
                return result
        return None

    def compare_options(self, **values: Any) -> CompareOptions:
        """Options from Python keyword arguments, checked as :func:`msprobe_core.compare` checks them."""
        return self.build_options(self.options.from_api(values))

    def build_options(self, values: dict[str, Any], *, given: set[str] | None = None) -> CompareOptions:
        """The options of a run from checked option values (``OptionSet.from_cli`` / ``from_api``).

        ``given``: the names the caller set explicitly (default: every key of ``values``);
        ``--xlsx`` is ``output_format='xlsx'``, and both naming different formats is an error.
        """
        from ..options import option_label

        values = dict(values)
        given = set(values) if given is None else given
        if values.pop("xlsx", False):  # the default plugin 'xlsx''s shorthand (absent when it is turned off)
            if "output_format" in given and values.get("output_format") not in (None, "xlsx"):
                xlsx = self.options.get("xlsx")
                raise UsageError(f"{xlsx.label() if xlsx is not None else 'xlsx'} and {option_label('output_format')} "
                                 f"{values['output_format']} ask for different result formats")
            values["output_format"] = "xlsx"
        core, plugin = self.options.model_values(values)
        return CompareOptions(**core, plugins=plugin)

    def writer(self, name: str) -> WriterSpec:
        """The writer for an output format name."""
        try:
            return self.writers[name]
        except KeyError:
            raise UsageError(f"unknown output format '{name}' (installed: {', '.join(sorted(self.writers))}"
                             f"{self._turned_off('msprobe_register_writers', name)})") from None

    def executor(self, name: str) -> Any:
        """The :class:`~msprobe_core.workers.executors.ExecutorSpec` registered as ``name``."""
        try:
            return self.executors[name]
        except KeyError:
            hint = self.install_hint("executor", name)
            raise UsageError(f"unknown executor '{name}' (installed: {', '.join(sorted(self.executors))}"
                             f"{'; ' + hint if hint else ''}{self._turned_off('msprobe_register_executors', name)})"
                             ) from None

    def _turned_off(self, hook: str, name: str) -> str:
        """``; it is the default plugin 'P''s, …`` when a turned-off default plugin registers ``name`` there."""
        owner = next((spec.plugin for spec in turned_off_specs(hook, sorted(self.disabled), named=True)
                      if spec.name == name), None)
        return f"; {turned_off_note(owner)}" if owner else ""

    def distribution_of(self, plugin_name: str) -> str:
        """The distribution a registered plugin comes from (its registration name when not installed as one)."""
        plugin = self.pm.get_plugin(plugin_name)
        found = self.dists.get(id(plugin)) if plugin is not None else None
        return found[0] if found else plugin_name


def _with_plugin(spec: Any, plugin: str) -> Any:
    if getattr(spec, "plugin", "") or not hasattr(spec, "plugin"):
        return spec
    from dataclasses import replace

    return replace(spec, plugin=plugin)


_HOST: PluginHost | None = None


def get_host() -> PluginHost:
    """The process-wide plugin host (created on first use)."""
    global _HOST
    if _HOST is None:
        _HOST = PluginHost()
    return _HOST


def current_host() -> PluginHost | None:
    """The process-wide plugin host if one was created (none is created here)."""
    return _HOST


def reset_host(host: PluginHost | None = None) -> None:
    """Replace the process-wide host (tests use this to register extra plugins)."""
    global _HOST
    _HOST = host
