"""``-da/--diff_analyze``: known answers of the corpora, msprobe's file schema, and the search on synthetic runs.

The corpora README names the injected fault of every case (the true first divergence). msprobe's own
answers (``oracle/compare_da``) are often wrong; where they are right ours must agree, and its per-rank
``compare_result_rank*.json`` must agree with ours field by field.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from msprobe_core.api import build_options
from msprobe_core.cli.main import main
from msprobe_core.default_plugins.diff_analyze.comm import default_kind
from msprobe_core.default_plugins.diff_analyze.config import DiffAnalyzeConfig
from msprobe_core.host.hookspecs import hookimpl
from msprobe_core.host.registry import PluginHost, get_host, reset_host
from msprobe_core.plugin import CommOpSpec
from msprobe_core.run.jobs import run_jobs

from .conftest import corpus_mark
from .dumps import api, tensor, write_dump

# --------------------------------------------------------------------------- known answers
#: case, extra CLI args, {rank key: cause op}; {} = no divergence
PYTORCH = [
    ("c01", (), {"rank_0": "Functional.linear.0.forward"}),
    ("c02", (), {"rank_0": "Functional.linear.0.forward"}),
    ("c03", (), {"rank_0": "Functional.linear.0.forward"}),
    ("c04a", (), {"rank_0": "Module.blocks.0.attn.qkv.Linear.forward.0"}),
    ("c05", (), {"rank_0": "Functional.linear.0.forward"}),
    ("c06b", (), {"rank_0": "Tensor.__mul__.1.forward"}),
    ("c08", ("-fm",), {}),
    ("c09a", (), {"rank_1": "Functional.linear.0.forward"}),
]
MINDSPORE = [
    ("ms_l1_stat_fp16", (), {"rank_0": "MintFunctional.linear.0.forward"}),
    ("ms_l1_tensor_bug", (), {"rank_0": "Mint.div.1.forward"}),
    ("ms_l0_stat_bug_2steps", (), {"rank_0": "Cell.blocks.1.attn.Attention.forward.0"}),
    ("ms_mix_stat_gelu", (), {"rank_0": "Functional.gelu.1.forward"}),
    ("x_l1_stat_am", ("-am",), {}),
    ("x_l1_stat_am", ("-am", "api_mapping.yaml"), {}),
    ("x_l0_stat_cm_bug", ("-cm",), {"rank_0": "Cell.blocks.1.attn.Attention.forward.0"}),
    ("x_l0_stat_cm_bug", ("-cm", "cell_mapping.yaml"), {"rank_0": "Cell.blocks.1.attn.Attention.forward.0"}),
    ("x_mix_stat_dm_bug", ("-dm", "data_mapping.yaml"), {"rank_0": "Mint.div.1.forward"}),
    ("x_l0_tensor_lm", ("-lm", "layer_mapping.yaml"), {}),
]
TIMESTAMP = re.compile(r"_\d{14}")


@pytest.fixture(autouse=True)
def _no_leaked_tensor_cap(monkeypatch):
    """An earlier in-process run may leave a tensor size cap in the environment; these tests need none."""
    monkeypatch.delenv("MSPROBE_MAX_TENSOR_BYTES", raising=False)


def _run_da(root: Path, out: Path, extra: tuple[str, ...] = (), step: str = "step0") -> dict | None:
    args = [str(root / a) if a.endswith(".yaml") else a for a in extra]
    rc = main(["compare", "-tp", str(root / "target" / step), "-gp", str(root / "golden" / step), "-o", str(out),
               "-da", "-q", *args])
    assert rc == 0
    files = list(out.glob("diff_analyze_*.json"))
    assert len(files) <= 1
    return json.loads(files[0].read_text()) if files else None


def _causes(doc: dict | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for rank, nodes in (doc or {}).items():
        causes = [n["op_name"] for n in nodes if n["role"] == "cause"]
        assert len(causes) <= 1, (rank, causes)
        if causes:
            out[rank] = causes[0]
    return out


def _check_explained(doc: dict | None) -> None:
    for nodes in (doc or {}).values():
        for node in nodes:
            assert node["reason"] and node["evidence"], node["op_name"]
            for ev in node["evidence"]:
                assert ev["kind"] in ("dtype", "shape", "nan_inf", "md5", "argument", "statistics")
                assert ev["summary"]
                if ev["kind"] == "statistics":
                    assert ev["value"] > ev["threshold"] and ev["msprobe_metric"].endswith("RelativeErr")


@pytest.mark.parametrize("case,extra,expected", PYTORCH, ids=[f"{c}{''.join(e)}" for c, e, _ in PYTORCH])
def test_pytorch_known_answers(corpora, tmp_path, case, extra, expected):
    doc = _run_da(corpora / "pytorch" / case, tmp_path, extra)
    assert _causes(doc) == expected
    _check_explained(doc)
    if not expected:
        assert doc is None


@pytest.mark.parametrize("case,extra,expected", MINDSPORE, ids=[f"{c}{''.join(e)}" for c, e, _ in MINDSPORE])
def test_mindspore_known_answers(corpora, tmp_path, case, extra, expected):
    pytest.importorskip("msprobe_mindspore", reason="the msprobe-mindspore plugin is not installed")
    doc = _run_da(corpora / "mindspore" / case, tmp_path, extra)
    assert _causes(doc) == expected
    _check_explained(doc)
    if not expected:
        assert doc is None


def test_c09a_rank0_first_sees_it_at_all_gather(corpora, tmp_path):
    doc = _run_da(corpora / "pytorch" / "c09a", tmp_path)
    (node,) = doc["rank_0"]
    assert node["op_name"] == "Distributed.all_gather.0.forward"
    assert node["role"] == "propagated"
    assert node["via"] == "Distributed.all_gather.0.forward"
    assert node["caused_by"] == [{"rank": 1, "op_name": "Functional.linear.0.forward"}]
    assert any(e["row"] == "Distributed.all_gather.0.forward.output.0.1" for e in node["evidence"])
    (cause,) = doc["rank_1"]
    assert cause["rank"] == 1
    assert {e["row"] for e in cause["evidence"] if e["side"] == "input"} >= {"Functional.linear.0.forward.input.1"}


@pytest.mark.parametrize(
    "case,kinds",
    [("c01", {"dtype"}), ("c03", {"dtype", "md5"}), ("c06b", {"argument", "statistics"})],
)
def test_reasons_name_the_evidence(corpora, tmp_path, case, kinds):
    doc = _run_da(corpora / "pytorch" / case, tmp_path)
    (node,) = doc["rank_0"]
    assert kinds <= {e["kind"] for e in node["evidence"]}


def test_mindspore_reasons(corpora, tmp_path):
    pytest.importorskip("msprobe_mindspore", reason="the msprobe-mindspore plugin is not installed")
    root = corpora / "mindspore"
    (gelu,) = _run_da(root / "ms_mix_stat_gelu", tmp_path / "g")["rank_0"]
    assert any(e["kind"] == "argument" and e["npu"] == "tanh" for e in gelu["evidence"])
    if (root / "ms_l1_tensor_bug").is_dir():  # a case of the shared corpora only (tests/data/corpus lacks it)
        (div,) = _run_da(root / "ms_l1_tensor_bug", tmp_path / "d")["rank_0"]
        assert any(e["kind"] == "argument" for e in div["evidence"])
    (attn,) = _run_da(root / "ms_l0_stat_bug_2steps", tmp_path / "a")["rank_0"]
    assert attn["first_visible"]["op_name"] == "Cell.blocks.1.attn.out_proj.Dense.forward.0"
    (step1,) = _run_da(root / "ms_l0_stat_bug_2steps", tmp_path / "s1", step="step1")["rank_0"]
    assert "parameters" in step1["reason"]  # the weights updated differently by step 0


# --------------------------------------------------------------------------- msprobe's files
def _load(path: Path):
    return json.loads(path.read_text())


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12)
    return a == b


def _with_da_oracle(*cases: str) -> list:
    """The cases, each needing msprobe's ``-da`` oracle (not collected where the corpora lack it)."""
    return [pytest.param(c, marks=corpus_mark(f"pytorch/{c}/oracle/compare_da")) for c in cases]


