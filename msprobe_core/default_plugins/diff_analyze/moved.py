"""How far a call's inputs moved when none moved past its threshold: what a reason says instead of "they match".

A call whose tensor inputs carry no evidence still may have inputs that moved a little (a later step's
activations, rounding carried from earlier calls). A reason must not call such inputs equal: it says which
moved and by how much, against the threshold they stayed below; only inputs identical as dumped "match".
"""

from __future__ import annotations

from .evidence import RowCheck
from .nodes import Node

#: how many moved inputs a reason names (the rest are counted)
NAMED = 3


def _pct(x: float) -> str:
    return f"{x * 100:.2g}%"


def moved_inputs(node: Node) -> list[RowCheck]:
    """The tensor inputs of ``node`` that moved at all (worst scaled statistic error above 0), worst first."""
    moved = [c for side, _, c in node.checks if side == "input" and c.tensor and c.worst is not None and c.worst[0] > 0]
    return sorted(moved, key=lambda c: -c.worst[0])  # type: ignore[index]


def inputs_phrase(node: Node, plural: str = "inputs") -> str:
    """``its inputs match`` when every tensor input is identical as dumped, else how far they moved:
    ``its inputs moved, each below the threshold (X.input.0 mean 0.0025% of the range max|x|, X.input.1 l2norm
    0.0096% of the norm; threshold 0.01%)``."""
    moved = moved_inputs(node)
    if not moved:
        return f"its {plural} match (identical as dumped)"
    parts = []
    for c in moved[:NAMED]:
        err, stat, _x, _y, _rel, _tol = c.worst  # type: ignore[misc]
        parts.append(f"{c.name} {stat} {_pct(err)} of {'the norm' if stat == 'l2norm' else 'the range max|x|'}")
    more = len(moved) - NAMED
    tol = max(c.worst[5] for c in moved)  # type: ignore[index]
    return (f"its {plural} moved, each below the threshold ({', '.join(parts)}"
            + (f", +{more} more" if more > 0 else "") + f"; threshold {_pct(tol)})")
