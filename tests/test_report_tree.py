"""The report's model tree: per-call stats fed chunk by chunk, placed under their modules, folded when large."""

from __future__ import annotations

import json
import pickle
import random
from collections import Counter

import pytest

from msprobe_core.cli.main import main
from msprobe_core.default_plugins.summary.chunks import view_chunks, view_cut
from msprobe_core.default_plugins.summary.hierarchy import RunHierarchy, SideHierarchy, run_hierarchy
from msprobe_core.default_plugins.summary.result_files import read_result_file
from msprobe_core.default_plugins.summary.tree import ALIAS_KEY, TREE_NODES, NodeStats, build_tree, row_tree_index
from msprobe_core.default_plugins.summary.views import node_of
from msprobe_core.host.registry import get_host
from msprobe_core.host.specs import HierarchySpec
from msprobe_core.running import running_with

from .conftest import corpora_dir


@pytest.fixture(scope="module")
def mix_run(tmp_path_factory):
    """c05 (PyTorch mix, construct.json): its result view, summary and the run's hierarchy."""
    case = corpora_dir() / "pytorch" / "c05"
    if not case.is_dir():
        pytest.skip("corpus case c05 not found")
    out = tmp_path_factory.mktemp("c05")
    rc = main(["compare", "-tp", str(case / "target/step0"), "-gp", str(case / "golden/step0"), "-o", str(out),
               "--json-summary", str(out / "s.json"), "-q"])
    assert rc == 0
    (csv,) = out.glob("compare_result_*.csv")
    view = read_result_file(csv)
    (t_dump,) = (case / "target/step0").rglob("dump.json")
    (g_dump,) = (case / "golden/step0").rglob("dump.json")
    # the hierarchy sources are the run's plugins' (construct.json: the default plugin hierarchy's)
    with running_with(get_host()):
        hierarchy = run_hierarchy([("", t_dump, g_dump, view.mode, ("pytorch", "pytorch"))])
    return view, json.loads((out / "s.json").read_text()), hierarchy, t_dump.parent


def _fed(view, sizes=None) -> NodeStats:
    stats = NodeStats()
    for chunk in (view_cut(view, sizes) if sizes else view_chunks(view, len(view))):
        stats.feed(chunk, chunk.start)
    return stats


def test_stats_do_not_depend_on_chunks_or_processes(mix_run):
    view = mix_run[0]
    whole = _fed(view)
    rnd = random.Random(3)
    cut = _fed(view, [rnd.choice((1, 2, 5, 17, 64)) for _ in range(400)])
    assert cut.nodes == whole.nodes
    # two halves made apart (two processes), the later absorbed: the same
    half = len(view) // 2
    chunks = list(view_cut(view, [half]))
    first, later = NodeStats(), NodeStats()
    first.feed(chunks[0], 0)
    later.feed(chunks[1], chunks[1].start)
    first.absorb(pickle.loads(pickle.dumps(later)))
    assert first.nodes == whole.nodes


def test_stats_count_each_calls_verdicts(mix_run):
    view = mix_run[0]
    stats = _fed(view)
    expected: dict[str, Counter] = {}
    for name, verdict in zip(view.names, view.verdicts()):
        expected.setdefault(node_of(name)[0], Counter())[verdict] += 1
    assert {n: e[1:4] for n, e in stats.nodes.items()} == {
        n: [c["pass"], c["warning"], c["error"]] for n, c in expected.items()}


def test_the_tree_sums_each_module_and_marks_the_path(mix_run):
    view, summary, hierarchy, dump_dir = mix_run
    hierarchy.add_paths(summary)
    tree = build_tree([("", _fed(view))], hierarchy, summary)
    parents = json.loads((dump_dir / "construct.json").read_text())
    n = tree["n"]
    # every subtree's counts are the sum of its calls' rows
    by_node: dict[str, list[int]] = {}
    for name, verdict in zip(view.names, view.verdicts()):
        c = by_node.setdefault(node_of(name)[0], [0, 0, 0])
        c[("pass", "warning", "error").index(verdict)] += 1
    for k, name in enumerate(n):
        if tree["k"][k] == "m":
            inside = [n[j] for j in range(k, tree["e"][k])]
            assert tree["c"][k] == [sum(by_node.get(x, [0, 0, 0])[v] for x in inside) for v in range(3)]
        for j in range(k + 1, tree["e"][k]):
            if tree["d"][j] == tree["d"][k] + 1 and name.startswith(("Module.", "Functional.")):
                child = n[j]
                # the tree's parent is construct.json's (a backward call sits under its forward twin's parent)
                assert parents.get(child, parents.get(child.replace(".backward", ".forward"))) == name
    assert [n[k] for k in tree["path"]] == summary["first_divergence"]["path"]
    assert [m["kind"] for m in tree["marks"] if m["t"] == tree["path"][-1]] == ["first"]
    assert tree["sources"] == ["construct.json"] and tree["notes"] == []


