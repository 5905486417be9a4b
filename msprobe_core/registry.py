"""Plugin manager and the typed façade the engine calls hooks through.

Built-ins are registered first, then every plugin found in the
``msprobe_core.plugins`` entry-point group (unless
``MSPROBE_DISABLE_PLUGIN_AUTOLOAD=1``; only those of the distributions named in
``MSPROBE_PLUGIN_DISTRIBUTIONS=dist,dist`` when it is set), then those named in
``MSPROBE_LOAD_PLUGINS=mod,mod``. ``MSPROBE_TRACE_HOOKS=FILE`` appends one JSON
line per hook implementation the host calls to ``FILE``.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from . import hookspecs
from .errors import UsageError
from .model import CompareOptions, DumpTable, MatchResult

ENTRY_POINT_GROUP = "msprobe_core.plugins"
#: when set, only the entry points of these distributions (comma-separated names) are loaded
DISTRIBUTIONS_ENV = "MSPROBE_PLUGIN_DISTRIBUTIONS"
#: when set, every hook implementation the host calls is recorded in this file (one JSON line each)
TRACE_ENV = "MSPROBE_TRACE_HOOKS"


#: the name the built-in plugin (``msprobe_core.builtin``) is registered under
BUILTIN_PLUGIN = "msprobe_core.builtin"

@dataclass(frozen=True)
class FrameworkSpec:
    """What the core needs to know about one framework's dumps."""

    name: str
    aliases: tuple[str, ...] = ()
    golden_frameworks: tuple[str, ...] = ()
    float_dtypes: frozenset[str] = frozenset()
    tensor_suffix: str = ""
    read_tensor: Callable[[Path], Any] | None = None
    dtype_kind: Callable[[str], str | None] | None = None
    canonical_dtype: Callable[[str], str] | None = None
    #: How the reference msprobe run turned a statistic's text into a number when this framework
    #: is the target (``None``: correctly rounded, ``float()``). Only the ``<S> diff`` and
    #: ``<S>RelativeErr`` columns of statistics mode use it.
    parse_statistic: Callable[[str], float | None] | None = None
    is_default: bool = False
    plugin: str = ""

    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def canonical(self, dtype: str) -> str:
        """A framework-neutral spelling of ``dtype`` (``float32``, ``bfloat16``, ``int64``…).

        Used only to decide whether the two sides of a cross-framework pair hold the
        same dtype. ``canonical_dtype`` overrides the default, which keeps the last
        dotted component of the name, lower-cased.
        """
        if self.canonical_dtype is not None:
            return self.canonical_dtype(dtype)
        return dtype.rsplit(".", 1)[-1].lower()


