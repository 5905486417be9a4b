"""``--auto-map`` on real msprobe dumps of twin models whose true pairing is known by construction.

The corpus (tests/data/automap, README there) is one small transformer written twice with other module
names and converted weights: ``renamed`` (clean), ``wrong`` (one converted weight scaled), ``fused`` (q/k/v in
one Linear), ``extra`` (one more nn.Identity), ``wrapped`` (the MLP's modules in one more container), ``ms`` (a MindSpore twin with other cell names), each at L0,
mix and L1 against the golden model's dumps. The proposal is read back from the file the compare writes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import msprobe_core
from msprobe_core.default_plugins.automap.automap import UNPAIRED
from msprobe_core.match.data_mapping import load_data_mapping

from .automap_truth import DUMPS, WRONG_MODULE, score, truth

LEVELS = ("L0", "mix", "L1")
#: (precision, recall) targets by kind of pair
TARGETS = {"renamed": (0.98, 0.98), "wrong": (0.98, 0.98), "extra": (0.98, 0.98), "wrapped": (0.98, 0.98),
           "ms": (0.98, 0.98), "fused": (0.95, 0.90)}


def _dump(name: str) -> Path:
    return DUMPS / name / "dump.json"


def _auto_map(variant: str, level: str, out: Path) -> tuple[object, Path]:
    result = msprobe_core.compare(_dump(f"{variant}_{level}"), _dump(f"golden_{level}"), output_dir=out,
                                  auto_map=True, quiet=True)
    (mapping,) = out.glob("auto_mapping_*.yaml")
    return result, mapping


def _cli(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "msprobe_core", "compare", *map(str, args)],
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("variant", sorted(TARGETS))
def test_proposed_pairs_score_against_the_truth(variant, level, tmp_path):
    _, path = _auto_map(variant, level, tmp_path)
    proposed = {t: g for t, g in load_data_mapping(path).items() if g != UNPAIRED}
    precision, recall = score(proposed, truth(variant, level))
    want_p, want_r = TARGETS[variant]
    assert precision >= want_p and recall >= want_r, (precision, recall)


@pytest.mark.parametrize("level", ("L0", "mix"))
def test_the_wrong_weight_is_the_first_divergence(level, tmp_path):
    result, _ = _auto_map("wrong", level, tmp_path)
    node = result.first_divergence["node"]
    if level == "L0":
        assert node == WRONG_MODULE
    else:  # at mix the linear call inside that module, whose weight comes in as its second input
        construct = (DUMPS / f"wrong_{level}" / "construct.json").read_text()
        assert node.startswith("Functional.linear.") and f'"{node}": "{WRONG_MODULE}"' in construct


def test_at_l1_the_wrong_weight_is_the_linear_call_it_feeds(tmp_path):
    # six linear calls a layer (q, k, v, o, up, down): the twelfth is layer 1's dense_4h_to_h
    result, _ = _auto_map("wrong", "L1", tmp_path)
    assert result.first_divergence["node"] == "Functional.linear.11.forward"


def test_fused_qkv_at_l1_no_longer_shifts_the_linear_calls(tmp_path):
    # by name, every linear call after the fused one meets the wrong partner (the spurious errors)
    plain = msprobe_core.compare(_dump("fused_L1"), _dump("golden_L1"), quiet=True)
    assert plain.summary["verdicts"]["error"] > 10
    result, _ = _auto_map("fused", "L1", tmp_path)
    assert result.summary["verdicts"]["error"] == 0 and result.first_divergence is None


def test_the_clean_twin_has_no_divergence(tmp_path):
    result, _ = _auto_map("renamed", "L0", tmp_path)
    assert result.first_divergence is None


def test_without_auto_map_the_renamed_modules_stay_unmatched(tmp_path):
    result = msprobe_core.compare(_dump("renamed_L0"), _dump("golden_L0"), quiet=True)
    assert result.summary["matched"] == 0


@pytest.mark.parametrize("pair", [("fused", "mix"), ("ms", "L0"), ("extra", "L1")])
def test_the_written_mapping_given_back_with_dm_gives_the_same_result_byte_for_byte(pair, tmp_path):
    variant, level = pair
    target, golden = _dump(f"{variant}_{level}"), _dump(f"golden_{level}")
    auto = _cli("-tp", target, "-gp", golden, "-o", tmp_path / "auto", "--auto-map", "-q")
    assert auto.returncode == 0, auto.stderr
    (mapping,) = (tmp_path / "auto").glob("auto_mapping_*.yaml")
    again = _cli("-tp", target, "-gp", golden, "-o", tmp_path / "dm", "-dm", mapping, "-q")
    assert again.returncode == 0, again.stderr
    (first,) = (tmp_path / "auto").glob("compare_result_*.csv")
    (second,) = (tmp_path / "dm").glob("compare_result_*.csv")
    assert first.read_bytes() == second.read_bytes()


def test_fused_qkv_is_named_one_to_three_and_left_unpaired(tmp_path):
    _, path = _auto_map("fused", "L0", tmp_path)
    text = path.read_text(encoding="utf-8")
    relations = [line for line in text.splitlines() if line.startswith("# 1→N")]
    assert len(relations) == 2  # one per layer
    assert all("query_key_value" in r and "q_proj" in r and "k_proj" in r and "v_proj" in r for r in relations)
    mapping = load_data_mapping(path)
    assert not [t for t in mapping if "query_key_value" in t]
    assert not [g for g in mapping.values() if "q_proj" in g or "k_proj" in g or "v_proj" in g]


def test_the_extra_module_and_container_are_reported_unpaired_with_their_reasons(tmp_path):
    _, path = _auto_map("extra", "L0", tmp_path)
    unpaired = [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("# unpaired:")]
    assert any("embedding_dropout.Identity" in u and "extra call" in u for u in unpaired)
    assert any("transformer.Transformer" in u and "container" in u for u in unpaired)
    assert len(unpaired) == 2


def test_a_wrapper_is_left_unpaired_and_the_module_it_wraps_meets_its_counterpart(tmp_path):
    _, path = _auto_map("wrapped", "L0", tmp_path)
    text = path.read_text(encoding="utf-8")
    unpaired = [line for line in text.splitlines() if line.startswith("# unpaired:")]
    assert len([u for u in unpaired if "mlp.block.Sequential" in u and "a wrapper" in u]) == 2
    mapping = load_data_mapping(path)
    assert mapping["Module.transformer.layers.0.mlp.ParallelMlp.forward.0.output.0"] == \
        "Module.layers.0.mlp.Mlp.forward.0.output.0"


def test_the_summary_line_counts_paired_and_unpaired_calls(tmp_path):
    """The count is logged when the mapping is proposed, and is one line of the compare's summary (console and
    ``--json-summary``'s ``notes``), so that a reader of the summary alone knows how the rows were paired."""
    import json

    summary_file = tmp_path / "summary.json"
    run = _cli("-tp", _dump("extra_L0"), "-gp", _dump("golden_L0"), "-o", tmp_path, "--auto-map",
               "--json-summary", summary_file)
    assert run.returncode == 0, run.stderr
    logged, in_summary = [x for x in (run.stdout + run.stderr).splitlines() if "auto-map:" in x]
    assert "[INFO]" in logged and in_summary.startswith("  auto-map: ")
    for line in (logged, in_summary):
        assert "27 of 29 target forward calls paired automatically" in line and "2 left unpaired" in line
    block = run.stdout[run.stdout.index("Compare summary"):]
    assert in_summary in block.splitlines()
    (note,) = json.loads(summary_file.read_text())["notes"]
    assert note["rank"] == "" and note["text"] == in_summary.strip()


