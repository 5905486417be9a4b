"""``--auto-map`` on a sum two programs group otherwise: ``(b + a) + x`` against ``b + (a + x)``.

Two small statistics dumps written here from real float32 arithmetic (numpy): an embedding ``x``, two linear
calls ``a`` and ``b`` on it, and a three-term sum of them that the target computes as ``b + (a + x)`` (two add
calls) and the golden as ``(b + a) + x`` (as litgpt's and Hugging Face's parallel residual blocks do). The
whole sums agree up to rounding; the partial sums ``a + x`` and ``b + a`` are no two values of one computation.
The implementations pairs (tests/test_impls_corpus.py) check the same on real libraries.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

import msprobe_core
from msprobe_core.default_plugins.automap.automap import UNPAIRED
from msprobe_core.default_plugins.automap.automap_sums import PARTIAL_SUM
from msprobe_core.match.data_mapping import load_data_mapping


def _tensor(x: np.ndarray) -> dict:
    x = x.astype(np.float32)
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": list(x.shape), "Max": float(x.max()),
            "Min": float(x.min()), "Mean": float(x.mean()), "Norm": float(np.linalg.norm(x)), "requires_grad": True}


def _ids(ids: np.ndarray) -> dict:
    return {"type": "torch.Tensor", "dtype": "torch.int64", "shape": list(ids.shape), "Max": int(ids.max()),
            "Min": int(ids.min()), "Mean": None, "Norm": None, "requires_grad": False}


def _call(*inputs: dict, out: np.ndarray, **kwargs: dict) -> dict:
    return {"input_args": list(inputs), "input_kwargs": kwargs, "output": [_tensor(out)]}


#: one number computed two ways, as litgpt (``1.0 / math.sqrt(head_size)``) and Hugging Face (``head_dim**-0.5``)
#: give attention its scale: the same number but for the last bit
SCALE_TARGET, SCALE_GOLDEN = 1.0 / math.sqrt(2), 2**-0.5


def _write(folder: Path, data: dict) -> Path:
    folder.mkdir(parents=True)
    (folder / "dump.json").write_text(json.dumps({"task": "statistics", "level": "L1", "framework": "pytorch",
                                                  "dump_data_dir": None, "data": data}))
    (folder / "construct.json").write_text("{}")
    return folder / "dump.json"


def _dumps(tmp: Path, fault: float = 1.0) -> tuple[Path, Path]:
    """(target, golden): the target groups the sum ``b + (a + x)``, the golden ``(b + a) + x``; ``fault`` scales
    the target's second linear weight (1.0: none)."""
    rng = np.random.default_rng(30)
    emb = rng.standard_normal((16, 8)).astype(np.float32)
    w1, w2, w3 = (rng.standard_normal((8, 8)).astype(np.float32) * 0.3 for _ in range(3))
    ids = np.array([[1, 5, 7, 2], [3, 3, 9, 0]])
    x = emb[ids]

    def program(reassociated: bool, scale: float) -> dict:
        w2s = (w2 * np.float32(scale)).astype(np.float32)
        a, b = x @ w1.T, x @ w2s.T
        data = {"Functional.embedding.0.forward": _call(_ids(ids), _tensor(emb), out=x),
                "Functional.linear.0.forward": _call(_tensor(x), _tensor(w1), out=a),
                "Functional.linear.1.forward": _call(_tensor(x), _tensor(w2s), out=b)}
        if reassociated:  # b + (a + x)
            partial = a + x
            data["Tensor.__add__.0.forward"] = _call(_tensor(a), _tensor(x), out=partial)
            total = b + partial
            data["Tensor.__add__.1.forward"] = _call(_tensor(b), _tensor(partial), out=total)
        else:  # (b + a) + x
            partial = b + a
            data["Tensor.__add__.0.forward"] = _call(_tensor(b), _tensor(a), out=partial)
            total = partial + x
            data["Tensor.__add__.1.forward"] = _call(_tensor(partial), _tensor(x), out=total)
        scale = SCALE_TARGET if reassociated else SCALE_GOLDEN
        data["Functional.linear.2.forward"] = _call(_tensor(total), _tensor(w3), out=total @ w3.T * np.float32(scale),
                                                    scale={"type": "float", "value": scale})
        return data

    return _write(tmp / "target", program(True, fault)), _write(tmp / "golden", program(False, 1.0))


def _compare(tmp: Path, fault: float = 1.0, diff_analyze: bool = False):
    target, golden = _dumps(tmp, fault)
    result = msprobe_core.compare(target, golden, output_dir=tmp / "out", auto_map=True,
                                  diff_analyze=diff_analyze, quiet=True)
    (path,) = (tmp / "out").glob("auto_mapping_*.yaml")
    return result, path


@pytest.mark.parametrize("diff_analyze", [False, True])
def test_a_sum_grouped_otherwise_is_no_divergence(tmp_path, diff_analyze):
    result, _ = _compare(tmp_path, diff_analyze=diff_analyze)
    assert result.first_divergence is None
    assert result.summary["verdicts"].get("error", 0) == 0


