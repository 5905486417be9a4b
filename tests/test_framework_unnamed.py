"""A dump.json without a ``framework`` field (msprobe's own fixture ``x04_ms_api_info_tensor_npy``): its tensors
are read by the framework the compare finds for it, never by "no framework".

The fixture (``tests/data/x04_ms_api_info_tensor_npy``, see its README) is a MindSpore API-level tensor dump with
``.npy`` tensors and no ``framework`` key: its dtypes (``Float32``...) say MindSpore, and its result must be the
one the same dumps give with ``"framework": "mindspore"``.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
X04 = REPO / "tests" / "data" / "x04_ms_api_info_tensor_npy"


def _rows(out: Path) -> list[list[str]]:
    (result,) = sorted(out.glob("compare_result_*.csv"))
    with open(result, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def _with_framework(src: Path, dst: Path, framework: str) -> Path:
    shutil.copytree(src, dst)
    for side in ("target", "golden"):
        path = dst / side / "dump.json"
        doc = json.loads(path.read_text())
        path.write_text(json.dumps({"framework": framework, **doc}, indent=1))
    return dst


def _compare(run_cli, root: Path, out: Path, *extra: str):
    proc = run_cli("compare", "-tp", root / "target" / "dump.json", "-gp", root / "golden" / "dump.json",
                   "-o", out, *extra)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_msprobe_fixture_without_framework_reads_its_npy_tensors_as_mindspore(run_cli, tmp_path):
    assert "framework" not in json.loads((X04 / "target" / "dump.json").read_text())
    proc = _compare(run_cli, X04, tmp_path / "bare")  # a tensor dump: whole tables (dumpindex never indexes one)
    assert "no reader for" not in proc.stdout + proc.stderr
    named = _with_framework(X04, tmp_path / "named", "mindspore")
    _compare(run_cli, named, tmp_path / "named_out")
    bare, keyed = _rows(tmp_path / "bare"), _rows(tmp_path / "named_out")
    assert bare == keyed  # cell for cell
    result = bare[0].index("Result")
    assert {r[result] for r in bare[1:]} == {"pass", "error"}  # every tensor read: no row is left a warning
    assert "compared as mindspore" in proc.stdout  # the log says which framework was taken, as before


def test_a_tensor_read_without_a_known_framework_says_so_in_words():
    from msprobe_core.default_plugins.tensor_metrics.stage import no_reader

    assert "  " not in no_reader("") and "framework" in no_reader("") and "unknown" in no_reader("")
    assert no_reader("jax") == "no installed plugin reads jax tensors"


def test_the_full_corpus_case_without_framework_agrees_with_msprobe(run_cli, corpora, oracle_diff, tmp_path):
    from .conftest import agree

    case = corpora / "mindspore" / "ms_l1_tensor_bug"
    if not case.is_dir():
        pytest.skip(f"{case} is not in these corpora")
    root = tmp_path / "case"
    for side in ("target", "golden"):
        shutil.copytree(case / side / "step0" / "rank0", root / side)
        path = root / side / "dump.json"
        doc = json.loads(path.read_text())
        del doc["framework"]
        path.write_text(json.dumps(doc, indent=1))
    _compare(run_cli, root, tmp_path / "out")
    (ours,) = sorted((tmp_path / "out").glob("compare_result_*.csv"))
    rc, report = agree(oracle_diff, ours, case / "oracle" / "default" / "compare_result.csv")
    assert rc == 0, report
