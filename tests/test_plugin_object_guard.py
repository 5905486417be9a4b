"""Every call into an object a plugin registers goes through one guard (``msprobe_core/host/plugin_calls.py``).

A registered object that calls ``sys.exit()``, raises ``GeneratorExit`` or a ``BaseException`` class of its own,
or returns what its spec says it cannot (``None`` for a mapper's match…) is its plugin's failure: the plugin is
named with the file and line, and the run fails with exit 1 and one line, no traceback and no result; where the
run can go on without the object (a tensor metric's cells, a hierarchy source's tree) it goes on with a warning
naming the plugin. Never exit 0 without the result. A user's Ctrl-C (exactly ``KeyboardInterrupt``) still
interrupts. The plugins are real modules loaded through ``MSPROBE_LOAD_PLUGINS`` in real ``msprobe`` processes,
and, for the Python API, in this one.
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from msprobe_core import hookimpl
from msprobe_core.errors import PluginFailed
from msprobe_core.host.registry import PluginHost, reset_host

from .plugin_session import REPO

STATS = REPO / "examples" / "pytorch_stats"
TENSOR = REPO / "examples" / "pytorch_tensor"
HEADER = """\
from msprobe_core import hookimpl
from msprobe_core.plugin import *
import sys


class Stop(KeyboardInterrupt):  # a plugin's own interrupt class: no signal raises it
    pass


def misbehave(how, junk):
    if how == "exit":
        sys.exit(0)
    if how == "stop":
        raise Stop("stop")
    if how == "generator_exit":
        raise GeneratorExit
    return junk