def test_the_whole_sums_pair_their_outputs_and_the_partial_sums_are_named_not_comparable(tmp_path):
    _, path = _compare(tmp_path)
    mapping = load_data_mapping(path)
    assert mapping["Tensor.__add__.1.forward.output.0"] == "Tensor.__add__.1.forward.output.0"
    # operands: b against b + a, a + x against x: other partial sums, left out (not paired with their namesakes)
    assert mapping["Tensor.__add__.1.forward.input.0"] == UNPAIRED
    assert mapping["Tensor.__add__.1.forward.input.1"] == UNPAIRED
    assert all(mapping[f"Tensor.__add__.0.forward.{r}"] == UNPAIRED for r in ("input.0", "input.1", "output.0"))
    text = path.read_text(encoding="utf-8")
    assert f"# unpaired: target Tensor.__add__.0.forward: {PARTIAL_SUM}" in text
    assert f"# unpaired: golden Tensor.__add__.0.forward: {PARTIAL_SUM}" in text


@pytest.mark.parametrize("diff_analyze", [False, True])
def test_a_fault_feeding_the_sum_is_named_where_it_arises(tmp_path, diff_analyze):
    # the target's second weight × 1.5: statistics tie each operand to its producer within one dump only, so the
    # sum pairs as in the clean run and the first divergence is the linear call with the wrong weight
    result, _ = _compare(tmp_path, fault=1.5, diff_analyze=diff_analyze)
    assert result.first_divergence["node"] == "Functional.linear.1.forward"


def test_a_running_sum_over_a_long_loop_is_read_no_deeper_than_a_grouping(tmp_path):
    # 1,500 adds, each partial sum taken only by the next: a tree that deep is no grouping two libraries differ
    # by (it is left to the alignment), and reading it must neither recurse that deep nor take quadratic time
    x = np.linspace(-1.0, 1.0, 16, dtype=np.float32).reshape(2, 8)
    ids = np.array([[0, 1]])

    def program() -> dict:
        data = {"Functional.embedding.0.forward": _call(_ids(ids), _tensor(x), out=x)}
        total = x
        for k in range(1500):
            data[f"Tensor.__add__.{k}.forward"] = _call(_tensor(total), _tensor(x), out=total + x)
            total = total + x
        return data

    target, golden = _write(tmp_path / "target", program()), _write(tmp_path / "golden", program())
    result = msprobe_core.compare(target, golden, output_dir=tmp_path / "out", auto_map=True, quiet=True)
    assert result.first_divergence is None
    (path,) = (tmp_path / "out").glob("auto_mapping_*.yaml")
    mapping = load_data_mapping(path)
    assert mapping["Tensor.__add__.1499.forward.output.0"] == "Tensor.__add__.1499.forward.output.0"


def _rows(out: Path) -> dict[str, dict[str, str]]:
    (table,) = out.glob("compare_result_*.csv")
    return {r["NPU Name"]: r for r in csv.DictReader(table.open(encoding="utf-8"))}


def test_a_number_argument_equal_but_for_rounding_is_no_error_between_two_programs(tmp_path):
    # msprobe makes any scalar argument that differs an error; two libraries computing one number two ways
    # (the attention's scale) differ in the last bit: with --auto-map that row passes
    assert SCALE_TARGET != SCALE_GOLDEN and math.isclose(SCALE_TARGET, SCALE_GOLDEN, rel_tol=1e-15)
    row = "Functional.linear.2.forward.input.scale"
    _compare(tmp_path)
    assert _rows(tmp_path / "out")[row]["Result"] == "pass"
    # the same dumps compared by name, as msprobe compares one program with itself: its cell, an error
    target, golden = tmp_path / "target" / "dump.json", tmp_path / "golden" / "dump.json"
    msprobe_core.compare(target, golden, output_dir=tmp_path / "plain", quiet=True)
    plain = _rows(tmp_path / "plain")[row]
    assert plain["Result"] == "error" and "scalar parameters" in plain["Err_message"]


def test_a_number_argument_that_differs_more_stays_an_error_between_two_programs(tmp_path):
    target, golden = _dumps(tmp_path)
    doc = json.loads(target.read_text())
    doc["data"]["Functional.linear.2.forward"]["input_kwargs"]["scale"]["value"] = SCALE_GOLDEN * (1 + 1e-6)
    target.write_text(json.dumps(doc))
    msprobe_core.compare(target, golden, output_dir=tmp_path / "out", auto_map=True, quiet=True)
    assert _rows(tmp_path / "out")["Functional.linear.2.forward.input.scale"]["Result"] == "error"


@pytest.mark.parametrize("pair", ["synthetic", "neox"])
def test_the_written_mapping_given_back_with_dm_judges_as_the_run_that_wrote_it(pair, tmp_path):
    # the file says it pairs two programs: -dm with it judges the number argument as --auto-map did, byte for byte
    if pair == "synthetic":
        target, golden = _dumps(tmp_path)
    else:
        impls = Path(__file__).parent / "data" / "impls" / "dumps"
        target, golden = impls / "neox_litgpt_mix" / "dump.json", impls / "neox_hf_mix" / "dump.json"
    msprobe_core.compare(target, golden, output_dir=tmp_path / "auto", auto_map=True, quiet=True)
    (mapping,) = (tmp_path / "auto").glob("auto_mapping_*.yaml")
    again = msprobe_core.compare(target, golden, output_dir=tmp_path / "dm", data_mapping=str(mapping), quiet=True)
    assert again.summary["verdicts"].get("error", 0) == 0
    (first,) = (tmp_path / "auto").glob("compare_result_*.csv")
    (second,) = (tmp_path / "dm").glob("compare_result_*.csv")
    assert first.read_bytes() == second.read_bytes()