def _big_stats(calls: int, modules: int) -> tuple[NodeStats, dict[str, list[str]]]:
    stats = NodeStats()
    chains = {}
    for c in range(calls):
        node = f"Functional.linear.{c}.forward"
        block = c * modules // calls
        stats.nodes[node] = [c * 3, 3 - (c % 7 == 0), 0, int(c % 7 == 0), float(c % 11), f"{node}.output.0", str(c % 11)]
        chains[node] = [f"Module.layers.{block // 10}.Layer.forward.0", f"Module.layers.{block // 10}.sub.{block}.Sub.forward.0"]
    return stats, chains


def _static_hierarchy(chains: dict[str, list[str]]) -> RunHierarchy:
    spec = HierarchySpec("test", lambda dump, mode, fw: chains.get, source="test map")
    run = RunHierarchy()
    run.add("", SideHierarchy.of(None, "tensor", "", [spec]), SideHierarchy(), False)
    return run


def test_a_large_tree_is_folded_into_its_modules(tmp_path):
    """50,000 calls in 2,000 modules: folded to at most TREE_NODES nodes, totals kept, the page says so."""
    stats, chains = _big_stats(50_000, 2_000)
    summary = {"first_divergence": {"node": "Functional.linear.7.forward", "rank": "",
                                    "path": [*chains["Functional.linear.7.forward"], "Functional.linear.7.forward"]},
               "first_divergence_by_rank": []}
    tree = build_tree([("", stats)], _static_hierarchy(chains), summary)
    assert len(tree["n"]) <= TREE_NODES
    top = [k for k, d in enumerate(tree["d"]) if d == 1]
    assert [sum(tree["c"][k][v] for k in top) for v in range(3)] == [
        sum(e[1 + v] for e in stats.nodes.values()) for v in range(3)]
    assert any("folded" in note for note in tree["notes"])
    # the first divergence is marked on the module its call was folded into
    marked = [tree["n"][m["t"]] for m in tree["marks"] if m["kind"] == "first"]
    assert marked == [chains["Functional.linear.7.forward"][-1]]
    # the page's rows still find their tree node (a folded call: its module)
    of = row_tree_index(tree, ["Functional.linear.7.forward", "Functional.linear.49999.forward", "nowhere"])
    assert tree["n"][of[0]] == chains["Functional.linear.7.forward"][-1] and of[2] == -1
    tree.pop(ALIAS_KEY)
    assert len(json.dumps(tree)) < 1_000_000


def test_a_flat_dump_is_grouped_by_op():
    stats = NodeStats()
    for c in range(20_000):
        api = ("Functional.linear", "Torch.matmul", "Tensor.__add__")[c % 3]
        stats.nodes[f"{api}.{c}.forward"] = [c, 1, 0, 0, 0.0, "", ""]
    tree = build_tree([("", stats)], RunHierarchy(), {"first_divergence": None})
    assert len(tree["n"]) <= TREE_NODES and tree["sources"] == []
    assert sorted(tree["n"]) == sorted(f"{api}.forward (calls)" for api in
                                       ("Functional.linear", "Torch.matmul", "Tensor.__add__"))
    assert sum(c[0] for c in tree["c"]) == 20_000


def test_calls_are_counted_only_for_a_report(mix_run):
    """Without --report html nothing is counted (the summary partial stays a few KB); with it, every call."""
    from msprobe_core.default_plugins.summary.accumulate import view_partial

    view = mix_run[0]
    assert view_partial(view).node_stats is None
    counted = view_partial(view, tree=True, rows=7).node_stats
    assert counted.nodes == _fed(view).nodes
