"""One command-line style: every error is ``msprobe: error: …``, hints name the right help, ``--debug``
goes anywhere, the top-level help says everything, ``msprobe plugins`` is readable."""

from __future__ import annotations

import inspect
import json
import re

import pytest

from msprobe_core.cli.main import cli

from .dumps import api, tensor, write_dump

HINT = re.compile(r"\(see '(?P<command>msprobe[^']*) --help'\)$")


@pytest.mark.parametrize(
    "args,fragment,command",
    [
        (["compare"], "missing option '-tp'", "msprobe compare"),
        (["compare", "-tp"], "option '-tp' requires an argument", "msprobe compare"),
        (["compare", "-tp", "a", "-gp", "b", "--report", "pdf"], "invalid value for '--report'", "msprobe compare"),
        (["compare", "-tp", "a", "-gp", "b", "--bogus"], "no such option '--bogus'", "msprobe compare"),
        (["compare", "-tp", "a", "-gp", "b", "-fr"], "no such option '-fr'", "msprobe compare"),
        (["report", "--bogus"], "no such option '--bogus'", "msprobe report"),
        (["report"], "missing argument", "msprobe report"),
        (["merge_result"], "missing option", "msprobe merge_result"),
        (["frob"], "no such command 'frob'", "msprobe"),
        (["plugins", "--yaml"], "no such option '--yaml'", "msprobe plugins"),
        (["-f", "pytorch", "compare"], "missing option '-i'", "msprobe -f pytorch compare"),
        (["-f", "mindspore", "compare", "-i", "x.json", "--bogus"], "no such option '--bogus'",
         "msprobe -f mindspore compare"),
        (["-f", "jax", "compare"], "-f/--framework must be one of pytorch, mindspore", "msprobe"),
    ],
)
def test_usage_errors_are_one_line_and_name_the_right_help(run_cli, args, fragment, command):
    proc = run_cli(*args)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("msprobe: error: ") and fragment in lines[0], lines[0]
    hint = HINT.search(lines[0])
    assert hint and hint["command"] == command, lines[0]
    assert not proc.stdout
    # the help the hint names exists and explains that command
    shown = run_cli(*hint["command"].split()[1:], "--help")
    assert shown.returncode == 0 and shown.stdout.startswith("Usage: "), shown.stderr


def _failing_pair(tmp_path):
    golden = write_dump(tmp_path / "g", {"Torch.a.0.forward": api([tensor()], [tensor()])})
    return ["compare", "-tp", str(tmp_path / "missing.json"), "-gp", str(golden), "-o", str(tmp_path / "o")]


@pytest.mark.parametrize("where", ["before", "after", "last"])
def test_debug_anywhere_shows_the_traceback_with_the_same_exit_code(tmp_path, run_cli, where):
    args = _failing_pair(tmp_path)
    plain = run_cli(*args)
    assert plain.returncode == 2 and "Traceback" not in plain.stderr
    placed = {"before": ["--debug", *args], "after": [args[0], "--debug", *args[1:]], "last": [*args, "--debug"]}
    proc = run_cli(*placed[where])
    assert proc.returncode == plain.returncode, proc.stderr
    assert "Traceback (most recent call last)" in proc.stderr and "InputError" in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == plain.stderr.strip(), proc.stderr


def test_debug_with_a_usage_error_keeps_exit_code_2(run_cli):
    proc = run_cli("compare", "--debug")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("msprobe: error: missing option '-tp'")


def _normal(text: str) -> str:
    return " ".join(text.split())


def test_top_level_help_shows_full_descriptions_and_the_classic_form(run_cli):
    proc = run_cli("--help")
    assert proc.returncode == 0
    out = _normal(proc.stdout)
    from msprobe_core.cli.main import plugin_commands

    for name, command in {**cli.commands, **plugin_commands()}.items():  # report, merge_result: default plugins'
        first_paragraph = _normal(inspect.cleandoc(command.help or "").split("\n\n")[0])
        assert f"{name} {first_paragraph}" in out, name
    commands = proc.stdout.split("Commands:")[1].split("Classic interface")[0]
    assert "..." not in commands  # click's cut of a long description
    assert "msprobe -f pytorch|mindspore compare -i compare.json" in out
    assert "--debug may go anywhere on the command line" in out


def test_plugins_prints_a_table_and_json_on_request(run_cli):
    table = run_cli("plugins")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["PLUGIN", "VERSION", "DISTRIBUTION", "HOOKS"]
    listed = json.loads(run_cli("plugins", "--json").stdout)
    for plugin in listed:
        row = next(line for line in lines if line.startswith(plugin["name"] + " "))
        assert plugin["distribution"] in row and plugin["version"] in row
    builtin = next(p for p in listed if p["name"] == "msprobe_core.builtin")
    hooks = " ".join(table.stdout.split())
    for hook in builtin["hooks"]:
        assert hook.removeprefix("msprobe_") in hooks


def test_plugins_table_says_which_plugin_failed_to_load(tmp_path, run_cli):
    from .test_plugin_host import _dist

    _dist(tmp_path, "brokenplug", "raise ImportError('needs a package that is not installed')\n")
    proc = run_cli("plugins", env={"PYTHONPATH": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("brokenplug "))
    assert "failed to load" in row and "ImportError" in row