@pytest.mark.parametrize("case", _with_da_oracle("c01", "c02", "c03", "c04a", "c05", "c06b", "c08", "c09a"))
def test_compare_result_json_agrees_with_msprobe(corpora, tmp_path, case):
    root = corpora / "pytorch" / case
    _run_da(root, tmp_path)
    refs = sorted((root / "oracle" / "compare_da").glob("compare_result_rank*.json"))
    ours = {TIMESTAMP.sub("", p.name): p for p in tmp_path.glob("compare_result_rank*.json")}
    assert sorted(ours) == [p.name for p in refs]
    for ref_path in refs:
        ref, mine = _load(ref_path), _load(ours[ref_path.name])
        assert list(mine) == list(ref)
        for key, entry in ref.items():
            assert mine[key]["is_same"] == entry["is_same"], key
            assert len(mine[key]["op_items"]) == len(entry["op_items"]), key
            for a, b in zip(mine[key]["op_items"], entry["op_items"]):
                assert list(a) == list(b), key
                for field, value in b.items():
                    if field.startswith("Bench P2POp") and isinstance(value, float):
                        continue  # msprobe fills these positionally from the shorter bench table (c08)
                    assert _same(a[field], value), (b["NPU Name"], field, a[field], value)
            assert "divergence" in mine[key]


