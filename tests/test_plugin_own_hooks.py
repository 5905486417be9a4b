"""A plugin declares the hooks only it calls (``msprobe_add_hookspecs``, pytest's ``pytest_addhooks``): the default
plugins ``tensor_metrics`` (``msprobe_tensor_rows_compared``), ``summary`` (``msprobe_mapping_options``) and
``plugins_command`` (``msprobe_list_plugins``) do, and
a plugin that implements such a hook (``optionalhook=True``) still loads where the declaring plugin is turned off."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from msprobe_core.default_plugins.plugins_command.listing import describe_plugins
from msprobe_core.host.registry import PluginHost
from msprobe_core.plugin import hookimpl, hookspec


class _ColourSpecs:
    """The hooks the plugin ``Painter`` declares."""

    @hookspec(firstresult=True)
    def painter_colour(self, name):
        """The colour of row ``name`` on the painter's page, or ``None``."""


class Painter:
    """Declares ``painter_colour`` and asks it."""

    @hookimpl
    def msprobe_add_hookspecs(self, pluginmanager):
        pluginmanager.add_hookspecs(_ColourSpecs)


class Red:
    """Answers the painter's hook, which may be absent."""

    @hookimpl(optionalhook=True)
    def painter_colour(self, name):
        return "red" if name.startswith("Torch.") else None


class Careless:
    """Answers the painter's hook without saying it may be absent."""

    @hookimpl
    def painter_colour(self, name):
        return "blue"


@pytest.mark.exercises_hooks("msprobe_add_hookspecs")
def test_a_plugin_declares_a_hook_that_another_implements():
    host = PluginHost(autoload=False, extra_plugins=[Red(), Painter()])  # the implementation registered first
    assert host.pm.hook.painter_colour(name="Torch.add.0.forward") == "red"
    assert host.pm.hook.painter_colour(name="Functional.x") is None
    assert not host.broken and not host.failed_hooks
    listed = {d["name"]: d["hooks"] for d in describe_plugins(host)}
    assert "msprobe_add_hookspecs" in listed["Painter"] and "painter_colour" in listed["Red"]


def test_without_the_declaring_plugin_an_optional_implementation_loads_and_a_plain_one_is_skipped():
    host = PluginHost(autoload=False, extra_plugins=[Red(), Careless()])
    assert host.pm.get_plugin("Red") is not None and "Red" not in host.broken
    assert host.pm.get_plugin("Careless") is None
    assert "it implements 'painter_colour', which is no msprobe hook" in host.broken["Careless"]


def test_the_default_plugins_declare_the_hooks_only_they_call():
    host = PluginHost(autoload=False)
    assert host.pm.hook.msprobe_tensor_rows_compared.spec.namespace.__name__.endswith("tensor_metrics.hookspecs")
    assert host.pm.hook.msprobe_compare_tensors.spec.namespace.__name__.endswith("tensor_metrics.hookspecs")
    assert host.pm.hook.msprobe_mapping_options.spec.namespace.__name__.endswith("summary.hookspecs")
    assert host.pm.hook.msprobe_list_plugins.spec.namespace.__name__.endswith("plugins_command.hookspecs")


@pytest.mark.parametrize(("off", "hook", "implementer"), [
    ("tensor_metrics", "msprobe_tensor_rows_compared", "tensor_log"),
    ("summary", "msprobe_mapping_options", "mindspore"),
    ("plugins_command", "msprobe_list_plugins", "known_plugins"),
])
def test_a_hooks_implementers_load_with_its_plugin_turned_off(monkeypatch, off, hook, implementer):
    monkeypatch.setenv("MSPROBE_DISABLE_PLUGINS", off)
    host = PluginHost()
    caller = getattr(host.pm.hook, hook)
    assert caller.spec is None  # no plugin declares it: its implementations are never called
    assert implementer in {impl.plugin_name for impl in caller.get_hookimpls()}
    assert not host.broken and not host.failed_hooks


@dataclass(frozen=True)
class Brush:
    """What the plugin ``Easel``'s registry hook takes."""

    name: str
    plugin: str = ""


class _BrushSpecs:
    @hookspec
    def msprobe_register_brushes(self, register):
        """The brushes ``Easel`` paints with: ``register(Brush(...))``."""


class Easel:
    """Declares the registry hook ``msprobe_register_brushes`` (the host collects it as it collects its own)."""

    @hookimpl
    def msprobe_add_hookspecs(self, pluginmanager):
        pluginmanager.add_hookspecs(_BrushSpecs)


class Wide:
    @hookimpl(optionalhook=True)
    def msprobe_register_brushes(self, register):
        register(Brush("wide"))


class Failing:
    @hookimpl(optionalhook=True)
    def msprobe_register_brushes(self, register):
        register(Brush("thin"))
        raise RuntimeError("no more brushes")


def test_a_plugins_own_registry_hook_is_collected_when_the_plugins_load_with_the_hosts_checks(caplog):
    host = PluginHost(autoload=False, extra_plugins=[Easel(), Wide(), Failing()])
    assert host.registered["msprobe_register_brushes"] == [Brush("wide", plugin="Wide")]  # Failing's: none of it
    assert "msprobe_register_brushes failed: RuntimeError: no more brushes" in host.failed_hooks["Failing"]
    assert [r.getMessage() for r in caplog.records].count(
        "plugin 'Failing': msprobe_register_brushes failed: RuntimeError: no more brushes; what it registers there is skipped") == 1
    alone = PluginHost(autoload=False, extra_plugins=[Wide()])  # nobody declares it: not collected, Wide loads
    assert "msprobe_register_brushes" not in alone.registered and not alone.broken and not alone.failed_hooks
    assert PluginHost(autoload=False).registered["msprobe_register_comm_ops"][0].plugin == "diff_analyze"
