"""``--auto-map`` between two independent implementations of one model, on real msprobe dumps.

``impl_hf_*`` and ``impl_lit_*`` (tests/data/automap, ``gen/gen_impl.py``) are one tiny Llama written the Hugging
Face way and the litgpt way, weights converted, logits equal: other module names, an extra ``embedding``
container, q/k/v fused in one Linear on one side, an RMSNorm the dumper records as six calls on one side and not
at all on the other (``F.rms_norm``), blocks called by keyword on one side and positionally on the other, and
an optimizer holding the parameters in another order. ``impl_litwrong_*`` converts one square weight
transposed. The true pairing of modules and optimizer updates is known by construction
(:func:`tests.automap_truth.impl_truth`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import msprobe_core
from msprobe_core.default_plugins.automap.automap import UNPAIRED
from msprobe_core.match.data_mapping import load_data_mapping

from .automap_truth import DUMPS, impl_judged, impl_truth, score

#: the issue's targets on real implementation pairs
PRECISION, RECALL = 0.97, 0.95


def _dump(name: str) -> Path:
    return DUMPS / name / "dump.json"


def _auto_map(target: str, golden: str, out: Path) -> tuple[object, Path]:
    result = msprobe_core.compare(_dump(target), _dump(golden), output_dir=out, auto_map=True, quiet=True)
    (mapping,) = out.glob("auto_mapping_*.yaml")
    return result, mapping


def _header(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("# ")]


@pytest.mark.parametrize("level", ["L0", "mix"])
@pytest.mark.parametrize("variant", ["lit", "litwrong"])
def test_modules_and_optimizer_updates_score_against_the_truth(variant, level, tmp_path):
    _, path = _auto_map(f"impl_{variant}_{level}", f"impl_hf_{level}", tmp_path)
    proposed = {t: g for t, g in load_data_mapping(path).items() if g != UNPAIRED}
    precision, recall = score(impl_judged(proposed, variant, level), impl_truth(variant, level))
    assert precision >= PRECISION and recall >= RECALL, (precision, recall)


@pytest.mark.parametrize("level", ["L0", "mix"])
def test_the_clean_pair_has_no_error_row(level, tmp_path):
    result, _ = _auto_map(f"impl_lit_{level}", f"impl_hf_{level}", tmp_path)
    assert result.summary["verdicts"]["error"] == 0
    if level == "L0":  # at mix the residual adds' operands come in the other order (a difference of form)
        assert result.first_divergence is None


def test_the_transposed_weight_is_the_first_divergence(tmp_path):
    # a square weight transposed has the statistics of the right one: only the module's output shows it
    result, _ = _auto_map("impl_litwrong_L0", "impl_hf_L0", tmp_path)
    assert result.first_divergence["node"] == "Module.h.1.mlp.proj.Linear.forward.0"


@pytest.mark.parametrize("level", ["L0", "mix"])
def test_the_extra_container_pairs_with_nothing(level, tmp_path):
    # litgpt's ``embedding`` holds the token embedding only; HF's ``model`` holds it and every layer
    _, path = _auto_map(f"impl_lit_{level}", f"impl_hf_{level}", tmp_path)
    mapping = load_data_mapping(path)
    assert not [g for t, g in mapping.items() if "TokenEmbedding" in t and g != UNPAIRED]
    assert not [t for t, g in mapping.items() if "LlamaModel" in g]
    assert any(line.startswith("# unpaired: target Module.embedding.TokenEmbedding") for line in _header(path))


@pytest.mark.parametrize("level", ["L0", "mix"])
def test_blocks_called_positionally_pair_with_layers_called_by_keyword(level, tmp_path):
    # HF's layers and attentions also take ``attention_mask=None``: their inputs differ from litgpt's in number,
    # and the attention holds the fused qkv, whose partners are q, k and v (a 1→N relation, no pair)
    _, path = _auto_map(f"impl_lit_{level}", f"impl_hf_{level}", tmp_path)
    mapping = load_data_mapping(path)
    for n in (0, 1):
        block, layer = f"Module.h.{n}.Block.forward.0", f"Module.model.layers.{n}.LlamaDecoderLayer.forward.0"
        assert mapping[f"{block}.input.0"] == f"{layer}.input.hidden_states"
        assert mapping[f"{block}.input.2"] == f"{layer}.input.position_embeddings.1"
        assert mapping[f"{block}.output.0"] == f"{layer}.output.0"
        attn = f"Module.h.{n}.attn.CausalSelfAttention.forward.0.input.1"
        assert mapping[attn] == f"Module.model.layers.{n}.self_attn.LlamaAttention.forward.0.input.position_embeddings.0"


def test_a_norm_one_side_does_not_record_inside_pairs_by_its_weight(tmp_path):
    # at mix HF's RMSNorm is six recorded calls, litgpt's one F.rms_norm the dumper does not record
    _, path = _auto_map("impl_lit_mix", "impl_hf_mix", tmp_path)
    mapping = load_data_mapping(path)
    assert mapping["Module.h.1.norm_2.RMSNorm.forward.0.output.0"] == \
        "Module.model.layers.1.post_attention_layernorm.LlamaRMSNorm.forward.0.output.0"
    assert mapping["Module.ln_f.RMSNorm.forward.0.parameters.weight"] == \
        "Module.model.norm.LlamaRMSNorm.forward.0.parameters.weight"
    inside = [line for line in _header(path) if line.startswith("# unpaired: golden Torch.rsqrt.")]
    assert len(inside) == 5 and all("records no call inside it" in line for line in inside)


def test_optimizer_updates_pair_by_the_parameter_they_update(tmp_path):
    # litgpt's optimizer holds lm_head first, HF's last (the 21st of 21 parameters)
    _, path = _auto_map("impl_lit_mix", "impl_hf_mix", tmp_path)
    mapping = load_data_mapping(path)
    assert mapping["Tensor.addcdiv_.0.forward.input.0"] == "Tensor.addcdiv_.20.forward.input.0"
    assert mapping["Tensor.lerp_.1.forward.input.1"] == "Tensor.lerp_.0.forward.input.1"  # the embedding
    text = path.read_text(encoding="utf-8")
    assert "optimizer update of Module.lm_head.Linear.weight (golden Module.lm_head.Linear.weight)" in text
    # the fused qkv's updates have no counterpart: unpaired, with the reason
    assert "# unpaired: target Tensor.addcdiv_.3.forward: an optimizer update of a parameter with no counterpart" \
        in text


def test_fused_qkv_is_named_one_to_three_across_the_calls_between(tmp_path):
    _, path = _auto_map("impl_lit_mix", "impl_hf_mix", tmp_path)
    relations = [line for line in _header(path) if line.startswith("# 1→N")]
    assert len(relations) == 4  # the linear call and its module, in each of two layers
    assert any("attn.qkv.Linear" in r and "q_proj" in r and "k_proj" in r and "v_proj" in r for r in relations)


def test_modules_that_pair_by_their_weights_give_a_partial_proposal_not_a_refusal(tmp_path):
    # a mix dump against a module-level one: almost no call pairs, every module owning parameters does
    run = subprocess.run([sys.executable, "-m", "msprobe_core", "compare", "-tp", str(_dump("impl_hf_mix")),
                          "-gp", str(_dump("impl_lit_L0")), "-o", str(tmp_path), "--auto-map"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "a partial proposal" in run.stdout + run.stderr
    (path,) = tmp_path.glob("auto_mapping_*.yaml")
    assert load_data_mapping(path)["Module.model.layers.0.mlp.down_proj.Linear.forward.0.output.0"] == \
        "Module.h.0.mlp.proj.Linear.forward.0.output.0"


def test_calls_with_no_numeric_effect_are_listed_as_such(tmp_path):
    # the MindSpore twin reshapes and swaps axes where the PyTorch golden does not
    _, path = _auto_map("ms_mix", "golden_mix", tmp_path)
    unpaired = [line for line in _header(path) if line.startswith("# unpaired: target")]
    assert len(unpaired) == 3 and all("no numeric effect" in line for line in unpaired)
    assert any("Tensor.reshape.0" in line for line in unpaired)


def test_parameters_named_otherwise_pair_by_their_place_and_shape(tmp_path):
    # ``impl_tt``: torchtune's RMSNorm calls its parameter ``scale``, Hugging Face's ``weight``
    _, path = _auto_map("impl_tt_L0", "impl_hf_L0", tmp_path)
    mapping = load_data_mapping(path)
    norm, hf_norm = "Module.ln_f.RMSNorm", "Module.model.norm.LlamaRMSNorm"
    assert mapping[f"{norm}.forward.0.parameters.scale"] == f"{hf_norm}.forward.0.parameters.weight"
    assert mapping[f"{norm}.parameters_grad.0.scale"] == f"{hf_norm}.parameters_grad.0.weight"
