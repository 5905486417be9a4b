"""A plugin's mistake is that plugin's failure: one warning naming it, the plugin (or what it registers there)
skipped, and every compare still runs; a bad ``MSPROBE_LOAD_PLUGINS`` is the user's error (exit 2, one line).

The plugins are real modules written into ``tmp_path`` and loaded through ``MSPROBE_LOAD_PLUGINS``, the way
a developer loads one; the end-to-end cases run the ``msprobe`` console script on a small example pair.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from msprobe_core import hookimpl
from msprobe_core.default_plugins.plugins_command.listing import describe_plugins
from msprobe_core.host.registry import BUILTIN_PLUGIN, PluginHost, is_core_plugin
from msprobe_core.host.specs import MapperSpec, WriterSpec
from msprobe_core.options import OptionSpec

from .plugin_session import REPO, read_pyproject

PAIR = REPO / "examples" / "pytorch_stats"
HEADER = "from msprobe_core import hookimpl\nfrom msprobe_core.plugin import *\nimport sys\n"


def _msprobe() -> list[str]:
    """The console script of this environment (``python -m msprobe_core`` where it is not installed)."""
    script = Path(sys.executable).with_name("msprobe")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "msprobe_core"]


def _module(tmp_path: Path, name: str, body: str) -> Path:
    """A plugin module ``name`` under ``tmp_path/mods`` (returned: the folder to put on ``PYTHONPATH``)."""
    folder = tmp_path / "mods"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text(HEADER + textwrap.dedent(body))
    return folder


def _run(tmp_path: Path, plugins: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "mods"), MSPROBE_LOAD_PLUGINS=plugins)
    return subprocess.run([*_msprobe(), *args], capture_output=True, text=True, env=env, timeout=600)


def _compare(tmp_path: Path, plugins: str) -> tuple[subprocess.CompletedProcess, list[Path]]:
    out = tmp_path / "out"
    proc = _run(tmp_path, plugins, "compare", "-tp", PAIR / "target" / "step0", "-gp", PAIR / "golden" / "step0",
                "-o", out)
    return proc, sorted(out.glob("compare_result_*.csv")) if out.is_dir() else []


def _warnings(proc: subprocess.CompletedProcess) -> list[str]:
    """The warning lines of a run (the log goes to stdout, errors to stderr)."""
    return [line for line in (proc.stdout + proc.stderr).splitlines() if "WARNING" in line or "warning:" in line]


#: plugin modules whose registration goes wrong, and what their one warning says
BROKEN = {
    "exits": ("""
        @hookimpl
        def msprobe_register_mappers(register):
            sys.exit()              # a library giving up while the plugin registers
        """, "msprobe_register_mappers failed: it called sys.exit(None)"),
    "exits_two": ("""
        @hookimpl
        def msprobe_register_options(register):
            register(OptionSpec("exits_two_opt", ("--exits_two_opt",), "x"))
            raise SystemExit(2)
        """, "msprobe_register_options failed: it called sys.exit(2)"),
    "none_mapper": ("""
        @hookimpl
        def msprobe_register_mappers(register):
            register(None)
        """, "msprobe_register_mappers failed: register() takes a MapperSpec, not None"),
    "none_normalizer": ("""
        @hookimpl
        def msprobe_register_normalizers(register):
            register(None)
        """, "msprobe_register_normalizers failed: register() takes a NormalizerSpec, not None"),
    "junk_verdict": ("""
        @hookimpl
        def msprobe_register_verdicts(register):
            register("strict")
        """, "msprobe_register_verdicts failed: register() takes a VerdictSpec, not 'strict'"),
    "junk_comm_op": ("""
        @hookimpl
        def msprobe_register_comm_ops(register):
            register(42)
        """, "msprobe_register_comm_ops failed: register() takes a CommOpSpec, not 42"),
    "junk_option": ("""
        @hookimpl
        def msprobe_register_options(register):
            register({"name": "x"})
        """, "msprobe_register_options failed: register() takes an OptionSpec, not {'name': 'x'}"),
    "misspelt": ("""
        @hookimpl
        def msprobe_register_mapers(register):
            pass
        """, "it implements 'msprobe_register_mapers', which is no msprobe hook (did you mean "
             "'msprobe_register_mappers'?); the plugin is skipped"),
    "bad_default": ("""
        @hookimpl
        def msprobe_register_options(register):
            register(OptionSpec("bad_default_count", ("--bad_default_count",), "x", kind="int", default="abc"))
        """, "option 'bad_default_count' is ignored: its default is wrong: --bad_default_count must be an integer"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_plugin_is_one_warning_and_the_compare_runs(tmp_path, name):
    body, said = BROKEN[name]
    _module(tmp_path, name, body)
    proc, results = _compare(tmp_path, name)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(results) == 1 and results[0].stat().st_size > 0
    (warning,) = _warnings(proc)
    assert f"plugin '{name}': " in warning and said in warning
    assert "Traceback" not in proc.stdout + proc.stderr and proc.stderr == ""


def test_a_bad_default_does_not_reach_the_command_line(tmp_path):
    """The refused option is not an option at all: giving it is the ordinary unknown-option error."""
    _module(tmp_path, "bad_default", BROKEN["bad_default"][0])
    proc = _run(tmp_path, "bad_default", "compare", "-h")
    help_text = proc.stdout.split("Usage:", 1)[1]
    assert proc.returncode == 0 and "-tp, --target_path" in help_text and "--bad_default_count" not in help_text
    proc = _run(tmp_path, "bad_default", "compare", "--bad_default_count", "3")
    assert proc.returncode == 2 and "no such option '--bad_default_count'" in proc.stderr


def test_what_a_failing_hook_registered_before_failing_is_skipped(caplog):
    class Half:
        @hookimpl
        def msprobe_register_options(self, register):
            register(OptionSpec("half_kept", ("--half_kept",), "x"))
            raise SystemExit(0)

        @hookimpl
        def msprobe_register_writers(self, register):
            register(WriterSpec("half", ".half", lambda table, path: [path]))
            try:
                register(None)
            except TypeError:  # a plugin that swallows register()'s complaint is still wrong
                pass

        @hookimpl
        def msprobe_register_mappers(self, register):  # its other hooks are fine: kept
            register(MapperSpec("half-mapper", lambda ctx: None, before=("exact",)))

    host = PluginHost(autoload=False, extra_plugins=[Half()])
    assert host.options.get("half_kept") is None and "half" not in host.writers
    assert "half-mapper" in [m.name for m in host.mappers]
    assert caplog.text.count("what it registers there is skipped") == 2


@pytest.mark.parametrize(("spec", "said"), [
    (MapperSpec("m", None), "MapperSpec.run must be callable, not None"),
    (MapperSpec("m", lambda ctx: None, before="exact"), "MapperSpec.before must be a tuple of names, not 'exact'"),
    (MapperSpec("", lambda ctx: None), "register() takes a MapperSpec, not MapperSpec(name=''"),
])
def test_a_spec_that_cannot_work_is_refused_at_registration(caplog, spec, said):
    class Plugin:
        @hookimpl
        def msprobe_register_mappers(self, register):
            register(spec)

    host = PluginHost(autoload=False, extra_plugins=[Plugin()])
    assert [m.name for m in host.mappers] == ["auto-map", "data-mapping", "fuzzy", "exact"]
    assert said in caplog.text


def test_a_keyboard_interrupt_in_a_plugin_is_the_users_ctrl_c():
    class Interrupted:
        @hookimpl
        def msprobe_register_mappers(self, register):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        PluginHost(autoload=False, extra_plugins=[Interrupted()])


# --------------------------------------------------------------------------- MSPROBE_LOAD_PLUGINS
@pytest.mark.parametrize(("value", "body", "said"), [
    ("no_such_plugin_mod", None, "cannot import plugin module 'no_such_plugin_mod' (ModuleNotFoundError: "),
    ("exits_on_import", "sys.exit(3)\n", "cannot import plugin module 'exits_on_import' (it called sys.exit(3))"),
    ("raises_on_import", "import no_such_dependency_x\n", "cannot import plugin module 'raises_on_import' "
                                                           "(ModuleNotFoundError: No module named 'no_such_dep"),
])
def test_an_unimportable_module_in_msprobe_load_plugins_is_exit_2(tmp_path, value, body, said):
    _module(tmp_path, value if body else "unused", body or "")
    proc, results = _compare(tmp_path, value)
    assert proc.returncode == 2 and results == [] and not (tmp_path / "out").exists()
    assert proc.stderr.splitlines() == [proc.stderr.strip()]  # one line
    assert proc.stderr.startswith("msprobe: error: MSPROBE_LOAD_PLUGINS: ") and said in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    listed = _run(tmp_path, value, "plugins")
    assert listed.returncode == 2 and said in listed.stderr and "Traceback" not in listed.stderr


def test_a_module_named_twice_or_also_installed_loads_once(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(_module(tmp_path, "twice", """
        @hookimpl
        def msprobe_register_writers(register):
            register(WriterSpec("twice", ".twice", lambda table, path: [path]))
        """)))
    monkeypatch.setenv("MSPROBE_LOAD_PLUGINS", "twice, twice,,msprobe_pytorch.plugin")
    host = PluginHost()
    assert "twice" in host.writers and "pytorch" in {d["name"] for d in describe_plugins(host)}


# --------------------------------------------------------------------------- msprobe_claim_command_line
CLAIMS = """
    @hookimpl
    def msprobe_claim_command_line(args):
        raise RuntimeError("claim bug")
