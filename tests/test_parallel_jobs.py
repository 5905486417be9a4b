"""The default plugin ``parallel_jobs``: several rank pairs run at once on the run's executor, through
``msprobe_run_jobs``; turned off, the core runs them one after the other with the same result files and console.

Each case runs the real console script in a fresh process with two workers (so that the pairs would run side by
side on any machine), traces the hook calls (``MSPROBE_TRACE_PLUGINS``) to see which plugin ran the jobs, and turns
the plugin off the way a user does (``-p no:parallel_jobs``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from msprobe_core.default_plugins.trace import TRACE_PLUGINS_ENV
from msprobe_core.host.defaults import DISABLE_ENV

from .conftest import corpus_mark

REPO = Path(__file__).resolve().parents[1]
TIMESTAMP = re.compile(r"_?\d{14,}")  # the run stamp; -da's analysis is named by a longer number
#: the start of a console line: its time and the run's process id
LINE_HEAD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(\d+\) ")


def _compare(target: Path, golden: Path, out: Path, *extra: object,
             off: bool = False) -> tuple[subprocess.CompletedProcess, list[tuple[str, str]]]:
    """``msprobe compare`` with two workers (``off``: ``-p no:parallel_jobs``); its process and who answered
    ``msprobe_run_jobs`` (plugin, type of its answer or ``raised``), in call order."""
    trace = out.parent / f"{out.name}.trace.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in (DISABLE_ENV, TRACE_PLUGINS_ENV)}
    env[TRACE_PLUGINS_ENV] = str(trace)
    before = ["-p", "no:parallel_jobs"] if off else []
    proc = subprocess.run([sys.executable, "-m", "msprobe_core", *before, "compare", "-tp", str(target), "-gp",
                           str(golden), "-o", str(out), "--workers", "2", *map(str, extra)],
                          capture_output=True, text=True, env=env, timeout=600)
    calls = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()] if trace.exists() else []
    return proc, [(c["plugins"][0], c.get("result", c["outcome"])) for c in calls if c["hook"] == "msprobe_run_jobs"]


def _files(out: Path) -> dict[str, bytes]:
    """The run's files by their names without the run's timestamp."""
    return {TIMESTAMP.sub("", p.name): p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}


def _console(text: str, out: Path) -> list[str]:
    """The console's lines with the run's time, process id, output directory and timestamp taken out."""
    return [TIMESTAMP.sub("", LINE_HEAD.sub("", line.replace(str(out), "OUT"))) for line in text.splitlines()]


@corpus_mark("pytorch/c09a")
def test_the_rank_pairs_run_side_by_side_by_the_plugin_and_one_after_the_other_without_it(corpora, tmp_path):
    case = corpora / "pytorch" / "c09a"
    sides = (case / "target" / "step0", case / "golden" / "step0")
    on, ran_on = _compare(*sides, tmp_path / "on")
    off, ran_off = _compare(*sides, tmp_path / "off", off=True)
    assert on.returncode == off.returncode == 0, on.stderr + off.stderr
    # -da's runner is asked first and leaves the run; parallel_jobs (trylast) takes it; without it the core runs it
    assert ran_on == [("diff_analyze", "NoneType"), ("parallel_jobs", "list")]
    assert ran_off == [("diff_analyze", "NoneType")]
    assert sorted(_files(tmp_path / "on")) == ["compare_result_rank0.csv", "compare_result_rank1.csv",
                                               "next_dump_config.json"]
    assert _files(tmp_path / "on") == _files(tmp_path / "off")
    assert _console(on.stdout, tmp_path / "on") == _console(off.stdout, tmp_path / "off")
    assert "[rank0] The result file path is:" in on.stdout.split("[rank1] The result file path is:")[0]


@corpus_mark("pytorch/c09a")
def test_da_takes_a_multi_rank_run_before_parallel_jobs_is_asked(corpora, tmp_path):
    """``-da`` on two ranks with two workers: the ``diff_analyze`` runner answers first (``parallel_jobs`` is
    ``trylast``, never asked), and its files are the same with ``parallel_jobs`` turned off."""
    case = corpora / "pytorch" / "c09a"
    sides = (case / "target" / "step0", case / "golden" / "step0")
    on, ran_on = _compare(*sides, tmp_path / "on", "-da")
    off, ran_off = _compare(*sides, tmp_path / "off", "-da", off=True)
    assert on.returncode == off.returncode == 0, on.stderr + off.stderr
    assert ran_on == ran_off == [("diff_analyze", "list")]
    files = _files(tmp_path / "on")
    assert {"compare_result_rank0.json", "compare_result_rank1.json", "diff_analyze.json"} <= set(files)
    assert files == _files(tmp_path / "off")


def test_a_failing_rank_pair_reads_and_ends_the_same_with_and_without_the_plugin(tmp_path):
    """Rank 1's dump is broken: rank 0's result is written, rank 1's error is said in job order, the run fails
    (exit 1), with the plugin (the pairs as tasks) as without it (one after the other)."""
    example = REPO / "examples" / "pytorch_multirank"
    shutil.copytree(example / "target" / "step0", tmp_path / "t")
    (tmp_path / "t" / "rank1" / "dump.json").write_text("{not json", encoding="utf-8")
    sides = (tmp_path / "t", example / "golden" / "step0")
    on, ran_on = _compare(*sides, tmp_path / "on")
    off, ran_off = _compare(*sides, tmp_path / "off", off=True)
    # the plugin ran the pairs and ended the run partly failed, as the core does after running them itself
    assert ran_on == [("diff_analyze", "NoneType"), ("parallel_jobs", "raised")]
    assert ran_off == [("diff_analyze", "NoneType")]
    assert on.returncode == off.returncode == 1
    assert _files(tmp_path / "on") == _files(tmp_path / "off")
    assert [name for name in _files(tmp_path / "on") if name.startswith("compare_result")] == [
        "compare_result_rank0.csv"]
    said_on, said_off = _console(on.stdout + on.stderr, tmp_path / "on"), _console(off.stdout + off.stderr,
                                                                                    tmp_path / "off")
    assert said_on == said_off
    [error] = [line for line in said_on if line.startswith("[ERROR] [rank1]")]
    assert "dump.json" in error
    assert said_on.index(error) > next(k for k, line in enumerate(said_on) if "[rank0] The result file" in line)
