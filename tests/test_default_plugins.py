"""The default plugins (``msprobe_core.default_plugins``): registered like a third party's, listed, and each one
can be turned off by name while a compare still writes its result table.

Each case runs the real console script in a fresh process on the bundled example pair, the way a user turns a
plugin off (``MSPROBE_DISABLE_PLUGINS`` or ``msprobe -p no:NAME``).
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from msprobe_core.host.defaults import DEFAULT_PLUGINS, DISABLE_ENV, default_plugin_names
from msprobe_core.host.registry import PluginHost

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "pytorch_stats"


def _msprobe(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k != DISABLE_ENV} | (env or {})
    return subprocess.run([sys.executable, "-m", "msprobe_core", *map(str, args)], capture_output=True, text=True,
                          env=full_env, timeout=600)


def _compare(out: Path, *before: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return _msprobe(*before, "compare", "-tp", EXAMPLE / "target" / "step0", "-gp", EXAMPLE / "golden" / "step0",
                    "-o", out, env=env)


def _result_rows(out: Path) -> list[list[str]]:
    [table] = out.glob("compare_result_*.csv")
    with open(table, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def test_every_default_plugin_is_a_module_of_the_package_registered_under_its_name():
    assert DEFAULT_PLUGINS, "the core ships its features as default plugins"
    assert len(set(default_plugin_names())) == len(DEFAULT_PLUGINS)
    host = PluginHost(autoload=False)
    registered = dict(host.pm.list_name_plugin())
    for name, module in DEFAULT_PLUGINS:
        assert module.startswith("msprobe_core.default_plugins.")
        assert registered[name].__name__ == module
        assert host.pm.get_hookcallers(registered[name]), f"{name} implements no hook"


def test_msprobe_plugins_lists_the_default_plugins_and_those_turned_off():
    first = default_plugin_names()[0]
    proc = _msprobe("plugins", "--json", env={DISABLE_ENV: first})
    assert proc.returncode == 0, proc.stderr
    entries = {e["name"]: e for e in json.loads(proc.stdout)}
    for name in default_plugin_names():
        assert entries[name]["default"] is True
        assert entries[name]["distribution"] == "msprobe-core"
    assert entries[first].get("disabled") is True and entries[first]["hooks"] == []
    assert all(not entries[n].get("disabled") for n in default_plugin_names()[1:])


@pytest.mark.parametrize("name", default_plugin_names())
def test_a_compare_still_writes_its_table_with_each_default_plugin_turned_off(tmp_path, name):
    reference = _compare(tmp_path / "all")
    assert reference.returncode == 0, reference.stderr
    off = _compare(tmp_path / "off", env={DISABLE_ENV: name})
    assert off.returncode == 0, off.stderr
    rows = _result_rows(tmp_path / "off")
    assert rows[0] == _result_rows(tmp_path / "all")[0]  # msprobe's header, whatever is turned off
    assert len(rows) == len(_result_rows(tmp_path / "all"))


def test_p_no_name_turns_a_plugin_off_like_the_variable(tmp_path):
    name = default_plugin_names()[0]
    proc = _msprobe("-p", f"no:{name}", "plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    assert {e["name"]: e for e in json.loads(proc.stdout)}[name].get("disabled") is True
    joined = _msprobe(f"-pno:{name}", "plugins", "--json")
    assert {e["name"]: e for e in json.loads(joined.stdout)}[name].get("disabled") is True


def test_fuzzy_turned_off_takes_its_option_with_it(tmp_path):
    """``-fm`` is the fuzzy plugin's option: with the plugin off it is no option, and the error says whose it is."""
    pair = REPO / "examples" / "pytorch_fuzzy"
    sides = ("-tp", pair / "target" / "step0", "-gp", pair / "golden" / "step0")
    on = _msprobe("compare", *sides, "-o", tmp_path / "fm", "-fm")
    plain = _msprobe("compare", *sides, "-o", tmp_path / "plain")
    assert on.returncode == 0 and plain.returncode == 0, on.stderr + plain.stderr
    assert _result_rows(tmp_path / "fm") != _result_rows(tmp_path / "plain")  # -fm pairs other rows here
    off = _msprobe("compare", *sides, "-o", tmp_path / "off", "-fm", env={DISABLE_ENV: "fuzzy"})
    assert off.returncode == 2 and not (tmp_path / "off").exists()
    assert off.stderr.strip().splitlines() == [
        "msprobe: error: no such option '-fm' (it is the default plugin 'fuzzy''s, which is turned off by "
        "-p no:fuzzy or MSPROBE_DISABLE_PLUGINS)"]
    without = _msprobe("compare", *sides, "-o", tmp_path / "without", env={DISABLE_ENV: "fuzzy"})
    assert without.returncode == 0 and _result_rows(tmp_path / "without") == _result_rows(tmp_path / "plain")


