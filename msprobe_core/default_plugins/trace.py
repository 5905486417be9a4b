"""The default plugin ``trace``: ``MSPROBE_TRACE_PLUGINS=FILE`` traces every hook call through pluggy's own
monitoring, one JSON line each.

pluggy calls ``before(hook_name, hook_impls, kwargs)`` and ``after(outcome, hook_name, hook_impls, kwargs)``
around each call made through ``pm.hook.<name>(...)`` (:meth:`pluggy.PluginManager.add_hookcall_monitoring`,
what datasette's ``DATASETTE_TRACE_PLUGINS`` uses). Each call appends, when it ends::

    {"hook": "msprobe_run_jobs", "plugins": ["diff_analyze", "msprobe_core.builtin"], "via": "pluggy",
     "seconds": 0.0123, "outcome": "returned", "result": "list"}

``plugins``: the implementations the call may run, in the order they run; ``outcome``: ``returned`` or
``raised`` (then ``error``: the exception's type and text); ``result``: the type of what the call returned.

The host calls some hooks one implementation at a time instead, to name a failing plugin and go on without it:
the registry hooks (``msprobe_register_*``), the first-result hooks (``msprobe_discover_jobs``,
``msprobe_load_dump``, ``msprobe_run_jobs``) and ``msprobe_claim_command_line``. Those never pass through
``pm.hook``, so pluggy's monitoring cannot see them; the host shows each of them to its own monitoring
(``host.add_hostcall_monitoring``) with one implementation in ``hook_impls``, traced with ``"via": "host"``. A
run's trace thus lists every hook call, whichever way it was made. Both are started when the host's plugins are
loaded (``msprobe_plugins_loaded``).

``MSPROBE_TRACE_HOOKS=FILE`` is the shorter record of every hook implementation called, one
``{"hook": ..., "plugin": ...}`` line per call (what ``exercises_hooks`` tests check): the implementations
themselves are wrapped, so the calls the host makes one implementation at a time are recorded with the others.
Both can be set; turned off (``-p no:trace``), neither writes anything.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msprobe_core.plugin import hookimpl

if TYPE_CHECKING:
    from msprobe_core.plugin import PluginHost

#: the variable naming the file the trace is appended to
TRACE_PLUGINS_ENV = "MSPROBE_TRACE_PLUGINS"
#: the variable naming the file where every hook implementation called is recorded (one short JSON line each)
TRACE_HOOKS_ENV = "MSPROBE_TRACE_HOOKS"


class HookTrace:
    """Appends one JSON line per hook call to ``path`` (see the module's doc)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        #: start times of the calls under way, innermost last (a hook's implementation may call hooks)
        self._started: list[float] = []

    def before(self, hook_name: str, hook_impls: Sequence[Any], kwargs: dict[str, Any]) -> None:
        """pluggy's ``before``: a call begins."""
        self._started.append(time.perf_counter())

    def after(self, outcome: Any, hook_name: str, hook_impls: Sequence[Any], kwargs: dict[str, Any]) -> None:
        """pluggy's ``after``: a call made through ``pm.hook`` ended; its line is written."""
        self._write(outcome, hook_name, hook_impls, "pluggy")

    def after_host(self, outcome: Any, hook_name: str, hook_impls: Sequence[Any], kwargs: dict[str, Any]) -> None:
        """The host's ``after``: a call it made one implementation at a time ended; its line is written."""
        self._write(outcome, hook_name, hook_impls, "host")

    def _write(self, outcome: Any, hook_name: str, hook_impls: Sequence[Any], via: str) -> None:
        seconds = time.perf_counter() - self._started.pop() if self._started else 0.0
        record: dict[str, Any] = {"hook": hook_name, "plugins": [impl.plugin_name for impl in reversed(hook_impls)],
                                  "via": via, "seconds": round(seconds, 6)}
        error = getattr(outcome, "exception", None)
        if error is not None:
            record |= {"outcome": "raised", "error": f"{type(error).__name__}: {error}"}
        else:
            record |= {"outcome": "returned", "result": type(outcome.get_result()).__name__}
        with open(self.path, "a", encoding="utf-8") as fh:  # one write per line: processes of a run share the file
            fh.write(json.dumps(record) + "\n")


def record_implementations(pm: Any, path: Path) -> None:
    """Record every call of a hook implementation of ``pm`` in ``path``, one ``{"hook": ..., "plugin": ...}`` line
    each (``MSPROBE_TRACE_HOOKS``); those of a historic hook (called as their plugins were registered) at once.

    The implementations themselves are wrapped, so registry hooks (called one implementation at a
    time by the host) are recorded as well as the ``pm.hook`` dispatch hooks.
    """

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
            if caller.is_historic():  # called as its plugin was registered, before this record began
                with open(path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"hook": name, "plugin": impl.plugin_name}) + "\n")
            # pluggy reads ``impl.function`` at every call; its argument names were taken at registration
            impl.function = traced(name, impl.plugin_name, impl.function)


@hookimpl(tryfirst=True)  # the record wraps the other implementations of this hook before they are called
def msprobe_plugins_loaded(host: PluginHost) -> None:
    """With ``MSPROBE_TRACE_HOOKS`` naming a file: record every hook implementation ``host`` calls from now on
    (this one included). With ``MSPROBE_TRACE_PLUGINS`` naming a file: trace ``host``'s hook calls, both ways they
    are made."""
    record = os.environ.get(TRACE_HOOKS_ENV, "")
    if record:
        record_implementations(host.pm, Path(record))
        with open(record, "a", encoding="utf-8") as fh:  # this call, under way before its wrapper was made
            fh.write(json.dumps({"hook": "msprobe_plugins_loaded", "plugin": "trace"}) + "\n")
    where = os.environ.get(TRACE_PLUGINS_ENV, "")
    if not where:
        return
    trace = HookTrace(Path(where))
    host.pm.add_hookcall_monitoring(trace.before, trace.after)
    host.add_hostcall_monitoring(trace.before, trace.after_host)
