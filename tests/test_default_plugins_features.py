"""The default plugins ``automap``, ``data_mapping``, ``xlsx``, ``progress`` and ``local_executor`` (issue 33):
each one turned off takes its option with it (the error names the plugin), and what is left still works.

The command lines run the real console script in a fresh process, the way a user turns a plugin off
(``MSPROBE_DISABLE_PLUGINS=NAME``); a host made here reads the same variable.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from msprobe_core.host.defaults import DISABLE_ENV
from msprobe_core.host.registry import PluginHost
from msprobe_core.plugin import MapperSpec, hookimpl

from .automap_truth import DUMPS
from .test_data_mapping import _dump, _mapping

REPO = Path(__file__).resolve().parents[1]


def _msprobe(*args: object, off: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != DISABLE_ENV} | ({DISABLE_ENV: off} if off else {})
    return subprocess.run([sys.executable, "-m", "msprobe_core", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=600)


def _rows(out: Path) -> list[list[str]]:
    [table] = out.glob("compare_result_*.csv")
    with open(table, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def _turned_off_line(flag: str, name: str) -> list[str]:
    return [f"msprobe: error: no such option '{flag}' (it is the default plugin '{name}''s, which is turned off "
            f"by -p no:{name} or MSPROBE_DISABLE_PLUGINS)"]


@pytest.fixture
def dm_pair(tmp_path: Path) -> tuple[list[str], Path]:
    """A pair whose ``-dm`` file pairs other rows than the names do (``tests/test_data_mapping.py``)."""
    target, golden = _dump(tmp_path / "t", 0), _dump(tmp_path / "g", 1)
    dm = tmp_path / "data_mapping.yaml"
    dm.write_text("".join(f"{a}: {b}\n" for a, b in _mapping().items()), encoding="utf-8")
    return ["-tp", str(target), "-gp", str(golden)], dm


def test_auto_map_turned_off_is_no_option(tmp_path):
    sides = ("-tp", DUMPS / "renamed_L0" / "dump.json", "-gp", DUMPS / "golden_L0" / "dump.json")
    on = _msprobe("compare", *sides, "-o", tmp_path / "on", "--auto-map", "-q")
    assert on.returncode == 0, on.stderr
    assert len(list((tmp_path / "on").glob("auto_mapping_*.yaml"))) == 1
    off = _msprobe("compare", *sides, "-o", tmp_path / "off", "--auto-map", off="automap")
    assert off.returncode == 2 and not (tmp_path / "off").exists()
    assert off.stderr.strip().splitlines() == _turned_off_line("--auto-map", "automap")


def test_data_mapping_turned_off_is_no_option_and_auto_map_still_works(tmp_path, dm_pair):
    sides, dm = dm_pair
    off = _msprobe("compare", *sides, "-o", tmp_path / "off", "-dm", dm, off="data_mapping")
    assert off.returncode == 2 and not (tmp_path / "off").exists()
    assert off.stderr.strip().splitlines() == _turned_off_line("-dm", "data_mapping")
    auto_sides = ("-tp", DUMPS / "renamed_L0" / "dump.json", "-gp", DUMPS / "golden_L0" / "dump.json")
    on = _msprobe("compare", *auto_sides, "-o", tmp_path / "on", "--auto-map", "-q")
    auto = _msprobe("compare", *auto_sides, "-o", tmp_path / "auto", "--auto-map", "-q", off="data_mapping")
    assert on.returncode == auto.returncode == 0, on.stderr + auto.stderr
    assert _rows(tmp_path / "auto") == _rows(tmp_path / "on")  # the proposal is joined as -dm joins, without -dm


def test_dm_keeps_its_place_ahead_of_exact_names_with_fuzzy_turned_off(tmp_path, dm_pair):
    """``data-mapping`` goes ahead of ``fuzzy``, which goes ahead of ``exact``: with ``fuzzy`` off, ``-dm`` still
    comes before the exact names (it would otherwise never run)."""
    sides, dm = dm_pair
    on = _msprobe("compare", *sides, "-o", tmp_path / "on", "-dm", dm, "-q")
    off = _msprobe("compare", *sides, "-o", tmp_path / "off", "-dm", dm, "-q", off="fuzzy")
    plain = _msprobe("compare", *sides, "-o", tmp_path / "plain", "-q")
    assert on.returncode == off.returncode == plain.returncode == 0, on.stderr + off.stderr + plain.stderr
    assert _rows(tmp_path / "on") != _rows(tmp_path / "plain")
    assert _rows(tmp_path / "off") == _rows(tmp_path / "on")


def test_a_mapper_named_ahead_of_a_turned_off_one_keeps_its_place(monkeypatch):
    """The MindSpore plugin's ``layer-mapping`` says ``before=("data-mapping",)``: with ``data_mapping`` off it
    still goes ahead of ``fuzzy`` (where ``data-mapping`` would be), and handing on after ``data-mapping`` works."""

    class Plugin:
        @hookimpl
        def msprobe_register_mappers(self, register):
            register(MapperSpec("mine", lambda ctx: None, before=("data-mapping",)))

    monkeypatch.setenv(DISABLE_ENV, "data_mapping")
    host = PluginHost(autoload=False, extra_plugins=[Plugin()])
    names = [m.name for m in host.mappers]
    assert "data-mapping" not in names
    assert names.index("mine") < names.index("fuzzy") < names.index("exact")
    assert host.mapper_for(host.compare_options(fuzzy_match=True), after="data-mapping").name == "fuzzy"
    assert host.mapper_for(host.compare_options(), after="data-mapping").name == "exact"


def test_xlsx_turned_off_takes_the_format_and_its_flag(tmp_path, dm_pair):
    sides, _dm = dm_pair
    on = _msprobe("compare", *sides, "-o", tmp_path / "on", "--xlsx", "-q")
    assert on.returncode == 0, on.stderr
    assert len(list((tmp_path / "on").glob("compare_result_*.xlsx"))) == 1
    flag = _msprobe("compare", *sides, "-o", tmp_path / "flag", "--xlsx", off="xlsx")
    assert flag.returncode == 2 and not (tmp_path / "flag").exists()
    assert flag.stderr.strip().splitlines() == _turned_off_line("--xlsx", "xlsx")
    named = _msprobe("compare", *sides, "-o", tmp_path / "named", "--output_format", "xlsx", off="xlsx")
    assert named.returncode == 2 and not list((tmp_path / "named").glob("*.xlsx"))
    assert "unknown output format 'xlsx'" in named.stderr
    assert "it is the default plugin 'xlsx''s, which is turned off" in named.stderr
    plain = _msprobe("compare", *sides, "-o", tmp_path / "plain", "-q", off="xlsx")
    assert plain.returncode == 0 and len(_rows(tmp_path / "plain")) > 1