def _outputs(out: Path) -> dict[str, str]:
    """Every file a run wrote, by its name without the run's timestamp."""
    return {re.sub(r"\d{8,}", "<stamp>", p.name): p.read_text(encoding="utf-8") for p in sorted(out.iterdir())}


@pytest.mark.parametrize(("off", "flag", "first"), [
    ("fuzzy", "--auto-map", "auto_mapping_rank0_<stamp>.yaml"),  # automap aligns calls with fuzzy's seqalign
    ("diff_analyze", "--auto-map", "auto_mapping_rank0_<stamp>.yaml"),  # and reads construct.json with -da's reader
    ("msprobe_verdicts", "-da", "compare_result_rank0_<stamp>.json"),  # -da sets aside the rule's differences of form
])
def test_a_plugin_turned_off_still_lends_its_modules_to_the_plugins_that_import_them(tmp_path, off, flag, first):
    """A default plugin that imports a sibling's module (no longer the core's) works the same with that sibling
    turned off: turning a plugin off drops its registration, not its modules."""
    pair = REPO / "examples" / "pytorch_fuzzy"
    sides = ("-tp", pair / "target" / "step0", "-gp", pair / "golden" / "step0")
    on = _msprobe("compare", *sides, "-o", tmp_path / "on", flag)
    without = _msprobe("compare", *sides, "-o", tmp_path / "off", flag, env={DISABLE_ENV: off})
    assert on.returncode == 0 and without.returncode == 0, on.stderr + without.stderr
    assert first in _outputs(tmp_path / "on")
    assert _outputs(tmp_path / "off") == _outputs(tmp_path / "on")


def test_p_takes_only_no_name():
    proc = _msprobe("-p", "fuzzy", "plugins")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "msprobe: error: -p takes no:NAME (a plugin to turn off), not 'fuzzy' (see 'msprobe --help')"]


def test_a_name_no_plugin_has_is_warned_about_once():
    proc = _msprobe("plugins", env={DISABLE_ENV: "no-such-plugin"})
    assert proc.returncode == 0
    assert proc.stderr.count("no plugin is named 'no-such-plugin'") == 1


def test_the_group_help_documents_p():
    proc = _msprobe("--help")
    assert proc.returncode == 0
    assert "-p no:NAME" in proc.stdout and "MSPROBE_DISABLE_PLUGINS" in proc.stdout


def test_summary_turned_off_a_compare_writes_its_table_and_says_nothing_more(tmp_path):
    """Without the ``summary`` plugin: the result file, the banner, no summary text, no next dump's config, exit 0;
    ``--min-matched`` (the summary's option) is then no option."""
    off = _compare(tmp_path / "off", "-p", "no:summary")
    assert off.returncode == 0, off.stderr
    assert "ends successfully" in off.stdout.splitlines()[-2]  # the banner last: the summary text is the plugin's
    assert [p.name.split("_2")[0] for p in (tmp_path / "off").iterdir()] == ["compare_result_rank0"]
    on = _compare(tmp_path / "on")
    assert "Compare summary" in on.stdout and list((tmp_path / "on").glob("next_dump_config_*.json"))
    assert _result_rows(tmp_path / "off") == _result_rows(tmp_path / "on")  # the table is the core's
    refused = _msprobe("compare", "-tp", EXAMPLE / "target" / "step0", "-gp", EXAMPLE / "golden" / "step0", "-o",
                       tmp_path / "mm", "--min-matched", "90%", env={DISABLE_ENV: "summary"})
    assert refused.returncode == 2 and "default plugin 'summary'" in refused.stderr


