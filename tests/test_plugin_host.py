"""The plugin host: built-ins registered through the hooks, entry-point discovery, broken plugins."""

from __future__ import annotations

import json

import pytest

from msprobe_core import hookimpl
from msprobe_core.default_plugins.plugins_command.listing import describe_plugins
from msprobe_core.host.decisions import chain_mappers
from msprobe_core.host.registry import PluginHost
from msprobe_core.host.specs import MapperSpec, WriterSpec

from .dumps import api, tensor, write_dump
from .plugin_session import allow_distribution


def _dist(tmp_path, name: str, module_source: str) -> None:
    """A minimal installed distribution (dist-info + module) under ``tmp_path``, found through PYTHONPATH.

    The test session loads only the project's plugins; this one is allowed too, for the calling test.
    """
    allow_distribution(name)
    info = tmp_path / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[msprobe_core.plugins]\n{name} = {name}_mod\n")
    (tmp_path / f"{name}_mod.py").write_text(module_source)


def test_builtins_are_registered_through_the_hooks():
    host = PluginHost(autoload=False)
    assert {m.name for m in host.mappers} >= {"exact", "data-mapping"}
    assert set(host.writers) >= {"csv", "xlsx"}
    builtin = next(d for d in describe_plugins(host) if d["name"] == "msprobe_core.builtin")
    assert "msprobe_register_mappers" in builtin["hooks"] and "msprobe_load_dump" in builtin["hooks"]


def test_third_party_mapper_takes_its_declared_place_in_the_chain_and_writer_is_added():
    class Plugin:
        @hookimpl
        def msprobe_register_mappers(self, register):
            register(MapperSpec("reverse", lambda ctx: None, applies=lambda o: o.extra.get("reverse", False),
                                before=("data-mapping",)))

        @hookimpl
        def msprobe_register_writers(self, register):
            register(WriterSpec("tsv", ".tsv", lambda table, path: [path]))

    host = PluginHost(autoload=False, extra_plugins=[Plugin()])
    from msprobe_core.model import CompareOptions

    assert [m.name for m in host.mappers] == ["reverse", "auto-map", "data-mapping", "fuzzy", "exact"]
    assert host.mapper_for(CompareOptions(extra={"reverse": True}, plugins={"data_mapping": "x.yaml"})).name == "reverse"
    assert host.mapper_for(CompareOptions(plugins={"data_mapping": "x.yaml"})).name == "data-mapping"
    assert host.mapper_for(CompareOptions(plugins={"auto_map": True})).name == "auto-map"
    assert host.mapper_for(CompareOptions()).name == "exact"
    assert host.mapper_for(host.compare_options(fuzzy_match=True), after="data-mapping").name == "fuzzy"
    assert host.writer("tsv").suffix == ".tsv"
    assert host.writer("csv").accepts_csv_tail and not host.writer("tsv").accepts_csv_tail


def test_chain_order_follows_before_and_after_whatever_the_registration_order():
    def spec(name, **kw):
        return MapperSpec(name, lambda ctx: None, **kw)

    specs = [spec("exact"), spec("z", after=("a",), before=("exact",)), spec("a", before=("exact", "missing")),
             spec("b", before=("a",))]
    assert [m.name for m in chain_mappers(specs)] == ["b", "a", "z", "exact"]
    assert [m.name for m in chain_mappers(list(reversed(specs)))] == ["b", "a", "z", "exact"]


def test_a_plugin_whose_registration_raises_is_skipped_with_a_warning(caplog):
    class Old:
        @hookimpl
        def msprobe_register_mappers(self, register):
            register(MapperSpec("old", lambda ctx: None, priority=5))  # the 0.1 spelling

    host = PluginHost(autoload=False, extra_plugins=[Old()])
    assert [m.name for m in host.mappers] == ["auto-map", "data-mapping", "fuzzy", "exact"]
    (entry,) = [d for d in describe_plugins(host) if "error" in d]
    assert "msprobe_register_mappers failed" in entry["error"] and "priority" in entry["error"]
    assert "what it registers there is skipped" in caplog.text


