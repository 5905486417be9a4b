"""Where the classic Python API went: the classic plugin (its package is the one the error names).

The core imports no plugin, so this module does not forward to it: importing it only
says, in one error, what to import instead and how to install it.
"""

from .known_plugins import bringing, install_command

_CLASSIC = bringing("command_line", "classic")
assert _CLASSIC is not None  # the table's entry; tests/test_known_plugins.py pins it

raise ImportError(
    f"msprobe_core.legacy is now the {_CLASSIC.distribution} plugin: use 'from {_CLASSIC.package} import compare, "
    f"compare_distributed, ms_compare, ms_compare_distributed' ({install_command(_CLASSIC)})",
    name=__name__,
)