@pytest.mark.parametrize(("name", "flag", "value"), [("gate", "--fail-on", "error"),
                                                     ("json_summary", "--json-summary", "s.json")])
def test_gate_and_json_summary_turned_off_take_their_options_with_them(tmp_path, name, flag, value):
    on = _msprobe("compare", "-tp", EXAMPLE / "target" / "step0", "-gp", EXAMPLE / "golden" / "step0", "-o",
                  tmp_path / "on", flag, tmp_path / value if flag == "--json-summary" else value)
    assert on.returncode == (3 if name == "gate" else 0), on.stderr  # the example pair has error rows
    off = _msprobe("compare", "-tp", EXAMPLE / "target" / "step0", "-gp", EXAMPLE / "golden" / "step0", "-o",
                   tmp_path / "off", flag, value, env={DISABLE_ENV: name})
    assert off.returncode == 2 and not (tmp_path / "off").exists()
    assert off.stderr.strip().splitlines() == [
        f"msprobe: error: no such option '{flag}' (it is the default plugin '{name}''s, which is turned off by "
        f"-p no:{name} or MSPROBE_DISABLE_PLUGINS)"]


def test_the_gate_without_the_summary_fails_closed(tmp_path):
    """``--fail-on`` with the ``summary`` plugin off: no summary to judge is no pass (exit 3, saying why)."""
    proc = _msprobe("-p", "no:summary", "compare", "-tp", EXAMPLE / "target" / "step0", "-gp",
                    EXAMPLE / "golden" / "step0", "-o", tmp_path / "out", "--fail-on", "error")
    assert proc.returncode == 3
    assert proc.stderr.strip().splitlines()[-1] == (
        "msprobe: error: --fail-on error: the run has no summary to judge (the plugin 'summary' is turned off)")


