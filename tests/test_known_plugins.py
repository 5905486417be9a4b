"""The table of known plugins (the default plugin ``known_plugins``: ``msprobe_core/default_plugins/known_plugins``)
and the install hints built from it.

* the table cannot drift: each entry's distribution, folder, entry point, package and dependencies are
  those of its ``pyproject.toml``, and what it says the plugin brings (frameworks, option flags, dump
  layouts, sub-commands, command-line forms, executors) is what the installed plugin really registers;
* no other core module names a plugin distribution or package, or the kernel dump layout;
* in a real venv holding msprobe-core and msprobe-pytorch only (``tests/selective_venv.py``), every thing
  a missing plugin brings fails with one line naming the plugin and a command that installs it, exit 2,
  nothing written; ``msprobe plugins`` lists the known plugins that are not installed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from msprobe_core.cli.main import main
from msprobe_core.default_plugins.known_plugins import table as known_plugins
from msprobe_core.default_plugins.known_plugins.table import (
    KNOWN_PLUGINS,
    DumpLayout,
    KnownPlugin,
    hint_for,
    install_command,
    missing_hint,
)
from msprobe_core.host.registry import ENTRY_POINT_GROUP, PluginHost

from .dumps import api, tensor, write_dump
from .plugin_session import REPO, read_pyproject
from .selective_venv import run

#: the msprobe plugins of the checkout (plugins/testing, msprobe-testing, is a pytest plugin: no msprobe one)
PLUGIN_DIRS = sorted(p.parent for p in REPO.glob("plugins/*/pyproject.toml")
                     if ENTRY_POINT_GROUP in read_pyproject(p)["project"].get("entry-points", {}))
HOST = PluginHost()  # every plugin of the test venv (the session loads this repository's)


def _known(distribution: str) -> KnownPlugin:
    return next(p for p in KNOWN_PLUGINS if p.distribution == distribution)


# --------------------------------------------------------------------------- the table matches the plugins
def test_the_table_lists_every_plugin_of_the_repository_as_its_pyproject_declares_it():
    assert sorted(p.folder for p in KNOWN_PLUGINS) == [d.relative_to(REPO).as_posix() for d in PLUGIN_DIRS]
    names = {p.distribution for p in KNOWN_PLUGINS}
    for folder in PLUGIN_DIRS:
        project = read_pyproject(folder / "pyproject.toml")["project"]
        plugin = next(p for p in KNOWN_PLUGINS if REPO / p.folder == folder)
        assert plugin.distribution == project["name"]
        (entry,) = project["entry-points"][ENTRY_POINT_GROUP].items()
        assert plugin.entry_point == entry[0] and plugin.package == entry[1].split(".")[0]
        needs = {re.split(r"[ <>=!~;\[]", d, maxsplit=1)[0] for d in project["dependencies"]} & names
        assert set(plugin.needs) == needs, plugin.distribution


@pytest.mark.parametrize("plugin", KNOWN_PLUGINS, ids=lambda p: p.distribution)
def test_what_the_table_says_a_plugin_brings_is_what_it_registers(plugin):
    assert HOST.pm.get_plugin(plugin.entry_point) is not None, f"{plugin.distribution} is not loaded in the test venv"
    assert HOST.distribution_of(plugin.entry_point) == plugin.distribution
    frameworks = [f for f in HOST.frameworks if f.plugin == plugin.entry_point]
    assert sorted(n for f in frameworks for n in f.names()) == sorted(plugin.frameworks)
    assert any(f.is_default for f in frameworks) == plugin.default_framework
    specs = [s for s in HOST.options.specs if s.plugin == plugin.entry_point]
    assert sorted(flag for s in specs for flag in s.flags) == sorted(plugin.options)
    # a Python keyword is found in the table by its long flag (compare(api_mapping=...) is --api_mapping)
    assert all(f"--{s.name}" in s.flags for s in specs if s.api), plugin.distribution
    assert sorted(n for n, e in HOST.executors.items() if e.plugin == plugin.entry_point) == sorted(plugin.executors)
    hooks = {h.name for h in HOST.pm.get_hookcallers(HOST.pm.get_plugin(plugin.entry_point)) or []}
    commands: list[str] = []
    if "msprobe_register_commands" in hooks:
        HOST.pm.get_plugin(plugin.entry_point).msprobe_register_commands(register=commands.append)
    assert sorted(c.name for c in commands) == sorted(plugin.commands)  # type: ignore[attr-defined]
    # layouts are claimed by a discovery of the plugin's, command-line forms by its claim hook
    assert ("msprobe_discover_jobs" in hooks) == bool(plugin.layouts)
    assert ("msprobe_claim_command_line" in hooks) == bool(plugin.command_lines)


#: for each layout of the table: directories of that layout, then directories of msprobe's own dumps, each as
#: (how, name): "child" a directory holding directory ``name``, "self" directory ``name`` itself, "file" a directory
#: holding file ``name``
LAYOUT_EXAMPLES = {"kernel": ((("child", "rank_3"), ("self", "rank_3"), ("file", "kernel_kbyk_dump.json")),
                              (("child", "rank3"), ("child", "proc7"), ("file", "dump.json"))),
                   # a mixed dump's graph folder holds step directories: it is no mixed dump itself
                   "mixed": ((("child", "graph"), ("child", "pynative")),
                             (("self", "graph"), ("self", "pynative"), ("child", "rank3"), ("child", "step0")))}


def _make(root: Path, how: str, name: str) -> Path:
    """A directory below ``root`` made as :data:`LAYOUT_EXAMPLES` says; returns the path to name as the dump."""
    if how == "file":
        root.mkdir(parents=True)
        (root / name).write_text("{}", encoding="utf-8")
        return root
    (root / name / "Net").mkdir(parents=True)
    return root / name if how == "self" else root


@pytest.mark.parametrize("plugin,layout", [(p, lay) for p in KNOWN_PLUGINS for lay in p.layouts],
                         ids=lambda x: getattr(x, "name", getattr(x, "distribution", "")))
def test_a_layout_of_the_table_is_the_one_its_plugin_claims(tmp_path, plugin, layout: DumpLayout):
    from dataclasses import replace

    assert layout.name in LAYOUT_EXAMPLES, f"add an example of the {layout.name} layout to LAYOUT_EXAMPLES"
    discover = HOST.pm.get_plugin(plugin.entry_point).msprobe_discover_jobs
    options = replace(HOST.compare_options(), output_dir=tmp_path / "out")
    claimed_ones, others = LAYOUT_EXAMPLES[layout.name]
    for n, (example, claimed) in enumerate([(e, True) for e in claimed_ones] + [(e, False) for e in others]):
        t, g = (_make(tmp_path / str(n) / side, *example) for side in "tg")
        assert (known_plugins.layout_of(t) is not None) == claimed, example
        try:
            jobs = discover(target=t, golden=g, options=options)
        except Exception:  # it claimed the directory, and found no data there
            jobs = []
        assert (jobs is not None) == claimed, example


CLASSIC_LINES = [["-f", "pytorch", "compare", "-i", "c.json"], ["--framework=mindspore", "compare"],
                 ["compare", "-i", "c.json"], ["compare", "--input_path=c.json"], ["compare", "-tp", "a", "-gp", "b"],
                 ["plugins"], ["-h"], ["compare", "-tp", "-i"]]


@pytest.mark.parametrize("args", CLASSIC_LINES, ids=" ".join)
def test_a_command_line_form_of_the_table_is_the_one_its_plugin_claims(args):
    found = known_plugins.command_line_of(args)
    claimed = HOST.claim_command_line(args)
    assert (found is not None) == (claimed is not None)
    if found is not None:
        plugin, _form = found
        assert HOST.pm.get_plugin(plugin.entry_point).msprobe_claim_command_line(args=args) is not None


def test_no_other_core_module_names_a_plugin_distribution_or_the_kernel_layout():
    names = [n for p in KNOWN_PLUGINS for n in (p.distribution, p.package)]
    patterns = [lay.child_dir.pattern for p in KNOWN_PLUGINS for lay in p.layouts]
    found = {}
    for path in sorted((REPO / "msprobe_core").rglob("*.py")):
        if path == Path(known_plugins.__file__):
            continue
        text = path.read_text(encoding="utf-8").lower()
        hits = [n for n in names if n in text] + [p for p in patterns if p.lower() in text]
        if hits:
            found[path.relative_to(REPO).as_posix()] = hits
    assert not found, f"only the known plugins' table ({known_plugins.__name__}) may name plugins: {found}"


# --------------------------------------------------------------------------- the hints
def test_from_a_checkout_the_command_names_the_plugin_folders_and_what_they_need():
    assert install_command(_known("msprobe-mindspore")) == f"pip install -e {REPO / 'plugins/mindspore'}"
    kernel = _known("msprobe-kernel")
    assert install_command(kernel) == f"pip install -e {REPO / 'plugins/mindspore'} -e {REPO / 'plugins/kernel'}"
    assert install_command(kernel, {"msprobe-mindspore"}) == f"pip install -e {REPO / 'plugins/kernel'}"


def test_without_a_checkout_both_ways_are_given(tmp_path):
    assert install_command(_known("msprobe-dask"), core_root=tmp_path) == (
        "pip install -e plugins/dask from a checkout of msprobe-core, or pip install msprobe-dask")
    assert install_command(_known("msprobe-kernel"), core_root=tmp_path) == (
        "pip install -e plugins/mindspore -e plugins/kernel from a checkout of msprobe-core, or pip install "
        "msprobe-kernel")


def test_an_installed_plugin_that_did_not_load_is_not_installed_again():
    hint = missing_hint(_known("msprobe-pytorch"))  # installed in the test venv
    assert hint.startswith("the msprobe-pytorch plugin is installed but was not loaded") and "pip" not in hint
    assert hint_for("framework", "pytorch", {"msprobe-pytorch"}) is None  # loaded: nothing to say
    assert hint_for("framework", "tensorflow", set()) is None  # no known plugin brings it


@pytest.mark.exercises_hooks("msprobe_install_hint")
def test_a_sub_command_of_a_known_plugin_names_it(monkeypatch, capsys):
    frob = KnownPlugin("msprobe-frob", "plugins/frob", "frob", "msprobe_frob", "frobs", commands=("frobnicate",))
    monkeypatch.setattr(known_plugins, "KNOWN_PLUGINS", (*KNOWN_PLUGINS, frob))
    assert main(["frobnicate", "x"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "msprobe: error: no such command 'frobnicate' (install the msprobe-frob plugin: pip install -e plugins/frob "
        "from a checkout of msprobe-core, or pip install msprobe-frob) (see 'msprobe --help')"]
    assert main(["frobnicat"]) == 2
    assert "no such command 'frobnicat'" in capsys.readouterr().err.lower()


# --------------------------------------------------------------------------- a real core + msprobe-pytorch install
def _install(folder: str, *more: str) -> str:
    return "pip install " + " ".join(f"-e {REPO / f}" for f in (*more, folder))


CORE_PYTORCH_CASES = {
    "-am": (["-am"], f"no such option '-am' (install the msprobe-mindspore plugin: {_install('plugins/mindspore')})"),
    "--cell_mapping=": (["--cell_mapping=m.yaml"], "no such option '--cell_mapping=m.yaml' (install the "
                        f"msprobe-mindspore plugin: {_install('plugins/mindspore')})"),
    "--rank": (["--rank", "0"], "no such option '--rank' (install the msprobe-kernel plugin: "
               f"{_install('plugins/kernel', 'plugins/mindspore')})"),
    "--scheduler": (["--scheduler", "tcp://h:1"], "no such option '--scheduler' (install the msprobe-dask plugin: "
                    f"{_install('plugins/dask')})"),
}


@pytest.mark.parametrize("case", CORE_PYTORCH_CASES, ids=str)
def test_an_option_of_a_missing_plugin_names_it(core_and_pytorch, tmp_path, case):
    extra, line = CORE_PYTORCH_CASES[case]
    t = write_dump(tmp_path / "t", {"Torch.add.0.forward": api([tensor()])})
    proc = run(core_and_pytorch, "compare", "-tp", t, "-gp", t, "-o", tmp_path / "out", *extra, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"msprobe: error: {line}"]
    assert not (tmp_path / "out").exists()


def test_a_python_keyword_of_a_missing_plugin_names_it(core_and_pytorch, tmp_path):
    python = core_and_pytorch.parent / "python"
    script = ("import msprobe_core\n"
              "for kw in ({'api_mapping': True}, {'rank': '0'}, {'data_maping': 'm.yaml'}):\n"
              "    try:\n"
              "        msprobe_core.compare('t', 'g', **kw)\n"
              "    except TypeError as exc:\n"
              "        print(exc)\n")
    proc = subprocess.run([python, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert proc.stdout.splitlines() == [
        "compare() got an unexpected keyword argument 'api_mapping' (install the msprobe-mindspore plugin: "
        f"{_install('plugins/mindspore')})",
        "compare() got an unexpected keyword argument 'rank' (install the msprobe-kernel plugin: "
        f"{_install('plugins/kernel', 'plugins/mindspore')})",
        "compare() got an unexpected keyword argument 'data_maping' (did you mean 'data_mapping'?)"], proc.stderr


def test_a_mindspore_dump_names_the_mindspore_plugin(core_and_pytorch, tmp_path):
    leaf = tensor("Float32")
    dumps = [write_dump(tmp_path / s, {"Mint.add.0.forward": api([leaf])}, framework="mindspore") for s in "tg"]
    proc = run(core_and_pytorch, "compare", "-tp", *dumps[:1], "-gp", dumps[1], "-o", tmp_path / "out",
               cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"msprobe: error: {dumps[0]}: framework 'mindspore' is not handled by any installed plugin (installed: "
        f"pytorch; install the msprobe-mindspore plugin: {_install('plugins/mindspore')})"]
    assert not list((tmp_path / "out").glob("compare_result_*")) if (tmp_path / "out").exists() else True


def test_without_the_default_framework_plugin_a_pytorch_dump_names_it(core_only, tmp_path):
    named = write_dump(tmp_path / "named", {"Torch.add.0.forward": api([tensor()])})
    unnamed = write_dump(tmp_path / "unnamed", {"Torch.add.0.forward": api([tensor()])}, framework=None)
    hint = f"install the msprobe-pytorch plugin: {_install('plugins/pytorch')}"
    for dump, line in ((named, f"framework 'pytorch' is not handled by any installed plugin (installed: none; {hint})"),
                       (unnamed, f"dump has no 'framework' field and no default framework plugin is installed ({hint})")):
        proc = run(core_only, "compare", "-tp", dump, "-gp", dump, "-o", tmp_path / "out", cwd=tmp_path)
        assert proc.returncode == 2
        assert proc.stderr.splitlines() == [f"msprobe: error: {dump}: {line}"]
    assert not (tmp_path / "out").exists()


def test_a_kernel_dump_names_the_kernel_plugin_and_what_it_needs(core_and_pytorch, tmp_path):
    for side in "tg":
        (tmp_path / side / "rank_0" / "Net" / "0" / "0").mkdir(parents=True)
        (tmp_path / "kbyk" / side).mkdir(parents=True)
        (tmp_path / "kbyk" / side / "kernel_kbyk_dump.json").write_text("{}", encoding="utf-8")
    # a dump root, one of its rank directories, msprobe's L2 dump root (its kernel_kbyk_dump.json)
    for t, g in ((tmp_path / "t", tmp_path / "g"), (tmp_path / "t" / "rank_0", tmp_path / "g" / "rank_0"),
                 (tmp_path / "kbyk" / "t", tmp_path / "kbyk" / "g")):
        proc = run(core_and_pytorch, "compare", "-tp", t, "-gp", g, "-o", tmp_path / "out", cwd=tmp_path)
        assert proc.returncode == 2
        assert proc.stderr.splitlines() == [
            f"msprobe: error: {t}: this is a MindSpore kernel dump (rank_<r> directories), which no loaded plugin "
            f"compares (install the msprobe-kernel plugin: {_install('plugins/kernel', 'plugins/mindspore')})"]
    assert not (tmp_path / "out").exists()


def test_the_dask_executor_names_the_dask_plugin(core_and_pytorch, tmp_path):
    t = write_dump(tmp_path / "t", {"Torch.add.0.forward": api([tensor()])})
    proc = run(core_and_pytorch, "compare", "-tp", t, "-gp", t, "-o", tmp_path / "out", "--executor", "dask",
               cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "msprobe: error: unknown executor 'dask' (installed: local; install the msprobe-dask plugin: "
        f"{_install('plugins/dask')})"]
    assert not (tmp_path / "out").exists()


@pytest.mark.exercises_hooks("msprobe_list_plugins")
def test_plugins_lists_what_each_gives_and_the_known_plugins_not_installed(core_and_pytorch, tmp_path):
    listed = json.loads(run(core_and_pytorch, "plugins", "--json", cwd=tmp_path).stdout)
    by_distribution = {e["distribution"]: e for e in listed}
    pytorch = by_distribution["msprobe-pytorch"]
    assert pytorch["loaded"] and pytorch["gives"] == _known("msprobe-pytorch").gives and "install" not in pytorch
    missing = [e for e in listed if not e["loaded"]]
    assert [e["distribution"] for e in missing] == ["msprobe-mindspore", "msprobe-kernel", "msprobe-classic",
                                                    "msprobe-dask"]
    assert by_distribution["msprobe-kernel"]["install"] == _install("plugins/kernel", "plugins/mindspore")
    assert all(e["hint"] == f"install the {e['distribution']} plugin: {e['install']}" for e in missing)
    text = run(core_and_pytorch, "plugins", cwd=tmp_path).stdout
    gives, not_loaded = text.split("\nWhat they give:\n")[1].split("\nKnown plugins not loaded:\n")
    assert "msprobe-pytorch    PyTorch dumps" in gives and "msprobe-mindspore" not in gives
    for entry in missing:
        assert f"  {entry['distribution']}" in not_loaded and f"  {entry['hint']}\n" in not_loaded + "\n"


# --------------------------------------------------------------------------- the default plugin turned off
def test_turned_off_every_missing_plugin_is_an_error_without_the_hint(core_and_pytorch, tmp_path):
    """``-p no:known_plugins``: what a missing plugin brings is refused as the core refuses what nobody handles
    (exit 2, nothing written), naming no plugin; ``msprobe plugins`` lists only what is installed."""
    t = write_dump(tmp_path / "t", {"Torch.add.0.forward": api([tensor()])})
    ms = write_dump(tmp_path / "ms", {"Mint.add.0.forward": api([tensor("Float32")])}, framework="mindspore")
    for side in "tg":
        (tmp_path / "k" / side / "rank_0" / "Net" / "0" / "0").mkdir(parents=True)
    out = tmp_path / "out"
    cases = {
        "-am": (["compare", "-tp", t, "-gp", t, "-o", out, "-am"],
                "msprobe: error: no such option '-am'. Did you mean '-fm'? (see 'msprobe compare --help')"),
        "--executor dask": (["compare", "-tp", t, "-gp", t, "-o", out, "--executor", "dask"],
                            "msprobe: error: unknown executor 'dask' (installed: local)"),
        "mindspore": (["compare", "-tp", ms, "-gp", ms, "-o", out],
                      f"msprobe: error: {ms}: framework 'mindspore' is not handled by any installed plugin "
                      "(installed: pytorch)"),
        "kernel": (["compare", "-tp", tmp_path / "k" / "t", "-gp", tmp_path / "k" / "g", "-o", out], None),
        "classic": (["-f", "pytorch", "compare", "-i", tmp_path / "c.json", "-o", out], None),
    }
    for name, (args, line) in cases.items():
        on = run(core_and_pytorch, *args, cwd=tmp_path)
        off = run(core_and_pytorch, "-p", "no:known_plugins", *args, cwd=tmp_path)
        assert on.returncode == off.returncode == 2, name
        assert "install the" in on.stderr and "install the" not in off.stderr and "msprobe-" not in off.stderr, name
        assert len(off.stderr.splitlines()) == 1, (name, off.stderr)
        if line is not None:
            assert off.stderr.splitlines() == [line], name
        assert not out.exists(), name
    listed = json.loads(run(core_and_pytorch, "-p", "no:known_plugins", "plugins", "--json", cwd=tmp_path).stdout)
    assert "msprobe-pytorch" in {e["distribution"] for e in listed}
    assert "msprobe-mindspore" not in {e["distribution"] for e in listed}
    assert "Known plugins not loaded" not in run(core_and_pytorch, "-p", "no:known_plugins", "plugins",
                                                 cwd=tmp_path).stdout


def test_turned_off_the_python_api_and_the_old_import_path_name_no_plugin(core_and_pytorch, tmp_path):
    python = core_and_pytorch.parent / "python"
    script = ("import msprobe_core\n"
              "try:\n"
              "    msprobe_core.compare('t', 'g', rank='0')\n"
              "except TypeError as exc:\n"
              "    print(exc)\n"
              "try:\n"
              "    import msprobe_core.legacy\n"
              "except ImportError as exc:\n"
              "    print(exc)\n")
    proc = subprocess.run([python, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=600,
                          env={**os.environ, "MSPROBE_DISABLE_PLUGINS": "known_plugins"})
    assert proc.stdout.splitlines() == [
        "compare() got an unexpected keyword argument 'rank'",
        "msprobe_core.legacy is no longer part of msprobe-core: its Python API moved to a plugin"], proc.stderr


@pytest.mark.exercises_hooks("msprobe_command_line_usage", "msprobe_option_help")
def test_turned_off_the_help_keeps_its_epilog_without_the_classic_usage():
    def msprobe(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "msprobe_core", *args], capture_output=True, text=True,
                              timeout=600)

    on, off = msprobe("--help"), msprobe("-p", "no:known_plugins", "--help")
    assert on.returncode == off.returncode == 0
    assert "msprobe -f pytorch|mindspore compare -i compare.json" in on.stdout
    assert "compare.json" not in off.stdout and "--debug may go anywhere" in off.stdout
    executor = "local (default) or one a plugin adds"
    assert f"{executor} (dask from msprobe-dask)." in " ".join(msprobe("compare", "--help").stdout.split())
    assert f"{executor}. " in " ".join(msprobe("-p", "no:known_plugins", "compare", "--help").stdout.split())
