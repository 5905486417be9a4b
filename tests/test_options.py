"""Compare options: one declaration each, from which the CLI, the Python signature and the model come."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import re
from pathlib import Path

import click
import pytest

from msprobe_core import hookimpl
from msprobe_core.cli.main import cli, main
from msprobe_core.errors import OptionError, UsageError
from msprobe_core.host.registry import BUILTIN_PLUGIN, PluginHost, get_host
from msprobe_core.model import CompareOptions
from msprobe_core.options import CORE_OPTIONS, FLAG, OptionSet, OptionSpec, api_naming

from .dumps import api, tensor, write_dump

#: the flags users rely on (msprobe's, and ours), by the Python name they arrive under
SURFACE = {
    "target": ("-tp", "--target_path"), "golden": ("-gp", "--golden_path"), "output_dir": ("-o", "--output_path"),
    "xlsx": ("--xlsx",), "fuzzy_match": ("-fm", "--fuzzy_match"), "api_mapping": ("-am", "--api_mapping"),
    "cell_mapping": ("-cm", "--cell_mapping"), "data_mapping": ("-dm", "--data_mapping"),
    "layer_mapping": ("-lm", "--layer_mapping"), "diff_analyze": ("-da", "--diff_analyze"), "rank": ("--rank",),
    "step": ("--step",), "tensor_log": ("-tensor_log", "--is_print_compare_log"), "workers": ("--workers",),
    "executor": ("--executor",), "scheduler": ("--scheduler",), "quiet": ("-q", "--quiet"), "force": ("--force",),
    "max_tensor_bytes": ("--max_tensor_bytes",), "output_format": ("--output_format",), "report": ("--report",),
    "json_summary": ("--json-summary",), "fail_on": ("--fail-on",),
}  # fmt: skip


def _compare_command() -> click.Command:
    return cli.commands["compare"]


def test_the_command_line_keeps_every_flag():
    params = {p.name: tuple(p.opts) for p in _compare_command().params}
    assert {k: v for k, v in params.items() if k in SURFACE} == SURFACE


@pytest.mark.exercises_hooks("msprobe_register_options")
def test_framework_options_come_from_their_plugins():
    host = get_host()
    owners = {s.name: host.distribution_of(s.plugin) for s in host.options.specs}
    assert {n: owners[n] for n in ("api_mapping", "cell_mapping", "layer_mapping", "rank", "scheduler")} == {
        "api_mapping": "msprobe-mindspore", "cell_mapping": "msprobe-mindspore", "layer_mapping": "msprobe-mindspore",
        "rank": "msprobe-kernel", "scheduler": "msprobe-dask",
    }  # fmt: skip
    core = {s.name for s in CORE_OPTIONS}
    assert not core & {"api_mapping", "cell_mapping", "layer_mapping", "rank", "scheduler"}
    # --step selects the step<N> dirs of msprobe's own dump roots as well as kernel dump steps: the default plugin
    # steps' (issue 33), which the core ships
    assert "step" not in core and host.options.get("step").plugin == "steps"
    assert all(s.plugin == BUILTIN_PLUGIN for s in host.options.specs if s.name in core)


def test_the_model_is_derived_from_the_core_declarations():
    fields = [f.name for f in dataclasses.fields(CompareOptions)]
    assert fields == [s.name for s in CORE_OPTIONS if s.attribute] + ["plugins", "extra", "plugin_data"]
    defaults = CompareOptions()
    for spec in CORE_OPTIONS:
        if spec.attribute:
            assert getattr(defaults, spec.name) == spec.default, spec.name


def test_plugin_options_read_as_attributes_and_travel_to_workers():
    options = get_host().compare_options(rank="0,1", api_mapping=True)
    assert options.rank == "0,1" and options.api_mapping is True and options.step is None
    assert options.plugins["layer_mapping"] is None  # every plugin option has its value, defaults included
    copy = pickle.loads(pickle.dumps(options))
    assert copy == options and copy.rank == "0,1"
    moved = options.with_values(rank="2", workers=3)
    assert (moved.rank, moved.workers, options.rank) == ("2", 3, "0,1")
    with pytest.raises(AttributeError, match="no compare option 'nope'"):
        options.nope  # noqa: B018


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], {"api_mapping": None, "rank": None, "output_dir": Path("./output")}),
        (["-am", "-o", "--rank"], {"api_mapping": True, "rank": "", "output_dir": Path("./output")}),
        (["-am", "m.yaml", "--rank", "1,2", "-o", "out"], {"api_mapping": "m.yaml", "rank": "1,2", "output_dir": Path("out")}),
    ],
)
def test_optional_values_given_alone(args, expected):
    host = get_host()
    ctx = _compare_command().make_context("compare", ["-tp", "t", "-gp", "g", *args])
    values = host.options.from_cli(ctx.params)
    options = host.build_options(values)
    assert {k: getattr(options, k) for k in expected} == expected


def test_cli_errors_name_the_flag(tmp_path, capsys):
    t = write_dump(tmp_path / "t", {"Torch.a.0.forward": api([tensor()])})
    assert main(["compare", "-tp", str(t), "-gp", str(t), "-o", str(tmp_path / "o"), "--rank", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("msprobe: error: --rank: expects comma-separated non-negative integers, got 'x'")
    assert main(["compare", "-tp", str(t), "-gp", str(tmp_path / "missing"), "-o", str(tmp_path / "o")]) == 2
    assert "-gp/--golden_path path does not exist" in capsys.readouterr().err
    assert main(["compare", "-tp", str(t), "-gp", str(t), "-o", str(tmp_path / "o"), "--xlsx", "--output_format",
                 "csv"]) == 2
    assert "--xlsx and --output_format csv ask for different result formats" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_required_paths_are_still_required(capsys):
    assert main(["compare"]) == 2
    assert "missing option '-tp' / '--target_path'" in capsys.readouterr().err
    assert main(["compare", "-tp", "t"]) == 2
    assert "missing option '-gp' / '--golden_path'" in capsys.readouterr().err


def test_compare_help_groups_options_by_plugin(capsys):
    with pytest.raises(SystemExit):
        cli.main(["compare", "--help"], prog_name="msprobe")
    text = capsys.readouterr().out
    core, _, rest = text.partition("Options from ")
    assert "-tp, --target_path" in core and "--api_mapping" not in core and "--rank" not in core
    assert "msprobe-mindspore:" in text and "-am, --api_mapping TEXT" in text.split("msprobe-mindspore:", 1)[1]
    assert "--rank TEXT" in text.split("msprobe-kernel:", 1)[1]


class _Clash:
    @hookimpl
    def msprobe_register_options(self, register):
        register(OptionSpec("my_fuzzy", ("-fm",), "Steals a flag."))
        register(OptionSpec("fuzzy_match", ("--fuzzy",), "Steals a name."))
        register(OptionSpec("tolerance", ("--tolerance",), "Fine.", kind="text", default="0.1"))


def test_a_clashing_option_is_refused_and_the_others_kept(caplog):
    host = PluginHost(extra_plugins=[_Clash()])
    assert host.options.get("my_fuzzy") is None and host.options.get("tolerance").default == "0.1"
    assert host.options.get("fuzzy_match").plugin == "fuzzy"  # the default plugin's, settled before any other
    assert "flag -fm is already declared by fuzzy" in caplog.text
    assert "option name 'fuzzy_match' is already declared by fuzzy" in caplog.text


def test_declarations_are_checked():
    with pytest.raises(ValueError, match="not a Python identifier"):
        OptionSpec("my-opt", ("--my-opt",), "x")
    with pytest.raises(ValueError, match="kind must be one of"):
        OptionSpec("x", ("--x",), "x", kind="float")
    with pytest.raises(ValueError, match="flags must start with"):
        OptionSpec("x", ("x",), "x")


def test_python_values_are_checked_by_kind():
    options = OptionSet([OptionSpec("n", ("--n",), "n", kind="int"), OptionSpec("f", ("--f",), "f", kind=FLAG),
                         OptionSpec("p", ("--p",), "p", kind="path"), OptionSpec("c", ("--c",), "c", kind="choice",
                                                                                  choices=("a", "b"))])
    assert options.from_api({"n": 3, "f": True, "p": "x/y", "c": "b"}) == {"n": 3, "f": True, "p": Path("x/y"), "c": "b"}
    with api_naming():
        for values, message in [({"n": "3"}, "n must be an integer, not '3'"), ({"n": True}, "n must be an integer"),
                                ({"f": 1}, "f must be True or False, not 1"), ({"p": 3}, "p must be a path, not 3"),
                                ({"c": "z"}, "c must be one of a, b, not 'z'"),
                                ({"nn": 1}, "compare() got an unexpected keyword argument 'nn' (did you mean 'n'?)")]:
            with pytest.raises(OptionError, match=re.escape(message)) as info:
                options.from_api(values)
            assert isinstance(info.value, TypeError) and isinstance(info.value, UsageError)


def test_the_python_signature_lists_every_api_option():
    import msprobe_core

    sig = inspect.signature(msprobe_core.compare)
    names = list(sig.parameters)
    assert names[:3] == ["target", "golden", "output_dir"] and names[-1] == "extra"
    api_specs = [s for s in get_host().options.specs if s.api]
    assert names[3:-1] == [s.name for s in api_specs]
    for spec in api_specs:
        param = sig.parameters[spec.name]
        assert param.kind is inspect.Parameter.KEYWORD_ONLY and param.default == spec.default
        assert f"    {spec.name}: " in msprobe_core.compare.__doc__ and spec.help in msprobe_core.compare.__doc__