@dataclass
class CompareJob:
    """One pair of dump files to compare, and where its result goes."""

    target: Path
    golden: Path
    output_dir: Path
    stem: str
    label: str = ""
    runner: Callable[..., Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


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


@dataclass(frozen=True)
class MapperSpec:
    """A way of pairing rows; the applicable one with the highest priority runs."""

    name: str
    run: Callable[[MatchContext], MatchResult]
    applies: Callable[[CompareOptions], bool] = lambda options: True
    priority: int = 0
    plugin: str = ""


@dataclass(frozen=True)
class NormalizerSpec:
    """A compare-key rewrite applied to every row of both sides before mapping."""

    name: str
    fn: Callable[[DumpTable, str, list[str], CompareOptions], list[str]]
    order: int = 0
    plugin: str = ""


@dataclass(frozen=True)
class MetricSpec:
    """The metric columns of one dump mode, computed for the whole table."""

    mode: str
    compute: Callable[..., dict[str, list[Any]]]
    plugin: str = ""


@dataclass(frozen=True)
class TensorMetricSpec:
    """An extra tensor-mode metric: ``fn(npu, bench) -> float | str`` on squeezed arrays."""

    column: str
    fn: Callable[[Any, Any], Any]
    plugin: str = ""


@dataclass(frozen=True)
class WriterSpec:
    """An output format: ``write(table, path) -> [files]``."""

    name: str
    suffix: str
    write: Callable[..., list[Path]]
    plugin: str = ""


class PluginHost:
    """Owns the pluggy manager and the registries collected from it."""

    def __init__(self, *, autoload: bool | None = None, extra_plugins: Sequence[object] = ()) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        from . import builtin

        self.pm.register(builtin, name=BUILTIN_PLUGIN)
        if autoload is None:
            autoload = os.environ.get("MSPROBE_DISABLE_PLUGIN_AUTOLOAD", "") not in ("1", "true", "yes")
        self.dists: dict[int, tuple[str, str]] = {}
        self.broken: dict[str, str] = {}
        if autoload:
            self._load_entry_points()
        for mod in filter(None, os.environ.get("MSPROBE_LOAD_PLUGINS", "").split(",")):
            self.pm.register(importlib.import_module(mod.strip()), name=mod.strip())
        for plugin in extra_plugins:
            self.pm.register(plugin)
        self.pm.check_pending()
        if os.environ.get(TRACE_ENV):
            _trace_hook_calls(self.pm, Path(os.environ[TRACE_ENV]))
        self.frameworks: list[FrameworkSpec] = []
        self.mappers: list[MapperSpec] = []
        self.normalizers: list[NormalizerSpec] = []
        self.metrics: dict[str, MetricSpec] = {}
        self.tensor_metrics: list[TensorMetricSpec] = []
        self.writers: dict[str, WriterSpec] = {}
        self.executors: dict[str, Any] = {}
        self.comm_ops: list[Any] = []
        self._collect()

    # -- registry collection -------------------------------------------------
    def _collect(self) -> None:
        for impl in reversed(self.pm.hook.msprobe_register_frameworks.get_hookimpls()):
            impl.function(register=self._registrar(impl.plugin_name, self._add_framework))
        for impl in reversed(self.pm.hook.msprobe_register_mappers.get_hookimpls()):
            impl.function(register=self._registrar(impl.plugin_name, self._add_mapper))
        for impl in reversed(self.pm.hook.msprobe_register_normalizers.get_hookimpls()):
            impl.function(register=self._registrar(impl.plugin_name, self._add_normalizer))
        for impl in reversed(self.pm.hook.msprobe_register_metrics.get_hookimpls()):
            impl.function(register=self._registrar(impl.plugin_name, self._add_metric))
        for impl in reversed(self.pm.hook.msprobe_register_writers.get_hookimpls()):
            impl.function(register=self._registrar(impl.plugin_name, self._add_writer))
        for impl in reversed(self.pm.hook.msprobe_register_executors.get_hookimpls()):
            impl.function(register=self._registrar(impl.plugin_name, self._add_executor))
        for impl in reversed(self.pm.hook.msprobe_register_comm_ops.get_hookimpls()):
            impl.function(register=self._registrar(impl.plugin_name, self._add_comm_op))
        self.normalizers.sort(key=lambda n: n.order)

    @staticmethod
    def _registrar(plugin: str, add: Callable[[Any, str], None]) -> Callable[..., None]:
        def register(spec: Any = None, *args: Any, **kwargs: Any) -> None:
            add(spec, plugin) if not args and not kwargs else add((spec, args, kwargs), plugin)

        return register

    def _add_framework(self, spec: FrameworkSpec, plugin: str) -> None:
        if any(set(spec.names()) & set(f.names()) for f in self.frameworks):
            # pluggy calls later-registered plugins first, so the first one seen wins
            return
        self.frameworks.append(_with_plugin(spec, plugin))

    def _add_mapper(self, spec: MapperSpec, plugin: str) -> None:
        if any(m.name == spec.name for m in self.mappers):
            return
        self.mappers.append(_with_plugin(spec, plugin))

    def _add_normalizer(self, spec: Any, plugin: str) -> None:
        if isinstance(spec, tuple):
            name, args, kwargs = spec
            spec = NormalizerSpec(name, *args, **kwargs)
        if any(n.name == spec.name for n in self.normalizers):
            return
        self.normalizers.append(_with_plugin(spec, plugin))

    def _add_metric(self, spec: MetricSpec | TensorMetricSpec, plugin: str) -> None:
        if isinstance(spec, TensorMetricSpec):
            if all(m.column != spec.column for m in self.tensor_metrics):
                self.tensor_metrics.append(_with_plugin(spec, plugin))
        elif spec.mode not in self.metrics:
            self.metrics[spec.mode] = _with_plugin(spec, plugin)

    def _add_writer(self, spec: WriterSpec, plugin: str) -> None:
        self.writers.setdefault(spec.name, _with_plugin(spec, plugin))

    def _add_executor(self, spec: Any, plugin: str) -> None:
        self.executors.setdefault(spec.name, _with_plugin(spec, plugin))

    def _add_comm_op(self, spec: Any, plugin: str) -> None:
        """A :class:`~msprobe_core.analysis.comm.CommOpSpec` (first one registered under a name wins)."""
        if all(s.name != spec.name for s in self.comm_ops):
            self.comm_ops.append(_with_plugin(spec, plugin))

    # -- typed façade --------------------------------------------------------
    def discover_jobs(self, target: Path, golden: Path, options: CompareOptions) -> list[CompareJob]:
        """Jobs for the two user paths (first plugin that claims the layout)."""
        jobs = self.pm.hook.msprobe_discover_jobs(target=target, golden=golden, options=options)
        if jobs is None:
            raise UsageError(f"no installed plugin recognises the dump layout of {target} and {golden}")
        return jobs

    def load_dump(self, path: Path, options: CompareOptions) -> DumpTable:
        """Load one dump file through the first loader that claims it.

        An ``OSError`` escaping a loader (a plugin that opens an unreadable file
        to sniff it) is an input error naming the file, not a crash.
        """
        try:
            table = self.pm.hook.msprobe_load_dump(path=path, options=options)
        except OSError as exc:
            from .errors import InputError, os_reason

            raise InputError(f"cannot read file ({os_reason(exc)})", path=getattr(exc, "filename", None) or path) from None
        if table is None:
            raise UsageError(f"no installed plugin can read {path}")
        return table

    def framework(self, name: str | None) -> FrameworkSpec | None:
        """The framework registered under ``name`` (``None``: the default one)."""
        for f in self.frameworks:
            if (name is None and f.is_default) or (name is not None and name in f.names()):
                return f
        return None

    def mapper_for(self, options: CompareOptions) -> MapperSpec:
        """The mapper that runs for these options."""
        candidates = [m for m in self.mappers if m.applies(options)]
        if not candidates:
            raise UsageError("no installed plugin provides a matcher for these options")
        return max(candidates, key=lambda m: m.priority)

    def writer(self, name: str) -> WriterSpec:
        """The writer for an output format name."""
        try:
            return self.writers[name]
        except KeyError:
            raise UsageError(f"unknown output format '{name}' (installed: {', '.join(sorted(self.writers))})") from None

    def executor(self, name: str) -> Any:
        """The :class:`~msprobe_core.executors.ExecutorSpec` registered as ``name``."""
        try:
            return self.executors[name]
        except KeyError:
            hint = " (pip install msprobe-dask)" if name == "dask" else ""
            raise UsageError(
                f"unknown executor '{name}'{hint} (installed: {', '.join(sorted(self.executors))})"
            ) from None

    def _load_entry_points(self) -> None:
        """Register every plugin of the entry-point group; one that fails to import is skipped with a warning."""
        import logging
        from importlib.metadata import distributions

        wanted = _distribution_filter()
        seen: set[str] = set()
        for dist in distributions():
            if wanted is not None and _normalized(dist.metadata["Name"] or "") not in wanted:
                continue
            for ep in dist.entry_points:
                if ep.group != ENTRY_POINT_GROUP or ep.name in seen or self.pm.get_plugin(ep.name) is not None:
                    continue
                seen.add(ep.name)
                try:
                    plugin = ep.load()
                    self.pm.register(plugin, name=ep.name)
                except Exception as exc:  # a broken third-party plugin must not break every run
                    self.broken[ep.name] = f"{type(exc).__name__}: {exc}"
                    logging.getLogger("msprobe").warning(
                        "plugin '%s' (%s) could not be loaded and is skipped: %s",
                        ep.name, dist.metadata["Name"], self.broken[ep.name],
                    )
                    continue
                self.dists[id(plugin)] = (dist.metadata["Name"], dist.version)

    def describe(self) -> list[dict[str, Any]]:
        """Installed plugins, their versions and the hooks they implement (and plugins that failed to load)."""
        out: list[dict[str, Any]] = []
        for name, plugin in sorted(self.pm.list_name_plugin(), key=lambda x: x[0]):
            hooks = sorted(h.name for h in self.pm.get_hookcallers(plugin) or [])
            dist_name, version = self.dists.get(id(plugin), (None, None))
            if name.startswith("msprobe_core."):
                dist_name, version = "msprobe-core", _core_version()
            out.append({"name": name, "version": version, "distribution": dist_name, "hooks": hooks})
        for name, error in sorted(self.broken.items()):
            out.append({"name": name, "version": None, "distribution": None, "hooks": [], "error": error})
        return out


def _core_version() -> str:
    from . import __version__

    return __version__


def _normalized(distribution: str) -> str:
    """A distribution name as packaging compares them (``msprobe_PyTorch`` is ``msprobe-pytorch``)."""
    return re.sub(r"[-_.]+", "-", distribution).lower().strip()


def _distribution_filter() -> set[str] | None:
    """The distributions whose entry points may load (``None``: every one), from ``MSPROBE_PLUGIN_DISTRIBUTIONS``."""
    value = os.environ.get(DISTRIBUTIONS_ENV)
    if value is None:
        return None
    return {_normalized(name) for name in value.split(",") if name.strip()}


def _trace_hook_calls(pm: pluggy.PluginManager, path: Path) -> None:
    """Record every call of a hook implementation in ``path``, one ``{"hook": ..., "plugin": ...}`` line each.

    The implementations themselves are wrapped, so registry hooks (called one implementation at a
    time by :meth:`PluginHost._collect`) are recorded as well as the ``pm.hook`` dispatch hooks.
    """
    import functools
    import json

    def traced(hook: str, plugin: str, function: Callable[..., Any]) -> Callable[..., Any]:
        line = json.dumps({"hook": hook, "plugin": plugin}) + "\n"

        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(line)
            return function(*args, **kwargs)

        return call

    for name, caller in vars(pm.hook).items():
        for impl in caller.get_hookimpls():
            # pluggy reads ``impl.function`` at every call; its argument names were taken at registration
            impl.function = traced(name, impl.plugin_name, impl.function)


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


def reset_host(host: PluginHost | None = None) -> None:
    """Replace the process-wide host (tests use this to register extra plugins)."""
    global _HOST
    _HOST = host
