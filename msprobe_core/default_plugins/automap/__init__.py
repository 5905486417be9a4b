"""The default plugin ``automap``: ``--auto-map`` proposes the target→golden pairing of differently named modules
from the two dumps' structure, writes it as a ``-dm`` file beside the result and compares with it
(:mod:`.automap`; the pairing passes are the ``automap_*`` modules beside it).

Turned off (``-p no:automap``), ``--auto-map`` is no option of ``msprobe compare``.
"""

from __future__ import annotations

from msprobe_core.plugin import DUMP_KINDS, MapperSpec, OptionSpec, Register, hookimpl


@hookimpl
def msprobe_register_mappers(register: Register[MapperSpec]) -> None:
    """``--auto-map``: a proposed data mapping, ahead of ``-dm`` and ``-fm`` (plugins' mapping mappers go behind
    it)."""
    from .automap import auto_map_mapper

    register(auto_map_mapper())


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``--auto-map`` (``CompareOptions.auto_map``): gone with the plugin when it is turned off."""
    register(OptionSpec("auto_map", ("--auto-map", "--auto_map"), "Propose the pairing of differently named modules "
                        "from the two dumps' structure, write it as auto_mapping_<timestamp>.yaml (a -dm file) and "
                        "compare with it.", kind="flag", default=False, kinds=DUMP_KINDS))
