"""The node of a row's name as the summary's call counting finds it: the string-search fast path (``call_node``)
answers as ``node_of`` does wherever it answers, and takes the usual names."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from msprobe_core.default_plugins.summary import calls as calls_module
from msprobe_core.default_plugins.summary.calls import CallNumbers, call_node
from msprobe_core.default_plugins.summary.views import node_of

TOKENS = ["forward", "backward", "input", "output", "parameters", "parameters_grad", "0", "1", "12", "x", "Torch",
          "linear", "Module", "debug", "", "٣", "forward_x", "xbackward", "kwargs"]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(TOKENS) | st.text(max_size=4), min_size=1, max_size=9))
def test_the_fast_path_answers_as_node_of(tokens: list[str]) -> None:
    name = ".".join(tokens)
    fast = call_node(name)
    assert fast is None or fast == node_of(name)[0]


def test_the_usual_names_take_the_fast_path() -> None:
    for name, node in [("Functional.linear.0.forward.input.0", "Functional.linear.0.forward"),
                       ("Torch.matmul.3.backward.output.1", "Torch.matmul.3.backward"),
                       ("Module.fc.Linear.forward.0.input.0", "Module.fc.Linear.forward.0"),
                       ("Module.fc.Linear.backward.2.output.0.1", "Module.fc.Linear.backward.2")]:
        assert call_node(name) == node == node_of(name)[0]
    assert call_node("Module.fc.Linear.parameters_grad.weight") is None  # node_of decides


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=7).map(".".join), max_size=40))
def test_calls_are_numbered_as_node_of_cuts_them(names: list[str]) -> None:
    calls, starts = CallNumbers().feed(names)
    nodes = [node_of(n)[0] for n in names]
    expected = [i for i in range(len(names)) if i == 0 or nodes[i] != nodes[i - 1]]
    assert [s[0] for s in starts] == expected and [s[2] for s in starts] == [nodes[i] for i in expected]
    assert list(calls) == [sum(1 for e in expected if e <= i) - 1 for i in range(len(names))]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.lists(st.sampled_from([t for t in TOKENS if t.isascii()]), min_size=1, max_size=7).map(".".join),
                max_size=40), st.sampled_from([None, "Torch.linear.0.forward", "x"]))
def test_the_c_scanner_cuts_the_calls_as_node_of(names: list[str], before: str | None) -> None:
    """Where the C reading of call_node takes every name, its calls are node_of's runs (the first continuing the
    call of the rows before when it is the same); where one name is not a usual row name, it leaves them all."""
    runs = calls_module._call_runs
    if runs is None:  # built without a C compiler: the Python path only (the other tests)
        return
    found = runs(names, before)
    fast = [call_node(n) for n in names]
    if None in fast:
        assert found is None
        return
    nodes = [node_of(n)[0] for n in names]
    previous = [before, *nodes[:-1]]
    assert found == [(i, nd) for i, (nd, p) in enumerate(zip(nodes, previous)) if nd != p]


def _absorbed_call_by_call(mine: object, later: object, cap: int) -> None:
    """NodeStats.absorb as it was written first: the later calls one by one (the reference)."""
    from msprobe_core.default_plugins.summary.tree import CALL_NUMBER, merge_stats

    for into, theirs in ((mine.nodes, later.nodes), (mine.overflow, later.overflow)):
        for node, entry in theirs.items():
            own = into.get(node)
            if own is None:
                if into is mine.nodes and len(into) >= cap:
                    own = mine.overflow.setdefault(CALL_NUMBER.sub("", node), [entry[0], 0, 0, 0, -math.inf, "", ""])
                else:
                    into[node] = list(entry)
                    continue
            merge_stats(own, entry)


CALLS = st.sampled_from(["Torch.add.{}.forward", "Torch.add.{}.backward", "Functional.linear.{}.forward",
                         "M.x.{}.y.forward", "a.{}.b\n", "T.３.{}.forward"])
STATS = st.tuples(st.integers(0, 99), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3),
                  st.sampled_from([-math.inf, 0.0, 1.5, 2.0]), st.sampled_from(["", "r1", "r2"]),
                  st.sampled_from(["", "1.5", "2.0"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(CALLS, st.integers(0, 6), STATS), max_size=20),
       st.lists(st.tuples(CALLS, st.integers(0, 6), STATS), max_size=20), st.integers(0, 12))
def test_absorbing_a_later_part_is_feeding_its_calls_one_by_one(head: list, tail: list, cap: int) -> None:
    """The later rows' call stats taken back from another process: the calls kept one by one while there is room
    (MAX_NODES), the rest counted per op, in the same order and with the same sums as one call at a time."""
    from msprobe_core.default_plugins.summary import tree

    def stats(calls: list) -> object:
        out = tree.NodeStats()
        for call, number, entry in calls:
            out.nodes[call.format(number)] = list(entry)
        return out

    ours, reference, later = stats(head), stats(head), stats(tail)
    later.overflow = {"Torch.add.forward": [5, 1, 0, 0, 1.0, "r", "1.0"]}
    before, tree.MAX_NODES = tree.MAX_NODES, cap
    try:
        ours.absorb(later)
        _absorbed_call_by_call(reference, later, cap)
    finally:
        tree.MAX_NODES = before
    assert list(ours.nodes.items()) == list(reference.nodes.items())
    assert list(ours.overflow.items()) == list(reference.overflow.items())