"""

#: how a registered object misbehaves
HOW = ("exit", "stop", "generator_exit", "junk")
#: what each says in the one line naming the plugin
SAID = {"exit": "failed: it called sys.exit(0)", "stop": "failed: Stop: stop",
        "generator_exit": "failed: GeneratorExit", "junk": "returned "}

#: registered objects whose failure ends the run: the plugin module's body (``{how}``: the misbehaviour) and
#: the extra command-line arguments that make the run use it
ENDS_THE_RUN = {
    "mapper": ("""
        def run(ctx):
            return misbehave("{how}", None)

        @hookimpl
        def msprobe_register_mappers(register):
            register(MapperSpec("guarded-mapper", run, before=("exact",)))
        """, ()),
    "normaliser": ("""
        def fn(table, side, keys, options):
            return misbehave("{how}", keys[:1])

        @hookimpl
        def msprobe_register_normalizers(register):
            register(NormalizerSpec("guarded-normaliser", fn))
        """, ()),
    "metric_set": ("""
        def compute(ctx):
            return misbehave("{how}", [1, 2])

        @hookimpl
        def msprobe_register_metrics(register):
            register(MetricSpec("statistics", compute, applies=lambda options: True))
        """, ()),
    "verdict": ("""
        def judge(ctx):
            return misbehave("{how}", "Pass")

        @hookimpl
        def msprobe_register_verdicts(register):
            register(VerdictSpec("guarded-verdict", judge))
        """, ()),
    "writer": ("""
        def write(table, path):
            return misbehave("{how}", str(path))

        @hookimpl
        def msprobe_register_writers(register):
            register(WriterSpec("guarded", ".csv", write))
        """, ("--output_format", "guarded")),
    "loader": ("""
        @hookimpl
        def msprobe_load_dump(path, options):
            return misbehave("{how}", "a table")
        """, ()),
    "discovery": ("""
        @hookimpl
        def msprobe_discover_jobs(target, golden, options):
            return misbehave("{how}", "jobs")
        """, ()),
}


#: registered objects of a tensor-mode run: the module's body and the run's extra arguments
TENSOR_RUN = {
    "reader": ("""
        import dataclasses

        def reader(path):
            return misbehave("{how}", "not an array")

        @hookimpl
        def msprobe_register_frameworks(register):
            from msprobe_pytorch import plugin
            specs = []
            plugin.msprobe_register_frameworks(specs.append)
            register(dataclasses.replace(specs[0], read_tensor=reader, plugin=""))
        """, ("--workers", "2")),
    "executor": ("""
        from msprobe_core.workers.executors import ExecutorSpec

        def create(options):
            return misbehave("{how}", None)

        @hookimpl
        def msprobe_register_executors(register):
            register(ExecutorSpec("guarded", create))
        """, ("--executor", "guarded", "--workers", "2")),
}


def _msprobe() -> list[str]:
    script = Path(sys.executable).with_name("msprobe")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "msprobe_core"]


def _plugin(tmp_path: Path, body: str, name: str = "guarded_plugin") -> dict[str, str]:
    """The module ``name`` written under ``tmp_path/mods``; the environment that loads it."""
    folder = tmp_path / "mods"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text(HEADER + textwrap.dedent(body))
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path, MSPROBE_LOAD_PLUGINS=name)


def _compare(tmp_path: Path, env: dict[str, str], pair: Path, *args: str) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path / "out"
    proc = subprocess.run([*_msprobe(), "compare", "-tp", pair / "target" / "step0", "-gp", pair / "golden" / "step0",
                           "-o", out, *args], capture_output=True, text=True, env=env, timeout=600)
    return proc, out


def _assert_named_failure(proc: subprocess.CompletedProcess, out: Path, how: str) -> None:
    """Exit 1, one stderr line naming the plugin, its file and line; no traceback; no result file."""
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("msprobe: error: plugin 'guarded_plugin': "), line
    assert SAID[how] in line and "guarded_plugin.py:" in line, line
    assert "internal error" not in line and "Traceback" not in proc.stdout + proc.stderr
    assert not list(out.glob("compare_result_*")) if out.is_dir() else True


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("kind", sorted(ENDS_THE_RUN))
def test_a_registered_object_that_misbehaves_fails_the_run_naming_its_plugin(tmp_path, kind, how):
    body, args = ENDS_THE_RUN[kind]
    proc, out = _compare(tmp_path, _plugin(tmp_path, body.format(how=how)), STATS, *args)
    _assert_named_failure(proc, out, how)


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("kind", ["mapper", "metric_set", "verdict", "normaliser"])
def test_whole_tables_and_pool_workers_guard_them_too(tmp_path, kind, how):
    """The same objects on the whole-table strategy, and on the pool workers of a multi-rank run."""
    body, args = ENDS_THE_RUN[kind]
    env = _plugin(tmp_path, body.format(how=how))
    proc, out = _compare(tmp_path, dict(env, MSPROBE_WHOLE_TABLES="1"), STATS, *args)
    _assert_named_failure(proc, out, how)
    proc, out = _compare(tmp_path, env, REPO / "examples" / "pytorch_multirank", "--workers", "2", *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # each rank pair failed on its worker, named there
    named = [line for line in proc.stdout.splitlines() if "[ERROR]" in line]
    assert len(named) == 2 and all("plugin 'guarded_plugin': " in line and SAID[how] in line
                                   and "guarded_plugin.py:" in line for line in named), proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr and not list(out.glob("**/compare_result_*"))


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("kind", sorted(TENSOR_RUN))
def test_a_tensor_runs_reader_or_executor_that_misbehaves_fails_the_run_naming_its_plugin(tmp_path, kind, how):
    """A framework's tensor reader (run in the pool workers) and an executor's ``create``."""
    body, args = TENSOR_RUN[kind]
    proc, out = _compare(tmp_path, _plugin(tmp_path, body.format(how=how)), TENSOR, *args)
    _assert_named_failure(proc, out, how)


@pytest.mark.parametrize(("body", "said"), [
    ("""
        @hookimpl
        def msprobe_register_metrics(register):
            register(MetricSpec("statistics", lambda ctx: {"Short": [1.0]}, applies=lambda options: True))
        """, "metric set 'statistics' (MetricSpec.compute) returned 1 cells in column 'Short' for "),
    ("""
        @hookimpl
        def msprobe_register_verdicts(register):
            register(VerdictSpec("guarded-verdict", lambda ctx: {"Verdict": ["pass"] * 3}))
        """, "verdict rule 'guarded-verdict' (VerdictSpec.judge) returned 3 cells in column 'Verdict' for "),
])
def test_columns_of_the_wrong_length_are_the_plugins_junk(tmp_path, body, said):
    proc, out = _compare(tmp_path, _plugin(tmp_path, body), STATS)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("msprobe: error: plugin 'guarded_plugin': ") and said in line, line
    assert "internal error" not in line and "guarded_plugin.py:" in line


def test_a_junk_return_says_what_was_expected_and_where_the_function_is(tmp_path):
    body, _ = ENDS_THE_RUN["mapper"]
    proc, _ = _compare(tmp_path, _plugin(tmp_path, body.format(how="junk")), STATS)
    assert "mapper 'guarded-mapper' (MapperSpec.run) returned None, not a MatchResult (defined at " \
           "guarded_plugin.py:" in proc.stderr, proc.stderr


def test_the_chunked_strategy_guards_a_writers_chunked_output(tmp_path):
    """A writer's ``open_chunked`` object (a streamed compare) calls ``sys.exit()`` in ``commit``: named, exit 1."""
    env = _plugin(tmp_path, """
        class Chunked:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return None

            def append(self, table):
                pass

            def commit(self):
                sys.exit(0)

            def abort(self, exc=None):
                pass

        @hookimpl
        def msprobe_register_writers(register):
            register(WriterSpec("guarded", ".csv", lambda table, path: [path],
                                open_chunked=lambda path, rows: Chunked()))
        """)
    env["MSPROBE_STREAM_MIN_BYTES"] = "0"  # every pair the chunked path takes goes chunk by chunk
    proc, out = _compare(tmp_path, env, STATS, "--output_format", "guarded")
    _assert_named_failure(proc, out, "exit")
    assert "writer 'guarded' (its chunked writer).commit" in proc.stderr


