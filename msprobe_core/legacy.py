"""Where the classic Python API went: importing this module says, in one error, what to import instead.

The core imports no plugin, so this module does not forward to it: the install hints of the default plugins
(``msprobe_install_hint``, kind ``module``; no installed plugin is loaded for it) say which plugin stands for it
and how to install it.
"""

from .host.registry import PluginHost

raise ImportError(PluginHost(autoload=False).install_hint("module", __name__)
                  or f"{__name__} is no longer part of msprobe-core: its Python API moved to a plugin", name=__name__)
