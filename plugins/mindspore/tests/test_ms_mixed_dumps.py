"""graph/pynative mixed dumps (compare-modes §6), the MindSpore plugin's: one compare per ``<graph|pynative>/<step>``.

The fixture puts two real MindSpore L0 dumps (``ms_l0_stat_bug_2steps`` step0
and step1, target and golden) into the mixed layout

    <side>/graph/step0/rank0/{dump.json,stack.json,construct.json}     (step0 dumps)
    <side>/pynative/step0/proc13856/{...}                              (step1 dumps)
    <side>/pynative/step1/rank/{...}                                   (step0 dumps again)

and checks msprobe's output layout ``<o>/<graph|pynative>/<step>/compare_result_<rank dir>_{ts}.csv``
and that every table equals the oracle of the single (file pair) compare of the same dumps; then what the layout
means beside the other discoveries, and without the plugin (the core's discovery knows no such layout).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from msprobe_core.cli.main import main
from tests.fixtures import agree

pytest.importorskip("msprobe_mindspore")

CASE = "ms_l0_stat_bug_2steps"
LAYOUT = {
    # (folder, step, rank dir) -> source step of the case
    ("graph", "step0", "rank0"): "step0",
    ("pynative", "step0", "proc13856"): "step1",
    ("pynative", "step1", "rank"): "step0",
}


def _single_dump_dir(case: Path, side: str, step: str) -> Path:
    (proc,) = (case / side / step).iterdir()
    return proc


@pytest.fixture()
def mixed(corpora, tmp_path) -> tuple[Path, Path, Path]:
    case = corpora / "mindspore" / CASE
    for side in ("target", "golden"):
        for (folder, step, rank), source in LAYOUT.items():
            src = _single_dump_dir(case, side, source)
            dst = tmp_path / side / folder / step / rank
            dst.mkdir(parents=True)
            for name in ("dump.json", "stack.json", "construct.json"):
                shutil.copyfile(src / name, dst / name)
        (tmp_path / side / "graph" / "not_a_step.txt").write_text("ignored")
    (tmp_path / "target" / "pynative" / "step9").mkdir()  # only on one side: ignored
    return case, tmp_path / "target", tmp_path / "golden"


def test_mixed_layout_and_agreement_with_single_compares(mixed, oracle_diff, tmp_path):
    case, target, golden = mixed
    out = tmp_path / "out"
    assert main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out)]) == 0
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*")
                     if p.is_file() and not p.name.startswith("next_dump_config_"))  # this tool's, not a result
    expected = {
        "graph/step0/compare_result_rank0": "step0",
        "pynative/step0/compare_result_proc13856": "step1",
        "pynative/step1/compare_result_rank": "step0",
    }
    stems = [re.sub(r"_\d{14}\.csv$", "", w) for w in written]
    assert sorted(stems) == sorted(expected), written
    for path, stem in zip(written, stems):
        ref = case / "oracle" / expected[stem] / "compare_result.csv"
        code, report = agree(oracle_diff, out / path, ref)
        assert code == 0, f"{path} disagrees with the single compare of {expected[stem]}:\n{report}"


def test_mixed_layout_xlsx(mixed, tmp_path):
    _, target, golden = mixed
    out = tmp_path / "out"
    assert main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out), "--xlsx"]) == 0
    assert len(list((out / "graph" / "step0").glob("compare_result_rank0_*.xlsx"))) == 1
    assert len(list((out / "pynative" / "step1").glob("compare_result_rank_*.xlsx"))) == 1


def test_mixed_layout_with_only_one_common_folder(mixed, tmp_path):
    """Only ``pynative`` on the golden side: the graph dumps are not compared."""
    _, target, golden = mixed
    shutil.rmtree(golden / "graph")
    out = tmp_path / "out"
    assert main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out)]) == 0
    assert {p.parent.parent.name for p in out.rglob("*.csv")} == {"pynative"}


def _results(out: Path) -> list[str]:
    return sorted(re.sub(r"_\d{14}", "", str(p.relative_to(out))) for p in out.rglob("compare_result_*"))


def test_a_mixed_dump_beside_step_directories_is_compared_as_a_mixed_dump(mixed, tmp_path):
    """The MindSpore plugin's discovery is asked before the default plugin steps': roots holding ``graph`` and
    ``step0`` are a mixed dump, as they were when the core found mixed dumps itself (and as msprobe has it)."""
    _, target, golden = mixed
    for side in (target, golden):
        shutil.copytree(side / "graph" / "step0", side / "step0")
    out = tmp_path / "out"
    assert main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out), "-q"]) == 0
    assert _results(out) == ["graph/step0/compare_result_rank0.csv", "pynative/step0/compare_result_proc13856.csv",
                             "pynative/step1/compare_result_rank.csv"]


def test_rank_is_refused_for_a_mixed_dump_whatever_order_the_plugins_load_in(mixed, tmp_path, capsys):
    """``--rank`` is the kernel plugin's: its discovery (``tryfirst``) refuses it before the mixed dump is claimed."""
    _, target, golden = mixed
    out = tmp_path / "out"
    assert main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out), "--rank", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--rank is an option of MindSpore kernel dump compares" in err, err
    assert not out.exists()


@pytest.mark.parametrize("also_off", ["", ",known_plugins"], ids=["hint", "no-hint"])
def test_without_the_plugin_a_mixed_dump_is_refused_naming_it(mixed, tmp_path, also_off):
    """The core's discovery knows no mixed dump: without the MindSpore plugin the pair is refused in one line that
    names the layout and the plugin (the default plugin known_plugins' hint), nothing written; without that hint
    too, the core's own line says what it found."""
    _, target, golden = mixed
    out = tmp_path / "out"
    env = {**os.environ, "MSPROBE_DISABLE_PLUGINS": "mindspore" + also_off}
    proc = subprocess.run([sys.executable, "-m", "msprobe_core", "compare", "-tp", str(target), "-gp", str(golden),
                           "-o", str(out)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    if also_off:
        assert f"{target}: found no rank* dirs and no proc<PID> dirs" in proc.stderr, proc.stderr
    else:
        assert f"{target}: this is a MindSpore graph/pynative mixed dump" in proc.stderr, proc.stderr
        assert "msprobe-mindspore plugin" in proc.stderr, proc.stderr
    assert not out.exists()