def test_a_run_without_auto_map_has_no_notes_in_its_summary(tmp_path):
    import json

    summary_file = tmp_path / "summary.json"
    run = _cli("-tp", _dump("golden_L0"), "-gp", _dump("golden_L0"), "-o", tmp_path, "--json-summary", summary_file)
    assert run.returncode == 0, run.stderr
    assert "notes" not in json.loads(summary_file.read_text())


def test_dumps_too_different_stop_with_one_line_naming_where_they_part(tmp_path):
    # a module-level dump against an API-level one: no call of one has a counterpart in the other
    run = _cli("-tp", _dump("golden_L0"), "-gp", _dump("golden_L1"), "-o", tmp_path, "--auto-map")
    assert run.returncode != 0
    lines = [x for x in run.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in run.stderr
    assert "too different" in lines[0] and "Module.embed.Embedding.forward.0" in lines[0]
    assert not list(tmp_path.glob("compare_result_*"))  # no silent fallback to another pairing


@pytest.mark.parametrize("other", ["-dm", "-fm"])
def test_auto_map_with_a_data_mapping_or_fuzzy_match_is_refused(other, tmp_path):
    dm = tmp_path / "m.yaml"
    dm.write_text("a: b\n")
    extra = [other, dm] if other == "-dm" else [other]
    run = _cli("-tp", _dump("renamed_L0"), "-gp", _dump("golden_L0"), "-o", tmp_path / "out", "--auto-map", *extra)
    assert run.returncode == 2 and "--auto-map" in run.stderr and other in run.stderr
    assert "Traceback" not in run.stderr
    assert not list((tmp_path / "out").glob("compare_result_*"))


def test_cross_framework_with_am_runs_the_auto_map(tmp_path):
    run = _cli("-tp", _dump("ms_L0"), "-gp", _dump("golden_L0"), "-o", tmp_path, "--auto-map", "-am", "-q")
    assert run.returncode == 0, run.stderr
    assert list(tmp_path.glob("auto_mapping_*.yaml"))


def test_with_diff_analyze_the_mapping_is_written_too_and_the_weight_is_found(tmp_path):
    run = _cli("-tp", _dump("wrong_L0"), "-gp", _dump("golden_L0"), "-o", tmp_path, "--auto-map", "-da", "-q")
    assert run.returncode == 0, run.stderr
    assert len(list(tmp_path.glob("auto_mapping_*.yaml"))) == 1
    (analysis,) = tmp_path.glob("diff_analyze_*.json")
    assert "dense_4h_to_h" in analysis.read_text()


CYCLE = ('{"Module.word_embeddings.Embedding.forward.0": "Module.output_layer.Linear.forward.0", '
         '"Module.output_layer.Linear.forward.0": "Module.word_embeddings.Embedding.forward.0"}')


def _copied_pair(tmp_path: Path) -> tuple[Path, Path]:
    for side, name in (("t", "renamed_L0"), ("g", "golden_L0")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "dump.json").write_bytes(_dump(name).read_bytes())
    return tmp_path / "t" / "dump.json", tmp_path / "g" / "dump.json"


def test_a_broken_construct_json_does_not_stop_the_proposal(tmp_path):
    target, golden = _copied_pair(tmp_path)
    (tmp_path / "t" / "construct.json").write_text("not json {")
    result = msprobe_core.compare(target, golden, output_dir=tmp_path / "o", auto_map=True, quiet=True)
    (path,) = (tmp_path / "o").glob("auto_mapping_*.yaml")
    proposed = {t: g for t, g in load_data_mapping(path).items() if g != UNPAIRED}
    precision, recall = score(proposed, truth("renamed", "L0"))
    assert precision >= 0.98 and recall >= 0.9, (precision, recall)
    assert result.summary["matched"] > 0


@pytest.mark.parametrize("side", ["t", "g"])
def test_a_cyclic_construct_json_is_refused_as_diff_analyze_refuses_it(side, tmp_path):
    """A call inside itself is a damaged dump: exit 2, one line naming the file, nothing written (as with -da)."""
    target, golden = _copied_pair(tmp_path)
    (tmp_path / side / "construct.json").write_text(CYCLE)
    for extra in ([], ["-da"]):
        out = tmp_path / ("o" + "".join(extra))
        run = _cli("-tp", target, "-gp", golden, "-o", out, "--auto-map", *extra)
        lines = [x for x in run.stderr.splitlines() if x.strip()]
        assert run.returncode == 2 and len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
        assert str(tmp_path / side / "construct.json") in lines[0] and "cycle" in lines[0]
        assert not out.exists() or not list(out.iterdir())


def test_each_rank_of_a_step_directory_gets_its_own_mapping_file(tmp_path):
    for side, name in (("t", "renamed_L0"), ("g", "golden_L0")):
        for rank in (0, 1):
            where = tmp_path / side / "step0" / f"rank{rank}"
            where.mkdir(parents=True)
            for part in ("dump.json", "construct.json", "stack.json"):
                (where / part).write_bytes((DUMPS / name / part).read_bytes())
    run = _cli("-tp", tmp_path / "t" / "step0", "-gp", tmp_path / "g" / "step0", "-o", tmp_path / "o", "--auto-map", "-q")
    assert run.returncode == 0, run.stderr
    names = sorted(p.name.rsplit("_", 1)[0] for p in (tmp_path / "o").glob("auto_mapping*.yaml"))
    assert names == ["auto_mapping_rank0", "auto_mapping_rank1"]


def _corpus_pair(case: str) -> tuple[Path, Path]:
    from .conftest import corpora_dir

    root = corpora_dir() / "mindspore" / case
    (target,) = (root / "target").glob("step0/*/dump.json")
    (golden,) = (root / "golden").glob("step0/*/dump.json")
    return target, golden


def test_on_the_megatron_named_corpus_case_it_agrees_with_msprobes_own_layer_mapping(tmp_path):
    # x_l0_tensor_lm: msprobe's -lm generated this data mapping from its layer_mapping.yaml; it spells the
    # parameters_grad rows N/A (it cannot name them), every other row must be ours too
    from .conftest import corpora_dir

    target, golden = _corpus_pair("x_l0_tensor_lm")
    msprobe_core.compare(target, golden, output_dir=tmp_path, auto_map=True, quiet=True)
    (path,) = tmp_path.glob("auto_mapping_*.yaml")
    ours = load_data_mapping(path)
    reference = load_data_mapping(corpora_dir() / "mindspore" / "x_l0_tensor_lm" / "oracle" / "lm_yaml" /
                                  "data_mapping.yaml")
    named = {t: g for t, g in reference.items() if g != "N/A"}
    assert len(named) > 100 and all(ours.get(t) == g for t, g in named.items())


@pytest.mark.parametrize("case, node", [("x_l0_stat_cm_bug", "Cell.blocks.1.attn.Attention.forward.0"),
                                        ("x_mix_stat_dm_bug", "Mint.div.1.forward")])
def test_on_the_corpus_faults_it_finds_the_documented_first_diff_node(case, node, tmp_path):
    target, golden = _corpus_pair(case)
    run = _cli("-tp", target, "-gp", golden, "-o", tmp_path, "--auto-map", "-da")
    assert run.returncode == 0, run.stderr
    assert f"first diff node: {node} " in run.stdout + run.stderr


#: the command line with a file size limit (``ulimit -f``): a write past it fails with EFBIG as on a full disk
_LIMITED = ("import resource, runpy, signal, sys\n"
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv.pop(1)),) * 2)\n"
            "sys.argv[0] = 'msprobe'\n"
            "runpy.run_module('msprobe_core', run_name='__main__')\n")


