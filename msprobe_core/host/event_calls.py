"""The hooks the host calls one implementation at a time outside the stages: the stage events (every listener,
a failing one silenced) and the claims of command lines (the first plugin that takes one)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from ..errors import PluginFailed
from .defaults import is_core_plugin
from .loading import failure_text, is_plugin_failure
from .plugin_calls import PluginCode
from .specs import CommandLineClaim
from .tracing import traced


class EventCalls:
    """What :class:`~msprobe_core.host.registry.PluginHost` calls this way (it provides ``pm``, ``trace``,
    ``quiet_listeners``, ``owner_label`` and ``_skip``)."""

    pm: Any
    trace: Any
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
                claim = traced(self.trace, "msprobe_claim_command_line", impl,
                               partial(impl.function, args=list(args)))
            except BaseException as exc:  # one plugin's bug: the others may still claim the line
                if is_core_plugin(impl.plugin_name) or not is_plugin_failure(exc):
                    raise
                self._skip(impl.plugin_name, f"msprobe_claim_command_line failed: {failure_text(exc)}",
                           then="the other plugins are asked")
                continue
            if claim is not None:
                return claim
        return None
