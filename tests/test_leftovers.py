"""The sweep of killed runs' leftovers removes only what msprobe provably made (issue 21, item 1).

Every compare sweeps its output directory (the default plugin ``sweep``), which is the user's: a file or folder
whose name merely looks like a temporary file of ours (``.thesis.tex.part``, ``.msprobe-notes.chunks/``) must
survive. Turned off (``-p no:sweep``), a compare works and leaves every leftover where it is.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from msprobe_core.default_plugins.chunked import sidedir
from msprobe_core.default_plugins.chunked.sidedir import make_side_dir
from msprobe_core.default_plugins.sweep import sweep_stale
from msprobe_core.files.leftovers import part_name, run_lock_name

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "pytorch_stats"
HOUR_AGO = time.time() - 3600


def _age(*paths: Path) -> None:
    for p in paths:
        os.utime(p, (HOUR_AGO, HOUR_AGO), follow_symlinks=False)


def _users_files(out: Path) -> dict[Path, bytes]:
    """Files a user may keep in an output directory, named like our temporary files but not ours."""
    files = {
        out / ".thesis.tex.part": b"\\chapter{One}",
        out / ".msprobe-notes.chunks" / "important.txt": b"notes",
        out / ".msprobe-run-backup.lock": b"",
        out / ".msprobe-run-20200101000000.lock.bak": b"",
        out / ".msprobe-run-20200101000003.lock": b"not empty: a lock of ours is",  # our name, not our content
        out / ".compare_result_x.csv.0123456789ab.part": b"an older shape: cannot be proven ours",
        out / ".msprobe-abcd1234.chunks" / "round-0-part-0.csv": b"our shape, but no marker",
        out / ".msprobe-write-test.abcd1234.part": b"not empty",
        out / "keep.part": b"not hidden",
    }
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    target = out / "precious.txt"
    target.write_bytes(b"precious")
    files[target] = b"precious"
    link = out / ".y.csv.msprobe-0123456789ab.part"  # our name, but a link: never followed, never removed
    link.symlink_to(target)
    _age(*files, link, out / ".msprobe-notes.chunks", out / ".msprobe-abcd1234.chunks")
    return files


def _compare(out: Path, *before: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "msprobe_core", *before, "compare", "-tp", str(EXAMPLE / "target" / "step0"),
         "-gp", str(EXAMPLE / "golden" / "step0"), "-o", str(out)],
        capture_output=True, text=True, timeout=600)


def test_a_compare_leaves_the_users_look_alike_files_alone(tmp_path: Path) -> None:
    """A real `msprobe compare -o DIR` into a directory holding a user's files shaped like ours: all survive."""
    out = tmp_path / "out"
    out.mkdir()
    files = _users_files(out)
    proc = _compare(out)
    assert proc.returncode == 0, proc.stderr
    for path, data in files.items():
        assert path.read_bytes() == data, path
    assert (out / ".y.csv.msprobe-0123456789ab.part").is_symlink()
    assert "Removed" not in proc.stdout + proc.stderr


@pytest.mark.exercises_hooks("msprobe_output_dirs_ready")
def test_a_compare_removes_what_killed_runs_left_and_says_so(tmp_path: Path) -> None:
    """What this program makes (by its own functions) and a killed run left is swept by the next run, each
    removal logged; a marked side directory holding a user's file keeps that file."""
    out = tmp_path / "out"
    out.mkdir()
    part = part_name(out / "compare_result_rank0_20200101000000.csv")
    part.write_text("half a result")
    lock = run_lock_name(out, "20200101000000")
    lock.touch()
    side, fd = make_side_dir(out)
    os.close(fd)  # the run that held it is gone
    (side / "round-0-part-0.csv").write_text("rows")
    (side / "round-1-part-3.csv").write_text("rows")
    shared, fd = make_side_dir(out)
    os.close(fd)
    (shared / "round-0-part-0.csv").write_text("rows")
    (shared / "mine.txt").write_text("a user put this here")
    _age(part, lock, side, shared)
    proc = _compare(out)
    assert proc.returncode == 0, proc.stderr
    assert not part.exists() and not lock.exists() and not side.exists()
    for gone in (part, lock, side):
        assert f"Removed {gone}," in proc.stdout + proc.stderr, proc.stdout  # the log goes to stdout
    assert (shared / "mine.txt").read_text() == "a user put this here"
    assert not (shared / "round-0-part-0.csv").exists()
    assert f"Left {shared} in place" in proc.stdout + proc.stderr


def test_with_the_sweep_turned_off_a_compare_works_and_leaves_the_leftovers(tmp_path: Path) -> None:
    """``-p no:sweep``: the compare writes its table and removes nothing a killed run left, nor logs a removal."""
    out = tmp_path / "out"
    out.mkdir()
    part = part_name(out / "compare_result_rank0_20200101000000.csv")
    part.write_text("half a result")
    lock = run_lock_name(out, "20200101000000")
    lock.touch()
    side, fd = make_side_dir(out)
    os.close(fd)
    (side / "round-0-part-0.csv").write_text("rows")
    _age(part, lock, side)
    proc = _compare(out, "-p", "no:sweep")
    assert proc.returncode == 0, proc.stderr
    assert len(list(out.glob("compare_result_*.csv"))) == 1
    assert part.read_text() == "half a result" and lock.exists() and (side / "round-0-part-0.csv").exists()
    assert "Removed" not in proc.stdout + proc.stderr
    assert sorted(sweep_stale(out)) == sorted([part, lock, side])  # they were leftovers: the sweep takes them


