"""The default plugins ``statistics_metrics`` (the metric sets of statistics and md5 mode) and ``msprobe_verdicts``
(msprobe's verdict rule) turned off (issue 33): a compare still writes its whole table, says once what is missing,
and the summary and ``--fail-on`` never take rows no rule judged for passing ones.

The command lines run the real console script in a fresh process, the way a user turns a plugin off
(``MSPROBE_DISABLE_PLUGINS=NAME``).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

from msprobe_core.host.defaults import DISABLE_ENV

REPO = Path(__file__).resolve().parents[1]
STATS = REPO / "examples" / "pytorch_stats"
STATS_SIDES = ("-tp", STATS / "target" / "step0", "-gp", STATS / "golden" / "step0")
STAT_METRICS = ["Max diff", "Min diff", "Mean diff", "L2norm diff", "MaxRelativeErr", "MinRelativeErr",
                "MeanRelativeErr", "NormRelativeErr"]
VERDICTS = ["Result", "Err_message"]


def _compare(out: Path, sides: tuple, *args: object, off: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != DISABLE_ENV} | ({DISABLE_ENV: off} if off else {})
    return subprocess.run([sys.executable, "-m", "msprobe_core", "compare", *map(str, sides), "-o", str(out),
                           *map(str, args)], capture_output=True, text=True, env=env, timeout=600)


def _rows(out: Path) -> list[list[str]]:
    [table] = out.glob("compare_result_*.csv")
    with open(table, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def _warnings(proc: subprocess.CompletedProcess, text: str) -> list[str]:
    return [line.split("[WARNING] ", 1)[1] for line in (proc.stdout + proc.stderr).splitlines()
            if "[WARNING] " in line and text in line]


def _columns_but(header: list[str], rows: list[list[str]], names: list[str]) -> list[list[str]]:
    kept = [k for k, name in enumerate(header) if name not in names]
    return [[row[k] for k in kept] for row in rows]


def test_statistics_metrics_turned_off_writes_the_table_with_na_metric_cells_and_one_warning(tmp_path):
    """``-p no:statistics_metrics``: a statistics compare writes the same table but for the eight metric cells
    (each ``N/A``) and the verdicts that judge them, and says once why."""
    on = _compare(tmp_path / "on", STATS_SIDES)
    off = _compare(tmp_path / "off", STATS_SIDES, off="statistics_metrics")
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    header, *computed = _rows(tmp_path / "on")
    off_header, *left = _rows(tmp_path / "off")
    assert off_header == header and len(left) == len(computed) > 100
    at = [header.index(name) for name in STAT_METRICS]
    assert all(any(row[k] not in ("N/A", "0") for row in computed) for k in at)  # the plugin on computes them
    assert all(row[k] == "N/A" for row in left for k in at)
    assert _columns_but(header, left, STAT_METRICS + VERDICTS) == _columns_but(header, computed, STAT_METRICS + VERDICTS)
    assert _warnings(off, "metric set") == [
        "statistics mode's metric set is not computed: every metric cell says N/A, the verdicts judge the other "
        "columns only (it is the default plugin 'statistics_metrics''s, which is turned off by -p "
        "no:statistics_metrics or MSPROBE_DISABLE_PLUGINS)"]
    assert not _warnings(on, "metric set")


def test_statistics_metrics_turned_off_leaves_an_md5_table_as_it_is_with_one_warning(tmp_path, msprobe_tester):
    """md5 mode's metric set gives no column (its verdicts compare the checksums): with the plugin off the table
    is the same, verdicts included, after one warning that names the plugin."""
    pair = msprobe_tester.dump_pair("md5")
    on = _compare(tmp_path / "on", pair.args)
    off = _compare(tmp_path / "off", pair.args, off="statistics_metrics")
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    table = _rows(tmp_path / "on")
    assert _rows(tmp_path / "off") == table and "error" in [row[table[0].index("Result")] for row in table[1:]]
    [said] = _warnings(off, "metric set")
    assert said.startswith("md5 mode's metric set is not computed") and "no:statistics_metrics" in said
    assert not _warnings(on, "metric set")


def test_msprobe_verdicts_turned_off_writes_na_verdicts_and_the_summary_counts_rows_not_judged(tmp_path):
    """``-p no:msprobe_verdicts``: the table keeps ``Result`` and ``Err_message``, every cell ``N/A``, everything
    else as computed; one warning; the summary counts the rows as not judged (no pass), on the console and in the
    JSON summary, and names no row's verdict pass."""
    on = _compare(tmp_path / "on", STATS_SIDES, "--json-summary", tmp_path / "on.json")
    off = _compare(tmp_path / "off", STATS_SIDES, "--json-summary", tmp_path / "off.json", off="msprobe_verdicts")
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    header, *judged = _rows(tmp_path / "on")
    off_header, *left = _rows(tmp_path / "off")
    assert off_header == header and len(left) == len(judged) > 100
    at = [header.index(name) for name in VERDICTS]
    assert {row[at[0]] for row in judged} == {"pass", "warning", "error"}
    assert all(row[k] == "N/A" for row in left for k in at)
    assert _columns_but(header, left, VERDICTS) == _columns_but(header, judged, VERDICTS)
    assert _warnings(off, "verdict rule") == [
        "no verdict rule judged the rows of this statistics table: their verdict cells say N/A (it is the default "
        "plugin 'msprobe_verdicts''s, which is turned off by -p no:msprobe_verdicts or MSPROBE_DISABLE_PLUGINS)"]
    assert not _warnings(on, "verdict rule")

    summary_on = json.loads((tmp_path / "on.json").read_text(encoding="utf-8"))
    summary = json.loads((tmp_path / "off.json").read_text(encoding="utf-8"))
    assert "not_judged" not in summary_on and summary_on["verdicts"]["error"] > 0
    assert summary["not_judged"] == summary["rows"] == len(left)
    assert summary["verdicts"] == {"pass": 0, "warning": 0, "error": 0} and summary["worst_verdict"] is None
    assert summary["worst_rows"] and {row["result"] for row in summary["worst_rows"]} == {"not judged"}
    assert summary["first_divergence"]["verdict"] == "not judged"
    assert f"  not judged: {len(left)} rows that no verdict rule judged" in off.stdout
    assert "verdicts: pass 0, warning 0, error 0" in off.stdout
    assert "not judged" not in on.stdout


def test_fail_on_does_not_pass_rows_no_verdict_rule_judged(tmp_path, msprobe_tester):
    """``--fail-on error`` passes a run whose rows the rule judged pass, and fails the same run with the rule
    off: a gate that cannot look does not pass."""
    pair = msprobe_tester.dump_pair("statistics", diverge=False)
    on = _compare(tmp_path / "on", pair.args, "--fail-on", "error")
    off = _compare(tmp_path / "off", pair.args, "--fail-on", "error", off="msprobe_verdicts")
    assert on.returncode == 0, on.stderr
    assert off.returncode == 3, off.stdout + off.stderr
    rows = len(_rows(tmp_path / "off")) - 1
    assert f"--fail-on error: {rows} of {rows} rows were judged by no verdict rule" in off.stderr
