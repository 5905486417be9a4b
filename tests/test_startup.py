"""Start-up stays light: heavy modules are imported only by the commands that need them (no timing here).

Plugins only where they serve (issue 33): ``msprobe --help`` (which loads every plugin to list its commands) and
``msprobe compare --help`` (every plugin's options) import no numpy; registering every plugin imports nothing heavy;
a PyTorch-vs-PyTorch statistics compare runs no module of the classic, kernel, MindSpore or dask plugins beyond
what registering them imports, and none of the HTML report's page machinery without ``--report html``. Each is
measured in a fresh process (``sys.modules`` when it exits).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import corpora_dir, no_corpora_reason

HEAVY_FOR_HELP = {"numpy", "pandas", "openpyxl", "pydantic", "yaml", "dask", "distributed", "torch", "mindspore"}
# pydantic checks only what is wrong with a dump header (msprobe_core.files.schemas); well-formed dumps never need it
HEAVY_FOR_STATS_COMPARE = {"pandas", "openpyxl", "pydantic", "dask", "distributed", "torch", "mindspore"}


def _imported(*args: str) -> set[str]:
    """Top-level modules imported by ``python -m msprobe_core ARGS`` (from ``-X importtime``)."""
    env = dict(os.environ, MSPROBE_NO_PROGRESS="1")
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "msprobe_core", *args],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


def test_help_imports_nothing_heavy():
    assert not _imported("--help") & HEAVY_FOR_HELP


def test_statistics_compare_does_not_import_pandas_pydantic_or_dask(tmp_path):
    case = corpora_dir() / "pytorch" / "c01"
    if not case.is_dir():
        pytest.skip(no_corpora_reason())
    heavy = _imported("compare", "-tp", str(case / "target/step0/rank0/dump.json"),
                      "-gp", str(case / "golden/step0/rank0/dump.json"), "-o", str(tmp_path), "-q")
    assert not heavy & HEAVY_FOR_STATS_COMPARE


REPO = Path(__file__).resolve().parents[1]
STATS = REPO / "examples" / "pytorch_stats"

#: modules a start-up must not import (numpy: only where a compare computes)
HEAVY = ("pandas", "openpyxl", "pydantic")
#: the plugins a PyTorch compare has no use for
UNUSED_PLUGINS = ("msprobe_classic", "msprobe_kernel", "msprobe_mindspore", "msprobe_dask")

#: runs the msprobe console script's code, then prints every module loaded, as JSON on the last line of stderr
_RUN_MSPROBE = (
    "import atexit, json, sys\n"
    "atexit.register(lambda: sys.stderr.write('\\n' + json.dumps(sorted(sys.modules)) + '\\n'))\n"
    "sys.argv = ['msprobe', *sys.argv[1:]]\n"
    "from msprobe_core.entry import run\n"
    "run()\n"
)
#: builds the plugin host (every plugin registered, their commands collected), then prints the modules loaded
_REGISTER_ONLY = (
    "import json, sys\n"
    "from msprobe_core.host.registry import PluginHost\n"
    "PluginHost().register_commands(('compare',))\n"
    "print(json.dumps(sorted(sys.modules)))\n"
)


def _loaded_by_msprobe(*args: object, cwd: Path | None = None) -> tuple[int, set[str]]:
    proc = subprocess.run([sys.executable, "-c", _RUN_MSPROBE, *map(str, args)], capture_output=True, text=True,
                          timeout=600, cwd=cwd)
    return proc.returncode, set(json.loads(proc.stderr.strip().splitlines()[-1]))


def _of(packages: tuple[str, ...], modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in packages}


@pytest.mark.parametrize("args", [["--help"], ["compare", "--help"]], ids=["help", "compare-help"])
def test_help_loads_every_plugin_and_imports_no_numpy(args):
    # --help lists every plugin's commands, compare --help every plugin's options: both load the plugins
    rc, loaded = _loaded_by_msprobe(*args)
    assert rc == 0
    assert {f"{p}.plugin" for p in UNUSED_PLUGINS} <= loaded
    assert not _of(("numpy", *HEAVY), loaded)


def test_registering_every_plugin_imports_nothing_heavy():
    proc = subprocess.run([sys.executable, "-c", _REGISTER_ONLY], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert not _of(("numpy", *HEAVY), set(json.loads(proc.stdout)))


def test_a_pytorch_statistics_compare_runs_no_other_plugin_beyond_its_registration(tmp_path):
    proc = subprocess.run([sys.executable, "-c", _REGISTER_ONLY], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    registration = set(json.loads(proc.stdout))
    rc, loaded = _loaded_by_msprobe("compare", "-tp", STATS / "target" / "step0", "-gp", STATS / "golden" / "step0",
                                    "-o", tmp_path / "out", "-q")
    assert rc == 0 and len(list((tmp_path / "out").glob("compare_result_*.csv"))) == 1
    assert _of(UNUSED_PLUGINS, loaded) <= _of(UNUSED_PLUGINS, registration), "modules run beyond registration"
    # the machinery that registration leaves for the runs that use it
    for machinery in ("msprobe_mindspore.mapping", "msprobe_mindspore.npy_reader", "msprobe_mindspore.numparse",
                      "msprobe_kernel.layout", "msprobe_kernel.engine", "msprobe_classic.matching",
                      "msprobe_classic.loader", "msprobe_classic.table", "msprobe_dask.executor"):
        assert machinery not in loaded, machinery
    assert not _of(HEAVY, loaded)
    page = {f"msprobe_core.default_plugins.report.{m}" for m in ("html", "sampling", "sample_sink", "versus",
                                                                    "versus_html", "explain", "buckets")}
    assert not page & loaded, "the HTML report's machinery without --report html"
