"""What ``msprobe plugins`` lists of a plugin host: each plugin, its distribution, version and hooks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .defaults import BUILTIN_PLUGIN, default_plugin_names, is_core_plugin

if TYPE_CHECKING:
    from .registry import PluginHost


def core_version() -> str:
    """msprobe-core's version (the distribution of the built-in and default plugins)."""
    from ..version import __version__

    return __version__


def describe_plugins(host: PluginHost) -> list[dict[str, Any]]:
    """Every registered plugin (name, version, distribution, hooks, ``default``), then those that failed to load
    (``error``), then the default plugins turned off (``disabled``)."""
    out: list[dict[str, Any]] = []
    for name, plugin in sorted(host.pm.list_name_plugin(), key=lambda x: x[0]):
        hooks = sorted(h.name for h in host.pm.get_hookcallers(plugin) or [])
        dist_name, version = host.dists.get(id(plugin), (None, None))
        if is_core_plugin(name) or name.startswith("msprobe_core."):
            dist_name, version = "msprobe-core", core_version()
        out.append({"name": name, "version": version, "distribution": dist_name, "hooks": hooks,
                    "default": is_core_plugin(name) and name != BUILTIN_PLUGIN})
        if name in host.failed_hooks:
            out[-1]["error"] = host.failed_hooks[name]
    for name, error in sorted(host.broken.items()):
        out.append({"name": name, "version": None, "distribution": None, "hooks": [], "error": error})
    for name in default_plugin_names():  # a default plugin turned off is still listed, as off
        if name in host.disabled:
            out.append({"name": name, "version": core_version(), "distribution": "msprobe-core", "hooks": [],
                        "default": True, "disabled": True})
    return out
