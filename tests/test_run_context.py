"""The run's stages talk through a typed :class:`~msprobe_core.run.context.RunContext` and typed job fields, not
through string keys of ``options.extra`` / ``job.extra`` (which hold the user's and the plugins' values only)."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest

from msprobe_core.host.specs import CompareJob
from msprobe_core.run.context import RunContext, split_caller_fields

CORE = Path(__file__).resolve().parent.parent / "msprobe_core"

#: an ``extra`` mapping of the options or of a job read or written by key (``options.extra["x"]``,
#: ``job.extra.get(KEY)``, ``task.job.extra.pop(...)``); the group: the key
KEYED_EXTRA = re.compile(
    r"\b(?:options|opts|job|o\.job|task\.job)\.extra\s*(?:\[|\.get\(|\.pop\(|\.setdefault\()\s*([^]),]+)")
#: the one key the core still reads there: a user's value, the ``-da`` settings the Python API's ``extra=`` passes
USER_VALUES = {("default_plugins/diff_analyze/runner.py", "CONFIG_KEY")}


def _keyed_extra_uses(root: Path = CORE) -> list[tuple[str, str]]:
    """(module, key) of every keyed access to ``options.extra`` or ``job.extra`` under ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for line in path.read_text(encoding="utf-8").splitlines():
            code = line.split("#", 1)[0]
            found += [(path.relative_to(root).as_posix(), m.group(1).strip()) for m in KEYED_EXTRA.finditer(code)]
    return found


def test_no_stage_reads_or_writes_options_or_job_extra_by_key():
    uses = _keyed_extra_uses()
    assert set(uses) <= USER_VALUES, f"string-keyed extra left in the core: {sorted(set(uses) - USER_VALUES)}"


def test_the_grep_finds_a_keyed_extra(tmp_path):
    """The check above can fail: a module that reads ``job.extra["missing"]`` is found."""
    (tmp_path / "stage.py").write_text('def f(job, options):\n    return job.extra["missing"] or options.extra.get(KEY)\n')
    assert _keyed_extra_uses(tmp_path) == [("stage.py", '"missing"'), ("stage.py", "KEY")]


@pytest.mark.parametrize("name", ["RUN_STARTED", "RUN_STAMP"])
def test_the_run_keys_are_gone_from_the_model(name):
    import msprobe_core.model as model

    assert not hasattr(model, name)


def test_the_context_is_frozen_and_travels_without_its_host():
    from msprobe_core.host.registry import get_host

    run = RunContext(get_host(), keep_tables=False, started=1.5, stamp="20260101000000")
    with pytest.raises(AttributeError):
        run.stamp = "x"  # type: ignore[misc]
    shipped = pickle.loads(pickle.dumps(run.without_host()))
    assert shipped == RunContext(None, keep_tables=False, started=1.5, stamp="20260101000000")


def test_the_api_extra_splits_into_context_fields_and_user_values():
    sink = object()
    run, rest = split_caller_fields({"summary_sink": sink, "keep_tables": False, "diff_analyze_config": 3})
    assert run == {"summary_sink": sink, "keep_tables": False} and rest == {"diff_analyze_config": 3}
    assert split_caller_fields({"started": 1.0, "stamp": "x"}) == ({}, {"started": 1.0, "stamp": "x"})


def test_a_missing_side_is_a_typed_field_of_the_job(tmp_path):
    from msprobe_core.load.discover import discover_jobs
    from msprobe_core.model import CompareOptions

    for side in ("t", "g"):
        (tmp_path / side / "step0" / "rank0").mkdir(parents=True)
        (tmp_path / side / "step0" / "rank1").mkdir(parents=True)
    (tmp_path / "t" / "step0" / "rank0" / "dump.json").write_text("{}")
    (tmp_path / "g" / "step0" / "rank0" / "dump.json").write_text("{}")
    (tmp_path / "t" / "step0" / "rank1" / "dump.json").write_text("{}")
    jobs = discover_jobs(tmp_path / "t" / "step0", tmp_path / "g" / "step0", CompareOptions(output_dir=tmp_path))
    assert [j.missing for j in jobs][0] == ""
    assert "dump.json not found in" in jobs[1].missing and "missing" not in jobs[1].plugin_data
    assert CompareJob(Path("a"), Path("b"), tmp_path, "s").unrecognised == []


