"""Every sub-command arrives through ``msprobe_register_commands`` (but the core's ``compare``), and
``msprobe --help`` lists each with the first paragraph of its help: the default plugins' ``plugins``, ``report`` and
``merge_result`` as a third party's (the example distribution, pip-installed for the session); ``-p no:NAME`` takes a
plugin's commands away, and the command then says whose it was."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from .plugin_fixture import example_plugin  # noqa: F401  (the fixture)

pytestmark = pytest.mark.usefixtures("example_plugin")


def _listed(help_text: str) -> dict[str, str]:
    """The ``Commands:`` section of ``msprobe --help``: name -> its (re-joined) text."""
    section = help_text.split("\nCommands:\n", 1)[1].split("\n\n", 1)[0]
    listed: dict[str, str] = {}
    name = ""
    for line in section.splitlines():
        m = re.match(r"^  (\S+)\s{2,}(.*)$", line)
        if m:
            name = m.group(1)
            listed[name] = m.group(2).strip()
        elif name:
            listed[name] += " " + line.strip()
    return listed


def _commands_of_the_host() -> dict[str, str]:
    """Every command a fresh process's host knows (the core's and every loaded plugin's) -> its first paragraph."""
    code = (
        "import inspect, json\n"
        "from msprobe_core.cli.main import cli, plugin_commands\n"
        "commands = {**cli.commands, **plugin_commands()}\n"
        "print(json.dumps({n: ' '.join(inspect.cleandoc(c.help or '').split('\\n\\n')[0].split()) "
        "for n, c in commands.items()}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.exercises_hooks("msprobe_register_commands")
def test_help_lists_every_command_of_every_plugin_with_its_first_paragraph(run_cli):
    proc = run_cli("--help")
    assert proc.returncode == 0, proc.stderr
    listed = _listed(proc.stdout)
    known = _commands_of_the_host()
    # the core's one, the default plugins' three and the installed third party's
    assert {"compare", "plugins", "report", "merge_result", "gzip-dump"} <= set(known)
    assert set(listed) == set(known)
    for name, first_paragraph in known.items():
        assert listed[name] == first_paragraph, name
    assert listed["gzip-dump"].startswith("Write a gzip-compressed copy of a dump.json")  # the example's docstring


def test_the_default_plugins_commands_are_registered_through_the_hook(run_cli):
    proc = run_cli("plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    plugins = {p["name"]: p for p in json.loads(proc.stdout)}
    for name in ("plugins_command", "report", "merge_result"):
        assert "msprobe_register_commands" in plugins[name]["hooks"], plugins[name]


def test_turning_plugins_command_off_takes_msprobe_plugins_away_and_says_whose_it_was(run_cli):
    listed = _listed(run_cli("-p", "no:plugins_command", "--help").stdout)
    assert "plugins" not in listed and {"compare", "report", "merge_result"} <= set(listed)
    proc = run_cli("-p", "no:plugins_command", "plugins", "--json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "msprobe: error: no such command 'plugins' (it is the default plugin 'plugins_command''s, which is turned off "
        "by -p no:plugins_command or MSPROBE_DISABLE_PLUGINS) (see 'msprobe --help')"]


@pytest.mark.parametrize("how", ["-p", "env"])
def test_turning_the_report_off_takes_its_command_away_and_says_whose_it_was(run_cli, tmp_path, how):
    args, env = (["-p", "no:report"], None) if how == "-p" else ([], {"MSPROBE_DISABLE_PLUGINS": "report"})
    proc = run_cli(*args, "--help", env=env)
    assert proc.returncode == 0, proc.stderr
    listed = _listed(proc.stdout)
    assert "report" not in listed and {"merge_result", "compare", "gzip-dump"} <= set(listed)
    result = tmp_path / "compare_result_20260101000000.csv"
    result.write_text("NPU Name\n", encoding="utf-8")
    proc = run_cli(*args, "report", result, "-o", tmp_path / "r.html", env=env)
    assert proc.returncode == 2
    assert ("no such command 'report' (it is the default plugin 'report''s, which is turned off by -p no:report or "
            "MSPROBE_DISABLE_PLUGINS)") in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "r.html").exists()


def test_turning_merge_result_off_takes_only_its_command_away(run_cli, tmp_path):
    proc = run_cli("-p", "no:merge_result", "merge_result", "-i", tmp_path, "-o", tmp_path / "o", "-config", "c.yaml")
    assert proc.returncode == 2
    assert "no such command 'merge_result' (it is the default plugin 'merge_result''s" in proc.stderr
    listed = _listed(run_cli("-p", "no:merge_result", "--help").stdout)
    assert "merge_result" not in listed and "report" in listed


def test_turning_a_third_party_off_takes_its_command_away(run_cli):
    listed = _listed(run_cli("-p", "no:example", "--help").stdout)
    assert "gzip-dump" not in listed and "report" in listed
    proc = run_cli("-p", "no:example", "gzip-dump", "a", "b")
    assert proc.returncode == 2 and "no such command 'gzip-dump'" in proc.stderr


def test_a_plugin_commands_unknown_option_is_named_as_before(run_cli):
    # report is a plugin's command now: an option it does not declare is still one line naming its --help
    proc = run_cli("report", "--bogus", "x.csv")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "msprobe: error: no such option '--bogus' (see 'msprobe report --help')"
    proc = run_cli("merge_result", "--input_dri", "x")
    assert proc.returncode == 2 and "Did you mean '--input_dir'?" in proc.stderr
