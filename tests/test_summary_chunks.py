"""The incremental summary (msprobe_core.default_plugins.summary.accumulate) on random results cut into random chunks.

Every summary answer (verdict counts, first divergence per result and for the run, worst rows with their
cells, the ``-da`` row search) must not depend on where the chunk boundaries fall, nor on a partial
travelling through pickle (as a rank's partial comes back from a worker). The random tables are small and
full of ties (equal metrics, equal names across ranks), NaN/inf cells, unmatched rows and non-numeric cells,
so that boundaries and ties land everywhere. The corpus counterpart is in tests/test_summary_consistency.py.
"""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msprobe_core import result_columns as C
from msprobe_core.default_plugins.summary.accumulate import (
    SummaryAccumulator,
    ViewAccumulator,
    note_pairing,
    view_partial,
)
from msprobe_core.default_plugins.summary.chunks import view_cut
from msprobe_core.default_plugins.summary.divergence import first_divergence_of
from msprobe_core.default_plugins.summary.summary import summarize
from msprobe_core.default_plugins.summary.views import ResultView
from msprobe_core.default_plugins.summary.worst import worst_rows
from msprobe_core.model import MODE_MD5, MODE_STATISTICS, MODE_TENSOR
from msprobe_core.result import result_columns

_APIS = ["Functional.linear", "Torch.matmul", "Tensor.__add__", "Functional.softmax"]
_LEAVES = ["input.0", "input.1", "output.0", "parameters.weight"]
_METRICS = ["0.5", "0.99", "1.0", "0.0", "-1", "nan", "inf", "-inf", "N/A", "unsupported", "", "1e-9", "12%",
            "0.5%", "inf%"]


@st.composite
def results(draw: st.DrawFn, mode: str, label: str) -> ResultView:
    """A result of ``mode``: random rows in execution order, every column spelled as text cells."""
    columns = result_columns(mode, True)
    n = draw(st.integers(0, 40))
    cells: dict[str, list[str]] = {c: [] for c in columns}
    calls: dict[str, int] = {}
    row = 0
    while row < n:
        api = draw(st.sampled_from(_APIS))
        direction = draw(st.sampled_from(["forward", "backward"]))
        k = calls[api + direction] = calls.get(api + direction, -1) + 1
        for leaf in draw(st.lists(st.sampled_from(_LEAVES), min_size=1, max_size=3, unique=True)):
            if row >= n:
                break
            name = f"{api}.{k}.{direction}.{leaf}"
            unmatched = draw(st.booleans()) and draw(st.booleans())
            for c in columns:
                cells[c].append(draw(st.sampled_from(_METRICS)))
            cells[C.NPU_NAME][-1] = name
            cells[C.BENCH_NAME][-1] = "N/A" if unmatched else name
            for side in (C.NPU_DTYPE, C.BENCH_DTYPE):
                if side in cells:
                    cells[side][-1] = draw(st.sampled_from(["torch.float32", "torch.float16"]))
            for side in (C.NPU_SHAPE, C.BENCH_SHAPE):
                if side in cells:
                    cells[side][-1] = draw(st.sampled_from(["[2, 3]", "[3, 2]"]))
            cells[C.RESULT][-1] = draw(st.sampled_from(["pass", "Warning", "error", "", "N/A"]))
            cells[C.ERR_MESSAGE][-1] = draw(st.sampled_from(["", "error: cosine below 0.9", "warning: dtype",
                                                             "error: md5 differs"]))
            row += 1
    return ResultView(label, mode, columns, cells, [], ("pytorch", "pytorch"))


def _sizes(n: int) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(0, max(1, n)) | st.integers(1, 3), min_size=1, max_size=8).filter(any)


def _cycled(sizes: list[int], n: int) -> list[int]:
    out: list[int] = []
    while sum(out) < n:
        out.extend(sizes)
    return out


def chunked_summary(views: list[ResultView], cuts: list[list[int]], analysis: object = None,
                    hierarchy: object = None, metas: list[dict] | None = None,
                    inputs: tuple[str, str] | None = None) -> dict:
    """The summary of ``views`` fed in chunks of the sizes in ``cuts`` (cycled), each view's partial pickled and
    unpickled on the way (as a rank's partial comes back from a worker); with ``hierarchy``, finished as a run
    finishes it (paths, and the per-module answers from the calls each partial counted). ``metas``: each view's
    table ``meta`` (the match stage's account of its golden side rides on it), ``inputs``: the run's two inputs."""
    acc = SummaryAccumulator(analysis, tree=hierarchy is not None)
    acc.inputs = inputs
    for k, (view, sizes) in enumerate(zip(views, cuts)):
        part = acc.view_accumulator()
        for chunk in view_cut(view, _cycled(sizes, len(view))):
            part.feed(chunk)
        partial = part.finish()
        if metas is not None:
            note_pairing(partial, metas[k])
        acc.add(pickle.loads(pickle.dumps(partial)))
    summary = acc.summary()
    if hierarchy is not None:
        finished(summary, acc, hierarchy)
    return summary


def finished(summary: dict, acc: SummaryAccumulator, hierarchy: object) -> dict:
    """What a run adds to its accumulator's summary from the dumps: each first divergence's path, and the
    per-module answers (whose frames, on calling-code paths, number the path's visits)."""
    from msprobe_core.default_plugins.summary.finish import _add_modules

    hierarchy.add_paths(summary)
    _add_modules(summary, [(p.label, p.node_stats) for p in acc.partials], hierarchy)
    return summary


