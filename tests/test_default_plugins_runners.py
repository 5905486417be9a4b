"""The default plugins ``diff_analyze`` (``-da``, a runner of its own through ``msprobe_run_jobs``), ``steps``
(dump roots of ``step<N>`` directories, ``--step``) and ``tensor_log`` (``-tensor_log``, through
``msprobe_tensor_rows_compared``), and ``trace`` (``MSPROBE_TRACE_PLUGINS``: hook calls traced through pluggy's
monitoring and the host's, started from ``msprobe_plugins_loaded``; ``MSPROBE_TRACE_HOOKS``: each implementation
called).

Each case runs the real console script in a fresh process on the bundled examples, turning a plugin off the way a
user does (``MSPROBE_DISABLE_PLUGINS``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from msprobe_core.default_plugins.trace import TRACE_HOOKS_ENV, TRACE_PLUGINS_ENV
from msprobe_core.host.defaults import DISABLE_ENV
from msprobe_core.host.registry import PluginHost
from msprobe_core.plugin import InlineExecutor, hookimpl

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def _msprobe(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k not in (DISABLE_ENV, TRACE_PLUGINS_ENV)} | (env or {})
    return subprocess.run([sys.executable, "-m", "msprobe_core", *map(str, args)], capture_output=True, text=True,
                          env=full_env, timeout=600)


def _sides(example: str, step: str | None = "step0") -> tuple[object, ...]:
    root = EXAMPLES / example
    return ("-tp", root / "target" / step if step else root / "target",
            "-gp", root / "golden" / step if step else root / "golden")


def _off_line(flag: str, plugin: str) -> str:
    return (f"msprobe: error: no such option '{flag}' (it is the default plugin '{plugin}''s, which is turned off by "
            f"-p no:{plugin} or MSPROBE_DISABLE_PLUGINS)")


def test_da_is_the_diff_analyze_plugins_and_goes_with_it(tmp_path):
    on = _msprobe("compare", *_sides("pytorch_multirank"), "-o", tmp_path / "on", "-da")
    assert on.returncode == 0, on.stderr
    [analysis] = (tmp_path / "on").glob("diff_analyze_*.json")
    assert "rank_1" in json.loads(analysis.read_text())
    off = _msprobe("compare", *_sides("pytorch_multirank"), "-o", tmp_path / "off", "-da",
                   env={DISABLE_ENV: "diff_analyze"})
    assert off.returncode == 2 and not (tmp_path / "off").exists()
    assert off.stderr.strip().splitlines() == [_off_line("-da", "diff_analyze")]
    plain = _msprobe("compare", *_sides("pytorch_multirank"), "-o", tmp_path / "plain",
                     env={DISABLE_ENV: "diff_analyze"})
    assert plain.returncode == 0, plain.stderr
    assert sorted(p.name.split("_2")[0] for p in (tmp_path / "plain").glob("*.csv")) == \
        ["compare_result_rank0", "compare_result_rank1"]


def test_steps_turned_off_refuses_dump_roots_naming_the_plugin(tmp_path):
    on = _msprobe("compare", *_sides("pytorch_stats", None), "-o", tmp_path / "on", "--step", "0")
    assert on.returncode == 0, on.stderr
    assert list((tmp_path / "on" / "step0").glob("compare_result_*.csv"))
    off = _msprobe("compare", *_sides("pytorch_stats", None), "-o", tmp_path / "off", env={DISABLE_ENV: "steps"})
    assert off.returncode != 0 and not list(tmp_path.glob("off/**/*.csv"))
    [line] = off.stderr.strip().splitlines()
    assert "holds step directories (step0)" in line and "the default plugin 'steps''s" in line, line
    assert str(EXAMPLES / "pytorch_stats" / "target") in line
    step = _msprobe("compare", *_sides("pytorch_stats"), "-o", tmp_path / "s", "--step", "0",
                    env={DISABLE_ENV: "steps"})
    assert step.returncode == 2 and step.stderr.strip().splitlines() == [_off_line("--step", "steps")]
    one = _msprobe("compare", *_sides("pytorch_stats"), "-o", tmp_path / "one", env={DISABLE_ENV: "steps"})
    assert one.returncode == 0, one.stderr  # a step directory needs no plugin


def test_tensor_log_turned_off_takes_its_option_and_its_lines(tmp_path):
    on = _msprobe("compare", *_sides("pytorch_tensor"), "-o", tmp_path / "on", "-tensor_log")
    assert on.returncode == 0, on.stderr
    assert "start compare:" in on.stdout + on.stderr and "Compare result: Cosine" in on.stdout + on.stderr
    off = _msprobe("compare", *_sides("pytorch_tensor"), "-o", tmp_path / "off", "-tensor_log",
                   env={DISABLE_ENV: "tensor_log"})
    assert off.returncode == 2 and off.stderr.strip().splitlines() == [_off_line("-tensor_log", "tensor_log")]


def _trace(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.exercises_hooks("msprobe_run_jobs", "msprobe_tensor_rows_compared")
def test_trace_plugins_records_every_hook_call_through_pluggys_monitoring(tmp_path):
    trace = tmp_path / "trace.jsonl"
    da = _msprobe("compare", *_sides("pytorch_multirank"), "-o", tmp_path / "da", "-da",
                  env={TRACE_PLUGINS_ENV: str(trace)})
    assert da.returncode == 0, da.stderr
    calls = _trace(trace)
    assert all(set(c) >= {"hook", "plugins", "via", "seconds", "outcome"} for c in calls)
    # first-result hooks are called implementation by implementation by the host: one line each, until one answers
    [ran] = [c for c in calls if c["hook"] == "msprobe_run_jobs"]
    assert (ran["plugins"], ran["via"], ran["outcome"], ran["result"]) == (["diff_analyze"], "host", "returned", "list")
    # registry hooks: one line per implementation, the default plugins' among them
    options = {c["plugins"][0] for c in calls if c["hook"] == "msprobe_register_options"}
    assert {"diff_analyze", "steps", "tensor_log", "fuzzy", "msprobe_core.builtin"} <= options
    trace.unlink()
    tensor = _msprobe("compare", *_sides("pytorch_tensor"), "-o", tmp_path / "t", env={TRACE_PLUGINS_ENV: str(trace)})
    assert tensor.returncode == 0, tensor.stderr
    # a hook the core calls through pm.hook: pluggy's monitoring sees it, with every implementation it runs
    [seen] = [c for c in _trace(trace) if c["hook"] == "msprobe_tensor_rows_compared"]
    assert seen["via"] == "pluggy" and "tensor_log" in seen["plugins"] and seen["outcome"] == "returned"
    assert seen["seconds"] >= 0


def test_trace_plugins_records_a_raising_call(tmp_path):
    """A hook implementation that raises is recorded as ``raised`` with its error (here: a bad dump file)."""
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "dump.json").write_text("{not json", encoding="utf-8")
    trace = tmp_path / "trace.jsonl"
    proc = _msprobe("compare", "-tp", bad / "dump.json", "-gp", bad / "dump.json", "-o", tmp_path / "o",
                    env={TRACE_PLUGINS_ENV: str(trace)})
    assert proc.returncode != 0
    raised = [c for c in _trace(trace) if c["outcome"] == "raised"]
    assert raised and raised[0]["hook"] == "msprobe_load_dump" and raised[0]["error"].split(":")[0].endswith("Error")


def test_a_watcher_of_the_tensor_rows_that_fails_is_named_and_the_run_goes_on(tmp_path):
    """An installed plugin's ``msprobe_tensor_rows_compared`` that raises (or calls ``sys.exit``) is a warning naming
    it, once; the other watchers (``-tensor_log``) still run and the result is written."""
    (tmp_path / "bad_watcher.py").write_text(
        "import sys\n\nfrom msprobe_core.plugin import hookimpl\n\n\n"
        "@hookimpl\ndef msprobe_tensor_rows_compared(columns):\n    sys.exit(3)\n", encoding="utf-8")
    env = {"MSPROBE_LOAD_PLUGINS": "bad_watcher",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = _msprobe("compare", *_sides("pytorch_tensor"), "-o", tmp_path / "out", "-tensor_log", env=env)
    assert proc.returncode == 0, proc.stderr
    assert (proc.stdout + proc.stderr).count("plugin 'bad_watcher': msprobe_tensor_rows_compared failed: it called "
                                             "sys.exit(3); the run goes on without it") == 1
    assert "Compare result: Cosine" in proc.stdout + proc.stderr
    assert len(list((tmp_path / "out").glob("compare_result_*.csv"))) == 1


RUNNER = '''
from msprobe_core.plugin import JobOutcome, OptionSpec, hookimpl, run_job


@hookimpl
def msprobe_register_options(register):
    register(OptionSpec("one_by_one", ("--one_by_one",), "Run the rank pairs one by one, last first.", kind="flag",
                        default=False))


@hookimpl
def msprobe_run_jobs(jobs, options, host, run):
    if not getattr(options, "one_by_one", False):
        return None
    outcomes = {}
    for job in reversed(jobs):
        outcome = outcomes[job.label] = JobOutcome(job)
        done = run_job(job, options, host, run, timestamp=run.stamp)
        if done is not None:
            outcome.table, outcome.files, _ = done
        print("ran", job.label)
    return [outcomes[job.label] for job in jobs]
'''


@pytest.mark.exercises_hooks("msprobe_run_jobs")
def test_an_installed_plugin_runs_the_jobs_its_own_way_through_the_public_api(tmp_path):
    """The documented runner: an option of its own, each job through ``run_job``; the plain compare's files."""
    (tmp_path / "one_by_one.py").write_text(RUNNER, encoding="utf-8")
    env = {"MSPROBE_LOAD_PLUGINS": "one_by_one",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    mine = _msprobe("compare", *_sides("pytorch_multirank"), "-o", tmp_path / "mine", "--one_by_one", env=env)
    assert mine.returncode == 0, mine.stderr
    assert mine.stdout.splitlines()[:2] == ["ran rank1", "ran rank0"]
    plain = _msprobe("compare", *_sides("pytorch_multirank"), "-o", tmp_path / "plain", env=env)
    assert plain.returncode == 0 and "ran rank" not in plain.stdout
    for rank in ("rank0", "rank1"):
        [a] = (tmp_path / "mine").glob(f"compare_result_{rank}_*.csv")
        [b] = (tmp_path / "plain").glob(f"compare_result_{rank}_*.csv")
        assert a.read_bytes() == b.read_bytes()


def test_a_runner_that_returns_junk_is_named(tmp_path):
    (tmp_path / "junk_runner.py").write_text(
        "from msprobe_core.plugin import hookimpl\n\n\n@hookimpl\ndef msprobe_run_jobs(jobs):\n    return 'done'\n",
        encoding="utf-8")
    env = {"MSPROBE_LOAD_PLUGINS": "junk_runner",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = _msprobe("compare", *_sides("pytorch_multirank"), "-o", tmp_path / "out", env=env)
    assert proc.returncode == 1
    [line] = proc.stderr.strip().splitlines()
    assert "plugin 'junk_runner'" in line and "msprobe_run_jobs" in line and "not a list of JobOutcome" in line, line


def test_trace_turned_off_writes_no_trace_and_the_compare_runs(tmp_path):
    trace = tmp_path / "trace.jsonl"
    off = _msprobe("compare", *_sides("pytorch_stats"), "-o", tmp_path / "off",
                   env={TRACE_PLUGINS_ENV: str(trace), DISABLE_ENV: "trace"})
    assert off.returncode == 0, off.stderr
    assert list((tmp_path / "off").glob("compare_result_*.csv")) and not trace.exists()


def test_trace_hooks_records_each_implementation_called_and_goes_with_the_trace_plugin(tmp_path):
    record = tmp_path / "calls.jsonl"
    on = _msprobe("compare", *_sides("pytorch_stats"), "-o", tmp_path / "on", env={TRACE_HOOKS_ENV: str(record)})
    assert on.returncode == 0, on.stderr
    calls = {(c["hook"], c["plugin"]) for c in _trace(record)}
    assert {("msprobe_register_metrics", "statistics_metrics"), ("msprobe_register_writers", "msprobe_core.builtin"),
            ("msprobe_plugins_loaded", "trace"), ("msprobe_add_hookspecs", "summary"),  # at registration
            ("msprobe_run_finished", "summary")} <= calls
    record.unlink()
    off = _msprobe("compare", *_sides("pytorch_stats"), "-o", tmp_path / "off",
                   env={TRACE_HOOKS_ENV: str(record), DISABLE_ENV: "trace"})
    assert off.returncode == 0, off.stderr
    assert list((tmp_path / "off").glob("compare_result_*.csv")) and not record.exists()


class _HostCalls:
    """A plugin watching the calls the host makes one implementation at a time, from ``msprobe_plugins_loaded``."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, object]] = []
        self.stop = None

    @hookimpl
    def msprobe_plugins_loaded(self, host):
        self.stop = host.add_hostcall_monitoring(lambda hook_name, hook_impls, kwargs: None, self.after)

    def after(self, outcome, hook_name, hook_impls, kwargs):
        [impl] = hook_impls
        self.seen.append((hook_name, impl.plugin_name, outcome.get_result()))


@pytest.mark.exercises_hooks("msprobe_plugins_loaded")
def test_a_plugin_watches_the_hosts_own_calls_from_msprobe_plugins_loaded():
    watcher = _HostCalls()
    host = PluginHost(autoload=False, extra_plugins=[watcher])
    # the registry hooks, collected after the plugins are loaded, one implementation at a time
    [options] = [r for h, plugin, r in watcher.seen if (h, plugin) == ("msprobe_register_options", "diff_analyze")]
    assert [spec.name for spec in options] == ["diff_analyze"]
    options = host.compare_options()
    watcher.seen.clear()
    assert host.run_jobs([], options, None, InlineExecutor()) is None
    assert watcher.seen == [("msprobe_run_jobs", "diff_analyze", None), ("msprobe_run_jobs", "parallel_jobs", None)]
    watcher.stop()
    host.run_jobs([], options, None, InlineExecutor())
    assert len(watcher.seen) == 2  # no longer watched


def test_a_watcher_of_the_loaded_plugins_that_fails_is_named_and_the_host_goes_on(caplog):
    class Broken:
        @hookimpl
        def msprobe_plugins_loaded(self, host):
            raise RuntimeError("cannot watch")

    host = PluginHost(autoload=False, extra_plugins=[Broken()])
    assert host.options.get("diff_analyze") is not None  # every registration collected
    assert ("plugin 'Broken': msprobe_plugins_loaded failed: RuntimeError: cannot watch; the run goes on without it"
            in caplog.text)
