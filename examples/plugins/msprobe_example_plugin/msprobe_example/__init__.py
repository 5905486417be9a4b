"""Example msprobe-core plugin (see ``docs/plugins.md``)."""

__version__ = "0.1.0"
