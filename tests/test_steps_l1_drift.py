"""Step 1 of a two-step L1 run: the weights step 0's update moved are named at their first use, carried from step 0.

Real dumps (``tests/data/steps_l1_drift``, mindstudio-probe 26.2.0's dumper, TinyNet at L1): the target's step-0
SGD update runs with another learning rate. An L1 dump has no ``parameters`` rows, so the weight is an input of the
call that uses it: step 1's first differing row is ``Functional.embedding.0.forward.input.1`` (the embedding's
weight, 0.014 %), while the first row past a threshold is ``Functional.linear.0``'s bias (3.7 %).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DRIFT = REPO / "tests" / "data" / "steps_l1_drift"


def _run(run_cli, tmp_path: Path, *extra: str, env: dict | None = None):
    summary_file = tmp_path / "s.json"
    proc = run_cli("compare", "-tp", DRIFT / "target", "-gp", DRIFT / "golden", "-o", tmp_path / "out",
                   "--json-summary", summary_file, *extra, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, json.loads(summary_file.read_text())


@pytest.mark.parametrize("chunk_rows", [None, "7"])
def test_step1_names_the_drifted_weights_first_use(tmp_path, run_cli, chunk_rows):
    env = {"MSPROBE_CHUNK_ROWS": chunk_rows} if chunk_rows else None
    proc, summary = _run(run_cli, tmp_path, env=env)
    step0, step1 = summary["steps"]
    # step 0 differs in the update alone: its own first divergence is the optimizer's, no note
    assert step0["first_divergence"]["node"] == "Tensor.add_.0.forward" and "carried" not in step0["first_divergence"]
    fd = step1["first_divergence"]
    assert fd["node"] == "Functional.embedding.0.forward"
    assert fd["row"] == "Functional.embedding.0.forward.input.1" and fd["golden_row"] == fd["row"]
    assert fd["source"] == "drift" and fd["carried_from"] == "step0"
    assert "carried from step0's update" in fd["carried"]
    assert fd["past_threshold"]["row"] == "Functional.linear.0.forward.input.2"
    assert fd["index"] < fd["past_threshold"]["index"]
    assert step1["ranks"][0]["first_divergence"]["node"] == "Functional.embedding.0.forward"
    # the console's step line says the same
    line = next(ln for ln in proc.stdout.splitlines() if ln.strip().startswith("step1 "))
    assert "first divergence Functional.embedding.0.forward (a weight or state already differs" in line
    assert "carried from step0's update" in line and "Functional.linear.0.forward.input.2" in line
    # the run's first divergence is still step 0's own
    assert summary["first_divergence"]["rank"] == "step0/proc0"


def test_step1_alone_is_the_run_and_names_it_too(tmp_path, run_cli):
    """Only step 1 diverges past a threshold once step 0 is left out... but then step 1 is the first step compared:
    like a ``parameters`` row, nothing is said to be carried from a step the run did not compare."""
    _, summary = _run(run_cli, tmp_path, "--step", "1")
    (step1,) = summary["steps"]
    assert step1["first_divergence"]["node"] == "Functional.linear.0.forward"
    assert "carried" not in step1["first_divergence"]


def test_a_step_whose_first_difference_is_computed_is_not_carried():
    """The first differing row is an output (the step computed the difference): no note, the thresholds' answer."""
    from msprobe_core.default_plugins.summary.accumulate import view_partial
    from msprobe_core.default_plugins.summary.steps_view import carried_drift
    from msprobe_core.default_plugins.summary.views import ResultView

    names = ["Functional.linear.0.forward.input.0", "Functional.linear.0.forward.output.0"]
    cells = {"NPU Name": names, "Bench Name": names, "NormRelativeErr": ["0", "5%"], "L2norm diff": ["0", "1"],
             "Max diff": ["0", "1"], "Min diff": ["0", "0"], "Mean diff": ["0", "0.1"],
             "Result": ["pass", "pass"], "Err_message": ["", ""]}
    view = ResultView("step1/rank0", "statistics", list(cells), cells, [], ("pytorch", "pytorch"), None, None)
    partial = view_partial(view)
    assert partial.drift.found.row == names[1]
    assert carried_drift(partial, "step1", "step0") == (None, {})