"""


def test_a_claim_that_raises_is_one_warning_and_the_others_are_asked(tmp_path):
    _module(tmp_path, "bad_claim", CLAIMS)
    proc = _run(tmp_path, "bad_claim", "--greet")  # no plugin takes it: msprobe's own error
    assert proc.returncode == 2 and "Traceback" not in proc.stdout + proc.stderr
    (warning,) = _warnings(proc)
    assert "plugin 'bad_claim': msprobe_claim_command_line failed: RuntimeError: claim bug" in warning
    assert proc.stderr == "msprobe: error: no such option '--greet' (see 'msprobe --help')\n"
    proc = _run(tmp_path, "bad_claim", "-f", "pytorch", "compare", "-i", tmp_path / "missing.json")
    assert proc.returncode == 2 and "missing.json" in proc.stderr  # msprobe-classic still claimed it


# --------------------------------------------------------------------------- option clashes
THIEF = """
    @hookimpl
    def msprobe_register_options(register):
        register(OptionSpec("{name}_rank", ("--rank",), "Steals the kernel plugin's flag."))
        register(OptionSpec("{name}_step", ("--step",), "Steals another."))
        register(OptionSpec("{name}_am", ("-am",), "Steals msprobe-mindspore's."))
        register(OptionSpec("{name}_help", ("-h",), "Hides the help.", kind="flag", default=False))
        register(OptionSpec("{name}_long_help", ("--help",), "Hides it too.", kind="flag", default=False))
        register(OptionSpec("help", ("--my_help",), "Takes click's name of the help.", kind="flag", default=False))
        register(OptionSpec("{name}_own", ("--{name}_own",), "Its own: kept."))
