"""``msprobe_core.plugin.run_compare``, the supported entry for a plugin's own front end (msprobe-classic's).

On a real dump pair of the corpus:

* as ``msprobe compare`` runs them and ``stages_only`` (each job's stages alone) give the same result, byte for byte;
* ``stages_only`` tells the front end once both tables are read (``on_loaded``), and names its result by the
  second it is written in, where the whole run moves on past the names of an earlier run's files;
* a pair with nothing to compare (a target without rows) writes nothing and says so, in both ways;
* the job's error reaches the caller (``stages_only``) or fails the run (the default).
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from msprobe_core.plugin import CompareJob, CompareOptions, DumpTable, InputError, OutputError, PluginHost, run_compare

from .conftest import corpora_dir, corpus_mark

CASE = "pytorch/c04a"
pytestmark = corpus_mark(CASE)


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost()


def _pair(tmp_path: Path, empty_target: bool = False) -> tuple[Path, Path]:
    """The case's target and golden dump.json, copied (the target's ``data`` emptied when asked)."""
    case = corpora_dir() / CASE
    out = []
    for side in ("target", "golden"):
        src = case / side / "step0" / "rank0"
        dst = tmp_path / side
        shutil.copytree(src, dst)
        if side == "target" and empty_target:
            doc = json.loads((dst / "dump.json").read_text(encoding="utf-8"))
            doc["data"] = {}
            (dst / "dump.json").write_text(json.dumps(doc), encoding="utf-8")
        out.append(dst / "dump.json")
    return out[0], out[1]


def _job(target: Path, golden: Path, out: Path) -> CompareJob:
    out.mkdir(parents=True, exist_ok=True)
    return CompareJob(target, golden, out, "compare_result", label="rank0")


def _options(out: Path) -> CompareOptions:
    return CompareOptions(output_dir=out, output_format="csv")


def test_both_ways_give_the_same_result(tmp_path, host):
    target, golden = _pair(tmp_path)
    seen: list[tuple[int, int]] = []

    def loaded(t: DumpTable, g: DumpTable) -> None:
        seen.append((len(t), len(g)))

    (whole,) = run_compare([_job(target, golden, tmp_path / "run")], _options(tmp_path / "run"), host)
    (alone,) = run_compare([_job(target, golden, tmp_path / "alone")], _options(tmp_path / "alone"), host,
                           stages_only=True, on_loaded=loaded)
    assert whole.error is None and alone.error is None
    assert whole.files and alone.files and whole.files[0].parent == tmp_path / "run"
    assert whole.files[0].read_bytes() == alone.files[0].read_bytes()
    assert alone.table is not None and len(list(alone.table.rows())) > 10
    assert len(seen) == 1 and min(seen[0]) > 10  # once, with both tables read


def test_stages_only_names_the_result_by_its_second(tmp_path, host, monkeypatch):
    """In one second: the run moves on to the next free name; a stages-only job keeps the second's, and is refused."""
    target, golden = _pair(tmp_path)
    out = tmp_path / "out"
    import msprobe_core.files.outputs as outputs

    monkeypatch.setattr(outputs.time, "time", lambda: 1_800_000_000.0)  # one second for every stamp of the test
    (first,) = run_compare([_job(target, golden, out)], _options(out), host, stages_only=True)
    (run,) = run_compare([_job(target, golden, out)], _options(out), host)
    assert run.files[0].name != first.files[0].name and first.files[0].is_file()
    before = first.files[0].read_bytes()
    with pytest.raises(OutputError, match="already exists"):
        run_compare([_job(target, golden, out)], _options(out), host, stages_only=True)
    assert first.files[0].read_bytes() == before


def test_nothing_to_compare_writes_nothing_and_says_so(tmp_path, host, caplog):
    target, golden = _pair(tmp_path, empty_target=True)
    for stages_only in (False, True):
        out = tmp_path / f"out{stages_only}"
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="msprobe"):
            (done,) = run_compare([_job(target, golden, out)], _options(out), host, stages_only=stages_only)
        assert done.files == [] and done.table is None and not list(out.glob("*.csv"))
        assert "No compare result file generated." in caplog.text


def test_a_broken_dump_reaches_the_front_end(tmp_path, host):
    target, golden = _pair(tmp_path)
    golden.write_text("{ not json", encoding="utf-8")
    with pytest.raises(InputError):
        run_compare([_job(target, golden, tmp_path / "o")], _options(tmp_path / "o"), host, stages_only=True)
    with pytest.raises(InputError):
        run_compare([_job(target, golden, tmp_path / "p")], _options(tmp_path / "p"), host)
