"""The match stage for a pair of tables: compare keys, the mapper that runs, the dtype gate."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..host.specs import MatchContext
from ..model import CompareOptions, DumpTable, MatchResult, pairing_note
from .frameworks import dtype_compat, resolve_frameworks
from .matching import apply_dtype_gate

if TYPE_CHECKING:
    from ..host.registry import PluginHost


def match_tables(
    target: DumpTable, golden: DumpTable, options: CompareOptions, host: PluginHost
) -> MatchResult:
    """Normalise names on both sides, run the applicable mapper and the dtype gate.

    The result's ``notes.frameworks`` holds the (target, golden) :class:`FrameworkSpec`
    pair, for the metric and verdict stages.
    """
    tf, gf = resolve_frameworks(target, golden, host)
    tkeys = host.compare_keys(target, "target", options)
    gkeys = host.compare_keys(golden, "golden", options)
    ctx = MatchContext(target, golden, tkeys, gkeys, options, tf is not gf, host)
    match = host.mapper_for(options, kind=target.kind).run(ctx)
    if match.dtype_gate:
        match = apply_dtype_gate(match, target.dtype, golden.dtype, dtype_compat(tf, gf))
    match.notes.frameworks = (tf, gf)
    paired = set(match.golden)  # the golden rows paired (-1: none), counted at C speed
    match.notes.pairing = pairing_note(len(golden), len(paired) - (-1 in paired))
    return match
