"""The first divergence's ``path``: its enclosing modules/cells/scopes, from the hierarchy sources.

Real corpus dumps with a hierarchy (PyTorch L0 and mix with ``construct.json``, MindSpore cells, a
kernel dump's scopes, a cross-framework cell mapping); an L1 dump whose path is its calling code
(``stack.json``); a dump with neither; and a third party's ``HierarchySpec`` through the hook.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from msprobe_kernel.scopes import kernel_ancestors, scope_segments

from msprobe_core.cli.main import main
from msprobe_core.default_plugins.summary.hierarchy import NO_HIERARCHY
from msprobe_core.host.hookspecs import hookimpl
from msprobe_core.host.registry import PluginHost, reset_host
from msprobe_core.host.specs import HierarchySpec

from .conftest import corpora_dir

#: (case, target, golden, extra args, the path of the first divergence)
CASES = [
    ("pytorch/c04a", "target/step0", "golden/step0", (),
     ["Module.blocks.0.Block.forward.0", "Module.blocks.0.attn.Attention.forward.0",
      "Module.blocks.0.attn.qkv.Linear.forward.0"]),
    ("pytorch/c05", "target/step0", "golden/step0", (),
     ["Module.blocks.0.Block.forward.0", "Module.blocks.0.attn.Attention.forward.0",
      "Module.blocks.0.attn.qkv.Linear.forward.0", "Functional.linear.0.forward"]),
    ("mindspore/ms_mix_stat_gelu", "target/step0", "golden/step0", (),
     ["Cell.blocks.1.Block.forward.0", "Cell.blocks.1.mlp.MLP.forward.0", "Cell.blocks.1.mlp.act.GELU.forward.0",
      "Functional.gelu.1.forward"]),
    ("mindspore/ms_l0_stat_bug_2steps", "target/step0", "golden/step0", (),
     ["Cell.blocks.1.Block.forward.0", "Cell.blocks.1.attn.Attention.forward.0",
      "Cell.blocks.1.attn.out_proj.Dense.forward.0"]),
]


def _summary(target: Path, golden: Path, out: Path, *extra: str) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    rc = main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out), "--json-summary",
               str(out / "summary.json"), "-q", *extra])
    assert rc == 0
    return json.loads((out / "summary.json").read_text())


def _case(rel: str) -> Path:
    case = corpora_dir() / rel
    if not case.is_dir():
        pytest.skip(f"corpus case {rel} not found")
    return case


def _parents(dump_dir: Path) -> dict[str, str | None]:
    return json.loads((dump_dir / "construct.json").read_text())


@pytest.mark.parametrize(("rel", "target", "golden", "extra", "path"), CASES, ids=[c[0] for c in CASES])
def test_the_path_names_the_enclosing_modules(tmp_path, rel, target, golden, extra, path):
    case = _case(rel)
    summary = _summary(case / target, case / golden, tmp_path, *extra)
    fd = summary["first_divergence"]
    assert fd["path"] == path and fd["path"][-1] == fd["node"]
    assert fd["path_source"] == "construct.json" and "path_note" not in fd
    # each link is one the dump's construct.json holds (the target's, whichever rank/proc dir it is in)
    (construct,) = [p.parent for p in (case / target).rglob("construct.json")]
    parents = _parents(construct)
    for outer, inner in zip(path, path[1:]):
        assert parents[inner] == outer
    assert parents.get(path[0]) is None
    # every result's own first divergence has its path too
    assert all(d["path"][-1] == d["node"] for d in summary["first_divergence_by_rank"])


def test_the_console_prints_the_path(tmp_path, capsys):
    case = _case("mindspore/ms_mix_stat_gelu")
    rc = main(["compare", "-tp", str(case / "target/step0"), "-gp", str(case / "golden/step0"), "-o", str(tmp_path)])
    assert rc == 0
    out = capsys.readouterr().out
    assert ("path: Cell.blocks.1.Block.forward.0 → Cell.blocks.1.mlp.MLP.forward.0 → "
            "Cell.blocks.1.mlp.act.GELU.forward.0 → Functional.gelu.1.forward") in out


def test_a_kernel_dump_gives_the_scope(tmp_path):
    case = Path(__file__).resolve().parents[1] / "examples" / "mindspore_kernel"  # the corpus' kernel_l2_bug_trimmed
    fd = _summary(case / "target", case / "golden", tmp_path, "--rank", "0")["first_divergence"]
    assert fd["path"] == ["Default", "network-WithLoss", "net-TinyLM", "blocks-CellList", "0-Block", "attn-Attention",
                          fd["node"]]
    assert fd["path_source"] == "kernel scope"


def test_kernel_scopes_keep_attribute_names_with_underscores():
    assert scope_segments("MatMul.Default_network-WithLoss_net-Llama_layers-CellList_0-DecoderLayer_self_attn-Attention"
                          "_q_proj-Dense_MatMul-op12") == [
        "Default", "network-WithLoss", "net-Llama", "layers-CellList", "0-DecoderLayer", "self_attn-Attention",
        "q_proj-Dense", "MatMul-op12"]
    assert kernel_ancestors("Add.Gradients_Default_network-WithLoss_gradAdd_Add-op3") == [
        "Gradients", "Default", "network-WithLoss"]
    assert kernel_ancestors("Parameter.net_embed_weight") is None  # no scope in the name


def test_cross_framework_gives_both_paths(tmp_path):
    case = _case("mindspore/x_l0_stat_cm_bug")
    (target,) = (case / "target").rglob("dump.json")
    (golden,) = (case / "golden").rglob("dump.json")
    fd = _summary(target, golden, tmp_path, "-cm")["first_divergence"]
    assert fd["path"] == ["Cell.blocks.1.Block.forward.0", "Cell.blocks.1.attn.Attention.forward.0"]
    assert fd["golden_path"] == ["Module.blocks.1.Block.forward.0", "Module.blocks.1.attn.Attention.forward.0"]
    assert fd["golden_path_source"] == "construct.json"


def test_an_api_dump_gives_the_calling_code(tmp_path):
    """c01 (L1): construct.json is empty; the path is the user's frames of stack.json, said to be code, not modules."""
    case = _case("pytorch/c01")
    fd = _summary(case / "target/step0", case / "golden/step0", tmp_path)["first_divergence"]
    assert fd["node"] == "Functional.linear.0.forward" and fd["path_source"] == "stack.json"
    assert "calling code" in fd["path_note"]
    assert fd["path"][-1] == fd["node"] and len(fd["path"]) > 2
    assert all("site-packages" not in p and "module.py" not in p for p in fd["path"])  # no library frames
    assert fd["path"][-2].startswith("forward (common.py:")  # the innermost user frame: the model's forward


