"""Differences of form are no divergence (issue 30 item 2).

The pair in ``tests/data/forms`` was dumped by msprobe 26.2.0's own dumper (level mix, statistics) from two
tiny implementations of one Llama-style block (``tests/dumper_corpus/forms_pair.py``): the golden one written as
Hugging Face writes Llama, the target as litgpt does (residual-sum and RMSNorm operands in the other order,
the block's input by keyword against positionally, the gate projection's SiLU inside the layer, the down
projection on a ``[16, 48]`` view); ``fault`` is the target with RMSNorm's eps 0.1 instead of 1e-6.
``golden_tensor``/``permuted_tensor``/``misordered_tensor`` (tensor mode): the golden block, the same with its MLP's
hidden units reordered as a weight converter may (the same function), and with the gate rows alone reordered (a
converter's fault).
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from msprobe_core.default_plugins.msprobe_verdicts import forms

from .conftest import IN_REPO_CORPUS

FORMS = Path(__file__).parent / "data" / "forms"


def test_operands_swapped_only_when_the_other_order_agrees() -> None:
    a, b = [3.0, -1.0, 0.5, 10.0], [2.0, -2.0, 0.1, 7.0]
    assert forms.operands_swapped([a, b], [b, a])
    assert not forms.operands_swapped([a, b], [a, b])  # already agree: nothing to swap
    moved = [3.0, -1.0, 0.6, 10.5]
    assert not forms.operands_swapped([moved, b], [b, a])  # a real change stays a change
    assert forms.operands_swapped(["aa", "bb"], ["bb", "aa"])  # md5 tables


def test_tolerance_follows_the_dtype() -> None:
    """Two bf16 runs agree only to about 1 %: swapped bf16 operands are still recognised."""
    a, b = [3.0, -1.0, 0.5, 10.0], [2.0, -2.0, 0.1, 7.0]
    a_bf16 = [3.02, -1.0, 0.5, 10.05]
    assert not forms.operands_swapped([a_bf16, b], [b, a])  # fp32's 0.1 %
    assert forms.operands_swapped([a_bf16, b], [b, a], forms.tolerance(2.0 ** -8))


def test_reshape_same_elements_and_values() -> None:
    v = [1.0, -1.0, 0.0, 8.0]
    assert forms.reshaped("[16, 64]", "[2, 8, 64]", v, v)
    assert not forms.reshaped("[16, 64]", "[2, 8, 32]", v, v)
    assert forms.reshaped("[1, 16, 64]", "[16, 64]", v, v)
    assert not forms.reshaped("[8, 2, 64]", "[2, 8, 64]", v, v)  # maybe a transpose: statistics cannot tell
    assert not forms.reshaped("[16, 64]", "[2, 8, 64]", v, [1.0, -1.0, 0.0, 9.0])


def test_applied_inside() -> None:
    lin, act = [4.0, -3.0, 0.1, 20.0], [3.9, -0.27, 0.5, 15.0]
    assert forms.applied_inside(act, lin, lin, act)
    assert not forms.applied_inside([4.2, -3.1, 0.1, 21.0], lin, lin, act)


def _run(run_cli, tmp_path: Path, target: str, *extra: str, golden: str = "golden") -> tuple[dict, Path]:
    out = tmp_path / f"{target}{'_'.join(extra)}"
    summary = out / "summary.json"
    proc = run_cli("compare", "-tp", FORMS / target / "dump.json", "-gp", FORMS / golden / "dump.json",
                   "-o", out, "--json-summary", summary, *extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(summary.read_text(encoding="utf-8")), out


def _first(summary: dict) -> dict | None:
    return summary.get("first_divergence")


@pytest.mark.parametrize("extra", [(), ("-da",)])
def test_clean_pair_of_other_forms_has_no_first_divergence(run_cli, tmp_path: Path, extra: tuple[str, ...]) -> None:
    summary, out = _run(run_cli, tmp_path, "target", *extra)
    assert _first(summary) is None, summary
    assert summary["verdicts"]["error"] == 8  # msprobe's cells: shapes and requires_grad differ slot by slot
    if extra:  # -da says per call which rows it set aside, and why
        doc = json.loads(next(out.glob("compare_result*.json")).read_text(encoding="utf-8"))
        set_aside = {call: entry["divergence"]["forms"] for call, entry in doc.items()
                     if entry["divergence"].get("forms")}
        assert set(set_aside) == {"Tensor.__mul__.1.forward", "Tensor.__add__.1.forward",
                                  "Module.block.gate_proj.Linear.forward.0", "Functional.linear.2.forward",
                                  "Module.block.down_proj.Linear.forward.0"}, set_aside
        assert set_aside["Module.block.gate_proj.Linear.forward.0"] == [
            f"Module.block.gate_proj.Linear.forward.0.output.0: {forms.FORM_INSIDE} (Functional.silu.0.forward)"]
    else:  # the summary says what it set aside
        notes = [n["text"] for n in summary.get("notes", ())]
        assert notes == [
            f"9 rows differ from the golden run only in form (4 {forms.FORM_SWAPPED}; 1 {forms.FORM_INSIDE}; "
            f"4 {forms.FORM_RESHAPED}), 8 of them error rows: not taken as divergences "
            "(docs/scenarios/first-divergence.md, differences of form)"], notes


@pytest.mark.parametrize("extra", [(), ("-da",)])
def test_fault_is_the_first_divergence(run_cli, tmp_path: Path, extra: tuple[str, ...]) -> None:
    summary, _ = _run(run_cli, tmp_path, "fault", *extra)
    first = _first(summary)
    assert first is not None and first["node"] == "Tensor.__add__.0.forward", first


@pytest.mark.parametrize("extra", [(), ("-da",)])
def test_hidden_units_reordered_by_a_converter_are_no_divergence(run_cli, tmp_path: Path,
                                                                 extra: tuple[str, ...]) -> None:
    """Tensor mode: the golden block against itself with its MLP's hidden units reordered (gate and up rows,
    down columns). 19 rows hold the same values in another order (Cosine about 0); the block's output agrees."""
    summary, _ = _run(run_cli, tmp_path, "permuted_tensor", *extra, golden="golden_tensor")
    assert _first(summary) is None, summary
    if not extra:
        assert [n["text"] for n in summary["notes"]] == [
            f"19 rows differ from the golden run only in form (19 {forms.FORM_PERMUTED}): not taken as divergences "
            "(docs/scenarios/first-divergence.md, differences of form)"]


