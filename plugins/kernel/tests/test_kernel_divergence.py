"""The first divergence of kernel dumps: kernels are judged on relative error and cosine, not on ``MaxAbsErr > 1``.

``tests/data/kernel_eps`` is a real MindSpore 2.10 GRAPH_MODE kernel dump pair (its README): a 3-layer
RMSNorm net whose target has a wrong epsilon in layer 0. The eps ``Add`` moves by MaxAbsErr 0.1 —
32 % of the smallest variance, Cosine 0.999 — and the old absolute floor named a kernel 6 places later.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from msprobe_core.cli.main import main
from tests.conftest import corpora_dir

pytest.importorskip("msprobe_kernel", reason="the msprobe-kernel plugin is not installed")

EPS_PAIR = Path(__file__).resolve().parents[3] / "tests" / "data" / "kernel_eps"
EPS_ADD = "Add.Expand__AddScalar_Add-op0"  # layer 0: variance + eps (MindSpore lowers the scalar add to Mul and Add)


def _summary(target: Path, golden: Path, out: Path, *extra: str) -> dict:
    path = out / "summary.json"
    assert main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out), "-q", "--json-summary", str(path),
                 *extra]) == 0
    return json.loads(path.read_text(encoding="utf-8"))


def _rows(out: Path) -> dict[str, dict[str, str]]:
    (path,) = out.glob("compare_result_*.csv")
    with open(path, newline="", encoding="utf-8") as fh:
        return {r["NPU Name"].rsplit("/", 1)[-1].split(".0.0.")[0]: r for r in csv.DictReader(fh)}


def test_the_wrong_norm_eps_is_the_first_divergence(run_cli, tmp_path):
    summary = tmp_path / "summary.json"
    proc = run_cli("compare", "-tp", EPS_PAIR / "target", "-gp", EPS_PAIR / "golden", "-o", tmp_path,
                   "--json-summary", summary)
    assert proc.returncode == 0, proc.stderr
    first = json.loads(summary.read_text(encoding="utf-8"))["first_divergence"]
    assert first["node"] == EPS_ADD, first
    assert first["reason"] == "EucDist 0.28284 is 14.96% of Bench l2norm 1.89025 (> 1%)"
    assert f"first divergence: {EPS_ADD}" in proc.stdout
    # the fault has the size the pair was made for, and the kernels that feed it are identical
    add = _rows(tmp_path)[EPS_ADD]
    assert abs(float(add["MaxAbsErr"]) - 0.1) < 1e-4
    assert 0.31 < float(add["MaxRelativeErr"]) < 0.33 and 0.999 < float(add["Cosine"]) < 0.9995
    for name in ("Mul.Default_Mul-op0", "ReduceMean.Expand__MeanExt_ReduceMean-op0"):
        assert float(_rows(tmp_path)[name]["MaxAbsErr"]) == 0.0, name


def _kernel_dump(root: Path, arrays: dict[str, np.ndarray]) -> Path:
    d = root / "rank_0" / "Net" / "0" / "0"
    d.mkdir(parents=True)
    for stamp, (op, arr) in enumerate(arrays.items(), start=100):  # dump timestamps give the execution order
        np.save(d / f"{op}.0.0.{stamp}.output.0.DefaultFormat.Float32.npy", arr)
    return root


def test_rounding_noise_of_a_large_tensor_is_not_a_divergence(tmp_path):
    """MaxAbsErr 2 on values near 1e4 is 0.02 % of the tensor: noise; the later 5 % change is the divergence."""
    rng = np.random.default_rng(1)
    big = (1e4 + rng.standard_normal(64) * 100).astype(np.float32)
    small = rng.standard_normal(64).astype(np.float32)
    noisy = big.copy()
    noisy[3] += 2.0
    target = _kernel_dump(tmp_path / "t", {"Sum.Default_Sum-op0": noisy, "Mul.Default_Mul-op0": small * 1.05})
    golden = _kernel_dump(tmp_path / "g", {"Sum.Default_Sum-op0": big, "Mul.Default_Mul-op0": small})
    first = _summary(target, golden, tmp_path / "out")["first_divergence"]
    assert first["node"] == "Mul.Default_Mul-op0", first
    assert first["reason"].startswith("EucDist ") and "of Bench l2norm" in first["reason"]


def test_one_element_off_is_judged_against_the_golden_range(tmp_path):
    """One element of 4096 off by 0.5 barely moves the L2 error (0.8 %) but is 10 % of the range: a divergence."""
    rng = np.random.default_rng(2)
    x = np.clip(rng.standard_normal(4096), -5, 5).astype(np.float32)
    bad = x.copy()
    bad[100] += 0.5
    target = _kernel_dump(tmp_path / "t", {"Add.Default_Add-op0": bad})
    golden = _kernel_dump(tmp_path / "g", {"Add.Default_Add-op0": x})
    first = _summary(target, golden, tmp_path / "out")["first_divergence"]
    assert first["node"] == "Add.Default_Add-op0", first
    assert "of the golden range max|x|" in first["reason"], first


def test_zeros_against_near_zeros_are_noise(tmp_path):
    """A golden tensor of zeros has no scale: 1e-9 against it is no divergence, 0.01 is."""
    zeros = np.zeros(16, np.float32)
    target = _kernel_dump(tmp_path / "t", {"Mul.Default_Mul-op0": zeros + 1e-9, "Mul.Default_Mul-op1": zeros + 0.01})
    golden = _kernel_dump(tmp_path / "g", {"Mul.Default_Mul-op0": zeros, "Mul.Default_Mul-op1": zeros})
    first = _summary(target, golden, tmp_path / "out")["first_divergence"]
    assert first["node"] == "Mul.Default_Mul-op1", first
    assert first["reason"] == "MaxAbsErr 0.01 > 0.001 where the golden tensor is all 0"


STAT_HEADER = ("Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,Min Value,"
               "Avg Value,L2Norm Value\n")


def test_statistic_kernel_dumps_are_judged_on_the_norm_relative_error(tmp_path):
    """statistic.csv kernel dumps have no Cosine: the statistics rule (relative L2-norm error > 1 %) judges them."""
    for side, norms in (("t", (10.05, 12.0)), ("g", (10.0, 10.0))):
        d = tmp_path / side / "rank_0" / "Net" / "0" / "0"
        d.mkdir(parents=True)
        (d / "statistic.csv").write_text(STAT_HEADER + "".join(
            f'Add,Default/network-Add-op{k},5,2,{17000 + k},output,0,24,float32,"(2,3)",4,0,1,{norm}\n'
            for k, norm in enumerate(norms)))
    first = _summary(tmp_path / "t", tmp_path / "g", tmp_path / "out")["first_divergence"]
    assert first is not None and first["row"] == "Default/network-Add-op1.5.output.0", first
    assert first["reason"] == "NormRelativeErr 20% > 1%"


@pytest.mark.skipif(not (corpora_dir() / "mindspore" / "kernel_l2_bug_2steps").is_dir(),
                    reason="corpus case kernel_l2_bug_2steps not found")
def test_the_corpus_fault_is_still_found(tmp_path):
    """kernel_l2_bug_2steps: the softmax-scale Div (MaxAbsErr 4.1, 100 % of the golden norm), in step 0."""
    case = corpora_dir() / "mindspore" / "kernel_l2_bug_2steps"
    first = _summary(case / "target", case / "golden", tmp_path)["first_divergence"]
    assert first["node"] == "Div.Default_network-WithLoss_net-TinyLM_blocks-CellList_0-Block_attn-Attention_Div-op1"
    assert first["rank"] == "rank 0 step 0" and "of Bench l2norm" in first["reason"], first
