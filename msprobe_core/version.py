"""The version of msprobe-core (one place; ``msprobe plugins`` and ``msprobe_core.__version__`` read it)."""

__version__ = "0.1.0"
