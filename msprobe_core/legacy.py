"""Where the classic Python API went: the plugin the known-plugins table says stands for this module.

The core imports no plugin, so this module does not forward to it: importing it only
says, in one error, what to import instead and how to install it.
"""

from .known_plugins import bringing, install_command

_PLUGIN = bringing("module", __name__)
assert _PLUGIN is not None  # the table's entry; tests/test_known_plugins.py pins it

raise ImportError(
    f"{__name__} is now the {_PLUGIN.distribution} plugin: use 'from {_PLUGIN.package} import "
    f"{', '.join(_PLUGIN.python_api)}' ({install_command(_PLUGIN)})",
    name=__name__,
)