def test_da_says_the_difference_was_carried_from_step0(tmp_path, run_cli):
    _, summary = _run(run_cli, tmp_path, "-da")
    step0, step1 = summary["steps"]
    (answer,) = list((tmp_path / "out" / "step1").glob("diff_analyze_*.json"))
    finding = json.loads(answer.read_text())["rank_0"][0]
    assert finding["op_name"] == "Functional.embedding.0.forward" and finding["role"] == "cause"
    assert finding["row"] == "Functional.embedding.0.forward.input.1"
    assert "the difference was carried from step0" in finding["reason"]
    assert step1["first_divergence"]["node"] == "Functional.embedding.0.forward"
    assert "carried from step0" in step1["first_divergence"]["reason"]
    # step 0's own analysis says nothing of the kind
    (first,) = list((tmp_path / "out" / "step0").glob("diff_analyze_*.json"))
    assert "carried from" not in first.read_text()


def test_the_drift_scan_survives_pickling_empty_and_found():
    """A partial crosses processes pickled (a rank's worker, a chunk worker): the scan comes back as it went."""
    import pickle

    from msprobe_core.default_plugins.summary.divergence import Divergence
    from msprobe_core.default_plugins.summary.drift import DriftScan

    empty = pickle.loads(pickle.dumps(DriftScan()))
    assert empty.found is None
    scan = DriftScan()
    scan.found = Divergence("Functional.embedding.0.forward", "Functional.embedding.0.forward.input.1", "", 1, "x")
    assert pickle.loads(pickle.dumps(scan)).found == scan.found


def _stats_view(label: str, rows: list[tuple[str, str]]):
    """A statistics result of ``(name, NormRelativeErr)`` rows (the diff cells follow the error: 0 or not)."""
    from msprobe_core.default_plugins.summary.views import ResultView

    names = [n for n, _ in rows]
    diff = ["0" if e == "0" else "0.5" for _, e in rows]
    cells = {"NPU Name": names, "Bench Name": names, "NormRelativeErr": [e for _, e in rows], "L2norm diff": diff,
             "Max diff": diff, "Min diff": ["0"] * len(rows), "Mean diff": diff, "Result": ["pass"] * len(rows),
             "Err_message": [""] * len(rows)}
    return ResultView(label, "statistics", list(cells), cells, [], ("pytorch", "pytorch"), None, None)


def test_the_runs_first_divergence_in_a_later_step_is_the_carried_one():
    """Step 0 has no divergence: the run's first divergence is step 1's, named at the drifted weight's first use."""
    from msprobe_core.default_plugins.summary.summary import summarize

    step0 = _stats_view("step0/rank0", [("Functional.linear.0.forward.input.0", "0"),
                                        ("Functional.linear.0.forward.output.0", "0")])
    step1 = _stats_view("step1/rank0", [("Functional.embedding.0.forward.input.0", "0"),
                                        ("Functional.embedding.0.forward.input.1", "0.01%"),
                                        ("Functional.embedding.0.forward.output.0", "0.01%"),
                                        ("Functional.linear.0.forward.input.0", "0.01%"),
                                        ("Functional.linear.0.forward.input.1", "5%"),
                                        ("Functional.linear.0.forward.output.0", "5%")])
    summary = summarize([step0, step1])
    fd = summary["first_divergence"]
    assert fd["node"] == "Functional.embedding.0.forward" and fd["carried_from"] == "step0"
    assert fd["past_threshold"]["row"] == "Functional.linear.0.forward.input.1"
    assert "verdict" not in fd
