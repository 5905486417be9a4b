"""The default plugin ``data_mapping``: ``-dm/--data_mapping FILE`` pairs rows by an explicit target-row →
golden-row name mapping (a YAML file, read by :func:`msprobe_core.plugin.load_data_mapping`).

Turned off (``-p no:data_mapping``), ``-dm`` is no option of ``msprobe compare``; the mappers that build their
own data mapping (``--auto-map``, the MindSpore plugin's ``-lm``) still work.
"""

from __future__ import annotations

from pathlib import Path

from msprobe_core.plugin import (
    DUMP_KINDS,
    TWO_PROGRAMS_COMMENT,
    MapperSpec,
    MatchContext,
    MatchResult,
    OptionSpec,
    Register,
    hookimpl,
    join_on_keys,
    load_data_mapping,
    mapped_golden_keys,
)

#: the mapper's name in the chain (the MindSpore plugin's mappers go ahead of it by this name)
DATA_MAPPER = "data-mapping"
#: how many leading comment lines of a data-mapping file are read for :func:`declares_two_programs`
_HEADER_LINES = 10_000


def data_mapping_match(ctx: MatchContext) -> MatchResult:
    """``-dm``: target key = the mapped name, else the row's own name; left join, no dtype gate.

    Both sides are joined on the names as the dumps spell them: the file names golden rows
    exactly, forward and backward. (msprobe joins these raw target keys with *re-numbered*
    golden keys, which pairs a backward row with the wrong call; see docs/differences.md.)
    """
    mapping = load_data_mapping(Path(ctx.options.data_mapping))
    keys = [mapping.get(name, name) for name in ctx.target.name]
    match = join_on_keys(keys, mapped_golden_keys(ctx))
    match.dtype_gate = False
    if declares_two_programs(Path(ctx.options.data_mapping)):  # an --auto-map file: judged as that run judged
        match.notes.two_programs = True
    return match


def declares_two_programs(path: Path) -> bool:
    """Whether a data-mapping file's leading comments carry :data:`TWO_PROGRAMS_COMMENT` (``--auto-map`` wrote it;
    read after :func:`load_data_mapping` accepted the file)."""
    want = "# " + TWO_PROGRAMS_COMMENT
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f):
            if n >= _HEADER_LINES or not line.startswith("#"):
                return False
            if line.rstrip("\r\n") == want:
                return True
    return False


@hookimpl
def msprobe_register_mappers(register: Register[MapperSpec]) -> None:
    """``-dm``: ahead of ``-fm`` (a data mapping says which rows pair; the calls are not aligned again)."""
    register(MapperSpec(DATA_MAPPER, data_mapping_match, applies=lambda o: bool(o.data_mapping), before=("fuzzy",)))


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``-dm/--data_mapping FILE`` (``CompareOptions.data_mapping``): gone with the plugin when it is turned off."""
    register(OptionSpec("data_mapping", ("-dm", "--data_mapping"), "Per-row name mapping yaml.", kinds=DUMP_KINDS))