"""


def test_a_third_party_plugin_cannot_take_first_party_options_whatever_its_name(tmp_path, monkeypatch, caplog):
    # 'aaa' sorts before every plugin of this repository: by name it would win every clash
    monkeypatch.syspath_prepend(str(_module(tmp_path, "aaa", THIEF.format(name="aaa"))))
    monkeypatch.setenv("MSPROBE_LOAD_PLUGINS", "aaa")
    host = PluginHost()
    owners = {flag: spec.plugin for spec in host.options.specs for flag in spec.flags}
    assert (owners["--rank"], owners["--step"], owners["-am"]) == ("kernel", "steps", "mindspore")  # steps: a default
    assert owners["-tp"] == BUILTIN_PLUGIN
    assert "-h" not in owners and "--help" not in owners and host.options.get("help") is None
    assert owners["--aaa_own"] == "aaa"
    assert "plugin 'aaa': option 'aaa_rank' is ignored: flag --rank is already declared by kernel" in caplog.text
    assert "plugin 'aaa': option 'aaa_help' is ignored: flag -h is reserved" in caplog.text
    assert "plugin 'kernel'" not in caplog.text and "plugin 'mindspore'" not in caplog.text


def test_the_help_stays_the_help(tmp_path):
    _module(tmp_path, "aaa", THIEF.format(name="aaa"))
    proc = _run(tmp_path, "aaa", "compare", "-h")
    assert proc.returncode == 0 and "-tp, --target_path" in proc.stdout
    assert "--rank TEXT" in proc.stdout.split("msprobe-kernel:", 1)[1] and "--aaa_own" in proc.stdout


def test_between_third_party_plugins_the_first_loaded_keeps_an_option(tmp_path, monkeypatch, caplog):
    folder = _module(tmp_path, "zzz_first", THIEF.format(name="zzz"))
    _module(tmp_path, "aaa_second", THIEF.format(name="aaa").replace("--aaa_own", "--zzz_own"))
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("MSPROBE_LOAD_PLUGINS", "zzz_first,aaa_second")
    host = PluginHost(autoload=False)
    assert host.options.get("zzz_own").plugin == "zzz_first" and host.options.get("aaa_own") is None
    assert "plugin 'aaa_second': option 'aaa_own' is ignored: flag --zzz_own is already declared by zzz_first" \
        in caplog.text


@pytest.mark.exercises_hooks("msprobe_first_party_distributions")
def test_first_party_means_the_distributions_of_plugins_folder():
    projects = [read_pyproject(p)["project"] for p in REPO.glob("plugins/*/pyproject.toml")]
    # msprobe-testing (plugins/testing) is a pytest plugin: it registers nothing with msprobe
    names = {p["name"] for p in projects if "msprobe_core.plugins" in p.get("entry-points", {})}
    host = PluginHost()
    assert set(host.first_party) == names
    assert {host._tier(name) for name, _ in host.pm.list_name_plugin() if not is_core_plugin(name)} <= {1, 2}
    assert host._tier(BUILTIN_PLUGIN) == 0 and host._tier("kernel") == 1


def test_an_installed_plugin_exiting_on_import_is_skipped(tmp_path):
    """An entry point whose module calls ``sys.exit()`` as it loads: skipped with a warning, the compare runs."""
    from .plugin_session import allow_distribution

    allow_distribution("exitonload")
    site = tmp_path / "mods"
    info = site / "exitonload-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: exitonload\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[msprobe_core.plugins]\nexitonload = exitonload_mod\n")
    (site / "exitonload_mod.py").write_text("import sys\nsys.exit(0)\n")
    proc, results = _compare(tmp_path, "")
    assert proc.returncode == 0 and len(results) == 1, proc.stdout + proc.stderr
    (warning,) = _warnings(proc)
    assert "plugin 'exitonload' (exitonload) could not be loaded and is skipped: it called sys.exit(0)" in warning


@pytest.mark.parametrize(("hook", "signature"), [
    ("msprobe_load_dump", "path, options"),
    ("msprobe_discover_jobs", "target, golden, options"),
])
def test_a_plugin_calling_sys_exit_during_a_run_is_named_not_a_silent_success(tmp_path, hook, signature):
    _module(tmp_path, "exits_in_run", f"""
        @hookimpl
        def {hook}({signature}):
            sys.exit()
        """)
    proc, results = _compare(tmp_path, "exits_in_run")
    assert proc.returncode == 1 and results == [], proc.stdout + proc.stderr
    assert proc.stderr.startswith(f"msprobe: error: plugin 'exits_in_run': {hook} failed: it called sys.exit(None) "
                                  "(at exits_in_run.py:")
    assert "Traceback" not in proc.stdout


def test_a_command_registration_that_exits_is_skipped(caplog):
    import click

    class Commands:
        @hookimpl
        def msprobe_register_commands(self, register):
            register(click.Command("early"))
            sys.exit(1)

    host = PluginHost(autoload=False, extra_plugins=[Commands()])
    assert set(host.register_commands(("compare",))) == {"report", "merge_result", "plugins"}  # the default plugins' only
    assert "msprobe_register_commands failed: it called sys.exit(1); what it registers there is skipped" in caplog.text


def test_the_short_form_of_a_normalizer_registration_still_works():
    class Short:
        @hookimpl
        def msprobe_register_normalizers(self, register):
            register("short-upper", lambda table, side, keys, options: [k.upper() for k in keys], order=5)
            register("short-extra", lambda table, side, keys, options: keys, 1, ("dump",), "p", "too many")

    host = PluginHost(autoload=False, extra_plugins=[Short()])
    assert "short-upper" not in [n.name for n in host.normalizers]  # the second call is junk: the hook is skipped

    class Fine:
        @hookimpl
        def msprobe_register_normalizers(self, register):
            register("short-upper", lambda table, side, keys, options: [k.upper() for k in keys], order=5)

    host = PluginHost(autoload=False, extra_plugins=[Fine()])
    (spec,) = [n for n in host.normalizers if n.name == "short-upper"]
    assert spec.order == 5 and spec.fn(None, "target", ["a"], None) == ["A"]


@pytest.mark.parametrize(("hook", "body"), [
    ("msprobe_load_dump", """
        @hookimpl
        def msprobe_load_dump(path, options):
            raise RuntimeError("the loader's own bug")
        """),
    ("mapper", """
        def run(context):
            raise RuntimeError("the loader's own bug")

        @hookimpl
        def msprobe_register_mappers(register):
            register(MapperSpec("buggy", run, before=("exact",)))
        """),
])
def test_a_plugin_bug_during_a_run_is_reported_as_that_plugins(tmp_path, hook, body):
    """An unexpected exception raised in a third-party plugin's code names that plugin (and where), not the core's
    "internal error, please report it"; still one line, exit 1 and no result file."""
    _module(tmp_path, "buggy_plugin", body)
    proc, results = _compare(tmp_path, "buggy_plugin")
    assert proc.returncode == 1 and results == [], proc.stdout + proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("msprobe: error: plugin 'buggy_plugin': RuntimeError: the loader's own bug (at buggy_plugin.py:")
    assert "report it to its authors" in line and "internal error" not in line


def test_a_tensor_metric_that_raises_is_unsupported_and_said_once(tmp_path):
    """A plugin's tensor metric that raises (in the workers) does not stop the run, and does not fail unseen: its
    cells say ``unsupported`` and one warning names the plugin, the metric, how many rows and the first error."""
    _module(tmp_path, "raising_metric", """
        def boom(npu, bench):
            raise RuntimeError("metric bug")

        @hookimpl
        def msprobe_register_metrics(register):
            register(TensorMetricSpec("Boom", boom))
        """)
    pair = REPO / "examples" / "pytorch_tensor"
    out = tmp_path / "out"
    proc = _run(tmp_path, "raising_metric", "compare", "-tp", pair / "target" / "step0", "-gp",
                pair / "golden" / "step0", "-o", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = out.glob("compare_result_*.csv")
    import csv

    rows = list(csv.DictReader(result.open(newline="")))
    assert {row["Boom"] for row in rows} == {"unsupported"}
    (warning,) = [w for w in _warnings(proc) if "Boom" in w]
    import re

    # every pair read was given to the metric (empty tensors too, whose built-in cells are unsupported)
    compared = sum(1 for row in rows if row["Cosine"] not in ("unsupported", "N/A"))
    said = re.search(r"plugin 'raising_metric': metric 'Boom' raised on (\d+) of (\d+) rows", warning)
    assert said and int(said[2]) == len(rows) and compared <= int(said[1]) < len(rows), warning
    assert "RuntimeError: metric bug (at raising_metric.py:" in warning


# --------------------------------------------------------------------------- a partial's sink
SINK_PLUGIN = """
class Sink:
    def feed_table(self, table, start=0):
        {feed}

    def finish(self, files):
        {finish}

