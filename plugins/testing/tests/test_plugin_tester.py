"""The test helper for plugin authors (the msprobe-testing distribution, ``msprobe_testing``: the ``msprobe_tester``
fixture) does what docs/plugins.md ("Testing your plugin") says: pytest finds it through msprobe-testing's entry
point, msprobe-core ships none of it, a host with exactly the plugins named, a synthetic dump pair of each mode that
msprobe compares, ``msprobe`` in-process, everything restored after the test; and the example plugin's own tests,
which use it, pass when pytest runs them."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from msprobe_testing import PluginNotLoaded, exact_host, hosts, run_cli

from msprobe_core.host import loading
from msprobe_core.host.defaults import default_plugin_names
from msprobe_core.plugin import FrameworkSpec, PluginHost, UsageError, current_host, hookimpl, reset_host
from tests.dumps import read_csv
from tests.plugin_fixture import PLUGIN, example_plugin  # noqa: F401  (the fixture)

FRAMEWORK_PLUGINS = ["pytorch", "mindspore"]
#: the core's default plugins, registered right after the built-in one
DEFAULTS = default_plugin_names()


def _pytest(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=600)


def test_pytest_finds_the_fixture_through_the_entry_point_of_msprobe_testing(request):
    from importlib.metadata import entry_points

    found = [(ep.dist.name if ep.dist else None, ep.value) for ep in entry_points(group="pytest11")
             if ep.value.split(":")[0].split(".")[0] in ("msprobe_testing", "msprobe_core")]
    assert found == [("msprobe-testing", "msprobe_testing")], (
        "reinstall msprobe-testing (pip install -e plugins/testing): its pytest11 entry point is missing")
    assert request.config.pluginmanager.has_plugin("msprobe_testing")


def test_msprobe_core_ships_none_of_it():
    """A user who only runs compares installs no test helper: msprobe-core has no pytest11 entry point and no
    testing package, and the core names the helper's package nowhere."""
    import importlib.util
    from importlib.metadata import distribution

    core = distribution("msprobe-core")
    assert not [ep for ep in core.entry_points if ep.group == "pytest11"]
    assert importlib.util.find_spec("msprobe_core.testing") is None
    assert "pytest" not in {r.split(";")[0].split(" ")[0].split(">")[0] for r in core.requires or []
                            if "extra ==" not in r}


def test_the_plugin_variables_are_the_ones_the_host_reads():
    """msprobe_testing names the documented plugin variables itself (it imports only msprobe_core.plugin)."""
    assert (hosts.DISTRIBUTIONS_ENV, hosts.LOAD_ENV) == (loading.DISTRIBUTIONS_ENV, loading.LOAD_ENV)


