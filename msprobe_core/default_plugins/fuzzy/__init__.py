"""``-fm/--fuzzy_match``: pair calls whose call numbers differ between the two runs.

msprobe (compare-core §4.2) strips the call number from every row name and
walks both row lists with two queues, taking the first name hit. That is
right while both runs make the same calls, and wrong as soon as one run makes
an extra call: the queue pairs the extra call's rows with whatever row of the
same name comes next, and in statistics/md5 mode it crashes on the first
unmatched row (corpus ``pytorch/c08``).

Here the two dumps are treated as two *call sequences* and aligned like two
versions of a text file (:mod:`.seqalign`): a call is a token made
of its op name without call number (``Tensor.__add__.forward``,
``Module.blocks.0.attn.Attention.forward``) and what it was called with. The
alignment is refined in three passes, each only inside the gaps the previous
pass left:

1. op name, row layout, shapes and dtypes all equal (identical calls);
2. op name, row layout and shapes equal (same call in another precision);
3. op name equal (same op, different arguments).

Rows of two aligned calls are paired by their suffix (``.input.0``,
``.output.0`` …); calls left over on the target side are written as unmatched,
golden-only calls are dropped, as in every msprobe compare. When both runs
make the same calls this gives exactly msprobe's pairs; when one run makes an
extra call, the calls after it still meet their true partners.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from msprobe_core.plugin import (
    DUMP_KINDS,
    DumpTable,
    MapperSpec,
    MatchContext,
    MatchResult,
    OptionSpec,
    Register,
    hookimpl,
    strip_call_number,
)

from . import seqalign


@dataclass(frozen=True)
class Call:
    """One API/module call of a dump, as the aligner sees it."""

    op: str
    suffixes: tuple[str, ...]
    shapes: tuple[str | None, ...]
    dtypes: tuple[str | None, ...]
    rows: tuple[int, ...]

    def token(self, level: int) -> Hashable:
        """The alignment token of this call at refinement ``level`` (1 strictest … 3 loosest)."""
        if level == 1:
            return (self.op, self.suffixes, self.shapes, self.dtypes)
        if level == 2:
            return (self.op, self.suffixes, self.shapes)
        return self.op


def calls_of(table: DumpTable, keys: Sequence[str]) -> list[Call]:
    """Every call of ``table`` with its compare keys (after normalisation) split into op and row suffixes."""
    out: list[Call] = []
    for api in table.apis:
        first, last = api.first_row, api.first_row + api.n_rows
        if first == last:
            continue
        suffixes: list[str] = []
        for row in range(first, last):
            name = table.name[row]
            suffixes.append(name[len(api.key):] if name.startswith(api.key) else f"#{row - first}")
        key, suffix = keys[first], suffixes[0]
        if key == table.name[first]:
            head = api.key
        elif suffix and not suffix.startswith("#") and key.endswith(suffix):
            head = key[: len(key) - len(suffix)]
        else:
            head = key
        op = strip_call_number(head)
        rows = tuple(range(first, last))
        out.append(
            Call(
                op=op,
                suffixes=tuple(suffixes),
                shapes=tuple(table.shape[r] for r in rows),
                dtypes=tuple(table.dtype[r] for r in rows),
                rows=rows,
            )
        )
    return out


def align_calls(target: list[Call], golden: list[Call]) -> dict[int, int]:
    """Target call index → golden call index, by the three-pass alignment described above."""
    found = seqalign.align_in_gaps([(0, len(target), 0, len(golden))], (1, 2, 3),
                                   lambda k, level: target[k].token(level), lambda k, level: golden[k].token(level))
    return {i: j for i, (j, _level) in found.items()}


def fuzzy_match(ctx: MatchContext) -> MatchResult:
    """The ``-fm`` mapper: align the two call sequences, then pair rows of aligned calls by suffix."""
    target = calls_of(ctx.target, ctx.target_keys)
    golden = calls_of(ctx.golden, ctx.golden_keys)
    call_pairs = align_calls(target, golden)
    t_out: list[int] = []
    g_out: list[int] = []
    for ci, call in enumerate(target):
        gi = call_pairs.get(ci)
        partner: dict[str, list[int]] = {}
        if gi is not None:
            g = golden[gi]
            for suffix, row in zip(g.suffixes, g.rows):
                partner.setdefault(suffix, []).append(row)
        for suffix, row in zip(call.suffixes, call.rows):
            hits = partner.get(suffix)
            t_out.append(row)
            g_out.append(hits.pop(0) if hits else -1)
    return MatchResult(target=t_out, golden=g_out)


def fuzzy_mapper() -> MapperSpec:
    """The mapper spec registered by the built-in plugin."""
    return MapperSpec("fuzzy", fuzzy_match, applies=lambda o: bool(o.fuzzy_match), before=("exact",))


@hookimpl
def msprobe_register_mappers(register: Register[MapperSpec]) -> None:
    """``-fm``: pair calls whose call numbers differ by aligning each op's call sequences."""
    register(fuzzy_mapper())


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``-fm/--fuzzy_match`` (``CompareOptions.fuzzy_match``): gone with the plugin when it is turned off."""
    register(OptionSpec("fuzzy_match", ("-fm", "--fuzzy_match"), "Match APIs whose call numbers differ.", kind="flag",
                        default=False, kinds=DUMP_KINDS))