@pytest.mark.parametrize("case", _with_da_oracle("c03", "c06b", "c09a"))
def test_where_msprobe_is_right_we_name_the_same_node(corpora, tmp_path, case):
    """msprobe's ``diff_analyze`` is right on these cases: same node, same msprobe fields."""
    root = corpora / "pytorch" / case
    doc = _run_da(root, tmp_path)
    ref = _load(root / "oracle" / "compare_da" / "diff_analyze.json")
    for rank, nodes in ref.items():
        mine = {n["op_name"]: n for n in doc[rank] if n["role"] == "cause"}
        for node in nodes:
            ours = mine[node["op_name"]]
            assert ours["stack_info"] == node["stack_info"]
            for side in ("input", "output"):
                assert list(ours["data_info"][side]) == list(node["data_info"][side])
                for row, fields in node["data_info"][side].items():
                    for field, value in fields.items():
                        assert _same(ours["data_info"][side][row][field], value), (row, field)


@pytest.mark.parametrize("case", _with_da_oracle("c01", "c02", "c04a", "c05"))
def test_where_msprobe_misses_the_fault_we_do_not(corpora, tmp_path, case):
    """msprobe's 50 % rule skips the bf16 ops and names a later layer_norm; we name the first autocast op."""
    root = corpora / "pytorch" / case
    ref = _causes({r: [dict(n, role="cause") for n in ns]
                   for r, ns in _load(root / "oracle" / "compare_da" / "diff_analyze.json").items()})
    ours = _causes(_run_da(root, tmp_path))
    assert ours != ref
    assert ours["rank_0"] in ("Functional.linear.0.forward", "Module.blocks.0.attn.qkv.Linear.forward.0")


def test_single_file_pair_is_analysed(corpora, tmp_path):
    """msprobe ignores -da on two dump.json files; we analyse them (file names without a rank)."""
    root = corpora / "pytorch" / "c06b" / "{}" / "step0" / "rank0" / "dump.json"
    rc = main(["compare", "-tp", str(root).format("target"), "-gp", str(root).format("golden"), "-o", str(tmp_path),
               "-da", "-q"])
    assert rc == 0
    assert [TIMESTAMP.sub("", p.name) for p in tmp_path.glob("compare_result*.json")] == ["compare_result.json"]
    assert not list(tmp_path.glob("*.csv"))
    (doc,) = [_load(p) for p in tmp_path.glob("diff_analyze_*.json")]
    assert _causes(doc) == {"rank_0": "Tensor.__mul__.1.forward"}


def test_diff_analyze_file_name_and_console(corpora, run_cli, tmp_path):
    root = corpora / "pytorch" / "c01"
    proc = run_cli("compare", "-tp", root / "target/step0", "-gp", root / "golden/step0", "-o", tmp_path, "-da")
    assert proc.returncode == 0, proc.stderr
    (path,) = tmp_path.glob("diff_analyze_*.json")
    assert re.fullmatch(r"diff_analyze_\d{19}\.json", path.name)
    for line in ("Start finding first diff node......", "Saving json file to disk: ", "Pre Process completed.",
                 f"The analyze result is saved in: {path}"):
        assert line in proc.stdout
    assert _load(path)["rank_0"][0]["op_name"] == "Functional.linear.0.forward"