def test_a_run_whose_result_cannot_be_written_leaves_no_mapping_behind(tmp_path):
    """The mapping is written first; when the result then fails (here a file size limit between the two
    files' sizes, as a disk that fills), the run exits 2 and takes its mapping back with it."""
    ok = _cli("-tp", _dump("renamed_L0"), "-gp", _dump("golden_L0"), "-o", tmp_path / "ok", "--auto-map", "-q")
    assert ok.returncode == 0, ok.stderr
    (mapping,) = (tmp_path / "ok").glob("auto_mapping_*.yaml")
    (result,) = (tmp_path / "ok").glob("compare_result_*.csv")
    limit = (mapping.stat().st_size + result.stat().st_size) // 2
    assert mapping.stat().st_size < limit < result.stat().st_size
    out = tmp_path / "full"
    run = subprocess.run([sys.executable, "-c", _LIMITED, str(limit), "compare", "-tp", _dump("renamed_L0"),
                          "-gp", _dump("golden_L0"), "-o", out, "--auto-map", "-q"],
                         capture_output=True, text=True, timeout=600)
    lines = [x for x in run.stderr.splitlines() if x.strip()]
    assert run.returncode == 2 and len(lines) == 1 and "compare_result_" in lines[0], run.stderr
    assert not out.exists() or not list(out.iterdir())