def test_a_plugin_whose_run_finished_hook_fails_is_named_and_the_results_stay(tmp_path):
    """A third party's run-finished hook that raises: one line naming the plugin and the hook (exit 1), the result
    file written all the same; one that raises the core's OutputError: that error's own line."""
    (tmp_path / "bad_gate.py").write_text(
        "from msprobe_core.plugin import OutputError, hookimpl\n"
        "@hookimpl\n"
        "def msprobe_run_gate(run):\n"
        "    raise ValueError('broken gate')\n"
        "@hookimpl\n"
        "def msprobe_run_finished(run):\n"
        "    if getattr(run.options, 'quiet', False):\n"
        "        raise OutputError('cannot write the page', path=run.options.output_dir)\n")
    env = {"MSPROBE_LOAD_PLUGINS": "bad_gate", "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    proc = _compare(tmp_path / "out", env=env)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("msprobe: error: plugin 'bad_gate': msprobe_run_gate failed: ValueError: broken gate")
    assert list((tmp_path / "out").glob("compare_result_*.csv"))
    quiet = _msprobe("compare", "-tp", EXAMPLE / "target" / "step0", "-gp", EXAMPLE / "golden" / "step0", "-o",
                     tmp_path / "quiet", "-q", env=env)
    assert quiet.returncode != 0 and "cannot write the page" in quiet.stderr.strip().splitlines()[-1]
    assert "Traceback" not in proc.stderr + quiet.stderr


_REFUSING_PLUGIN = '''
from msprobe_core.plugin import OptionSpec, UsageError, hookimpl


@hookimpl
def msprobe_register_options(register):
    register(OptionSpec("refuse_run", ("--refuse-run",), "Refuse the run before any work.", kind="flag",
                        default=False))


@hookimpl
def msprobe_check_run(jobs, options, values):
    if values.get("refuse_run"):
        raise UsageError(f"refused: {len(jobs)} job(s), output {options.output_dir.name}")
'''


@pytest.mark.exercises_hooks("msprobe_check_run")
def test_a_third_party_refuses_a_run_before_any_work_through_msprobe_check_run(tmp_path):
    """``msprobe_check_run`` is a plugin's too: its UsageError is the command's one line (exit 2) and
    ``msprobe_core.compare``'s exception, with nothing written; without its option the run goes on."""
    (tmp_path / "refusing.py").write_text(_REFUSING_PLUGIN)
    env = {"MSPROBE_LOAD_PLUGINS": "refusing", "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    proc = _compare(tmp_path / "out", env=env)
    assert proc.returncode == 0, proc.stderr
    proc = _msprobe("compare", "-tp", EXAMPLE / "target" / "step0", "-gp", EXAMPLE / "golden" / "step0", "-o",
                    tmp_path / "refused", "--refuse-run", env=env)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["msprobe: error: refused: 1 job(s), output refused"]
    assert not (tmp_path / "refused").exists()
    code = ("import sys, msprobe_core\n"
            "from msprobe_core.plugin import UsageError\n"
            "try:\n"
            "    msprobe_core.compare(sys.argv[1], sys.argv[2], sys.argv[3], refuse_run=True)\n"
            "except UsageError as exc:\n"
            "    print(exc)\n")
    api = subprocess.run([sys.executable, "-c", code, EXAMPLE / "target" / "step0", EXAMPLE / "golden" / "step0",
                          tmp_path / "api"], capture_output=True, text=True, timeout=600,
                         env={k: v for k, v in os.environ.items() if k != DISABLE_ENV} | env)
    assert api.returncode == 0 and api.stdout.strip() == "refused: 1 job(s), output api", api.stderr
    assert not (tmp_path / "api").exists()


_COUNTING_PLUGIN = '''
import json
from pathlib import Path

from msprobe_core.plugin import PartialSpec, hookimpl


class RowCounter:
    """A sink counting the rows of one job's result (no continuation: a streamed job builds every chunk itself)."""

    def __init__(self):
        self.rows = 0

    def feed_table(self, table, start=0):
        self.rows += len(table)

    def finish(self, files):
        return {"rows": self.rows}


@hookimpl
def msprobe_register_partials(register):
    register(PartialSpec("row_count", lambda options, values, jobs: RowCounter))


@hookimpl
def msprobe_run_finished(run):
    counts = [run.partial("row_count", o) for o in run.outcomes]
    summary_rows = [getattr(run.partial("summary", o), "rows", None) for o in run.outcomes]
    Path(run.options.output_dir, "..", "counted.json").write_text(json.dumps({"counts": counts,
                                                                             "summary": summary_rows}))
'''


def test_a_plugins_partial_is_made_beside_the_summarys_and_changes_nothing_of_it(tmp_path):
    """A third party's ``PartialSpec`` next to the summary's: each job hands back both (the run's sinks fed
    together), ``run.partial`` reads each, and the summary and the result are those of a run without it."""
    (tmp_path / "counting.py").write_text(_COUNTING_PLUGIN)
    env = {"MSPROBE_LOAD_PLUGINS": "counting", "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    sides = ("-tp", REPO / "examples" / "pytorch_multirank" / "target" / "step0",
             "-gp", REPO / "examples" / "pytorch_multirank" / "golden" / "step0")
    runs = {}
    for name, extra in (("plain", {}), ("counted", env)):
        (tmp_path / name).mkdir()
        proc = _msprobe("compare", *sides, "-o", tmp_path / name / "out", "-q", "--json-summary",
                        tmp_path / name / "s.json", env=extra)
        assert proc.returncode == 0, proc.stderr
        text = (tmp_path / name / "s.json").read_text().replace(str(tmp_path / name), "RUN")
        runs[name] = json.loads(re.sub(r"_\d{14}", "", text))
    assert runs["counted"] == runs["plain"]
    counted = json.loads((tmp_path / "counted" / "counted.json").read_text())
    rows = [r["rows"] for r in runs["plain"]["ranks"]]
    assert counted == {"counts": [{"rows": n} for n in rows], "summary": rows} and len(rows) == 2


class _Tagged:
    """A sink whose partial is its tag."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def feed_table(self, table, start=0):
        pass

    def finish(self, files):
        return self.tag


def test_a_partial_that_replaces_the_summarys_is_read_as_both():
    """``PartialSpec(replaces=("summary",))``: only its sink is made, and reading either name gives its partial;
    a spec whose ``sink`` says ``None`` is not part of the run."""
    from functools import partial
    from types import SimpleNamespace

    from msprobe_core.plugin import PartialSpec, hookimpl
    from msprobe_core.run.finished import FinishedRun, SinkSet, choose_partials

    class Bigger:
        @hookimpl
        def msprobe_register_partials(self, register):
            register(PartialSpec("bigger", lambda options, values, jobs: bigger, replaces=("summary",)))
            register(PartialSpec("never", lambda options, values, jobs: None))

    class Beside:
        @hookimpl
        def msprobe_register_partials(self, register):
            register(PartialSpec("beside", lambda options, values, jobs: partial(_Tagged, "beside")))

    bigger = partial(_Tagged, "bigger")
    host = PluginHost(autoload=False, extra_plugins=[Bigger()])
    options = host.compare_options()
    sink, names, single = choose_partials(host, options, {}, 1)
    # a third party's factory, guarded (its sinks' methods are its plugin's code)
    assert sink.factory is bigger and single == "bigger" and names == {"bigger": "bigger", "summary": "bigger"}
    outcome = SimpleNamespace(partial={"made": 1})
    run = FinishedRun([outcome], options, partial_names=names, single_partial=single)
    assert run.partial("summary", outcome) is outcome.partial is run.partial("bigger", outcome)
    assert run.partial("never", outcome) is None
    both = PluginHost(autoload=False, extra_plugins=[Bigger(), Beside()])
    sink, names, single = choose_partials(both, options, {}, 1)
    assert isinstance(sink, SinkSet) and single is None and set(names) == {"bigger", "summary", "beside"}
    made = sink().finish([])
    outcome = SimpleNamespace(partial=made)
    run = FinishedRun([outcome], options, partial_names=names)
    assert run.partial("summary", outcome) == "bigger" and run.partial("beside", outcome) == "beside"


def test_json_summary_without_the_summary_plugin_says_it_writes_nothing(tmp_path):
    proc = _msprobe("-p", "no:summary", "compare", "-tp", EXAMPLE / "target" / "step0", "-gp",
                    EXAMPLE / "golden" / "step0", "-o", tmp_path / "out", "--json-summary", tmp_path / "s.json")
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "s.json").exists()
    assert ("--json-summary: the run has no summary (the plugin 'summary' is turned off); "
            f"{tmp_path / 's.json'} is not written") in proc.stdout + proc.stderr


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_fast_scan_turned_off_the_pure_python_loader_writes_the_same_csv_on_a_corpus_case(tmp_path, streamed,
                                                                                           monkeypatch):
    """Without ``fast_scan`` the core's pure-Python loader reads every dump (no C scanner, no index: a chunked
    compare falls back to whole tables) and the result CSV of a corpus case is byte for byte the same."""
    from msprobe_core.default_plugins.fast_scan.statcells import StatCells
    from msprobe_core.host.strategies import DumpIndex
    from msprobe_core.model import CompareOptions

    from .conftest import corpora_dir

    case = corpora_dir() / "pytorch" / "c01"
    if not case.is_dir():
        pytest.skip("the corpora are not here")
    env = {"MSPROBE_STREAM_MIN_BYTES": "0"} if streamed else {}
    runs = {}
    for label, off in (("on", {}), ("off", {DISABLE_ENV: "fast_scan"})):
        out = tmp_path / label
        proc = _msprobe("compare", "-tp", case / "target" / "step0", "-gp", case / "golden" / "step0", "-o", out,
                        env={**env, **off})
        assert proc.returncode == 0, proc.stderr
        [table] = out.rglob("compare_result_*.csv")
        runs[label] = table.read_bytes()
    assert runs["off"] == runs["on"] and runs["on"].count(b"\n") > 1

    [dump] = (case / "target").rglob("dump.json")
    pytest.importorskip("msprobe_core._dumpscan", reason="the C scanner is not built here")
    monkeypatch.delenv(DISABLE_ENV, raising=False)
    assert isinstance(PluginHost().load_dump(dump, CompareOptions(), None, True), DumpIndex)
    assert isinstance(PluginHost().load_dump(dump, CompareOptions()).max, StatCells)
    monkeypatch.setenv(DISABLE_ENV, "fast_scan")
    table = PluginHost().load_dump(dump, CompareOptions(), None, True)
    assert not isinstance(table, DumpIndex) and isinstance(table.max, list)
