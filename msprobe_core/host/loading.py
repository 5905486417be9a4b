"""What the plugin host checks when it loads plugins and collects what they register.

A plugin's mistake is that plugin's failure, never the core's nor the user's: a hook that
raises (``SystemExit`` included: a library calling ``sys.exit()`` while the plugin registers),
junk handed to ``register``, a hook name no spec has (``msprobe_register_mapers``). The host
skips what the plugin registers there and says so in one line naming the plugin
(:class:`~msprobe_core.host.registry.PluginHost`). Only ``KeyboardInterrupt`` goes through:
it is the user's Ctrl-C, not the plugin's failure.
"""

from __future__ import annotations

import difflib
import importlib
import os
import re
from collections.abc import Callable
from typing import Any

import pluggy

from ..errors import UsageError
from ..options import OptionSpec
from .specs import (
    FrameworkSpec,
    HierarchySpec,
    MapperSpec,
    MetricSpec,
    NormalizerSpec,
    TensorMetricSpec,
    VerdictSpec,
    WriterSpec,
)

#: the variable naming plugin modules to load without installing them
LOAD_ENV = "MSPROBE_LOAD_PLUGINS"
ENTRY_POINT_GROUP = "msprobe_core.plugins"
#: when set, only the entry points of these distributions (comma-separated names) are loaded
DISTRIBUTIONS_ENV = "MSPROBE_PLUGIN_DISTRIBUTIONS"


class RegistrationFailed(Exception):
    """A plugin's registry hook failed; the message says how (one line)."""


def _said(spell: Callable[[], str], limit: int = 200) -> str:
    """What ``spell()`` gives, on one line and at most ``limit`` characters; a plugin's object that cannot say
    what it is (its ``__str__`` raises) is ``<unprintable>``."""
    try:
        text = " ".join(str(spell()).split())
    except Exception:  # noqa: BLE001 - the plugin's object; its failure is already being reported
        return "<unprintable>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def failure_text(exc: BaseException) -> str:
    """What a plugin's exception says, in one line (``SystemExit`` spelled as the call that raised it)."""
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({_said(lambda: repr(exc.code))})"
    text = _said(lambda: str(exc))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def is_users_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is the user's Ctrl-C (or SIGTERM/SIGHUP): exactly ``KeyboardInterrupt``, the class signals
    raise; a subclass of it, which no signal raises, is a plugin's own."""
    return type(exc) is KeyboardInterrupt


def is_plugin_failure(exc: BaseException) -> bool:
    """Whether ``exc``, raised by a plugin's code, is that plugin's failure (anything but the user's Ctrl-C)."""
    return not is_users_interrupt(exc)


def _has_name(spec: Any, field: str = "name") -> bool:
    value = getattr(spec, field, None)
    return isinstance(value, str) and bool(value)


def _is_command(spec: Any) -> bool:
    return _has_name(spec) and callable(getattr(spec, "main", None))


#: hook -> (what it takes, the check): types of the host's own layer, duck-typed for those defined above it
_EXPECTED: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "msprobe_register_frameworks": ("a FrameworkSpec", lambda s: isinstance(s, FrameworkSpec) and _has_name(s)),
    "msprobe_register_mappers": ("a MapperSpec", lambda s: isinstance(s, MapperSpec) and _has_name(s)),
    "msprobe_register_normalizers": ("a NormalizerSpec", lambda s: isinstance(s, NormalizerSpec) and _has_name(s)),
    "msprobe_register_metrics": ("a MetricSpec or a TensorMetricSpec",
                                 lambda s: (isinstance(s, MetricSpec) and _has_name(s, "mode"))
                                 or (isinstance(s, TensorMetricSpec) and _has_name(s, "column"))),
    "msprobe_register_verdicts": ("a VerdictSpec", lambda s: isinstance(s, VerdictSpec) and _has_name(s)),
    "msprobe_register_writers": ("a WriterSpec", lambda s: isinstance(s, WriterSpec) and _has_name(s)),
    "msprobe_register_options": ("an OptionSpec", lambda s: isinstance(s, OptionSpec)),
    "msprobe_register_executors": ("an ExecutorSpec",
                                   lambda s: _has_name(s) and callable(getattr(s, "create", None))),
    "msprobe_register_comm_ops": ("a CommOpSpec", lambda s: _has_name(s) and callable(getattr(s, "kind", None))),
    "msprobe_register_hierarchies": ("a HierarchySpec",
                                     lambda s: isinstance(s, HierarchySpec) and _has_name(s)),
    "msprobe_register_commands": ("a click.Command", _is_command),
    "msprobe_register_partials": ("a PartialSpec", lambda s: _has_name(s) and callable(getattr(s, "sink", None))),
}
#: the functions a spec's code is called through: (field, may it be None)
_CALLABLES = {
    FrameworkSpec: (("read_tensor", True), ("write_tensor", True)),
    MapperSpec: (("run", False), ("applies", False)),
    NormalizerSpec: (("fn", False),),
    MetricSpec: (("compute", False), ("applies", False)),
    TensorMetricSpec: (("fn", False), ("applies", False)),
    VerdictSpec: (("judge", False), ("applies", False)),
    WriterSpec: (("write", False), ("open_chunked", True), ("open_sheets", True)),
    HierarchySpec: (("load", False),),
}
#: the name lists of a spec (a bare string would be read letter by letter)
_NAME_TUPLES = {
    MapperSpec: ("before", "after", "kinds"),
    NormalizerSpec: ("kinds",),
    VerdictSpec: ("modes", "replaces", "before", "after"),
}