@pytest.mark.parametrize("mode", [MODE_TENSOR, MODE_STATISTICS, MODE_MD5])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_summary_does_not_depend_on_the_chunks(mode, data):
    labels = data.draw(st.sampled_from([[""], ["rank0", "rank1"], ["rank0", "rank1", "rank2"]]))
    views = [data.draw(results(mode, label)) for label in labels]
    whole = summarize(views, rows=1 << 30)  # each view fed as one chunk
    assert summarize(views, rows=data.draw(st.integers(1, 7))) == whole
    cuts = [data.draw(_sizes(len(v))) for v in views]
    assert chunked_summary(views, cuts) == whole
    # the per-result answers the summary is made of, fed whole, are the whole-view functions' answers
    assert whole["worst_rows"] == worst_rows(views)
    firsts = [first_divergence_of(v) for v in views]
    assert whole["first_divergence_by_rank"] == [d.as_dict() for d in firsts if d is not None]
    assert whole["rows"] == sum(len(v) for v in views)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_analysis_rows_do_not_depend_on_the_chunks(data):
    """The row a ``-da`` answer names is found chunk by chunk as in the whole result."""
    views = [data.draw(results(MODE_STATISTICS, label)) for label in ("rank0", "rank1")]
    names = [n for v in views for n in v.names] or ["Functional.linear.0.forward.input.0"]
    node = data.draw(st.sampled_from(names)).rsplit(".", 2)[0]
    if node.endswith((".input", ".output", ".parameters")):
        node = node.rsplit(".", 1)[0]
    wanted = data.draw(st.lists(st.sampled_from(names), max_size=2))
    analysis = {"rank_1": [{"op_name": node, "role": "cause", "reason": "r",
                            "evidence": [{"row": w} for w in wanted]}]}
    whole = summarize(views, analysis=analysis, rows=1 << 30)
    cuts = [data.draw(_sizes(len(v))) for v in views]
    assert chunked_summary(views, cuts, analysis) == whole


def test_chunks_must_come_in_order():
    view = ResultView("", MODE_MD5, result_columns(MODE_MD5, False), {c: ["x"] * 4 for c in
                                                                       result_columns(MODE_MD5, False)})
    acc = ViewAccumulator()
    chunks = list(view_cut(view, [2, 2]))
    acc.feed(chunks[0])
    with pytest.raises(ValueError, match="fed after 2 rows"):
        acc.feed(chunks[0])
    acc.feed(chunks[1])
    assert acc.finish().rows == 4
    assert view_partial(view, rows=1).verdicts == acc.finish().verdicts


def _big_result(seed: int, mode: str, label: str) -> ResultView:
    """A result of a few thousand rows: a quiet head (no number, passing) of random length, then random rows
    full of ties, infinities, no-number cells and failing rows (more than the worst-rows limit many times over)."""
    import random

    rnd = random.Random(seed)
    columns = result_columns(mode, True)
    cells: dict[str, list[str]] = {c: [] for c in columns}
    quiet = rnd.randrange(0, 2600)
    calls: dict[str, int] = {}
    row = 0
    while row < quiet + 1500:
        api, direction = rnd.choice(_APIS), rnd.choice(["forward", "backward"])
        k = calls[api + direction] = calls.get(api + direction, -1) + 1
        for leaf in rnd.sample(_LEAVES, rnd.randint(1, 3)):
            name = f"{api}.{k}.{direction}.{leaf}"
            head = row < quiet
            for c in columns:
                cells[c].append("" if head else rnd.choice(_METRICS))
            cells[C.NPU_NAME][-1] = name
            cells[C.BENCH_NAME][-1] = "N/A" if not head and rnd.random() < 0.1 else name
            for side in (C.NPU_DTYPE, C.BENCH_DTYPE):
                if side in cells:
                    cells[side][-1] = "torch.float32" if head else rnd.choice(["torch.float32", "torch.float16"])
            for side in (C.NPU_SHAPE, C.BENCH_SHAPE):
                if side in cells:
                    cells[side][-1] = "[2, 3]" if head else rnd.choice(["[2, 3]", "[3, 2]"])
            cells[C.RESULT][-1] = "pass" if head else rnd.choice(["pass", "Warning", "error", "", "N/A"])
            cells[C.ERR_MESSAGE][-1] = "" if head else rnd.choice(["", "error: cosine below 0.9", "warning: dtype"])
            row += 1
    return ResultView(label, mode, columns, cells, [], ("pytorch", "pytorch"))


@pytest.mark.parametrize("mode", [MODE_TENSOR, MODE_STATISTICS, MODE_MD5])
@pytest.mark.parametrize("seed", range(4))
def test_big_chunks_answer_as_small_ones(mode, seed):
    """A big chunk takes the shortcuts (its failing rows pre-ranked with numpy, its head scanned for the first
    divergence before the rest, each call's worst row found with numpy): the answers of chunks too small for any."""
    views = [_big_result(seed * 2 + k, mode, label) for k, label in enumerate(["rank0", "rank1"])]
    whole = summarize(views, rows=1 << 30)
    assert whole == summarize(views, rows=7)
    for view in views:
        big = view_partial(view, rows=1 << 30, tree=True).node_stats
        small = view_partial(view, rows=7, tree=True).node_stats
        assert big.nodes == small.nodes and big.overflow == small.overflow
