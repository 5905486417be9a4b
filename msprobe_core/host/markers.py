"""The pluggy markers of msprobe-core's hooks, in a module of their own so that each module of hook specs can use them."""

from __future__ import annotations

import pluggy

PROJECT = "msprobe_core"
#: the decorator of a hook spec: the core's, and a plugin's own hooks (``msprobe_add_hookspecs``)
hookspec = pluggy.HookspecMarker(PROJECT)
#: the decorator of a plugin's hook implementations (``@hookimpl def msprobe_register_mappers(register): ...``)
hookimpl = pluggy.HookimplMarker(PROJECT)