def test_nothing_found_writes_no_analysis(corpora, run_cli, tmp_path):
    root = corpora / "pytorch" / "c08"
    proc = run_cli("compare", "-tp", root / "target/step0", "-gp", root / "golden/step0", "-o", tmp_path, "-da", "-fm")
    assert proc.returncode == 0
    assert "Cannot find any diff node, no need to generate analyze file." in proc.stdout
    assert not list(tmp_path.glob("diff_analyze_*.json"))
    assert list(tmp_path.glob("compare_result_rank0_*.json"))


def test_c08_without_fm_hints_at_shifted_call_numbers(corpora, tmp_path):
    (node,) = _run_da(corpora / "pytorch" / "c08", tmp_path)["rank_0"]
    assert node["op_name"] == "Tensor.__add__.1.forward"
    assert any("-fm" in h for h in node["hints"])


# --------------------------------------------------------------------------- the search, on synthetic runs
def _t(v: float, **kw) -> dict:
    return tensor(shape=(4,), mx=v, mn=-v, mean=v / 10, norm=2 * v, **kw)


def _group(*ranks: int) -> dict:
    return {"type": "torch.ProcessGroup", "group_ranks": list(ranks)}


def _write_ranks(root: Path, per_rank: list[dict]) -> Path:
    for r, data in enumerate(per_rank):
        write_dump(root / "step0" / f"rank{r}", data)
    return root / "step0"


def _analyse(tmp_path: Path, target: list[dict], golden: list[dict], **options) -> dict | None:
    t = _write_ranks(tmp_path / "t", target)
    g = _write_ranks(tmp_path / "g", golden)
    out = tmp_path / "out"
    opts = build_options(out, {"diff_analyze": True, **options})
    host = get_host()
    run_jobs(host.discover_jobs(t, g, opts), opts, host)
    files = list(out.glob("diff_analyze_*.json"))
    return _load(files[0]) if files else None


def _roles(doc: dict | None) -> dict[str, list[tuple[str, str]]]:
    return {r: [(n["op_name"], n["role"]) for n in ns] for r, ns in (doc or {}).items()}


def test_send_recv_carries_a_divergence_to_the_receiver(tmp_path):
    def rank0(bad: float) -> dict:
        return {
            "Functional.relu.0.forward": api([_t(1.0)], [_t(bad)]),
            "Distributed.send.0.forward": api([_t(bad)], [], kwargs={"dst": {"type": "int", "value": 1}}),
        }

    def rank1(got: float) -> dict:
        return {
            "Functional.gelu.0.forward": api([_t(3.0)], [_t(3.0)]),
            "Distributed.recv.0.forward": api([_t(0.0)], [_t(got)], kwargs={"src": {"type": "int", "value": 0}}),
            "Functional.linear.0.forward": api([_t(got)], [_t(got * 2)]),
        }

    doc = _analyse(tmp_path, [rank0(2.5), rank1(2.5)], [rank0(1.0), rank1(1.0)])
    assert _roles(doc) == {
        "rank_0": [("Functional.relu.0.forward", "cause")],
        "rank_1": [("Distributed.recv.0.forward", "propagated")],
    }
    assert doc["rank_1"][0]["caused_by"] == [{"rank": 0, "op_name": "Functional.relu.0.forward"}]


def test_a_divergence_after_the_collective_does_not_travel_back(tmp_path):
    def rank(r: int, bad: float) -> dict:
        return {
            "Distributed.all_reduce.0.forward": api([_t(1.0), _group(0, 1)], [_t(2.0)]),
            "Functional.relu.0.forward": api([_t(2.0)], [_t(bad if r == 1 else 2.0)]),
        }

    doc = _analyse(tmp_path, [rank(0, 9.0), rank(1, 9.0)], [rank(0, 2.0), rank(1, 2.0)])
    assert _roles(doc) == {"rank_1": [("Functional.relu.0.forward", "cause")]}


