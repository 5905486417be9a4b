"""The example plugin under examples/plugins/ installs into the venv and works through the hooks."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .dumps import only_result
from .plugin_fixture import example_plugin  # noqa: F401  (the fixture)

pytestmark = pytest.mark.usefixtures("example_plugin")

REPO = Path(__file__).resolve().parents[1]
STATS = REPO / "examples" / "pytorch_stats"
TENSOR = REPO / "examples" / "pytorch_tensor"


def _read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


def test_listed_by_msprobe_plugins(run_cli):
    proc = run_cli("plugins", "--json")
    assert proc.returncode == 0
    plugins = {p["name"]: p for p in json.loads(proc.stdout)}
    assert plugins["example"]["distribution"] == "msprobe-example-plugin"
    assert plugins["example"]["hooks"] == ["msprobe_load_dump", "msprobe_register_commands", "msprobe_register_mappers", "msprobe_register_metrics",
                                           "msprobe_register_options", "msprobe_register_writers"]


def test_its_options_are_shown_by_compare_help_and_in_the_python_signature(run_cli):
    proc = run_cli("compare", "--help")
    assert proc.returncode == 0, proc.stderr
    section = proc.stdout.split("Options from msprobe-example-plugin:", 1)[1]
    assert "--mean_abs_err" in section and "--rename_target PATTERN=REPLACEMENT" in section
    assert "--mean_abs_err" not in proc.stdout.split("Options from", 1)[0]  # not among the core's
    script = ("import inspect, msprobe_core\n"
              "sig = inspect.signature(msprobe_core.compare)\n"
              "print(sig.parameters['mean_abs_err'].default, sig.parameters['rename_target'].kind.name)\n"
              "print('Options from msprobe-example-plugin:' in msprobe_core.compare.__doc__)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "KEYWORD_ONLY", "True"]


@pytest.mark.exercises_hooks("msprobe_register_writers")
def test_json_writer(run_cli, tmp_path):
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


def test_output_format_errors(run_cli, tmp_path):
    args = ["compare", "-tp", STATS / "target/step0", "-gp", STATS / "golden/step0", "-o", tmp_path / "o"]
    proc = run_cli(*args, "--output_format", "parquet")
    assert proc.returncode == 2 and "unknown output format 'parquet'" in proc.stderr and "json" in proc.stderr
    proc = run_cli(*args, "--output_format", "json", "--xlsx")
    assert proc.returncode == 2 and "different result formats" in proc.stderr
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").iterdir())


@pytest.mark.exercises_hooks("msprobe_register_metrics")
def test_extra_tensor_metric(run_cli, tmp_path):
    from msprobe_pytorch.pt_reader import read_pt

    args = ["compare", "-tp", TENSOR / "target/step0", "-gp", TENSOR / "golden/step0", "-q"]
    plain = run_cli(*args, "-o", tmp_path / "plain")
    assert plain.returncode == 0
    assert "MeanAbsErr" not in _read_csv(only_result(tmp_path / "plain"))[0]  # opt-in: tables unchanged
    proc = run_cli(*args, "-o", tmp_path / "metric", "--mean_abs_err")
    assert proc.returncode == 0, proc.stderr
    # -inf vs -inf (masked scores) make inf - inf: the metric says Nan in its cell, numpy says nothing on the console
    assert "RuntimeWarning" not in proc.stderr and "invalid value" not in proc.stderr, proc.stderr
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


@pytest.mark.exercises_hooks("msprobe_load_dump", "msprobe_register_commands")
def test_gzip_loader(run_cli, tmp_path):
    import gzip

    for side in ("target", "golden"):
        src = STATS / side / "step0" / "rank0"
        dst = tmp_path / side / "step0" / "rank0"
        dst.mkdir(parents=True)
        proc = run_cli("gzip-dump", src / "dump.json", dst / "dump.json")  # the plugin's own sub-command
        assert proc.returncode == 0, proc.stderr
        assert gzip.decompress((dst / "dump.json").read_bytes()) == (src / "dump.json").read_bytes()
        (dst / "stack.json").write_bytes((src / "stack.json").read_bytes())
    again = run_cli("gzip-dump", STATS / "target/step0/rank0/dump.json", tmp_path / "target/step0/rank0/dump.json")
    assert again.returncode == 2 and "exists already" in again.stderr
    misnamed = run_cli("gzip-dump", STATS / "target/step0/rank0/dump.json", tmp_path / "dump.json.gz")
    assert misnamed.returncode == 2 and "must end with dump.json or debug.json" in misnamed.stderr
    assert not (tmp_path / "dump.json.gz").exists()
    plain = run_cli("compare", "-tp", STATS / "target/step0", "-gp", STATS / "golden/step0", "-o", tmp_path / "p", "-q")
    packed = run_cli("compare", "-tp", tmp_path / "target/step0", "-gp", tmp_path / "golden/step0", "-o", tmp_path / "z",
                     "-q")
    assert plain.returncode == 0 and packed.returncode == 0, packed.stderr
    assert only_result(tmp_path / "z").read_text() == only_result(tmp_path / "p").read_text()
    broken = tmp_path / "broken" / "dump.json"
    broken.parent.mkdir()
    broken.write_bytes(gzip.compress(b'{"task": "statistics", "data": {')[:-8])
    proc = run_cli("compare", "-tp", broken, "-gp", tmp_path / "golden/step0/rank0/dump.json", "-o", tmp_path / "b")
    assert proc.returncode == 2 and "cannot read gzip-compressed dump" in proc.stderr


def _rename_pair(tmp_path):
    from .dumps import api, tensor, write_dump

    t = write_dump(tmp_path / "t", {"Torch.my_add.0.forward": api([tensor()], [tensor()])})
    g = write_dump(tmp_path / "g", {"Torch.add.0.forward": api([tensor()], [tensor()])})
    return t, g


RENAMED = ["Torch.add.0.forward.input.0", "Torch.add.0.forward.output.0"]


def test_regex_rename_mapper_from_the_command_line(run_cli, tmp_path):
    t, g = _rename_pair(tmp_path)
    proc = run_cli("compare", "-tp", t, "-gp", g, "-o", tmp_path / "plain", "-q")
    assert proc.returncode == 0, proc.stderr
    header, rows = _read_csv(only_result(tmp_path / "plain"))
    assert [r[header.index("Bench Name")] for r in rows] == ["N/A", "N/A"]
    proc = run_cli("compare", "-tp", t, "-gp", g, "-o", tmp_path / "renamed", "-q",
                   "--rename_target", r"^Torch\.my_add\.=Torch.add.", "--rename_target", "unused=x")
    assert proc.returncode == 0, proc.stderr
    header, rows = _read_csv(only_result(tmp_path / "renamed"))
    assert [r[header.index("Bench Name")] for r in rows] == RENAMED
    proc = run_cli("compare", "-tp", t, "-gp", g, "-o", tmp_path / "bad", "--rename_target", "(unclosed=x")
    assert proc.returncode == 2
    assert proc.stderr.startswith("msprobe: error: --rename_target: '(unclosed' is not a regular expression")
    assert not (tmp_path / "bad").exists()


def test_regex_rename_mapper_from_python(tmp_path):
    t, g = _rename_pair(tmp_path)
    script = (
        "import json, sys, msprobe_core\n"
        "from msprobe_core.errors import OptionError\n"
        "t, g = sys.argv[1:3]\n"
        "plain = msprobe_core.compare(t, g).table\n"
        "renamed = msprobe_core.compare(t, g, rename_target={r'^Torch\\.my_add\\.': 'Torch.add.'}).table\n"
        "listed = msprobe_core.compare(t, g, rename_target=[r'^Torch\\.my_add\\.=Torch.add.']).table\n"
        "try:\n"
        "    msprobe_core.compare(t, g, rename_target=['no-equals-sign'])\n"
        "except OptionError as exc:\n"
        "    error = str(exc)\n"
        "print(json.dumps([list(plain['Bench Name']), list(renamed['Bench Name']), list(listed['Bench Name']), error]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(t), str(g)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    plain, renamed, listed, error = json.loads(proc.stdout.strip().splitlines()[-1])
    assert plain == ["N/A", "N/A"]
    assert renamed == listed == RENAMED
    assert error == "rename_target: 'no-equals-sign' is not PATTERN=REPLACEMENT"
