"""``msprobe compare --scheduler`` against a real Dask cluster whose scheduler and worker run in another directory.

The workers' working directory is not the user's: every path of the run (relative dump paths, a relative
``-o``) is made absolute on the client before work is shipped (msprobe_core.run.shipping), so the ranks
compare and the results land in the user's output directory, as on a shared file system they should.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.waiting import BOUND, wait_until

pytest.importorskip("distributed")

#: rank k of the dumps is a copy of rank0 of CASES[k]
CASES = ["c01", "c05"]


def _dask(*args: str) -> list[str]:
    """The ``dask`` command of this python's environment."""
    return [str(Path(sys.executable).with_name("dask")), *args]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A ``dask scheduler`` and a ``dask worker`` (two threads) started in a directory of their own; the
    scheduler's address."""
    if not Path(_dask()[0]).is_file():
        pytest.skip("the dask command is not installed next to this python")
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    info = elsewhere / "scheduler.json"
    logs = [open(elsewhere / name, "w") for name in ("scheduler.log", "worker.log")]  # noqa: SIM115
    procs = [subprocess.Popen(_dask("scheduler", "--scheduler-file", str(info), "--host", "127.0.0.1",
                                    "--port", "0", "--no-dashboard"),
                              cwd=elsewhere, stdout=logs[0], stderr=subprocess.STDOUT)]
    try:
        found: list[str] = []

        def address_written() -> bool:  # the scheduler writes its address once it listens
            try:
                found.append(json.loads(info.read_text())["address"])
            except (OSError, ValueError, KeyError):
                return procs[0].poll() is not None
            return True

        assert wait_until(address_written, poll=0.05) and found, (elsewhere / "scheduler.log").read_text()
        address = found[0]
        procs.append(subprocess.Popen(_dask("worker", "--scheduler-file", str(info), "--nthreads", "2",
                                            "--nworkers", "1", "--host", "127.0.0.1", "--no-dashboard",
                                            "--local-directory", str(elsewhere / "space")),
                                      cwd=elsewhere, stdout=logs[1], stderr=subprocess.STDOUT))
        from distributed import Client

        with Client(address, timeout=f"{BOUND:.0f}s") as client:
            client.wait_for_workers(1, timeout=BOUND)
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in reversed(procs):
            try:
                proc.wait(timeout=600)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for log in logs:
            log.close()
        assert not (elsewhere / "OUT").exists(), "a result landed in the workers' directory"


@pytest.fixture
def dumps(corpora: Path, tmp_path: Path) -> Path:
    """``target/step0`` and ``golden/step0`` of two ranks under one folder (the user's working directory)."""
    for side in ("target", "golden"):
        for r, case in enumerate(CASES):
            shutil.copytree(corpora / "pytorch" / case / side / "step0" / "rank0", tmp_path / side / "step0" / f"rank{r}")
    return tmp_path


def _results(out: Path) -> dict[str, bytes]:
    return {re.sub(r"_\d{14}", "", p.name): p.read_bytes() for p in sorted(out.iterdir()) if p.suffix == ".csv"}


@pytest.mark.parametrize("inputs", ["relative", "absolute"])
def test_relative_paths_on_a_real_cluster(cluster: str, dumps: Path, inputs: str) -> None:
    """Run from the dumps' folder with a relative ``-o`` (and relative or absolute dumps): every rank compares
    on the workers and the results land in the user's ``OUT``, the same files as a run without the cluster."""
    def side(name: str) -> str:
        return f"{name}/step0" if inputs == "relative" else str(dumps / name / "step0")

    command = [sys.executable, "-m", "msprobe_core", "compare", "-tp", side("target"), "-gp", side("golden")]
    here = subprocess.run([*command, "-o", "HERE", "--workers", "1"], cwd=dumps, capture_output=True, text=True,
                          timeout=600)
    assert here.returncode == 0, here.stderr
    run = subprocess.run([*command, "-o", "OUT", "--scheduler", cluster], cwd=dumps, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, (run.stdout, run.stderr)
    assert "does not exist" not in run.stdout + run.stderr
    results = _results(dumps / "OUT")
    assert sorted(results) == [f"compare_result_rank{r}.csv" for r in range(len(CASES))]
    assert results == _results(dumps / "HERE")