@pytest.mark.parametrize("how", HOW)
def test_a_tensor_metric_that_misbehaves_costs_its_cells_not_the_run(tmp_path, how):
    """In the pool workers: the metric's cells say ``unsupported``, one warning names the plugin; the run goes on."""
    env = _plugin(tmp_path, f"""
        def metric(npu, bench):
            return misbehave("{how}", [1.0])

        @hookimpl
        def msprobe_register_metrics(register):
            register(TensorMetricSpec("Guarded", metric))
        """)
    proc, out = _compare(tmp_path, env, TENSOR, "--workers", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = out.glob("compare_result_*.csv")
    cells = {row["Guarded"] for row in csv.DictReader(result.open(newline=""))}
    assert cells == {"unsupported"}
    (warning,) = [line for line in (proc.stdout + proc.stderr).splitlines() if "Guarded" in line]
    assert "plugin 'guarded_plugin': metric 'Guarded' raised on " in warning and "PluginFailed" in warning
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("how", HOW)
def test_a_hierarchy_source_that_misbehaves_costs_its_tree_not_the_report(tmp_path, how):
    env = _plugin(tmp_path, f"""
        def load(dump, mode, framework):
            return misbehave("{how}", "not a lookup")

        @hookimpl
        def msprobe_register_hierarchies(register):
            register(HierarchySpec("guarded-tree", load))
        """)
    proc, out = _compare(tmp_path, env, STATS, "--report", "html")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(list(out.glob("compare_result_*.csv"))) == 1 and len(list(out.glob("compare_report_*.html"))) == 1
    warnings = {line.split("] ", 2)[-1] for line in proc.stdout.splitlines() if "guarded-tree" in line}
    (warning,) = warnings  # the same one for each side it was asked about
    assert "plugin 'guarded_plugin': hierarchy source 'guarded-tree' (HierarchySpec.load)" in warning
    assert SAID[how] in warning and "guarded_plugin.py:" in warning and "Traceback" not in proc.stdout + proc.stderr


def test_a_hierarchy_lookup_that_exits_is_said_once_and_the_report_is_written(tmp_path):
    env = _plugin(tmp_path, """
        def load(dump, mode, framework):
            return lambda node: sys.exit(0)

        @hookimpl
        def msprobe_register_hierarchies(register):
            register(HierarchySpec("guarded-tree", load))
        """)
    proc, out = _compare(tmp_path, env, STATS, "--report", "html")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(list(out.glob("compare_report_*.html"))) == 1 and "Traceback" not in proc.stdout + proc.stderr
    warnings = {line.split("] ", 2)[-1] for line in proc.stdout.splitlines() if "guarded-tree" in line}
    (warning,) = warnings  # once, though asked of every node
    assert warning.startswith("plugin 'guarded_plugin': hierarchy source 'guarded-tree' (its lookup) failed: it "
                              "called sys.exit(0) (at guarded_plugin.py:"), warning
    assert warning.endswith("); the model tree does without it."), warning


OPTION = """
    def validate(value):
        {raises}

    @hookimpl
    def msprobe_register_options(register):
        register(OptionSpec("guarded_opt", ("--guarded_opt",), "x", validate=validate))
"""


@pytest.mark.parametrize(("raises", "said"), [
    ("return len(value) + None", "failed: TypeError: unsupported operand"),
    ("sys.exit(0)", "failed: it called sys.exit(0)"),
    ("raise GeneratorExit", "failed: GeneratorExit"),
])
def test_an_option_validator_bug_is_the_plugins_not_the_users_usage_error(tmp_path, raises, said):
    proc, out = _compare(tmp_path, _plugin(tmp_path, OPTION.format(raises=raises)), STATS, "--guarded_opt", "x")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("msprobe: error: plugin 'guarded_plugin': option 'guarded_opt' (OptionSpec.validate) ")
    assert said in line and "guarded_plugin.py:" in line and not out.exists()


def test_an_option_validator_refusing_with_value_error_is_still_the_users_usage_error(tmp_path):
    env = _plugin(tmp_path, OPTION.format(raises="raise ValueError('not a good value')"))
    proc, _ = _compare(tmp_path, env, STATS, "--guarded_opt", "x")
    assert proc.returncode == 2 and "--guarded_opt: not a good value" in proc.stderr, proc.stderr


def test_a_users_ctrl_c_during_a_plugins_code_still_interrupts(tmp_path):
    """A genuine SIGINT raises exactly ``KeyboardInterrupt``: the guard lets it through, the run says it was
    interrupted (130), it is not blamed on the plugin."""
    started = tmp_path / "started"
    env = _plugin(tmp_path, f"""
        import pathlib, time

        def run(ctx):
            pathlib.Path({str(started)!r}).write_text("x")
            time.sleep(120)

        @hookimpl
        def msprobe_register_mappers(register):
            register(MapperSpec("slow-mapper", run, before=("exact",)))
        """)
    out = tmp_path / "out"
    proc = subprocess.Popen([*_msprobe(), "compare", "-tp", STATS / "target" / "step0", "-gp",
                             STATS / "golden" / "step0", "-o", out], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while not started.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), proc.communicate()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stdout + stderr
    assert "interrupted (Ctrl-C)" in stderr and "guarded_plugin" not in stderr and "Traceback" not in stderr


# --------------------------------------------------------------------------- the Python API
@pytest.fixture
def api_host(tmp_path, monkeypatch):
    """A host loading a plugin module of the test's, made the process's host for ``compare()``."""

    def make(body: str) -> PluginHost:
        _plugin(tmp_path, body)
        monkeypatch.syspath_prepend(str(tmp_path / "mods"))
        monkeypatch.setenv("MSPROBE_LOAD_PLUGINS", "guarded_plugin")
        sys.modules.pop("guarded_plugin", None)
        host = PluginHost()
        reset_host(host)
        return host

    yield make
    reset_host(None)
    sys.modules.pop("guarded_plugin", None)


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("kind", ["mapper", "writer", "verdict"])
def test_the_python_api_raises_plugin_failed_naming_the_plugin(tmp_path, api_host, kind, how):
    from msprobe_core import compare

    body, args = ENDS_THE_RUN[kind]
    api_host(body.format(how=how))
    extra = {"output_format": "guarded"} if args else {}
    with pytest.raises(PluginFailed, match=r"^plugin 'guarded_plugin': .*guarded_plugin\.py:") as caught:
        compare(STATS / "target" / "step0", STATS / "golden" / "step0", tmp_path / "api_out", **extra)
    assert SAID[how] in str(caught.value)
    assert not list((tmp_path / "api_out").glob("compare_result_*")) if (tmp_path / "api_out").is_dir() else True


def test_a_plugin_raising_exactly_keyboard_interrupt_is_taken_as_the_users(tmp_path, api_host):
    """The one thing the guard cannot tell apart: ``KeyboardInterrupt`` itself is what Ctrl-C raises, so it goes
    through (docs/plugins.md says so); the run is interrupted, never a success."""
    from msprobe_core import compare

    api_host("""
        def run(ctx):
            raise KeyboardInterrupt

        @hookimpl
        def msprobe_register_mappers(register):
            register(MapperSpec("guarded-mapper", run, before=("exact",)))
        """)
    with pytest.raises(KeyboardInterrupt):
        compare(STATS / "target" / "step0", STATS / "golden" / "step0", tmp_path / "api_out")


def test_guarded_specs_keep_their_attributes_and_compare_equal():
    """The guard is invisible to the core: a reader's ``accepts_str``, the function's name, and two hosts' specs
    of the same plugin compare equal."""
    from msprobe_core.host.plugin_calls import PluginCode

    def reader(path):
        return path

    reader.accepts_str = True
    guarded = PluginCode(reader, "plugin 'p'", "framework 'f' (FrameworkSpec.read_tensor)")
    assert guarded.accepts_str is True and guarded.__name__ == "reader" and guarded.__module__ == __name__
    assert guarded == PluginCode(reader, "plugin 'p'", "other") and guarded("x") == "x"
    import pickle

    assert pickle.loads(pickle.dumps(PluginCode(len, "plugin 'p'", "w")))([1]) == 1


def _exits(prefix: str) -> str | None:
    sys.exit(3)


def _junk(prefix: str) -> str | None:
    return "allreduce"


@pytest.mark.parametrize(("kind", "said"), [
    (_exits, "failed: it called sys.exit(3)"),
    (_junk, "returned 'allreduce', not 'collective', 'send', 'recv' or None"),
])
def test_a_communication_rule_that_misbehaves_names_its_plugin(tmp_path, kind, said):
    """``-da`` asks the plugins' ``CommOpSpec.kind`` of every op; one that exits or answers junk fails each rank
    pair with a line naming it (the run fails, exit 1)."""
    from msprobe_core.errors import CompareFailed
    from msprobe_core.plugin import CommOpSpec

    from .test_diff_analyze import _analyse, _t, api

    class Rules:
        @hookimpl
        def msprobe_register_comm_ops(self, register):
            register(CommOpSpec("guarded-rule", kind))

    def rank(r: int, bad: float) -> dict:
        return {"Functional.relu.0.forward": api([_t(1.0)], [_t(bad if r == 0 else 1.0)]),
                "Hccl.allreduce.0.forward": api([_t(bad if r == 0 else 1.0)], [_t(bad + 1)])}

    reset_host(PluginHost(extra_plugins=[Rules()]))
    try:
        with pytest.raises(CompareFailed) as caught:
            _analyse(tmp_path, [rank(0, 5.0), rank(1, 5.0)], [rank(0, 1.0), rank(1, 1.0)])
    finally:
        reset_host(None)
    errors = [o.error for o in caught.value.outcomes if o.error]
    assert errors and all(e.startswith("plugin 'Rules': communication rule 'guarded-rule' (CommOpSpec.kind) ")
                          and said in e and "test_plugin_object_guard.py:" in e for e in errors), errors


def test_an_installed_plugins_distribution_is_named(tmp_path):
    """An entry point of an installed distribution: the line names the plugin and the distribution it came from."""
    from .plugin_session import allow_distribution

    allow_distribution("guarded-dist")
    env = _plugin(tmp_path, ENDS_THE_RUN["mapper"][0].format(how="exit"))
    env["MSPROBE_LOAD_PLUGINS"] = ""
    info = tmp_path / "mods" / "guarded_dist-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: guarded-dist\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[msprobe_core.plugins]\nguarded = guarded_plugin\n")
    proc, out = _compare(tmp_path, env, STATS)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.startswith("msprobe: error: plugin 'guarded' (distribution guarded-dist): mapper "
                                  "'guarded-mapper' (MapperSpec.run) failed: it called sys.exit(0) (at "
                                  "guarded_plugin.py:"), proc.stderr


