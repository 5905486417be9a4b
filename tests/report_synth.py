"""Synthetic compare results of any size, for report load-time tests (written as msprobe's CSV)."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

from msprobe_core.result import result_columns

_APIS = ["Functional.linear", "Torch.matmul", "Functional.softmax", "Tensor.__add__", "Functional.layer_norm",
         "Functional.gelu", "Tensor.__mul__", "Torch.cat", "Functional.dropout", "Tensor.view"]


def write_synthetic_result(path: Path, rows: int = 100_000, *, seed: int = 0, diverge_at: float = 0.6) -> Path:
    """A tensor-mode result of ``rows`` rows with stacks, forward then backward; error grows after ``diverge_at``.

    Returns ``path``. The row at ``int(rows * diverge_at)`` (an output row) is the first
    with an ``error`` verdict.
    """
    rnd = random.Random(seed)
    columns = result_columns("tensor", True)
    first_bad = int(rows * diverge_at)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(columns)
        i = call = 0
        counters: dict[str, int] = {}
        while i < rows:
            api = _APIS[call % len(_APIS)]
            direction = "forward" if i < rows * 0.55 else "backward"
            n = counters.get(api + direction, 0)
            counters[api + direction] = n + 1
            key = f"{api}.{n}.{direction}"
            stack = json.dumps([f"File /home/user/model/layer_{call % 97}.py, line {call % 500}, in forward, \n x = {api}(x)",
                                "File /opt/torch/nn/modules/module.py, line 1789, in _call_impl"])
            for j, state in enumerate(("input.0", "input.1", "output.0")):
                if i >= rows:
                    break
                name = f"{key}.{state}"
                bad = i >= first_bad
                if i == first_bad:
                    cos, mre, result, msg = 0.5, 3.0, "error", '["error: The dtype of NPU and Bench are inconsistent."]'
                elif bad:
                    cos = 1 - rnd.random() * 0.2
                    mre = rnd.random() * 2
                    result = "warning" if rnd.random() < 0.1 else "pass"
                    msg = "[]"
                else:
                    cos, mre, result, msg = 1.0, 0.0, "pass", "[]"
                mx, mn = rnd.uniform(1, 5), rnd.uniform(-5, -1)
                w.writerow([
                    name, name, "torch.float32", "torch.float32", "[2, 8, 32]", "[2, 8, 32]", "True", "True",
                    repr(cos), repr(rnd.random() if bad else 0.0), repr(mre / 10), repr(mre),
                    repr(1.0 if not bad else rnd.random()), repr(1.0 if not bad else rnd.random()),
                    repr(mx), repr(mn), repr(rnd.uniform(-0.1, 0.1)), repr(rnd.uniform(10, 30)),
                    repr(mx), repr(mn), repr(rnd.uniform(-0.1, 0.1)), repr(rnd.uniform(10, 30)),
                    "True", result, msg, stack if j == 0 else "N/A",
                    str([f"{name}.pt", f"{name}.pt"]),
                ])
                i += 1
            call += 1
    return path
