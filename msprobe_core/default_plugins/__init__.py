"""The features msprobe-core ships, each a plugin registered through the same hooks as a third party's.

One module or package per feature, using only :mod:`msprobe_core.plugin` (an import-linter contract in
``pyproject.toml``); the core outside this package imports none of them. They are listed, by name and module,
in :data:`msprobe_core.host.defaults.DEFAULT_PLUGINS` and registered by the plugin host right after the core's
own registrations (``msprobe_core.builtin``). Any of them can be turned off by name
(``MSPROBE_DISABLE_PLUGINS=NAME,NAME`` or ``msprobe -p no:NAME``); a compare still writes its result table
without it. ``msprobe plugins`` lists them.
"""