@pytest.mark.parametrize(("returns", "said"), [
    ("[]", "returned no file, not the files it wrote"),
    ("[path]", "a file it did not write"),
])
def test_a_writer_that_claims_files_it_did_not_write_fails_the_run(tmp_path, returns, said):
    """A writer whose ``write`` returns no file, or a file that is not there: not exit 0 without the result."""
    env = _plugin(tmp_path, f"""
        def write(table, path):
            return {returns}

        @hookimpl
        def msprobe_register_writers(register):
            register(WriterSpec("guarded", ".csv", write))
        """)
    proc, out = _compare(tmp_path, env, STATS, "--output_format", "guarded")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("msprobe: error: plugin 'guarded_plugin': writer 'guarded' (WriterSpec.write) returned ")
    assert said in line and "guarded_plugin.py:" in line


def test_an_exception_that_cannot_say_what_it_is_is_still_one_line(tmp_path):
    """A plugin's own ``BaseException`` whose ``__str__`` raises, and a ``sys.exit()`` of a huge text."""
    env = _plugin(tmp_path, """
        class Mute(BaseException):
            def __str__(self):
                raise RuntimeError("no words")

        def run(ctx):
            raise Mute()

        def judge(ctx):
            sys.exit("x" * 100000)

        @hookimpl
        def msprobe_register_mappers(register):
            register(MapperSpec("guarded-mapper", run, before=("exact",)))
        """)
    proc, _ = _compare(tmp_path, env, STATS)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert "(MapperSpec.run) failed: Mute: <unprintable> (at guarded_plugin.py:" in line, line
    body = (tmp_path / "mods" / "guarded_plugin.py").read_text().replace(
        'MapperSpec("guarded-mapper", run, before=("exact",))', 'VerdictSpec("guarded-verdict", judge)')
    body = body.replace("msprobe_register_mappers", "msprobe_register_verdicts")
    (tmp_path / "mods" / "guarded_plugin.py").write_text(body)
    proc, _ = _compare(tmp_path, env, STATS)
    (line,) = proc.stderr.splitlines()
    assert proc.returncode == 1 and "failed: it called sys.exit('xxxx" in line and len(line) < 500, line
