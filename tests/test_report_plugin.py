"""The ``report`` default plugin on the run-finished hooks: it owns ``--report``, and its page does not depend on
the ``summary`` plugin being on (nor the summary on the report).

Each case runs the real console script in a fresh process on the bundled example pair, the way a user turns a
plugin off (``msprobe -p no:NAME``).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from msprobe_core.host.defaults import DISABLE_ENV
from msprobe_core.options import CORE_BY_NAME

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "pytorch_stats"


def _compare(out: Path, *args: object, before: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != DISABLE_ENV}
    return subprocess.run([sys.executable, "-m", "msprobe_core", *before, "compare", "-tp",
                           str(EXAMPLE / "target" / "step0"), "-gp", str(EXAMPLE / "golden" / "step0"), "-o", str(out),
                           *map(str, args)], capture_output=True, text=True, env=env, timeout=600)


def _page_summary(out: Path) -> dict:
    """The summary the page in ``out`` draws (its embedded data)."""
    [page] = out.glob("compare_report_*.html")
    m = re.search(r'<script type="application/json" id="report-data" data-encoding="([^"]+)">(.*?)</script>',
                  page.read_text(encoding="utf-8"), re.S)
    assert m, page
    text = gzip.decompress(base64.b64decode(m.group(2))).decode() if m.group(1) == "gzip+base64" else m.group(2)
    return json.loads(text)["summary"]


def _names(out: Path) -> list[str]:
    return sorted(re.sub(r"_\d{14}", "", p.name) for p in out.iterdir())


def test_without_the_summary_plugin_the_page_is_still_written_with_the_same_summary(tmp_path):
    """``-p no:summary --report html``: the page, drawing the summary the report made itself (the same numbers as
    with the summary on); nothing printed of the summary, no next dump's config (those are the summary's)."""
    on = _compare(tmp_path / "on", "--report", "html", "--json-summary", tmp_path / "on.json")
    off = _compare(tmp_path / "off", "--report", "html", before=("-p", "no:summary"))
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    assert _names(tmp_path / "off") == ["compare_report.html", "compare_result_rank0.csv"]
    assert _names(tmp_path / "on") == ["compare_report.html", "compare_result_rank0.csv", "next_dump_config.json"]
    assert "Compare summary" in on.stdout and "Compare summary" not in off.stdout
    assert "The report file path is:" in off.stdout + off.stderr
    mine, theirs = _page_summary(tmp_path / "off"), _page_summary(tmp_path / "on")
    assert mine["rows"] > 0 and mine["first_divergence"]
    for key in ("rows", "verdicts", "first_divergence", "worst", "results", "unpaired", "modules"):
        assert json.dumps(mine.get(key), sort_keys=True).replace("/off/", "/X/") == json.dumps(
            theirs.get(key), sort_keys=True).replace("/on/", "/X/"), key
    # with the summary on, the page draws the very summary --json-summary writes
    assert json.dumps(theirs, sort_keys=True) == json.dumps(json.loads((tmp_path / "on.json").read_text()),
                                                            sort_keys=True)


def test_without_the_report_plugin_report_is_no_option_and_nothing_is_written(tmp_path):
    off = _compare(tmp_path / "off", "--report", "html", before=("-p", "no:report"))
    assert off.returncode == 2 and not (tmp_path / "off").exists()
    assert off.stderr.strip().splitlines() == [
        "msprobe: error: no such option '--report' (it is the default plugin 'report''s, which is turned off by "
        "-p no:report or MSPROBE_DISABLE_PLUGINS)"]
    plain = _compare(tmp_path / "plain", before=("-p", "no:report"))  # the summary does not need the report
    assert plain.returncode == 0 and "Compare summary" in plain.stdout, plain.stderr


def test_report_is_the_report_plugins_option_and_the_core_reads_it_nowhere():
    assert "report" not in CORE_BY_NAME
    core = [p for p in (REPO / "msprobe_core").rglob("*.py") if "default_plugins" not in p.parts]
    reads = [f"{p.relative_to(REPO)}" for p in core
             if re.search(r"""get\(\s*["']report["']|\[["']report["']\]|options\.report\b|getattr\([^)]*["']report["']""",
                          p.read_text(encoding="utf-8"))]
    assert not reads, f"the core reads --report in {reads}"