def test_msprobe_itself_imports_neither_pytest_nor_the_helper(tmp_path):
    script = ("import sys\nfrom msprobe_core.entry import run\nsys.argv = ['msprobe', 'plugins', '--json']\n"
              "try:\n    run()\nexcept SystemExit:\n    pass\n"
              "print('pytest' in sys.modules, 'msprobe_testing' in sys.modules, file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert proc.stderr.split()[-2:] == ["False", "False"], proc.stderr


@pytest.mark.usefixtures("example_plugin")
def test_the_host_holds_exactly_the_plugins_named_even_when_the_plugin_is_installed(msprobe_tester):
    from msprobe_example import plugin

    everything = [name for name, _ in PluginHost(extra_plugins=[plugin]).pm.list_name_plugin()]
    assert {"kernel", "classic", "dask", "example"} <= set(everything)  # what the old recipe gave a test
    host = msprobe_tester.host(plugin)
    assert [name for name, _ in host.pm.list_name_plugin()] == [
        "msprobe_core.builtin", *DEFAULTS, *FRAMEWORK_PLUGINS, "msprobe_example.plugin"]
    assert current_host() is host
    # named as an installed distribution too: loaded once, through its entry point
    host = msprobe_tester.host(plugin, installed=["msprobe-example-plugin"])
    assert [name for name, _ in host.pm.list_name_plugin()] == ["msprobe_core.builtin", *DEFAULTS, "example"]
    assert host.pm.get_plugin("example") is plugin and host.distribution_of("example") == "msprobe-example-plugin"
    assert [name for name, _ in msprobe_tester.host(installed=()).pm.list_name_plugin()] == [
        "msprobe_core.builtin", *DEFAULTS]


@pytest.mark.usefixtures("example_plugin")
def test_an_msprobe_process_the_test_starts_loads_the_same_plugins(msprobe_tester, tmp_path):
    from msprobe_example import plugin

    msprobe_tester.host(plugin)
    assert os.environ[loading.DISTRIBUTIONS_ENV] == "msprobe-pytorch,msprobe-mindspore"
    assert os.environ[loading.LOAD_ENV] == "msprobe_example.plugin"
    proc = subprocess.run([sys.executable, "-m", "msprobe_core", "plugins", "--json"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    loaded = sorted(p["name"] for p in json.loads(proc.stdout) if p["loaded"])
    assert loaded == sorted(["msprobe_core.builtin", *DEFAULTS, *FRAMEWORK_PLUGINS, "msprobe_example.plugin"])


class _Misspelt:
    @hookimpl
    def msprobe_register_mapers(self, register):  # the hook is msprobe_register_mappers
        pass


def test_a_plugin_the_host_skips_is_the_tests_error_naming_why(msprobe_tester):
    with pytest.raises(PluginNotLoaded, match=r"plugin '_Misspelt' was not loaded: it implements "
                                              r"'msprobe_register_mapers', which is no msprobe hook \(did you mean "
                                              r"'msprobe_register_mappers'\?\)"):
        msprobe_tester.host(_Misspelt())
    host = msprobe_tester.host(_Misspelt(), strict=False)  # to test how the failure is reported
    assert "msprobe_register_mapers" in host.broken["_Misspelt"]
    listed = msprobe_tester.run_cli("plugins", "--json")
    assert listed.exit_code == 0
    assert [p["error"] for p in json.loads(listed.stdout) if p["name"] == "_Misspelt"] == [host.broken["_Misspelt"]]


@pytest.mark.parametrize("mode, column", [("statistics", "Max diff"), ("tensor", "Cosine"), ("md5", "NPU MD5")])
def test_each_modes_pair_is_compared_and_diverges_at_the_linear_layer(msprobe_tester, mode, column):
    pair = msprobe_tester.dump_pair(mode)
    out = msprobe_tester.path / "out"
    result = msprobe_tester.run_cli("compare", *pair.args, "-o", out, "--json-summary", out / "summary.json")
    assert result.exit_code == 0, result.stderr
    assert "Compare summary" in result.stdout and result.stderr == ""
    (table,) = out.glob("compare_result_rank0_*.csv")
    rows = read_csv(table)
    assert column in rows[0] and len(rows) == 15
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["modes"] == [mode] and summary["unmatched"] == 0
    assert summary["first_divergence"]["node"] == "Functional.linear.0.forward"
    if mode == "tensor":
        files = sorted(p.name for p in (pair.dump("golden").parent / "dump_tensor_data").iterdir())
        assert len(files) == 13 and all(f.endswith(".pt") for f in files)


def test_a_pair_without_divergence_passes_every_row(msprobe_tester):
    pair = msprobe_tester.dump_pair("tensor", diverge=False)
    out = msprobe_tester.path / "out"
    result = msprobe_tester.run_cli("compare", *pair.args, "-o", out, "-q", "--fail-on", "warning")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert {r["Result"] for r in read_csv(next(out.glob("compare_result_*.csv")))} == {"pass"}


def test_a_multi_rank_pair_and_the_first_divergence_analysis(msprobe_tester):
    pair = msprobe_tester.dump_pair("statistics", ranks=2)
    out = msprobe_tester.path / "out"
    result = msprobe_tester.run_cli("compare", *pair.args, "-o", out, "-q", "-da")
    assert result.exit_code == 0, result.stderr
    assert len(list(out.glob("compare_result_rank*.json"))) == 2
    (analysis,) = out.glob("diff_analyze_*.json")
    doc = json.loads(analysis.read_text(encoding="utf-8"))
    assert list(doc) == ["rank_0"]
    assert (doc["rank_0"][0]["op_name"], doc["rank_0"][0]["role"]) == ("Functional.linear.0.forward", "cause")


def test_a_mindspore_pair_spells_the_framework_its_way(msprobe_tester):
    pair = msprobe_tester.dump_pair("tensor", framework="mindspore")
    doc = json.loads(pair.dump().read_text(encoding="utf-8"))
    leaf = doc["data"]["Functional.linear.0.forward"]["output"][0]
    assert doc["framework"] == "mindspore" and leaf["dtype"] == "Float32" and leaf["data_name"].endswith(".npy")
    out = msprobe_tester.path / "out"
    result = msprobe_tester.run_cli("compare", *pair.args, "-o", out, "-q")
    assert result.exit_code == 0, result.stderr
    rows = {r["NPU Name"]: r for r in read_csv(next(out.glob("compare_result_*.csv")))}
    assert float(rows["Functional.linear.0.forward.input.0"]["Cosine"]) == 1.0
    assert float(rows["Functional.linear.0.forward.output.0"]["Cosine"]) < 0.99


class _NoWriter:
    @hookimpl
    def msprobe_register_frameworks(self, register):
        register(FrameworkSpec(name="plain", tensor_suffix=".bin", read_tensor=lambda path: None))


def test_a_pair_asks_what_only_a_framework_plugin_can_give(msprobe_tester):
    msprobe_tester.host(_NoWriter(), installed=())
    with pytest.raises(UsageError, match="framework plain declares no write_tensor"):
        msprobe_tester.dump_pair("tensor", framework="plain")
    with pytest.raises(UsageError, match=r"no plugin of this host handles framework pytorch \(frameworks: plain\)"):
        msprobe_tester.dump_pair(framework="pytorch")
    with pytest.raises(UsageError, match="mode must be one of statistics, tensor, md5"):
        msprobe_tester.dump_pair("kernel")


def test_run_cli_reports_like_msprobe_and_restores_the_host_and_the_log(tmp_path):
    before = PluginHost(autoload=False)
    reset_host(before)
    logger = logging.getLogger("msprobe")
    handlers = list(logger.handlers)
    try:
        result = run_cli("compare", "-tp", tmp_path / "missing", "-gp", tmp_path / "missing", "-o", tmp_path / "o",
                         host=exact_host())
        assert current_host() is before and logger.handlers == handlers
    finally:
        reset_host(None)
    assert result.exit_code == result.ret == 2 and result.stdout == ""
    assert result.stderr.startswith("msprobe: error: ") and len(result.stderr.splitlines()) == 1
    assert str(tmp_path / "missing") in result.stderr


def test_each_test_gets_its_host_back(tmp_path):
    """A real pytest session: the fixture comes from the entry point alone (no conftest, no import), and a test
    after one that used it finds the process-wide host as it was (none)."""
    (tmp_path / "test_restore.py").write_text(textwrap.dedent("""
        from msprobe_core.plugin import current_host

        def test_uses_it(msprobe_tester):
            msprobe_tester.host()
            assert current_host() is not None

        def test_after_it():
            assert current_host() is None
    """), encoding="utf-8")
    proc = _pytest("test_restore.py", cwd=tmp_path)
    assert proc.returncode == 0 and "2 passed" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.usefixtures("example_plugin")
def test_the_example_plugins_own_tests_pass():
    """docs/plugins.md points authors to examples/plugins/msprobe_example_plugin/tests: they run, with the plugin
    installed (the set-up in which the old recipe's host held every installed plugin)."""
    proc = _pytest(cwd=PLUGIN)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout and "skipped" not in proc.stdout


def test_the_documented_example_is_the_example_plugins_code():
    """docs/plugins.md ("Testing your plugin") shows a test of the example plugin: the very code that runs above."""
    import re

    page = (PLUGIN.parents[2] / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = page.split("## Testing your plugin\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"^```python\n(.*?)^```$", section, flags=re.S | re.M)
    source = (PLUGIN / "tests" / "test_example_plugin.py").read_text(encoding="utf-8")
    head, _, body = block.partition("\n\n\n")
    assert head in source and body.strip() and body.strip() in source
    assert "def test_" in body and "msprobe_tester" in body