@pytest.mark.parametrize("extra", [(), ("-da",)])
def test_a_reordering_that_changes_the_math_is_found_where_it_shows(run_cli, tmp_path: Path,
                                                                     extra: tuple[str, ...]) -> None:
    """Only the gate rows reordered (a converter's fault): gate and up no longer pair, and the product of
    the two, whose inputs hold the same values each, is the first divergence."""
    summary, _ = _run(run_cli, tmp_path, "misordered_tensor", *extra, golden="golden_tensor")
    first = _first(summary)
    assert first is not None and first["row"] == "Tensor.__mul__.2.forward.output.0", first


def test_the_table_keeps_msprobes_cells(run_cli, tmp_path: Path) -> None:
    """The judgement changes no cell: the swapped operands' rows are still compared slot by slot."""
    _, out = _run(run_cli, tmp_path, "target")
    table = next(out.glob("compare_result*.csv"))
    rows = {r["NPU Name"]: r for r in csv.DictReader(table.open(encoding="utf-8"))}
    row = rows["Tensor.__add__.1.forward.input.0"]
    assert row["NPU max"] != row["Bench max"]


def test_lm_accepts_an_optimizer_parent(run_cli, tmp_path: Path) -> None:
    """msprobe's dumper records the optimizer's calls under the parent ``optimizer`` (a real PyTorch dump's
    construct.json, corpora ``pytorch/c05``: ``"optimizer": null``, ``"Tensor.add_.0.forward": "optimizer"``);
    ``-lm`` reads it as msprobe 26.2.0 does (no scope) instead of refusing the dump: the data mapping is still
    msprobe's own (the oracle's ``data_mapping.yaml``) and the table the one of the dump without the call."""
    case = IN_REPO_CORPUS / "mindspore" / "x_l0_tensor_lm"
    work = tmp_path / "case"
    shutil.copytree(case, work)
    target = next((work / "target").rglob("dump.json"))
    golden = next((work / "golden").rglob("dump.json"))
    plain = tmp_path / "plain"
    proc = run_cli("compare", "-tp", target, "-gp", golden, "-o", plain, "-lm", work / "layer_mapping.yaml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(golden.read_text(encoding="utf-8"))
    first = next(iter(doc["data"].values()))
    tensors = golden.parent / "dump_tensor_data"
    leaves = {}
    for state in ("input", "output"):  # the optimizer's in-place add, its tensors files of their own
        leaf = dict(first["output"][0], data_name=f"Tensor.add_.0.forward.{state}.0.pt")
        shutil.copy(tensors / first["output"][0]["data_name"], tensors / leaf["data_name"])
        leaves[state] = leaf
    doc["data"]["Tensor.add_.0.forward"] = {"input_args": [leaves["input"]], "input_kwargs": {},
                                           "output": [leaves["output"]]}
    golden.write_text(json.dumps(doc), encoding="utf-8")
    construct_path = golden.parent / "construct.json"
    construct = json.loads(construct_path.read_text(encoding="utf-8"))
    construct.update({"optimizer": None, "Tensor.add_.0.forward": "optimizer"})
    construct_path.write_text(json.dumps(construct), encoding="utf-8")
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", target, "-gp", golden, "-o", out, "-lm", work / "layer_mapping.yaml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    mapping = next(out.glob("data_mapping_*.yaml")).read_text(encoding="utf-8")
    assert mapping == (case / "oracle" / "lm_yaml" / "data_mapping.yaml").read_text(encoding="utf-8")
    table = next(out.glob("compare_result*.csv")).read_bytes()
    assert table == next(plain.glob("compare_result*.csv")).read_bytes()


IMPLS = Path(__file__).parent / "data" / "impls" / "dumps"


def test_a_number_argument_equal_up_to_rounding_is_no_divergence_and_a_real_one_is(run_cli, tmp_path: Path) -> None:
    """litgpt writes sdpa's scale out (0.35355339059327373), HF's call computes it (…76): msprobe's "scalar
    parameters inconsistent" error row between one program and itself; between two programs (--auto-map) no
    error and not where the runs part. c06b's 1.0 against 0.354 still is."""
    summary = tmp_path / "s.json"
    proc = run_cli("compare", "-tp", IMPLS / "neox_litgpt_mix/dump.json", "-gp", IMPLS / "neox_hf_mix/dump.json",
                   "-o", tmp_path / "o", "--auto-map", "--json-summary", summary)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(summary.read_text())
    first = doc["first_divergence"]
    assert not first or "scaled_dot_product_attention" not in first["node"]
    assert doc["verdicts"]["error"] == 0
    assert not forms.stats_agree([1.0] * 4, [0.35355339059327373] * 4, forms.SCALAR_RTOL)
    assert forms.stats_agree([0.35355339059327373] * 4, [0.35355339059327376] * 4, forms.SCALAR_RTOL)
    assert not forms.stats_agree([1e-6] * 4, [1.000001e-6] * 4, forms.SCALAR_RTOL)  # an eps changed is real
