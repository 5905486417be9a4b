"""What ``msprobe plugins`` lists of a plugin host: each plugin, its distribution, version and hooks.

Read from the host's public attributes (its pluggy manager ``pm``, ``dists``, ``broken``, ``failed_hooks``,
``disabled``) and the names of the default plugins (:func:`~msprobe_core.plugin.default_plugin_names`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msprobe_core.plugin import default_plugin_names

if TYPE_CHECKING:
    from msprobe_core.plugin import PluginHost


def core_version() -> str:
    """msprobe-core's version (the distribution of the built-in and default plugins)."""
    import msprobe_core

    return str(msprobe_core.__version__)


def describe_plugins(host: PluginHost) -> list[dict[str, Any]]:
    """Every registered plugin (name, version, distribution, hooks, ``default``), then those that failed to load
    (``error``), then the default plugins turned off (``disabled``)."""
    defaults = default_plugin_names()
    out: list[dict[str, Any]] = []
    for name, plugin in sorted(host.pm.list_name_plugin(), key=lambda x: x[0]):
        hooks = sorted(h.name for h in host.pm.get_hookcallers(plugin) or [])
        dist_name, version = host.dists.get(id(plugin), (None, None))
        if name in defaults or name.startswith("msprobe_core."):  # the default plugins and the built-in one
            dist_name, version = "msprobe-core", core_version()
        out.append({"name": name, "version": version, "distribution": dist_name, "hooks": hooks,
                    "default": name in defaults})
        if name in host.failed_hooks:
            out[-1]["error"] = host.failed_hooks[name]
    for name, error in sorted(host.broken.items()):
        out.append({"name": name, "version": None, "distribution": None, "hooks": [], "error": error})
    for name in defaults:  # a default plugin turned off is still listed, as off
        if name in host.disabled:
            out.append({"name": name, "version": core_version(), "distribution": "msprobe-core", "hooks": [],
                        "default": True, "disabled": True})
    return out