@pytest.mark.exercises_hooks("msprobe_stack_read", "msprobe_run_released")
@pytest.mark.parametrize("threshold", ["0", str(1 << 40)])  # chunk by chunk, and on whole tables
def test_the_calling_code_comes_from_what_the_compare_read(tmp_path, monkeypatch, threshold):
    """stack.json is read once, by the load stage: the path is found in what it kept (a streamed compare's stack
    index, a whole table's dict), not in a second read of the file, and is the same either way."""
    import msprobe_core.default_plugins.chunked.stackrecords as stackrecords
    import msprobe_core.default_plugins.hierarchy.sources as hierarchy

    reads = {"records": 0, "whole": 0}
    read_records, whole_stack = stackrecords.read_stack_records, hierarchy._whole_stack

    def counted_records(path):
        reads["records"] += 1
        return read_records(path)

    def counted_whole(*args):
        reads["whole"] += 1
        return whole_stack(*args)

    # the load stage's read (the chunked plugin's msprobe_read_index_stack) and the hierarchy's: both take the
    # function from its module when they call it
    monkeypatch.setattr(stackrecords, "read_stack_records", counted_records)
    monkeypatch.setattr(hierarchy, "_whole_stack", counted_whole)
    monkeypatch.setenv("MSPROBE_STREAM_MIN_BYTES", threshold)
    case = _case("pytorch/c01")
    fd = _summary(case / "target/step0", case / "golden/step0", tmp_path)["first_divergence"]
    assert fd["path_source"] == "stack.json" and fd["path"][-2].startswith("forward (common.py:")
    assert reads == {"records": 1 if threshold == "0" else 0, "whole": 0}
    assert not hierarchy._READ_STACKS  # let go once the run's paths are made


def test_without_any_hierarchy_the_path_is_the_node(tmp_path):
    case = _case("pytorch/c01")
    for side in ("target", "golden"):
        shutil.copytree(case / side / "step0", tmp_path / side)
        for name in ("stack.json", "construct.json"):
            for f in (tmp_path / side).rglob(name):
                f.unlink()
    fd = _summary(tmp_path / "target", tmp_path / "golden", tmp_path / "out")["first_divergence"]
    assert fd["path"] == [fd["node"]] and fd["path_source"] is None and fd["path_note"] == NO_HIERARCHY


@pytest.mark.exercises_hooks("msprobe_register_hierarchies")
def test_a_plugin_gives_its_own_hierarchy(tmp_path):
    """A third party's source is asked before the core's, once per side, and its answer is the path."""
    calls: list[tuple[str, str]] = []

    def load(dump, mode, framework):
        calls.append((Path(dump).name if dump else "", mode))
        return lambda node: ["Model", "Stage.2"] if node.startswith("Functional.") else None

    class Plugin:
        @hookimpl
        def msprobe_register_hierarchies(self, register):
            register(HierarchySpec("stages", load, source="stage map"))

    case = _case("pytorch/c05")
    reset_host(PluginHost(extra_plugins=[Plugin()]))
    try:
        fd = _summary(case / "target/step0", case / "golden/step0", tmp_path)["first_divergence"]
    finally:
        reset_host(None)
    assert fd["path"] == ["Model", "Stage.2", "Functional.linear.0.forward"] and fd["path_source"] == "stage map"
    assert len(calls) == 2 and {m for _, m in calls} == {"statistics"}
