"""Where the rows a ``-da`` analysis names are in one result, found as its chunks stream by (:class:`RowSearch`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .divergence import AnalysisQuery
    from .views import ResultView


class RowSearch:
    """Where the rows of the analysis' nodes are in one result, fed chunk by chunk in execution order.

    Per query: (preference, position, name) of the row to name: the first of the query's ``wanted``
    rows the result holds, else the call's first output row, else its first row. Picklable.
    """

    __slots__ = ("queries", "best")

    def __init__(self, queries: Sequence[AnalysisQuery]) -> None:
        self.queries = tuple(queries)
        self.best: list[tuple[int, int, str] | None] = [None] * len(self.queries)

    def __getstate__(self) -> tuple[Any, ...]:
        return self.queries, self.best

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.queries, self.best = state

    def feed(self, view: ResultView, offset: int = 0) -> None:
        """Look at the rows of ``view`` (a chunk), positions ``offset`` onwards."""
        if not self.queries or not len(view):
            return
        names = view.names
        order = view.order()
        for q, query in enumerate(self.queries):
            best = self.best[q]
            if best is not None and best[0] == 0:
                continue
            op, prefix = query.op, query.op + "."
            rank = {r: k for k, r in enumerate(query.wanted)}
            for pos, i in enumerate(order, start=offset):
                name = names[i]
                if name != op and not name.startswith(prefix):
                    continue
                pref = rank.get(name)
                if pref is None:
                    pref = len(query.wanted) + (0 if ".output." in name[len(op):] else 1)
                if best is None or pref < best[0]:
                    best = (pref, pos, name)
                    if pref == 0:
                        break
            self.best[q] = best

    def absorb(self, later: RowSearch) -> None:
        """Take ``later``, the search (same queries) of the rows right after those fed here, as if fed here."""
        for q, (mine, theirs) in enumerate(zip(self.best, later.best)):
            # a later row wins only with a strictly better preference, as when fed row by row
            if theirs is not None and (mine is None or theirs[0] < mine[0]):
                self.best[q] = theirs
