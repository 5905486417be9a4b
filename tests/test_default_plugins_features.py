"""The default plugins ``automap``, ``data_mapping``, ``xlsx``, ``progress``, ``local_executor`` and
``tensor_metrics`` (issue 33): each one turned off takes its option with it (the error names the plugin), and what
is left still works.

The command lines run the real console script in a fresh process, the way a user turns a plugin off
(``MSPROBE_DISABLE_PLUGINS=NAME``); a host made here reads the same variable.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from msprobe_core.host.defaults import DISABLE_ENV
from msprobe_core.host.registry import PluginHost
from msprobe_core.plugin import MapperSpec, hookimpl

from .automap_truth import DUMPS
from .test_data_mapping import _dump, _mapping

REPO = Path(__file__).resolve().parents[1]


def _msprobe(*args: object, off: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != DISABLE_ENV} | ({DISABLE_ENV: off} if off else {})
    return subprocess.run([sys.executable, "-m", "msprobe_core", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=600)


def _rows(out: Path) -> list[list[str]]:
    [table] = out.glob("compare_result_*.csv")
    with open(table, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def _turned_off_line(flag: str, name: str) -> list[str]:
    return [f"msprobe: error: no such option '{flag}' (it is the default plugin '{name}''s, which is turned off "
            f"by -p no:{name} or MSPROBE_DISABLE_PLUGINS)"]


@pytest.fixture
def dm_pair(tmp_path: Path) -> tuple[list[str], Path]:
    """A pair whose ``-dm`` file pairs other rows than the names do (``tests/test_data_mapping.py``)."""
    target, golden = _dump(tmp_path / "t", 0), _dump(tmp_path / "g", 1)
    dm = tmp_path / "data_mapping.yaml"
    dm.write_text("".join(f"{a}: {b}\n" for a, b in _mapping().items()), encoding="utf-8")
    return ["-tp", str(target), "-gp", str(golden)], dm


def test_auto_map_turned_off_is_no_option(tmp_path):
    sides = ("-tp", DUMPS / "renamed_L0" / "dump.json", "-gp", DUMPS / "golden_L0" / "dump.json")
    on = _msprobe("compare", *sides, "-o", tmp_path / "on", "--auto-map", "-q")
    assert on.returncode == 0, on.stderr
    assert len(list((tmp_path / "on").glob("auto_mapping_*.yaml"))) == 1
    off = _msprobe("compare", *sides, "-o", tmp_path / "off", "--auto-map", off="automap")
    assert off.returncode == 2 and not (tmp_path / "off").exists()
    assert off.stderr.strip().splitlines() == _turned_off_line("--auto-map", "automap")


def test_data_mapping_turned_off_is_no_option_and_auto_map_still_works(tmp_path, dm_pair):
    sides, dm = dm_pair
    off = _msprobe("compare", *sides, "-o", tmp_path / "off", "-dm", dm, off="data_mapping")
    assert off.returncode == 2 and not (tmp_path / "off").exists()
    assert off.stderr.strip().splitlines() == _turned_off_line("-dm", "data_mapping")
    auto_sides = ("-tp", DUMPS / "renamed_L0" / "dump.json", "-gp", DUMPS / "golden_L0" / "dump.json")
    on = _msprobe("compare", *auto_sides, "-o", tmp_path / "on", "--auto-map", "-q")
    auto = _msprobe("compare", *auto_sides, "-o", tmp_path / "auto", "--auto-map", "-q", off="data_mapping")
    assert on.returncode == auto.returncode == 0, on.stderr + auto.stderr
    assert _rows(tmp_path / "auto") == _rows(tmp_path / "on")  # the proposal is joined as -dm joins, without -dm


def test_dm_keeps_its_place_ahead_of_exact_names_with_fuzzy_turned_off(tmp_path, dm_pair):
    """``data-mapping`` goes ahead of ``fuzzy``, which goes ahead of ``exact``: with ``fuzzy`` off, ``-dm`` still
    comes before the exact names (it would otherwise never run)."""
    sides, dm = dm_pair
    on = _msprobe("compare", *sides, "-o", tmp_path / "on", "-dm", dm, "-q")
    off = _msprobe("compare", *sides, "-o", tmp_path / "off", "-dm", dm, "-q", off="fuzzy")
    plain = _msprobe("compare", *sides, "-o", tmp_path / "plain", "-q")
    assert on.returncode == off.returncode == plain.returncode == 0, on.stderr + off.stderr + plain.stderr
    assert _rows(tmp_path / "on") != _rows(tmp_path / "plain")
    assert _rows(tmp_path / "off") == _rows(tmp_path / "on")


def test_a_mapper_named_ahead_of_a_turned_off_one_keeps_its_place(monkeypatch):
    """The MindSpore plugin's ``layer-mapping`` says ``before=("data-mapping",)``: with ``data_mapping`` off it
    still goes ahead of ``fuzzy`` (where ``data-mapping`` would be), and handing on after ``data-mapping`` works."""

    class Plugin:
        @hookimpl
        def msprobe_register_mappers(self, register):
            register(MapperSpec("mine", lambda ctx: None, before=("data-mapping",)))

    monkeypatch.setenv(DISABLE_ENV, "data_mapping")
    host = PluginHost(autoload=False, extra_plugins=[Plugin()])
    names = [m.name for m in host.mappers]
    assert "data-mapping" not in names
    assert names.index("mine") < names.index("fuzzy") < names.index("exact")
    assert host.mapper_for(host.compare_options(fuzzy_match=True), after="data-mapping").name == "fuzzy"
    assert host.mapper_for(host.compare_options(), after="data-mapping").name == "exact"


def test_xlsx_turned_off_takes_the_format_and_its_flag(tmp_path, dm_pair):
    sides, _dm = dm_pair
    on = _msprobe("compare", *sides, "-o", tmp_path / "on", "--xlsx", "-q")
    assert on.returncode == 0, on.stderr
    assert len(list((tmp_path / "on").glob("compare_result_*.xlsx"))) == 1
    flag = _msprobe("compare", *sides, "-o", tmp_path / "flag", "--xlsx", off="xlsx")
    assert flag.returncode == 2 and not (tmp_path / "flag").exists()
    assert flag.stderr.strip().splitlines() == _turned_off_line("--xlsx", "xlsx")
    named = _msprobe("compare", *sides, "-o", tmp_path / "named", "--output_format", "xlsx", off="xlsx")
    assert named.returncode == 2 and not list((tmp_path / "named").glob("*.xlsx"))
    assert "unknown output format 'xlsx'" in named.stderr
    assert "it is the default plugin 'xlsx''s, which is turned off" in named.stderr
    plain = _msprobe("compare", *sides, "-o", tmp_path / "plain", "-q", off="xlsx")
    assert plain.returncode == 0 and len(_rows(tmp_path / "plain")) > 1


# --------------------------------------------------------------------------- progress: the stage events
class _Listener:
    """A third party's listener of the stage events: what it was told, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    @hookimpl
    def msprobe_stage_started(self, event):
        self.events.append(("started", event))

    @hookimpl
    def msprobe_stage_advanced(self, event):
        self.events.append(("advanced", event))

    @hookimpl
    def msprobe_stage_finished(self, event):
        self.events.append(("finished", event))


