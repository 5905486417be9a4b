"""``MSPROBE_TRACE_PLUGINS=FILE``: every hook call traced through pluggy's own monitoring, one JSON line each.

pluggy calls ``before(hook_name, hook_impls, kwargs)`` and ``after(outcome, hook_name, hook_impls, kwargs)``
around each call made through ``pm.hook.<name>(...)`` (:meth:`pluggy.PluginManager.add_hookcall_monitoring`,
what datasette's ``DATASETTE_TRACE_PLUGINS`` uses). Each call appends, when it ends::

    {"hook": "msprobe_run_jobs", "plugins": ["diff_analyze", "msprobe_core.builtin"], "via": "pluggy",
     "seconds": 0.0123, "outcome": "returned", "result": "list"}

``plugins``: the implementations the call may run, in the order they run; ``outcome``: ``returned`` or
``raised`` (then ``error``: the exception's type and text); ``result``: the type of what the call returned.

The host calls some hooks one implementation at a time instead, to name a failing plugin and go on without it:
the registry hooks (``msprobe_register_*``, collected by ``PluginHost._collect``), the first-result hooks
(``msprobe_discover_jobs``, ``msprobe_load_dump``, ``msprobe_run_jobs``) and ``msprobe_claim_command_line``.
Those never pass through ``pm.hook``, so pluggy's monitoring cannot see them; the host hands each of those calls
to :meth:`HookTrace.call`, which reports it through the same ``before``/``after`` pair with one implementation in
``plugins`` and ``"via": "host"``. A run's trace thus lists every hook call, whichever way it was made.
``MSPROBE_TRACE_HOOKS`` (:func:`msprobe_core.host.loading.trace_hook_calls`) records implementations called and
works as before; both can be set.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pluggy

#: the variable naming the file the trace is appended to
TRACE_PLUGINS_ENV = "MSPROBE_TRACE_PLUGINS"


class _Ended:
    """What :meth:`HookTrace.call` hands ``after``: pluggy's outcome, as far as the trace reads it."""

    def __init__(self, result: Any, exception: BaseException | None) -> None:
        self._result, self.exception = result, exception

    def get_result(self) -> Any:
        """The value the call returned (the trace never calls it when the call raised)."""
        return self._result


class HookTrace:
    """Appends one JSON line per hook call to ``path`` (see the module's doc)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        #: start times of the calls under way, innermost last (a hook's implementation may call hooks)
        self._started: list[float] = []
        self._via = "pluggy"

    def before(self, hook_name: str, hook_impls: Sequence[Any], kwargs: dict[str, Any]) -> None:
        """pluggy's ``before``: a call begins."""
        self._started.append(time.perf_counter())

    def after(self, outcome: Any, hook_name: str, hook_impls: Sequence[Any], kwargs: dict[str, Any]) -> None:
        """pluggy's ``after``: the call ended; its line is written."""
        seconds = time.perf_counter() - self._started.pop() if self._started else 0.0
        record: dict[str, Any] = {"hook": hook_name, "plugins": [impl.plugin_name for impl in reversed(hook_impls)],
                                  "via": self._via, "seconds": round(seconds, 6)}
        error = getattr(outcome, "exception", None)
        if error is not None:
            record |= {"outcome": "raised", "error": f"{type(error).__name__}: {error}"}
        else:
            record |= {"outcome": "returned", "result": type(outcome.get_result()).__name__}
        with open(self.path, "a", encoding="utf-8") as fh:  # one write per line: processes of a run share the file
            fh.write(json.dumps(record) + "\n")

    def call(self, hook_name: str, impl: Any, function: Callable[[], Any]) -> Any:
        """Run ``function`` (the host's call of ``impl`` for ``hook_name``) between ``before`` and ``after``."""
        self.before(hook_name, [impl], {})
        try:
            result = function()
        except BaseException as exc:
            self._after_host(_Ended(None, exc), hook_name, impl)
            raise
        self._after_host(_Ended(result, None), hook_name, impl)
        return result

    def _after_host(self, outcome: _Ended, hook_name: str, impl: Any) -> None:
        self._via = "host"
        try:
            self.after(outcome, hook_name, [impl], {})
        finally:
            self._via = "pluggy"


def start_trace(pm: pluggy.PluginManager) -> HookTrace | None:
    """The trace of ``pm``'s hook calls when ``MSPROBE_TRACE_PLUGINS`` names a file (monitoring started), else
    ``None``."""
    where = os.environ.get(TRACE_PLUGINS_ENV, "")
    if not where:
        return None
    trace = HookTrace(Path(where))
    pm.add_hookcall_monitoring(trace.before, trace.after)
    return trace


def traced(trace: HookTrace | None, hook_name: str, impl: Any, function: Callable[[], Any]) -> Any:
    """``function()``, reported to ``trace`` as the host's call of ``impl`` (as it is when nothing traces)."""
    return function() if trace is None else trace.call(hook_name, impl, function)
