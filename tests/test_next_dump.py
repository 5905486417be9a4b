"""The next, narrower dump's config (``next_dump_config_<stamp>.json``): what it holds for each kind of first
divergence, and — with msprobe's real dumper, where a venv with torch and mindstudio-probe exists — that the
dumper loads it and a dump made with it holds the divergent call's tensors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from msprobe_core.default_plugins.summary.next_dump import is_module_call, next_dump_config, region, step_and_rank

HERE = Path(__file__).parent
MODEL = HERE / "next_dump_model.py"
EXAMPLES = HERE.parent / "examples"


def test_module_and_api_calls_are_told_apart_by_their_names():
    assert is_module_call("Module.blocks.0.attn.Attention.forward.0")
    assert is_module_call("Cell.blocks.1.Block.backward.3")
    assert not is_module_call("Functional.linear.0.forward")
    assert not is_module_call("Tensor.__mul__.12.backward")


def test_a_call_inside_a_recorded_module_re_dumps_the_innermost_module_at_mix_level():
    first = {"node": "Functional.linear.0.forward", "path_source": "construct.json",
             "path": ["Module.blocks.0.Block.forward.0", "Module.blocks.0.attn.qkv.Linear.forward.0",
                      "Functional.linear.0.forward"]}
    assert region(first) == ("mix", ["Module.blocks.0.attn.qkv.Linear.", "Functional.linear.0."])


def test_a_module_row_re_dumps_that_module_and_an_api_dump_its_call_with_forward_and_backward():
    # list entries end at the module's class or the call's number, with a dot: substrings of exactly its rows
    assert region({"node": "Cell.blocks.1.attn.Attention.forward.0"}) == ("mix", ["Cell.blocks.1.attn.Attention."])
    # stack.json frames are calling code, not modules: the call itself is listed
    first = {"node": "Tensor.__mul__.1.forward", "path_source": "stack.json",
             "path": ["forward (common.py:55)", "Tensor.__mul__.1.forward"]}
    assert region(first) == ("L1", ["Tensor.__mul__.1."])


def test_step_and_rank_come_from_the_dump_directories_and_a_single_card_run_names_no_rank(tmp_path):
    dump = tmp_path / "step3" / "rank5" / "dump.json"
    assert step_and_rank(dump) == ([3], [5])
    assert step_and_rank(tmp_path / "x" / "rank" / "dump.json") == ([], [])
    first = {"node": "Functional.linear.0.forward"}
    assert next_dump_config(first, dump)["rank"] == []
    config = next_dump_config(first, dump, ranks=2)
    assert config["rank"] == [5] and config["step"] == [3]
    assert config["task"] == "tensor" and config["tensor"]["data_mode"] == ["all"]


def test_a_compare_writes_the_config_names_it_and_the_json_summary_gives_its_path(tmp_path, run_cli):
    out = tmp_path / "out"
    summary = tmp_path / "s.json"
    r = run_cli("compare", "-tp", str(EXAMPLES / "pytorch_tensor/target/step0"),
                 "-gp", str(EXAMPLES / "pytorch_tensor/golden/step0"), "-o", str(out), "--json-summary", str(summary))
    assert r.returncode == 0, r.stderr
    data = json.loads(summary.read_text())
    path = Path(data["next_dump_config"])
    assert path.parent == out.resolve() and path.name.startswith("next_dump_config_")
    assert str(path) in data["files"]
    config = json.loads(path.read_text())
    assert config["task"] == "tensor" and config["level"] == "L1"
    assert config["tensor"]["list"] == ["Tensor.__mul__.1."]  # the example's first divergence
    assert f"next dump: {path}" in r.stdout
    assert f'PrecisionDebugger(config_path="{path}")' in r.stdout


def test_a_run_with_no_divergence_writes_no_config(tmp_path, run_cli):
    out = tmp_path / "out"
    side = EXAMPLES / "pytorch_tensor/golden/step0"
    r = run_cli("compare", "-tp", str(side), "-gp", str(side), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert not list(out.glob("next_dump_config_*")) and "next dump" not in r.stdout


# --- with msprobe's real dumper ---------------------------------------------------------------------------------

def dumper_python() -> str | None:
    """A Python with torch and mindstudio-probe: ``$MSPROBE_DUMPER_PYTHON``, else the throwaway venv that
    ``tests/dumper_corpus/make_venv.sh 26.2.0`` makes."""
    for candidate in (os.environ.get("MSPROBE_DUMPER_PYTHON"), "/work/venvs/msp-26.2.0/bin/python"):
        if candidate and Path(candidate).exists():
            ok = subprocess.run([candidate, "-c", "import torch, msprobe.pytorch"], capture_output=True)
            if ok.returncode == 0:
                return candidate
    return None


DUMPER = dumper_python()
needs_dumper = pytest.mark.skipif(
    DUMPER is None, reason="msprobe's real dumper is not installed (set MSPROBE_DUMPER_PYTHON to a Python with torch "
                           "and mindstudio-probe, or run tests/dumper_corpus/make_venv.sh 26.2.0)")


def dump(workdir: Path, config: dict, variant: str) -> Path:
    """Run the tiny training step under msprobe's dumper in ``workdir``; the ``dump.json`` it wrote."""
    workdir.mkdir(parents=True, exist_ok=True)
    cfg = workdir / "config.json"
    cfg.write_text(json.dumps(config))
    r = subprocess.run([DUMPER, str(MODEL), str(cfg), variant], cwd=workdir, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    found = sorted(Path(workdir, config["dump_path"]).rglob("dump.json"))
    assert len(found) == 1, found
    return found[0]


def statistics_config(level: str) -> dict:
    return {"task": "statistics", "dump_path": "dump", "rank": [], "step": [], "level": level,
            "async_dump": False, "statistics": {"scope": [], "list": [], "data_mode": ["all"],
                                                "summary_mode": "statistics"}}


@needs_dumper
@pytest.mark.parametrize("level", ["mix", "L1"])
def test_the_real_dumper_loads_the_config_and_its_dump_holds_the_divergent_calls_tensors(tmp_path, run_cli, level):
    golden = dump(tmp_path / "golden", statistics_config(level), "clean")
    target = dump(tmp_path / "target", statistics_config(level), "fault")
    summary = tmp_path / "s.json"
    r = run_cli("compare", "-tp", str(target), "-gp", str(golden), "-o", str(tmp_path / "out"),
                 "--json-summary", str(summary))
    assert r.returncode == 0, r.stderr
    data = json.loads(summary.read_text())
    first = data["first_divergence"]
    assert first, r.stdout
    config_file = Path(data["next_dump_config"])
    config = json.loads(config_file.read_text())
    assert config["level"] == level

    rerun = tmp_path / "rerun"
    rerun.mkdir()
    shutil.copy(config_file, rerun / "next.json")
    r2 = subprocess.run([DUMPER, str(MODEL), "next.json", "fault"], cwd=rerun, capture_output=True, text=True)
    assert r2.returncode == 0, r2.stdout[-3000:] + r2.stderr[-3000:]
    dumps = sorted((rerun / config["dump_path"]).rglob("dump.json"))
    assert len(dumps) == 1, dumps
    entries = json.loads(dumps[0].read_text())["data"]
    assert first["node"] in entries, sorted(entries)
    assert len(entries) < len(json.loads(target.read_text())["data"])  # narrower than the whole run
    tensors = {p.name for p in dumps[0].parent.joinpath("dump_tensor_data").iterdir()}
    assert any(name.startswith(first["node"] + ".") for name in tensors), sorted(tensors)
    # and the narrower dump compares against the same region of the golden run's re-dump
    if sys.platform.startswith("linux"):
        golden_rerun = tmp_path / "golden_rerun"
        golden_rerun.mkdir()
        shutil.copy(config_file, golden_rerun / "next.json")
        r3 = subprocess.run([DUMPER, str(MODEL), "next.json", "clean"], cwd=golden_rerun, capture_output=True,
                            text=True)
        assert r3.returncode == 0, r3.stderr[-3000:]
        golden_dump = sorted((golden_rerun / config["dump_path"]).rglob("dump.json"))[0]
        summary2 = tmp_path / "s2.json"
        r4 = run_cli("compare", "-tp", str(dumps[0]), "-gp", str(golden_dump), "-o", str(tmp_path / "out2"),
                      "--json-summary", str(summary2))
        assert r4.returncode == 0, r4.stderr
        assert json.loads(summary2.read_text())["modes"] == ["tensor"]
        assert json.loads(summary2.read_text())["first_divergence"]["node"] == first["node"]