@pytest.mark.exercises_hooks("msprobe_stage_started", "msprobe_stage_advanced", "msprobe_stage_finished")
def test_a_third_party_hears_every_stage_of_a_run(tmp_path):
    from msprobe_core.cli.main import main
    from msprobe_core.plugin import reset_host

    listener = _Listener()
    reset_host(PluginHost(extra_plugins=[listener]))
    try:
        pair = REPO / "examples" / "pytorch_tensor"
        assert main(["compare", "-tp", str(pair / "target" / "step0"), "-gp", str(pair / "golden" / "step0"),
                     "-o", str(tmp_path / "out"), "-q"]) == 0
    finally:
        reset_host(None)
    seen = [(when, e.kind, e.name) for when, e in listener.events]
    assert seen[0] == ("started", "run", "msprobe compare") and seen[-1] == ("finished", "run", "msprobe compare")
    assert listener.events[0][1].quiet is True and listener.events[0][1].key == listener.events[-1][1].key
    stages = [name for when, kind, name in seen if when == "started" and kind == "stage"]
    assert stages.index("find the dumps") < stages.index("load") < stages.index("match") \
        < stages.index("metrics and verdicts") < stages.index("write")
    counts = [e for when, e in listener.events if e.kind == "count"]
    assert counts[0].unit == "tensor pairs" and counts[0].total > 0 and counts[-1].done == counts[0].total
    assert [when for when, e in listener.events if e.kind == "count"][::len(counts) - 1] == ["started", "finished"]


def test_a_listener_that_fails_is_warned_about_once_and_the_run_goes_on(tmp_path, capsys):
    from msprobe_core.cli.main import main
    from msprobe_core.plugin import reset_host

    class Broken:
        calls = 0

        @hookimpl
        def msprobe_stage_started(self, event):
            Broken.calls += 1
            raise RuntimeError("listener bug")

    reset_host(PluginHost(extra_plugins=[Broken()]))
    try:
        pair = REPO / "examples" / "pytorch_stats"
        rc = main(["compare", "-tp", str(pair / "target" / "step0"), "-gp", str(pair / "golden" / "step0"),
                   "-o", str(tmp_path / "out")])
    finally:
        reset_host(None)
    assert rc == 0 and len(_rows(tmp_path / "out")) > 1
    assert Broken.calls == 1
    shown = capsys.readouterr()
    warned = [line for line in (shown.out + shown.err).splitlines() if "listener bug" in line]
    assert len(warned) == 1 and "[WARNING] plugin 'Broken': msprobe_stage_started failed" in warned[0]
    assert warned[0].endswith("(its stage events are no longer sent to it)")


