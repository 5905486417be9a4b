"""The example plugin under examples/plugins/ installs into the venv and works through the hooks."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .dumps import only_result

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "examples" / "plugins" / "msprobe_example_plugin"
STATS = REPO / "examples" / "pytorch_stats"
TENSOR = REPO / "examples" / "pytorch_tensor"


def _clean_build_dirs() -> None:
    shutil.rmtree(PLUGIN / "build", ignore_errors=True)
    for egg in PLUGIN.glob("*.egg-info"):
        shutil.rmtree(egg, ignore_errors=True)


@pytest.fixture(scope="module")
def example_plugin() -> None:
    """``pip install examples/plugins/msprobe_example_plugin`` into this interpreter's environment."""
    base = [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--disable-pip-version-check", str(PLUGIN)]
    try:
        # offline first (needs setuptools and wheel in the venv), then with pip's isolated build
        proc = subprocess.run([*base, "--no-build-isolation", "--no-index"], capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            proc = subprocess.run(base, capture_output=True, text=True, timeout=600)
    finally:
        _clean_build_dirs()
    if proc.returncode != 0:
        pytest.skip(f"cannot pip-install the example plugin here: {proc.stderr.strip().splitlines()[-1:]}")


def _read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


def test_listed_by_msprobe_plugins(example_plugin, run_cli):
    proc = run_cli("plugins")
    assert proc.returncode == 0
    plugins = {p["name"]: p for p in json.loads(proc.stdout)}
    assert plugins["example"]["distribution"] == "msprobe-example-plugin"
    assert plugins["example"]["hooks"] == ["msprobe_register_metrics", "msprobe_register_writers"]


def test_json_writer(example_plugin, run_cli, tmp_path):
    args = ["compare", "-tp", STATS / "target/step0", "-gp", STATS / "golden/step0", "-q"]
    assert run_cli(*args, "-o", tmp_path / "csv").returncode == 0
    proc = run_cli(*args, "-o", tmp_path / "json", "--output_format", "json", "--json-summary", tmp_path / "s.json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(only_result(tmp_path / "json", ".json").read_text())
    header, rows = _read_csv(only_result(tmp_path / "csv"))
    assert doc["mode"] == "statistics" and doc["columns"] == header
    assert len(doc["rows"]) == len(rows)
    assert [r[0] for r in doc["rows"]] == [r[0] for r in rows]
    assert not list((tmp_path / "json").glob("*.part"))
    summary = json.loads((tmp_path / "s.json").read_text())  # the summary works with any writer
    assert summary["rows"] == len(rows) and summary["first_divergence"]["node"] == "Functional.linear.0.forward"


def test_output_format_errors(example_plugin, run_cli, tmp_path):
    args = ["compare", "-tp", STATS / "target/step0", "-gp", STATS / "golden/step0", "-o", tmp_path / "o"]
    proc = run_cli(*args, "--output_format", "parquet")
    assert proc.returncode == 2 and "unknown output format 'parquet'" in proc.stderr and "json" in proc.stderr
    proc = run_cli(*args, "--output_format", "json", "--xlsx")
    assert proc.returncode == 2 and "different result formats" in proc.stderr
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").iterdir())


def test_extra_tensor_metric(example_plugin, run_cli, tmp_path):
    from msprobe_pytorch.pt_reader import read_pt

    args = ["compare", "-tp", TENSOR / "target/step0", "-gp", TENSOR / "golden/step0", "-q"]
    plain = run_cli(*args, "-o", tmp_path / "plain")
    assert plain.returncode == 0
    assert "MeanAbsErr" not in _read_csv(only_result(tmp_path / "plain"))[0]  # opt-in: tables unchanged
    proc = run_cli(*args, "-o", tmp_path / "metric", env={"MSPROBE_EXAMPLE_METRIC": "1"})
    assert proc.returncode == 0, proc.stderr
    header, rows = _read_csv(only_result(tmp_path / "metric"))
    k = header.index("MeanAbsErr")
    assert header[k - 1] == "Five Thousandths Err Ratio"
    checked = 0
    for row in rows:
        names = row[header.index("Data_name")].strip("[]").replace("'", "").split(", ")
        if names[0] == "-1" or row[header.index("Cosine")] in ("unsupported", "shape unmatched"):
            continue
        npu = np.asarray(read_pt(TENSOR / "target/step0/rank0/dump_tensor_data" / names[0]), dtype=np.float64)
        bench = np.asarray(read_pt(TENSOR / "golden/step0/rank0/dump_tensor_data" / names[1]), dtype=np.float64)
        with np.errstate(invalid="ignore"):
            expected = float(np.mean(np.abs(npu.reshape(-1) - bench.reshape(-1))))
        if np.isfinite(expected):
            assert float(row[k]) == pytest.approx(expected, rel=1e-9, abs=1e-12), row[0]
        else:  # -inf vs -inf (masked scores): the metric says Nan
            assert row[k] == "Nan", row[0]
        checked += 1
    assert checked > 100
    # the other columns are the same as without the plugin
    p_header, p_rows = _read_csv(only_result(tmp_path / "plain"))
    assert [c for c in header if c != "MeanAbsErr"] == p_header
    assert [r[:k] + r[k + 1 :] for r in rows] == p_rows