def make():
    return Sink()

@hookimpl
def msprobe_register_partials(register):
    register(PartialSpec("counted", lambda options, values, jobs: make))
"""


@pytest.mark.parametrize(("feed", "finish", "said"), [
    ("sys.exit(0)", "return 1", "partial 'counted' (PartialSpec.sink)'s sink.feed_table failed: it called sys.exit(0)"),
    ("pass", "raise ValueError('no count')",
     "partial 'counted' (PartialSpec.sink)'s sink.finish failed: ValueError: no count"),
])
@pytest.mark.exercises_hooks("msprobe_register_partials")
def test_a_plugin_sink_that_exits_or_fails_is_that_plugins_failure(tmp_path, feed, finish, said):
    """A third party's summary sink runs where each job runs; a ``sys.exit(0)`` there used to end the run with exit 0
    and no summary. Every method of its sink goes through the guard: one line naming the plugin, exit 1, and no
    half-written result (the file is whole, or not there when the job stopped before writing it)."""
    _module(tmp_path, "sinky", SINK_PLUGIN.format(feed=feed, finish=finish))
    proc, results = _compare(tmp_path, "sinky")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "plugin 'sinky'" in proc.stderr and said in proc.stderr, proc.stderr
    assert not list((tmp_path / "out").glob("*.part")) and len(results) <= 1
