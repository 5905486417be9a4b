"""The default plugin ``automap``: ``--auto-map`` proposes the target→golden pairing of differently named modules
from the two dumps' structure, writes it as a ``-dm`` file beside the result and compares with it
(:mod:`.automap`; the pairing passes are the ``automap_*`` modules beside it).

Turned off (``-p no:automap``), ``--auto-map`` is no option of ``msprobe compare``.
"""

from __future__ import annotations

from typing import Any

from msprobe_core.plugin import DUMP_KINDS, MapperSpec, OptionSpec, Register, hookimpl

#: the mapper's name in the chain (``-dm`` and ``-fm`` go behind it)
AUTO_MAPPER = "auto-map"


@hookimpl
def msprobe_register_mappers(register: Register[MapperSpec]) -> None:
    """``--auto-map``: a proposed data mapping, ahead of ``-dm`` and ``-fm`` (plugins' mapping mappers go behind
    it)."""
    register(MapperSpec(AUTO_MAPPER, _run, applies=_applies, before=("data-mapping", "fuzzy")))


def _applies(options: Any) -> bool:
    return bool(getattr(options, "auto_map", False))


def _run(ctx: Any) -> Any:
    """The pairing machinery (:mod:`.automap`) is imported when ``--auto-map`` runs, not when a compare starts."""
    from .automap import run_auto_map

    return run_auto_map(ctx)


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``--auto-map`` (``CompareOptions.auto_map``): gone with the plugin when it is turned off."""
    register(OptionSpec("auto_map", ("--auto-map", "--auto_map"), "Propose the pairing of differently named modules "
                        "from the two dumps' structure, write it as auto_mapping_<timestamp>.yaml (a -dm file) and "
                        "compare with it.", kind="flag", default=False, kinds=DUMP_KINDS))
