"""A tensor metric that sees its row (``TensorMetricSpec(row_context=True)``): a real ULP-of-the-target's-dtype
metric, registered by a plugin module of this test, on the bundled real tensor-mode dump (``examples/pytorch_tensor``).

The plugin writes down the :class:`~msprobe_core.plugin.TensorRow` of every call (the workers' too), so the test
checks what the metric was handed against the result table's own name, dtype and shape cells, and its values
against the table's ``MaxAbsErr`` (no error: 0 ULPs; an error: more than 0; an integer dtype: no ULPs).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAIR = REPO / "examples" / "pytorch_tensor"

PLUGIN = textwrap.dedent('''
    import json
    import os

    import numpy as np

    from msprobe_core.plugin import TensorMetricSpec, hookimpl

    MANTISSA_BITS = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}


    def max_ulps(npu, bench, row):
        with open(os.environ["ULP_ROWS"], "a", encoding="utf-8") as fh:
            fh.write(json.dumps(vars(row)) + "\\n")
        bits = MANTISSA_BITS.get((row.target_dtype or "").rpartition(".")[2])
        if bits is None:
            return "N/A"
        npu, bench = npu.astype(np.float64).ravel(), bench.astype(np.float64).ravel()
        finite = np.isfinite(npu) & np.isfinite(bench)  # an inf or nan is no distance in ULPs
        if not finite.any():
            return "N/A"
        npu, bench = npu[finite], bench[finite]
        exponent = np.floor(np.log2(np.maximum(np.abs(bench), np.finfo(np.float64).tiny)))
        return float(np.max(np.abs(npu - bench) / np.exp2(exponent - bits)))


    def two_arguments(npu, bench):
        return float(np.size(npu))


    @hookimpl
    def msprobe_register_metrics(register):
        register(TensorMetricSpec("MaxULPs", max_ulps, row_context=True, worse="higher"))
        register(TensorMetricSpec("Elements", two_arguments))  # no row_context: called as before
''')


def test_a_tensor_metric_gets_its_rows_context_and_counts_ulps_of_the_target_dtype(tmp_path):
    (tmp_path / "ulp_plugin.py").write_text(PLUGIN, encoding="utf-8")
    rows_file = tmp_path / "rows.jsonl"
    env = {**os.environ, "MSPROBE_LOAD_PLUGINS": "ulp_plugin", "ULP_ROWS": str(rows_file),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "msprobe_core", "compare", "-tp", PAIR / "target" / "step0",
                           "-gp", PAIR / "golden" / "step0", "-o", tmp_path / "out"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    [table] = (tmp_path / "out").glob("compare_result_*.csv")
    with open(table, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    seen = {}
    for line in rows_file.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        seen[record["target_name"]] = record
    compared = [r for r in rows if r["MaxULPs"] not in ("unsupported",)]
    assert len(compared) >= 10 and set(seen) == {r["NPU Name"] for r in compared}
    floats = ints = 0
    for r in compared:
        ctx = seen[r["NPU Name"]]
        assert (ctx["golden_name"], ctx["target_dtype"], ctx["golden_dtype"]) == \
            (r["Bench Name"], r["NPU Dtype"], r["Bench Dtype"])
        assert (ctx["target_shape"], ctx["golden_shape"]) == (r["NPU Tensor Shape"], r["Bench Tensor Shape"])
        assert ctx["target_framework"] == ctx["golden_framework"] == "pytorch"
        assert float(r["Elements"]) >= 1  # the two-argument metric is called as it always was
        if not r["NPU Dtype"].startswith("torch.float"):
            assert r["MaxULPs"] == "N/A"
            ints += 1
            continue
        floats += 1
        ulps, abs_err = float(r["MaxULPs"]), float(r["MaxAbsErr"])
        if abs_err == abs_err:  # MaxAbsErr is nan where an inf or nan sits in the tensors; ULPs skip those
            assert (ulps == 0) == (abs_err == 0), r["NPU Name"]
    assert floats and ints  # the dump has both kinds of rows