def test_a_collective_whose_output_differs_everywhere_is_the_cause(tmp_path):
    def rank(out: float) -> dict:
        return {
            "Functional.relu.0.forward": api([_t(1.0)], [_t(1.0)]),
            "Distributed.all_reduce.0.forward": api([_t(1.0), _group(0, 1)], [_t(out)]),
            "Functional.gelu.0.forward": api([_t(out)], [_t(out)]),
        }

    doc = _analyse(tmp_path, [rank(3.0), rank(3.0)], [rank(2.0), rank(2.0)])
    assert _roles(doc) == {
        "rank_0": [("Distributed.all_reduce.0.forward", "cause")],
        "rank_1": [("Distributed.all_reduce.0.forward", "cause")],
    }


def test_evidence_kinds_and_what_does_not_count(tmp_path):
    nan = float("nan")
    target = {
        "Torch.empty.0.forward": api([], [_t(123.0)]),  # uninitialised memory: ignored
        "Tensor.to.0.forward": api([_t(1.0), {"type": "str", "value": "npu:0"}], [_t(1.0)]),  # devices differ by design
        "Functional.embedding.0.forward": api([tensor(dtype="torch.int32", shape=(4,), mx=5, mn=0, mean=None, norm=None)],
                                              [_t(1.0)]),  # index width only
        "Functional.relu.0.forward": api([_t(1.0)], [_t(1.0 + 1e-7)]),  # fp32 noise
        "Functional.gelu.0.forward": api([_t(1.0)], [tensor(shape=(4,), mx=nan, mn=-1.0, mean=nan, norm=nan)]),
    }
    golden = {
        "Torch.empty.0.forward": api([], [_t(7.0)]),
        "Tensor.to.0.forward": api([_t(1.0), {"type": "str", "value": "cuda:0"}], [_t(1.0)]),
        "Functional.embedding.0.forward": api([tensor(dtype="torch.int64", shape=(4,), mx=5, mn=0, mean=None, norm=None)],
                                              [_t(1.0)]),
        "Functional.relu.0.forward": api([_t(1.0)], [_t(1.0)]),
        "Functional.gelu.0.forward": api([_t(1.0)], [_t(1.0)]),
    }
    doc = _analyse(tmp_path, [target], [golden])
    (node,) = doc["rank_0"]
    assert node["op_name"] == "Functional.gelu.0.forward"
    assert node["evidence"][0]["kind"] == "nan_inf"


def test_shape_drift_and_tolerance_setting(tmp_path):
    target = {"Functional.linear.0.forward": api([_t(1.0)], [_t(1.001)]),
              "Functional.linear.1.forward": api([_t(1.0)], [tensor(shape=(5,))])}
    golden = {"Functional.linear.0.forward": api([_t(1.0)], [_t(1.0)]),
              "Functional.linear.1.forward": api([_t(1.0)], [tensor(shape=(4,))])}
    doc = _analyse(tmp_path / "a", [target], [golden])
    assert doc["rank_0"][0]["op_name"] == "Functional.linear.0.forward"
    loose = DiffAnalyzeConfig(base_tolerance=0.01, exact_input_tolerance=0.01)
    doc = _analyse(tmp_path / "b", [target], [golden], extra={"diff_analyze_config": loose})
    (node,) = doc["rank_0"]
    assert node["op_name"] == "Functional.linear.1.forward"
    assert node["evidence"][0]["kind"] == "shape"


@pytest.mark.exercises_hooks("msprobe_register_comm_ops")
def test_plugins_can_name_communication_ops(tmp_path):
    class Plugin:
        @hookimpl
        def msprobe_register_comm_ops(self, register):
            register(CommOpSpec("hccl", lambda prefix: "collective" if prefix == "Hccl.allreduce" else None))

    def rank(r: int, bad: float) -> dict:
        return {
            "Functional.relu.0.forward": api([_t(1.0)], [_t(bad if r == 0 else 1.0)]),
            "Hccl.allreduce.0.forward": api([_t(bad if r == 0 else 1.0)], [_t(bad + 1)]),
        }

    reset_host(PluginHost(extra_plugins=[Plugin()]))
    try:
        doc = _analyse(tmp_path, [rank(0, 5.0), rank(1, 5.0)], [rank(0, 1.0), rank(1, 1.0)])
    finally:
        reset_host(None)
    assert _roles(doc) == {
        "rank_0": [("Functional.relu.0.forward", "cause")],
        "rank_1": [("Hccl.allreduce.0.forward", "propagated")],
    }


