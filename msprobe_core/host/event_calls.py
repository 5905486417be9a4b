"""The hooks the host calls one implementation at a time outside the stages: the stage events (every listener,
a failing one silenced) and the claims of command lines (the first plugin that takes one); and the monitoring of
the calls the host makes that way, which pluggy's own monitoring does not see."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import pluggy

from ..errors import PluginFailed
from .defaults import is_core_plugin
from .loading import failure_text, is_plugin_failure
from .plugin_calls import PluginCode
from .specs import CommandLineClaim

#: pluggy's ``before(hook_name, hook_impls, kwargs)`` and ``after(outcome, hook_name, hook_impls, kwargs)``
Monitor = tuple[Callable[..., None], Callable[..., None]]


class EventCalls:
    """What :class:`~msprobe_core.host.registry.PluginHost` calls this way (it provides ``pm``, ``monitors``,
    ``quiet_listeners``, ``owner_label`` and ``_skip``)."""

    pm: Any
    #: the ``(before, after)`` pairs watching the calls the host makes one implementation at a time
    monitors: list[Monitor]
    quiet_listeners: set[str]
    owner_label: Any  # (plugin) -> how messages name it
    _skip: Any  # (plugin, why, then=...) -> a warning, and the plugin's failed hook remembered

    def notify(self, hook: str, **kwargs: Any) -> None:
        """Call every implementation of the event hook ``hook`` (the stage events); a plugin's that fails is
        warned about once and not called again by this host (an event never stops the run)."""
        for impl in reversed(getattr(self.pm.hook, hook).get_hookimpls()):
            if impl.plugin_name in self.quiet_listeners:
                continue
            if is_core_plugin(impl.plugin_name):
                impl.function(*[kwargs[name] for name in impl.argnames])
                continue
            try:
                PluginCode(impl.function, self.owner_label(impl.plugin_name), hook, passes=())(
                    *[kwargs[name] for name in impl.argnames])
            except PluginFailed as exc:
                self.quiet_listeners.add(impl.plugin_name)
                import logging

                logging.getLogger("msprobe").warning("%s (its stage events are no longer sent to it)", exc)

    def claim_command_line(self, args: Sequence[str]) -> CommandLineClaim | None:
        """The claim of the first plugin that takes ``args`` over (``msprobe_claim_command_line``), or ``None``."""
        for impl in reversed(self.pm.hook.msprobe_claim_command_line.get_hookimpls()):  # pluggy's order
            try:
                claim = self._monitored("msprobe_claim_command_line", impl, partial(impl.function, args=list(args)))
            except BaseException as exc:  # one plugin's bug: the others may still claim the line
                if is_core_plugin(impl.plugin_name) or not is_plugin_failure(exc):
                    raise
                self._skip(impl.plugin_name, f"msprobe_claim_command_line failed: {failure_text(exc)}",
                           then="the other plugins are asked")
                continue
            if claim is not None:
                return claim
        return None

    def add_hostcall_monitoring(self, before: Callable[..., None], after: Callable[..., None]) -> Callable[[], None]:
        """pluggy's ``add_hookcall_monitoring`` for the calls the host makes one implementation at a time (the
        registry, first-result and command-line hooks, which never pass through ``pm.hook``): ``before`` and
        ``after`` get each such call with that one implementation in ``hook_impls`` and ``kwargs`` empty, and
        ``after`` pluggy's :class:`pluggy.Result`. Returns the function that stops the monitoring."""
        pair = (before, after)
        self.monitors.append(pair)
        return lambda: self.monitors.remove(pair)

    def _monitored(self, hook: str, impl: Any, function: Callable[[], Any]) -> Any:
        """``function()`` (the host's call of ``impl`` for ``hook``), shown to the monitors around it."""
        if not self.monitors:
            return function()
        for before, _after in self.monitors:
            before(hook, [impl], {})
        try:
            result = function()
        except BaseException as exc:
            for _before, after in self.monitors:
                after(pluggy.Result(None, exc), hook, [impl], {})
            raise
        for _before, after in self.monitors:
            after(pluggy.Result(result, None), hook, [impl], {})
        return result