def test_entry_point_plugins_are_listed(tmp_path, run_cli):
    _dist(
        tmp_path,
        "tsvwriter",
        "from msprobe_core import hookimpl\nfrom msprobe_core.host.registry import WriterSpec\n"
        "@hookimpl\ndef msprobe_register_writers(register):\n"
        "    register(WriterSpec('tsv', '.tsv', lambda t, p: [p]))\n",
    )
    proc = run_cli("plugins", "--json", env={"PYTHONPATH": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    listed = {p["name"]: p for p in json.loads(proc.stdout)}
    assert listed["tsvwriter"]["distribution"] == "tsvwriter"
    assert listed["tsvwriter"]["hooks"] == ["msprobe_register_writers"]
    assert "msprobe_core.builtin" in listed


def test_a_broken_plugin_is_skipped_with_a_warning(tmp_path, run_cli):
    _dist(tmp_path, "brokenplug", "raise ImportError('needs a package that is not installed')\n")
    t = write_dump(tmp_path / "t", {"Torch.a.0.forward": api([tensor()])})
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", t, "-gp", t, "-o", out, env={"PYTHONPATH": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert "plugin 'brokenplug'" in proc.stdout + proc.stderr and "is skipped" in proc.stdout + proc.stderr
    assert len(list(out.glob("compare_result_*.csv"))) == 1
    listed = json.loads(run_cli("plugins", "--json", env={"PYTHONPATH": str(tmp_path)}).stdout)
    assert any(p["name"] == "brokenplug" and "ImportError" in p["error"] for p in listed)


def test_autoload_can_be_disabled(tmp_path, run_cli):
    _dist(tmp_path, "tsvwriter2", "raise SystemError('must not be imported')\n")
    proc = run_cli("plugins", "--json", env={"PYTHONPATH": str(tmp_path), "MSPROBE_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert proc.returncode == 0
    assert [p["name"] for p in json.loads(proc.stdout) if p["loaded"] and not p.get("default")] == ["msprobe_core.builtin"]


@pytest.mark.exercises_hooks("msprobe_register_commands")
def test_plugins_add_sub_commands(tmp_path, run_cli):
    _dist(
        tmp_path,
        "hellocmd",
        "import click\nfrom msprobe_core import hookimpl\n"
        "@click.command('hello')\n@click.option('--name', default='world')\n"
        "def hello(name):\n    '''Say hello.'''\n    click.echo(f'hello {name}')\n"
        "@click.command('compare')\ndef fake():\n    click.echo('not the real compare')\n"
        "@hookimpl\ndef msprobe_register_commands(register):\n    register(hello)\n    register(fake)\n",
    )
    env = {"PYTHONPATH": str(tmp_path)}
    proc = run_cli("hello", "--name", "plugins", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello plugins\n"
    proc = run_cli("hello", "--help", env=env)
    assert proc.returncode == 0 and "Say hello." in proc.stdout
    listed = {p["name"]: p for p in json.loads(run_cli("plugins", "--json", env=env).stdout)}
    assert listed["hellocmd"]["hooks"] == ["msprobe_register_commands"]
    t = write_dump(tmp_path / "t", {"Torch.a.0.forward": api([tensor()])})
    proc = run_cli("compare", "-tp", t, "-gp", t, "-o", tmp_path / "out", "-q", env=env)  # the built-in one runs
    assert proc.returncode == 0, proc.stderr
    assert "not the real compare" not in proc.stdout and len(list((tmp_path / "out").glob("*.csv"))) == 1
    proc = run_cli("hello", env=env)
    assert "plugin 'hellocmd': command 'compare' is ignored (the name is taken)" in proc.stdout + proc.stderr
    proc = run_cli("nosuch", env=env)
    assert proc.returncode == 2 and "no such command 'nosuch'" in proc.stderr


def test_the_default_communication_ops_are_registered_through_the_hook():
    from msprobe_core.default_plugins.diff_analyze.comm import DEFAULT_SPEC

    host = PluginHost(autoload=False)
    (spec,) = host.registered["msprobe_register_comm_ops"]
    assert (spec.name, spec.kind, spec.plugin) == ("builtin", DEFAULT_SPEC.kind, "diff_analyze")
    owner = next(d for d in describe_plugins(host) if d["name"] == "diff_analyze")
    assert {"msprobe_register_comm_ops", "msprobe_register_options", "msprobe_run_jobs"} <= set(owner["hooks"])


def _stats_pair(tmp_path):
    """A two-row statistics pair whose output differs (the core's rules flag it) and a job for it."""
    from msprobe_core.host.specs import CompareJob

    t = write_dump(tmp_path / "t", {"Torch.add.0.forward": api([tensor()], [tensor(mx=9.0, norm=50.0)])})
    g = write_dump(tmp_path / "g", {"Torch.add.0.forward": api([tensor()], [tensor()])})
    return CompareJob(t, g, tmp_path / "out", "compare_result")


class _Judges:
    """Verdict rules of a third party: a column of its own, and a rule set that stands in for the core's."""

    @hookimpl
    def msprobe_register_verdicts(self, register):
        from msprobe_core.host.specs import VerdictSpec

        def reviewed(ctx):
            # rules after the core's see its columns
            return {"Reviewed": [f"{r}: seen" for r in ctx.columns["Result"]]}

        def lenient(ctx):
            ctx.meta.plugin_data["judges"] = "lenient"  # a plugin keeps its data under its own name
            n = len(ctx.columns["NPU Name"])
            return {"Result": ["pass"] * n, "Err_message": ["[]"] * n}

        register(VerdictSpec("reviewed", reviewed, applies=lambda o: o.extra.get("review", False),
                             after=("msprobe", "lenient")))
        register(VerdictSpec("lenient", lenient, modes=("statistics",), replaces=("msprobe",),
                             applies=lambda o: o.extra.get("lenient", False)))


@pytest.mark.exercises_hooks("msprobe_register_verdicts")
def test_verdict_rules_add_columns_after_requires_grad_and_may_stand_in_for_the_core(tmp_path):
    from msprobe_core.model import CompareOptions
    from msprobe_core.pipeline.job import compare_job

    host = PluginHost(extra_plugins=[_Judges()])
    ours = [v.name for v in host.verdicts if v.name in ("lenient", "msprobe", "reviewed")]
    assert ours == ["lenient", "msprobe", "reviewed"]  # plugins before the built-in one, then as declared
    job = _stats_pair(tmp_path)

    plain = compare_job(job, CompareOptions(), host)
    assert plain.columns[-3:] == ["Requires_grad Consistent", "Result", "Err_message"]
    assert plain.data["Result"] == ["pass", "error"]  # the core's rule: NormRelativeErr of the output > 0.5

    reviewed = compare_job(job, CompareOptions(extra={"review": True}), host)
    # new verdict columns follow Requires_grad Consistent in the order the rules gave them
    assert reviewed.columns[-4:] == ["Requires_grad Consistent", "Result", "Err_message", "Reviewed"]
    assert reviewed.data["Reviewed"] == ["pass: seen", "error: seen"]

    options = CompareOptions(extra={"review": True, "lenient": True})
    assert [v.name for v in host.verdicts_for("statistics", options)] == ["lenient", "reviewed"]
    both = compare_job(job, options, host)
    assert both.data["Result"] == ["pass", "pass"] and both.data["Reviewed"] == ["pass: seen", "pass: seen"]
    assert both.meta.plugin_data == {"judges": "lenient"}
    # the lenient rule is for statistics mode only: an md5 table keeps the core's verdicts
    assert [v.name for v in host.verdicts_for("md5", CompareOptions(extra={"lenient": True}))] == ["msprobe"]


@pytest.mark.exercises_hooks("msprobe_register_metrics", "msprobe_register_writers")
def test_a_metric_set_for_some_runs_and_a_writer_reading_the_options(tmp_path):
    """``MetricSpec.applies`` picks a mode's metric set per run; ``WriterSpec.accepts_options`` hands the writer the options."""
    from msprobe_core.host.specs import MetricSpec, VerdictSpec
    from msprobe_core.model import CompareOptions
    from msprobe_core.pipeline.job import run_job

    class Plugin:
        @hookimpl
        def msprobe_register_metrics(self, register):
            def names_only(ctx):
                return {"NPU Name": [ctx.target.name[i] for i in ctx.match.target],
                        "Requires_grad Consistent": [True] * len(ctx.match.target)}

            register(MetricSpec("statistics", names_only, whole_table=True,
                                applies=lambda o: o.extra.get("names_only", False)))

        @hookimpl
        def msprobe_register_verdicts(self, register):
            # the core's rule reads msprobe's columns, which this set does not give: its own rule stands in
            register(VerdictSpec("seen", lambda ctx: {"Result": ["seen"] * len(ctx.columns["NPU Name"])},
                                 replaces=("msprobe",), applies=lambda o: o.extra.get("names_only", False)))

        @hookimpl
        def msprobe_register_writers(self, register):
            def write_lines(table, path, options):
                path.write_text(f"{options.extra['title']}\n" + "\n".join("|".join(map(str, r)) for r in table.rows()))
                return [path]

            register(WriterSpec("lines", ".txt", write_lines, accepts_options=True))

    host = PluginHost(extra_plugins=[Plugin()])
    job = _stats_pair(tmp_path)
    assert host.metric_set("statistics", CompareOptions()).plugin == "statistics_metrics"  # the default plugin's, as a third party's would be
    options = CompareOptions(output_format="lines", output_dir=job.output_dir,
                             extra={"names_only": True, "title": "my run"})
    job.output_dir.mkdir()
    table, files, _ = run_job(job, options, host, timestamp="20260101000000")
    # the whole-table set gives its columns; the verdict rules of the mode add theirs after Requires_grad Consistent
    assert table.columns == ["NPU Name", "Requires_grad Consistent", "Result"]
    lines = files[0].read_text().splitlines()
    assert files[0].name == "compare_result_20260101000000.txt" and lines[0] == "my run"
    assert lines[1:] == ["Torch.add.0.forward.input.0|True|seen", "Torch.add.0.forward.output.0|True|seen"]
    plain = run_job(job, CompareOptions(output_dir=job.output_dir), host, timestamp="20260101000001")[0]
    assert "Max diff" in plain.columns  # the other runs: the core's set


class _Greeter:
    """A plugin that claims ``msprobe --greet NAME``."""

    @hookimpl
    def msprobe_claim_command_line(self, args):
        import click

        from msprobe_core.host.specs import CommandLineClaim

        if args[:1] != ["--greet"]:
            return None

        def run():
            if len(args) < 2:
                raise click.UsageError("--greet needs a name")
            click.echo(f"hello {args[1]}")

        return CommandLineClaim(run, command_path="msprobe --greet")


@pytest.mark.exercises_hooks("msprobe_claim_command_line")
def test_a_plugin_claims_a_command_line_the_core_cannot_parse(capsys):
    from msprobe_core.cli.main import main
    from msprobe_core.host.registry import get_host, reset_host

    reset_host(PluginHost(extra_plugins=[_Greeter()]))
    try:
        assert main(["--greet", "plugins"]) == 0
        assert capsys.readouterr().out == "hello plugins\n"
        assert main(["--greet"]) == 2  # its usage error, in the one error style, naming its command
        assert capsys.readouterr().err == "msprobe: error: --greet needs a name (see 'msprobe --greet --help')\n"
        assert main(["--grate"]) == 2  # nobody claims it: click's own error
        assert "no such option" in capsys.readouterr().err.lower()
        assert get_host().claim_command_line(["plugins"]) is None
    finally:
        reset_host(None)