def test_the_shapes_the_writers_make_are_the_shapes_the_sweep_takes(tmp_path: Path) -> None:
    """The producers and the sweep agree: every name our writers generate is recognised (none drift apart)."""
    for name in ("compare_result_20200101000000.csv", "x" * 200 + ".xlsx", "报告.html", "a b.yaml"):
        p = part_name(tmp_path / name)
        p.write_text("x")
        _age(p)
        assert sweep_stale(tmp_path, older_than=60) == [p]
    lock = run_lock_name(tmp_path, "20991231235959")
    lock.touch()
    _age(lock)
    assert sweep_stale(tmp_path) == [lock]
    side, fd = make_side_dir(tmp_path)
    os.close(fd)
    _age(side)
    assert sweep_stale(tmp_path) == [side]
    assert list(tmp_path.iterdir()) == []


def test_live_and_recent_leftovers_stay(tmp_path: Path) -> None:
    """A side directory its run still holds, and files changed within the minute, are not leftovers."""
    side, fd = make_side_dir(tmp_path)
    _age(side)
    recent = part_name(tmp_path / "r.csv")
    recent.write_text("x")
    try:
        if fd < 0:
            pytest.skip("no advisory locks on this file system")
        assert sweep_stale(tmp_path) == []
    finally:
        os.close(fd)
    assert sweep_stale(tmp_path) == [side]
    assert recent.exists()


def test_a_marker_that_is_not_ours_does_not_make_a_directory_ours(tmp_path: Path) -> None:
    """A side-directory-shaped folder whose marker is a link, or says something else, is left alone."""
    for i, make in enumerate((lambda m: m.symlink_to(tmp_path / "elsewhere"), lambda m: m.write_text("mine\n"))):
        d = tmp_path / f".msprobe-abcdef{i}{i}.chunks"
        d.mkdir()
        make(d / sidedir.SIDE_MARKER)
        (d / "round-0-part-0.csv").write_text("rows")
        _age(d)
    (tmp_path / "elsewhere").write_text(sidedir.SIDE_MARKER_TEXT)
    assert sweep_stale(tmp_path) == []
    assert len(list(tmp_path.glob(".msprobe-*.chunks/round-0-part-0.csv"))) == 2


def test_a_plugin_tidying_the_output_directories_that_fails_is_named_and_the_run_goes_on(tmp_path: Path) -> None:
    """An installed plugin's ``msprobe_output_dirs_ready`` that raises is a warning naming it; the sweep still
    removes what a killed run left, and the result is written."""
    (tmp_path / "bad_tidy.py").write_text(
        "from msprobe_core.plugin import hookimpl\n\n\n"
        "@hookimpl\ndef msprobe_output_dirs_ready(directories):\n    raise RuntimeError('cannot tidy')\n",
        encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    part = part_name(out / "compare_result_rank0_20200101000000.csv")
    part.write_text("half a result")
    _age(part)
    env = {**os.environ, "MSPROBE_LOAD_PLUGINS": "bad_tidy",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-m", "msprobe_core", "compare", "-tp", str(EXAMPLE / "target" / "step0"),
         "-gp", str(EXAMPLE / "golden" / "step0"), "-o", str(out)], capture_output=True, text=True, env=env,
        timeout=600)
    assert proc.returncode == 0, proc.stderr
    said = proc.stdout + proc.stderr
    assert said.count("plugin 'bad_tidy': msprobe_output_dirs_ready failed: RuntimeError: cannot tidy") == 1, said
    assert not part.exists() and f"Removed {part}," in said
    assert len(list(out.glob("compare_result_*.csv"))) == 1


def test_merge_result_sweeps_its_output_directory(corpora: Path, tmp_path: Path) -> None:
    """``msprobe merge_result`` writes into an output directory too: what a killed run left there goes first."""
    import shutil

    from msprobe_core.cli.main import main

    ranked = tmp_path / "in"
    shutil.copytree(corpora / "pytorch" / "c09a" / "oracle" / "compare_xlsx", ranked)
    (tmp_path / "config.yaml").write_text("api: [Distributed.all_reduce]\n", encoding="utf-8")
    out = tmp_path / "merged"
    out.mkdir()
    part = part_name(out / "multi_ranks_compare_merge_20200101000000.xlsx")
    part.write_text("half a merge")
    _age(part)
    assert main(["merge_result", "-i", str(ranked), "-o", str(out), "-config", str(tmp_path / "config.yaml"),
                 "-q"]) == 0
    assert not part.exists()
    assert len(list(out.glob("multi_ranks_compare_merge_*.xlsx"))) == 1
