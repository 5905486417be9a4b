"""Tensor mode: a row whose tensor file is missing, truncated or refused is not a ``pass``.

msprobe 26.2.0 leaves such a row ``pass`` with an empty ``Err_message`` (only a log line names the
file). Here it is a ``warning`` whose message names the side, the file and what is wrong, in the CSV
and the xlsx, counted in the summary and seen by ``--fail-on``. Real processes on a copy of the
bundled example pair with one file deleted on the target side and one truncated on the golden side.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO

EXAMPLE = REPO / "examples" / "pytorch_tensor"
MISSING = "Functional.cross_entropy.0.forward.input.0"  # deleted from the target
TRUNCATED = "Functional.cross_entropy.0.forward.output.0"  # cut short on the golden side
REFUSED = "Functional.cross_entropy.0.forward.input.1"  # its golden data_name climbs out of the dump
EXPECTED = {
    MISSING: ("NPU tensor file", "target", "tensor file does not exist"),
    TRUNCATED: ("Bench tensor file", "golden", "truncated"),
}


def _copy(tmp: Path, *, damage: bool) -> tuple[Path, Path]:
    shutil.copytree(EXAMPLE, tmp / "ex")
    target, golden = tmp / "ex/target/step0", tmp / "ex/golden/step0"
    if damage:
        (target / "rank0/dump_tensor_data" / f"{MISSING}.pt").unlink()
        pt = golden / "rank0/dump_tensor_data" / f"{TRUNCATED}.pt"
        pt.write_bytes(pt.read_bytes()[:100])
    return target, golden


def _compare(tmp: Path, target: Path, golden: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp / "out"
    proc = subprocess.run([sys.executable, "-m", "msprobe_core", "compare", "-tp", str(target), "-gp", str(golden),
                           "-o", str(out), "--json-summary", str(tmp / "s.json"), *extra],
                          capture_output=True, text=True, timeout=600)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    return proc, json.loads((tmp / "s.json").read_text())


def _rows(path: Path) -> dict[str, dict[str, object]]:
    if path.suffix == ".csv":
        import csv

        with open(path, newline="", encoding="utf-8") as fh:
            return {r["NPU Name"]: r for r in csv.DictReader(fh)}
    import openpyxl

    sheet = openpyxl.load_workbook(path, read_only=True).active
    values = list(sheet.iter_rows(values_only=True))
    return {r[0]: dict(zip(values[0], r)) for r in values[1:]}


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_unread_tensor_rows_are_warnings_that_name_the_file(tmp_path: Path, fmt: str) -> None:
    clean_proc, clean = _compare(tmp_path / "clean", *_copy(tmp_path / "clean", damage=False))
    target, golden = _copy(tmp_path, damage=True)
    proc, summary = _compare(tmp_path, target, golden, *(["--xlsx"] if fmt == "xlsx" else []))
    assert proc.returncode == 0, proc.stderr
    (result,) = sorted((tmp_path / "out").glob(f"compare_result_rank0_*.{fmt}"))
    rows = _rows(result)
    for name, (side, where, what) in EXPECTED.items():
        row = rows[name]
        assert row["Result"] == "warning", row
        assert row["Cosine"] == "unsupported", row
        (message,) = json.loads(row["Err_message"])
        assert message.startswith("warning: Dump file not found or read failed, the row is not compared: "), message
        assert f"{side} {tmp_path / 'ex' / where / 'step0/rank0/dump_tensor_data' / name}.pt: " in message, message
        assert what in message, message
        assert name in proc.stdout  # the log line too
    # every other row is as without the damage; the two rows moved from pass to warning in the summary
    assert clean["verdicts"]["pass"] - summary["verdicts"]["pass"] == 2
    assert summary["verdicts"]["warning"] - clean["verdicts"]["warning"] == 2
    assert summary["verdicts"]["error"] == clean["verdicts"]["error"]
    assert f"warning {summary['verdicts']['warning']}," in proc.stdout
    assert (clean["not_compared"], summary["not_compared"]) == (0, 2)
    assert summary["ranks"][0]["not_compared"] == 2
    assert "not compared: 2 rows whose tensor file is missing or unreadable" in proc.stdout
    assert "not compared" not in clean_proc.stdout


def test_report_and_msprobe_report_count_unread_rows(tmp_path: Path) -> None:
    """The HTML report carries the count; ``msprobe report`` on the written CSV finds the same summary."""
    target, golden = _copy(tmp_path, damage=True)
    proc, summary = _compare(tmp_path, target, golden, "--report", "html")
    assert proc.returncode == 0, proc.stderr
    (page,) = (tmp_path / "out").glob("compare_report_*.html")
    assert '"not_compared":2' in page.read_text(encoding="utf-8").replace(" ", "")
    again = subprocess.run([sys.executable, "-m", "msprobe_core", "report", str(tmp_path / "out"), "-o",
                            str(tmp_path / "again.html"), "--json-summary", str(tmp_path / "again.json")],
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "again.json").read_text())["not_compared"] == 2


def test_fail_on_warning_counts_unread_rows(tmp_path: Path) -> None:
    """``--fail-on warning`` fails on a dump whose only flaw is a missing file (its verdicts: pass and error)."""
    clean_proc, clean = _compare(tmp_path / "clean", *_copy(tmp_path / "clean", damage=False), "--fail-on", "warning")
    n_clean = clean["verdicts"]["warning"] + clean["verdicts"]["error"]
    target, golden = _copy(tmp_path, damage=True)
    proc, summary = _compare(tmp_path, target, golden, "--fail-on", "warning")
    assert proc.returncode == 3
    assert f"{n_clean + 2} of {summary['rows']} rows have the verdict warning or error" in proc.stderr, proc.stderr
    assert f"{n_clean} of {clean['rows']} rows" in clean_proc.stderr


def test_name_leaving_the_dump_is_a_warning_too(tmp_path: Path) -> None:
    """A golden file that is a symlink out of the dump is refused before any read: the same verdict and message."""
    target, golden = _copy(tmp_path, damage=False)
    outside = tmp_path / "outside.pt"
    shutil.copy(golden / "rank0/dump_tensor_data" / f"{REFUSED}.pt", outside)
    link = golden / "rank0/dump_tensor_data" / f"{REFUSED}.pt"
    link.unlink()
    link.symlink_to(outside)
    proc, summary = _compare(tmp_path, target, golden)
    assert proc.returncode == 0, proc.stderr
    (result,) = sorted((tmp_path / "out").glob("compare_result_rank0_*.csv"))
    row = _rows(result)[REFUSED]
    assert row["Result"] == "warning", row
    (message,) = json.loads(row["Err_message"])
    assert f"Bench tensor file {REFUSED}.pt: " in message and "outside the dump root" in message, message