#: where the process-wide plugin host may be looked up: the layers that start a run (the default plugin
#: ``parallel_jobs``, whose task starts a job's run in a worker process) and the commands (``msprobe plugins``, the
#: default plugin ``plugins_command``, lists the host the command line loaded, as the ``cli/`` layer did)
HOST_READERS = ("cli/", "api.py", "run/", "default_plugins/parallel_jobs.py", "default_plugins/plugins_command/")
#: lower modules that still look it up, each for a reason not yet removed: the tensor stage where its pairs run as
#: an executor's task in another process (a pool or Dask worker, which loads its own host; the process running the
#: stage hands the run's host down). The summary, the report and the column registry ask the run's host
#: (``running.py``, set by the layer that starts the run), never the process's.
STILL_LOOKED_UP = {"default_plugins/tensor_metrics/stage.py"}
AMBIENT_HOST = re.compile(r"\bget_host\(\)|\bcurrent_host\(\)|sys\.modules\.get\([^)]*host\.registry")


def _ambient_host_readers(root: Path = CORE) -> set[str]:
    """The modules under ``root`` outside the run's top layers that read the process-wide host."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if name.startswith(HOST_READERS) or name == "host/registry.py":
            continue
        code = [line.split("#", 1)[0] for line in path.read_text(encoding="utf-8").splitlines()]
        if any(AMBIENT_HOST.search(line) for line in code):
            found.add(name)
    return found


def test_no_new_lower_layer_reads_the_process_wide_host():
    """The stages get the host passed in; only the CLI, the Python API and the run look it up (and the modules
    of :data:`STILL_LOOKED_UP`, which must not grow)."""
    assert _ambient_host_readers() <= STILL_LOOKED_UP


def test_the_host_grep_finds_a_lookup(tmp_path):
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "pipeline" / "x.py").write_text("def f(host=None):\n    return host or get_host()\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "y.py").write_text("def f():\n    return get_host()\n")
    assert _ambient_host_readers(tmp_path) == {"pipeline/x.py"}


def test_outside_a_run_the_report_knows_the_core_alone_inside_it_the_runs_plugins():
    """What the summary and the report know of plugins is the run's host, for the run only: before it (and
    after it) the core's columns and modes and no hierarchy source (the core registers none), whatever host the
    process made earlier."""
    from msprobe_core.default_plugins.summary.hierarchy import hierarchy_specs
    from msprobe_core.default_plugins.summary.modes import CORE_MODES, result_modes
    from msprobe_core.default_plugins.summary.views import framework_specs
    from msprobe_core.host.registry import get_host
    from msprobe_core.result_columns import CORE_COLUMNS, known_columns
    from msprobe_core.running import run_host, running_with

    host = get_host()
    assert run_host() is None
    assert known_columns() is CORE_COLUMNS and result_modes() == CORE_MODES and framework_specs() == []
    assert hierarchy_specs() == []
    with running_with(host):
        assert run_host() is host and known_columns() is host.columns
        assert set(result_modes()) > set(CORE_MODES)  # the kernel plugin's mode, in this session
        assert framework_specs() and framework_specs()[0].is_default
        # the kernel plugin's scopes first, then the default plugin hierarchy's
        assert [(s.name, s.plugin) for s in hierarchy_specs()][-3:] == [
            ("kernel-scope", "kernel"), ("construct.json", "hierarchy"), ("stack.json", "hierarchy")]
    assert run_host() is None
