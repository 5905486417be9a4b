"""What the host asks the plugins about the plugins that are not loaded: install hints, what ``msprobe --help`` says
of them, and which distributions are first-party (the hooks of the default plugin ``known_plugins``; with it turned
off every answer is empty and every message is the core's own)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..options import OptionSpec
from .loading import normalized_distribution


class PluginHints:
    """What :class:`~msprobe_core.host.registry.PluginHost` asks this way (it provides ``pm`` and ``dists``)."""

    pm: Any
    dists: dict[int, tuple[str, str]]

    def loaded_distributions(self) -> set[str]:
        """The normalised names of the distributions whose plugins this host loaded."""
        return {normalized_distribution(name) for name, _version in self.dists.values()}

    def install_hint(self, kind: str, value: str) -> str | None:
        """How to get the plugin that would handle ``value`` of ``kind`` (``msprobe_install_hint``), or ``None``."""
        return self.pm.hook.msprobe_install_hint(kind=kind, value=value, loaded=self.loaded_distributions())

    def first_party_distributions(self) -> tuple[str, ...]:
        """The normalised names of the distributions of msprobe-core's own repository, in the order the plugins
        give them (``msprobe_first_party_distributions``)."""
        said = reversed(self.pm.hook.msprobe_first_party_distributions())  # in registration order
        return tuple(dict.fromkeys(normalized_distribution(name) for names in said for name in names))

    def command_line_usage(self) -> list[str]:
        """The lines ``msprobe --help`` shows for the command lines of another syntax (``msprobe_command_line_usage``),
        in registration order."""
        return [line for lines in reversed(self.pm.hook.msprobe_command_line_usage()) for line in lines]

    def with_help(self, spec: OptionSpec) -> OptionSpec:
        """``spec`` with its help as the plugins complete it (``msprobe_option_help``)."""
        told = self.pm.hook.msprobe_option_help(name=spec.name, text=spec.help)
        return spec if told is None or told == spec.help else replace(spec, help=told)