@pytest.mark.parametrize(
    "prefix,kind",
    [
        ("Distributed.all_reduce", "collective"),
        ("MintDistributed.all_gather", "collective"),
        ("communication.comm_func.all_to_all", "collective"),
        ("Distributed.isend", "send"),
        ("Distributed.irecv", "recv"),
        ("Functional.gather", None),
        ("Torch.broadcast_to", None),
    ],
)
def test_builtin_communication_rule(prefix, kind):
    assert default_kind(prefix) == kind


@corpus_mark("mindspore/kernel_l2_bug_2steps")
def test_kernel_dumps_refuse_da(corpora, tmp_path, run_cli):
    """msprobe ignores -da on kernel dumps; here it is refused, as every option that would do nothing there."""
    pytest.importorskip("msprobe_kernel", reason="the msprobe-kernel plugin is not installed")
    root = corpora / "mindspore" / "kernel_l2_bug_2steps"
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", root / "target", "-gp", root / "golden", "-o", out, "--rank", "0", "--step", "0",
                   "-da", "-q")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"msprobe: error: {root / 'target'}: -da/--diff_analyze does nothing in a compare "
                                   "of kernel dumps, which -tp/-gp are; leave it out")
    assert not out.exists()


def test_p2pop_records_fill_the_p2pop_columns(tmp_path):
    def rank(peer: int) -> dict:
        op = {"class_type": "torch.distributed.P2POp", "op": "isend", "peer": peer, "tensor": _t(1.0)}
        return {"Distributed.batch_isend_irecv.0.forward": api([[op]], [None])}

    _analyse(tmp_path, [rank(1), rank(0)], [rank(1), rank(0)])
    (path,) = (tmp_path / "out").glob("compare_result_rank1_*.json")
    (item,) = [i for i in _load(path)["Distributed.batch_isend_irecv.0.forward"]["op_items"] if i["state"] == "input"]
    assert item["NPU Name"] == "Distributed.batch_isend_irecv.0.forward.input.0.0"
    assert (item["NPU P2POp op"], item["NPU P2POp peer"]) == ("isend", "0")
    assert (item["Bench P2POp op"], item["Bench P2POp peer"]) == ("isend", "0")


def test_identical_inputs_make_small_output_changes_count(tmp_path):
    """With bit-identical inputs only the call can move its output: 3e-5 of the range counts there, not elsewhere."""
    def dump(out: float, noisy_input: float) -> dict:
        return {
            "Functional.layer_norm.0.forward": api([_t(2.0)], [_t(1.0)]),
            "Functional.gelu.0.forward": api([_t(1.0)], [_t(out)]),
            "Functional.linear.0.forward": api([_t(noisy_input)], [_t(out)]),
        }

    doc = _analyse(tmp_path / "a", [dump(1.00003, 1.0)], [dump(1.0, 1.0)])
    (node,) = doc["rank_0"]
    assert node["op_name"] == "Functional.gelu.0.forward"
    (ev,) = [e for e in node["evidence"] if e["side"] == "output"]
    assert ev["inputs_exact"] and ev["threshold"] == pytest.approx(1e-5)
    only_later = {
        "Functional.layer_norm.0.forward": api([_t(2.0)], [_t(1.0 + 1e-7)]),
        "Functional.linear.0.forward": api([_t(1.0 + 1e-7)], [_t(1.00003)]),
    }
    clean = {
        "Functional.layer_norm.0.forward": api([_t(2.0)], [_t(1.0)]),
        "Functional.linear.0.forward": api([_t(1.0)], [_t(1.0)]),
    }
    assert _analyse(tmp_path / "b", [only_later], [clean]) is None  # inputs already moved: the 1e-4 tolerance holds