def test_progress_turned_off_draws_nothing_on_a_terminal(tmp_path):
    from .test_progress_tty import _env, _stats_pair, _status_lines, run_on_terminal

    rc, shown = run_on_terminal("compare", *_stats_pair(), "-o", tmp_path / "on")
    assert rc == 0 and _status_lines(shown, "msprobe compare: "), shown  # drawn when the plugin is on
    rc, shown = run_on_terminal("compare", *_stats_pair(), "-o", tmp_path / "off", env=_env(**{DISABLE_ENV: "progress"}))
    assert rc == 0, shown
    assert "msprobe compare: " not in shown and "\x1b[K" not in shown
    assert "[INFO] The result file path is: " in shown and "Compare summary" in shown


# --------------------------------------------------------------------------- local_executor
def test_local_executor_turned_off_runs_in_one_process(tmp_path, monkeypatch):
    from msprobe_core.workers.executors import InlineExecutor, open_executor

    monkeypatch.setenv(DISABLE_ENV, "local_executor")
    host = PluginHost(autoload=False)
    assert "local" not in host.executors
    with open_executor(host.compare_options(workers=4), host) as executor:
        assert isinstance(executor, InlineExecutor) and executor.parallelism() == 1


def test_local_executor_turned_off_gives_the_same_results_and_names_itself_when_asked_for(tmp_path):
    pair = REPO / "examples" / "pytorch_multirank"
    sides = ("-tp", pair / "target", "-gp", pair / "golden")
    pooled = _msprobe("compare", *sides, "-o", tmp_path / "pooled", "--workers", "2", "-q")
    alone = _msprobe("compare", *sides, "-o", tmp_path / "alone", "--workers", "2", "-q", off="local_executor")
    assert pooled.returncode == alone.returncode == 0, pooled.stderr + alone.stderr

    def results(out: Path) -> dict[str, bytes]:
        import re

        return {re.sub(r"_\d{14}", "", p.name): p.read_bytes() for p in sorted(out.rglob("compare_result_*"))}

    assert len(results(tmp_path / "pooled")) > 1 and results(tmp_path / "alone") == results(tmp_path / "pooled")
    named = _msprobe("compare", *sides, "-o", tmp_path / "named", "--executor", "local", off="local_executor")
    assert named.returncode == 2 and not (tmp_path / "named").exists()
    assert "unknown executor 'local'" in named.stderr
    assert "it is the default plugin 'local_executor''s, which is turned off" in named.stderr


# --------------------------------------------------------------------------- tensor_metrics
#: a third party's tensor metric, computed by the tensor_metrics plugin's engine like the six built-in ones
ABS_SUM_PLUGIN = """
import numpy as np

from msprobe_core.plugin import TensorMetricSpec, hookimpl


def abs_sum(npu, bench):
    return float(np.abs(np.asarray(npu, dtype=np.float64) - bench).sum()) if npu.shape == bench.shape else "x"


@hookimpl
def msprobe_register_metrics(register):
    register(TensorMetricSpec("AbsSum", abs_sum))
"""


def test_tensor_metrics_turned_off_writes_the_table_with_na_metric_cells_and_one_warning(tmp_path):
    """``-p no:tensor_metrics``: a tensor-mode compare still writes its table, the same but for the metric cells
    (the six and a plugin's, each ``N/A``) and the verdicts that judge them, and says once why."""
    (tmp_path / "abs_sum.py").write_text(ABS_SUM_PLUGIN, encoding="utf-8")
    pair = REPO / "examples" / "pytorch_tensor"
    sides = ("-tp", pair / "target" / "step0", "-gp", pair / "golden" / "step0")
    env = {**{k: v for k, v in os.environ.items() if k != DISABLE_ENV}, "MSPROBE_LOAD_PLUGINS": "abs_sum",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}

    def compare(out: str, *before: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "msprobe_core", *before, "compare", *map(str, sides), "-o",
                               str(tmp_path / out)], capture_output=True, text=True, env=env, timeout=600)

    on, off = compare("on"), compare("off", "-p", "no:tensor_metrics")
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    header, *computed = _rows(tmp_path / "on")
    off_header, *left = _rows(tmp_path / "off")
    assert off_header == header and len(left) == len(computed) > 100
    metrics = ["Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr", "One Thousandth Err Ratio",
               "Five Thousandths Err Ratio", "AbsSum"]
    at = [header.index(name) for name in metrics]
    assert any(row[at[0]] not in ("N/A", "unsupported") for row in computed)  # the plugin on computes them
    assert any(row[at[-1]] not in ("N/A", "unsupported") for row in computed)
    assert all(row[k] == "N/A" for row in left for k in at)
    judged = [header.index(name) for name in ("Result", "Err_message")]
    kept = [k for k in range(len(header)) if k not in at + judged]
    assert [[row[k] for k in kept] for row in left] == [[row[k] for k in kept] for row in computed]
    said = (off.stdout + off.stderr).splitlines()
    warned = [line for line in said if "metric set is not computed" in line]
    assert len(warned) == 1 and "[WARNING]" in warned[0], said
    assert warned[0].split("[WARNING] ")[1] == (
        "tensor mode's metric set is not computed: every metric cell says N/A, the verdicts judge the other columns "
        "only (it is the default plugin 'tensor_metrics''s, which is turned off by -p no:tensor_metrics or "
        "MSPROBE_DISABLE_PLUGINS)")
    assert not any("metric set is not computed" in line for line in (on.stdout + on.stderr).splitlines())