def registration_problem(hook: str, spec: Any) -> str | None:
    """Why ``spec`` cannot be registered through ``hook`` (wrong type, code that cannot be called), else ``None``."""
    expected = _EXPECTED.get(hook)
    if expected is None:
        return None
    what, ok = expected
    if not ok(spec):
        return f"register() takes {what}, not {_short_repr(spec)}"
    for field, optional in _CALLABLES.get(type(spec), ()):
        value = getattr(spec, field)
        if not callable(value) and not (optional and value is None):
            return f"{type(spec).__name__}.{field} must be callable, not {_short_repr(value)}"
    for field in _NAME_TUPLES.get(type(spec), ()):
        value = getattr(spec, field)
        if not isinstance(value, (tuple, list)) or not all(isinstance(v, str) for v in value):
            return f"{type(spec).__name__}.{field} must be a tuple of names, not {_short_repr(value)}"
    return None


def call_registry_hook(impl: Any, hook: str) -> list[Any]:
    """Call one plugin's registry hook; what it registers, all or nothing.

    Entries are kept aside until the hook returns: when it raises (any exception, ``SystemExit``
    included; Ctrl-C goes through) or hands ``register`` something that is no spec of the hook
    (even if it then catches the ``TypeError`` that ``register`` raises), :class:`RegistrationFailed`
    says why and none of them counts.
    """
    staged: list[Any] = []
    junk: list[str] = []

    def register(spec: Any = None, *args: Any, **kwargs: Any) -> None:
        if hook == "msprobe_register_normalizers" and (args or kwargs):
            spec = NormalizerSpec(spec, *args, **kwargs)  # the short form register(name, fn, ...)
        elif args or kwargs:
            junk.append(f"register() takes one spec, not {1 + len(args) + len(kwargs)} arguments")
        problem = junk[-1] if junk else registration_problem(hook, spec)
        if problem:
            junk.append(problem)
            raise TypeError(problem)
        staged.append(spec)

    try:
        impl.function(register=register)
    except BaseException as exc:
        if not is_plugin_failure(exc):
            raise
        raise RegistrationFailed(junk[0] if junk else failure_text(exc)) from exc
    if junk:
        raise RegistrationFailed(junk[0])
    return staged


def load_entry_points(pm: pluggy.PluginManager, dists: dict[int, tuple[str, str]],
                      broken: dict[str, str]) -> set[str]:
    """Register every plugin of the entry-point group (of the distributions ``MSPROBE_PLUGIN_DISTRIBUTIONS`` names);
    the names of the entry points found (a blocked name, ``-p no:NAME``, is found but not loaded).

    ``dists`` gets each plugin's ``(distribution, version)`` by ``id``; a plugin that fails to import
    (``SystemExit`` included) is left out, with its error in ``broken`` and a warning.
    """
    import logging
    from importlib.metadata import distributions

    wanted = distribution_filter()
    seen: set[str] = set()
    for dist in distributions():
        if wanted is not None and normalized_distribution(dist.metadata["Name"] or "") not in wanted:
            continue
        for ep in dist.entry_points:
            if ep.group != ENTRY_POINT_GROUP or ep.name in seen:
                continue
            seen.add(ep.name)
            if pm.is_blocked(ep.name) or pm.get_plugin(ep.name) is not None:
                continue  # turned off (`-p no:NAME`): not even imported
            try:
                plugin = ep.load()
                pm.register(plugin, name=ep.name)
            except BaseException as exc:  # a broken third-party plugin must not break every run
                if not is_plugin_failure(exc):
                    raise
                broken[ep.name] = failure_text(exc)
                logging.getLogger("msprobe").warning(
                    "plugin '%s' (%s) could not be loaded and is skipped: %s",
                    ep.name, dist.metadata["Name"], broken[ep.name],
                )
                continue
            dists[id(plugin)] = (dist.metadata["Name"], dist.version)
    return seen


def normalized_distribution(distribution: str) -> str:
    """A distribution name as packaging compares them (``My_Plugin.x`` is ``my-plugin-x``)."""
    return re.sub(r"[-_.]+", "-", distribution).lower().strip()


def distribution_filter() -> set[str] | None:
    """The distributions whose entry points may load (``None``: every one), from ``MSPROBE_PLUGIN_DISTRIBUTIONS``."""
    value = os.environ.get(DISTRIBUTIONS_ENV)
    if value is None:
        return None
    return {normalized_distribution(name) for name in value.split(",") if name.strip()}


def _short_repr(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def unknown_hooks(pm: pluggy.PluginManager) -> dict[str, str]:
    """Plugin name -> the first hook it implements that no spec declares, with the closest real hook name.

    pluggy's own check (``check_pending``) raises for the first one, which would make a plugin's
    misspelling every run's internal error.
    """
    known = [name for name, caller in vars(pm.hook).items() if caller.spec is not None]
    found: dict[str, str] = {}
    for name, caller in sorted(vars(pm.hook).items()):
        if caller.spec is not None:
            continue
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        for impl in caller.get_hookimpls():
            if not impl.optionalhook:
                found.setdefault(impl.plugin_name, f"it implements '{name}', which is no msprobe hook{hint}")
    return found


def import_named_modules(value: str) -> list[tuple[str, Any]]:
    """The modules ``MSPROBE_LOAD_PLUGINS`` names (``pkg.mod,other.mod``), imported, in order, each once.

    A name that cannot be imported is the variable's error: a :class:`UsageError` (exit 2) naming it.
    """
    out: list[tuple[str, Any]] = []
    for name in dict.fromkeys(n.strip() for n in value.split(",")):
        if not name:
            continue
        try:
            out.append((name, importlib.import_module(name)))
        except BaseException as exc:
            if not is_plugin_failure(exc):
                raise
            raise UsageError(f"{LOAD_ENV}: cannot import plugin module '{name}' ({failure_text(exc)})") from None
    return out
