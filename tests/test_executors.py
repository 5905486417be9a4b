"""Executors: the local pool and the Dask plugin give byte-identical results to a single process.

The Dask tests start a real ``dask.distributed.LocalCluster`` with two worker
processes on the loopback interface.
"""

from __future__ import annotations

import io
import re
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from msprobe_core.cli.main import main
from msprobe_core.default_plugins.local_executor import LocalExecutor, LocalRef
from msprobe_core.default_plugins.progress.display import Progress
from msprobe_core.default_plugins.tensor_metrics.stage import TensorTask, plan_chunks
from msprobe_core.host.registry import get_host
from msprobe_core.workers.executors import executor_name

from .conftest import corpus_mark

TIMESTAMP = re.compile(r"_\d{14}")


def _outputs(directory: Path) -> dict[str, bytes]:
    return {TIMESTAMP.sub("", p.name): p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def _compare(target: Path, golden: Path, out: Path, *extra: str) -> dict[str, bytes]:
    rc = main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out), "-q", *extra])
    assert rc == 0
    files = _outputs(out)
    assert files
    return files


@pytest.fixture(scope="module")
def dask_cluster():
    """A real local Dask cluster: two single-threaded worker processes, loopback only."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1", dashboard_address="127.0.0.1:0"
    )
    client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@pytest.fixture()
def pool_always(monkeypatch):
    """Make the local executor use its process pool even for the small corpus tensors."""
    monkeypatch.setattr(LocalExecutor, "inline_bytes", 0)


def _multi_rank_tensor(tmp_path: Path, corpora: Path, ranks: int = 3) -> tuple[Path, Path]:
    """A step dir pair of ``ranks`` ranks, each a copy of c02's rank0 (tensor mode)."""
    case = corpora / "pytorch" / "c02"
    target, golden = tmp_path / "t" / "step0", tmp_path / "g" / "step0"
    for r in range(ranks):
        shutil.copytree(case / "target" / "step0" / "rank0", target / f"rank{r}")
        shutil.copytree(case / "golden" / "step0" / "rank0", golden / f"rank{r}")
    return target, golden


@pytest.mark.parametrize("case", ["c02", "c09a"])
def test_local_pool_and_dask_match_single_process(corpora, tmp_path, pool_always, dask_cluster, case):
    root = corpora / "pytorch" / case
    target, golden = root / "target" / "step0", root / "golden" / "step0"
    single = _compare(target, golden, tmp_path / "single", "--workers", "1")
    local = _compare(target, golden, tmp_path / "local", "--executor", "local", "--workers", "2")
    address = dask_cluster.scheduler.address
    dask = _compare(target, golden, tmp_path / "dask", "--executor", "dask", "--scheduler", address)
    assert sorted(single) == sorted(local) == sorted(dask)
    for name in single:
        assert local[name] == single[name], f"{case}/{name}: local pool differs from one process"
        assert dask[name] == single[name], f"{case}/{name}: dask differs from one process"


@corpus_mark("pytorch/c02")  # _multi_rank_tensor copies its rank
def test_dask_spreads_rank_pairs_and_tensor_chunks(corpora, tmp_path, dask_cluster):
    from distributed import get_task_stream

    target, golden = _multi_rank_tensor(tmp_path, corpora)
    single = _compare(target, golden, tmp_path / "single", "--workers", "1")
    with get_task_stream(dask_cluster) as stream:
        dask = _compare(
            target, golden, tmp_path / "dask", "--executor", "dask", "--scheduler", dask_cluster.scheduler.address
        )
    assert dask == single
    keys = [str(t["key"]) for t in stream.data]
    assert sum(k.startswith("run_job_task") for k in keys) == 3
    assert any(k.startswith("_run_chunk") for k in keys), "tensor chunks did not go to the cluster"


@corpus_mark("pytorch/c02")
def test_multi_rank_tensor_local_pool(corpora, tmp_path, pool_always):
    target, golden = _multi_rank_tensor(tmp_path, corpora)
    single = _compare(target, golden, tmp_path / "single", "--workers", "1")
    local = _compare(target, golden, tmp_path / "local", "--workers", "2")
    assert local == single


@pytest.mark.exercises_hooks("msprobe_register_executors")
def test_dask_local_cluster_without_scheduler(corpora, tmp_path):
    root = corpora / "pytorch" / "c09a"
    target, golden = root / "target" / "step0", root / "golden" / "step0"
    single = _compare(target, golden, tmp_path / "single", "--workers", "1")
    dask = _compare(target, golden, tmp_path / "dask", "--executor", "dask", "--workers", "2")
    assert dask == single


def test_unknown_executor_is_a_usage_error(corpora, tmp_path, capsys):
    root = corpora / "pytorch" / "c01"
    rc = main(["compare", "-tp", str(root / "target/step0"), "-gp", str(root / "golden/step0"),
               "-o", str(tmp_path), "--executor", "nope"])
    assert rc == 2
    assert "unknown executor 'nope'" in capsys.readouterr().err


def test_scheduler_implies_dask():
    host = get_host()
    assert executor_name(host.compare_options(), host) == "local"
    assert executor_name(host.compare_options(scheduler="tcp://127.0.0.1:8786"), host) == "dask"
    assert executor_name(host.compare_options(executor="local", scheduler="x"), host) == "local"


# --------------------------------------------------------------------------- executor contract
def _square(x: int) -> int:
    return x * x


def test_local_executor_yields_every_index():
    with LocalExecutor(2) as ex:
        got = dict(ex.map_unordered(_square, list(range(23))))
    assert got == {i: i * i for i in range(23)}
    assert dict(LocalExecutor(1).map_unordered(_square, [3, 4])) == {0: 9, 1: 16}


def test_local_executor_bounds_items_in_flight(monkeypatch):
    """Never more than ``in_flight`` items submitted and not yet handed to the caller."""
    lock = threading.Lock()
    state = {"submitted": 0, "consumed": 0, "peak": 0}
    threads = ThreadPoolExecutor(4)
    real_submit = threads.submit

    def submit(fn, *args):
        with lock:
            state["submitted"] += 1
            state["peak"] = max(state["peak"], state["submitted"] - state["consumed"])
        return real_submit(fn, *args)

    monkeypatch.setattr(threads, "submit", submit)
    ex = LocalExecutor(4)
    monkeypatch.setattr(ex, "_get_pool", lambda: threads)
    for _ in ex.map_unordered(_square, list(range(50)), in_flight=3):
        with lock:
            state["consumed"] += 1
    threads.shutdown()
    assert state["submitted"] == 50
    assert state["peak"] <= 3


def test_local_ref_shares_cores():
    assert LocalExecutor(8).for_task(2) == LocalRef(4)
    assert LocalExecutor(2).for_task(8) == LocalRef(1)
    assert LocalRef(3).open().parallelism() == 3


def test_plan_chunks_covers_every_pair_largest_first():
    sizes = [5, 300, 7, 10_000_000, 1, 64_000_000, 3] * 20
    tasks = [TensorTask(k, "a", "b", "pytorch", "pytorch") for k in range(len(sizes))]
    chunks = plan_chunks(tasks, sizes, parallelism=2)
    flat = [k for c in chunks for k in c]
    assert sorted(flat) == list(range(len(sizes)))
    assert sizes[chunks[0][0]] == max(sizes)
    firsts = [sizes[c[0]] for c in chunks]
    assert firsts == sorted(firsts, reverse=True)


# --------------------------------------------------------------------------- progress
class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def terminal_env(monkeypatch):
    """An interactive terminal's environment: CI runners set ``CI`` or ``TERM=dumb``, which turn bars off."""
    for name in ("CI", "MSPROBE_NO_PROGRESS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm")


def test_progress_draws_rows_rate_and_eta(terminal_env):
    stream = _Tty()
    with Progress(10, total_bytes=1000, stream=stream, delay=0, interval=0, unit="rows") as bar:
        bar.advance(3, 300)
    text = stream.getvalue()
    assert "3/10 rows" in text and "GB/s" in text and "ETA" in text
    assert text.endswith("\r\x1b[K")  # erased at the end


def test_progress_off_when_not_a_tty_or_quiet(monkeypatch):
    monkeypatch.delenv("MSPROBE_NO_PROGRESS", raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert not Progress(5, stream=io.StringIO()).enabled
    assert not Progress(5, stream=_Tty(), quiet=True).enabled
    assert Progress(5, stream=_Tty()).enabled
    monkeypatch.setenv("CI", "true")  # a CI log, even behind a pseudo-terminal
    assert not Progress(5, stream=_Tty()).enabled


def test_progress_only_outermost_draws(terminal_env):
    outer_stream, inner_stream = _Tty(), _Tty()
    with Progress(2, stream=outer_stream, delay=0, interval=0) as outer:
        with Progress(5, stream=inner_stream, delay=0, interval=0) as inner:
            inner.advance(1)
        outer.advance(1)
    assert inner_stream.getvalue() == ""
    assert "1/2" in outer_stream.getvalue()


# --------------------------------------------------------------------------- streaming
def test_prefault_reads_mapped_arrays_in_place(tmp_path):
    import mmap

    import numpy as np

    from msprobe_core.default_plugins.tensor_metrics.stage import _prefault

    data = np.arange(300_000, dtype=np.float32)
    path = tmp_path / "raw.bin"
    path.write_bytes(data.tobytes())
    with open(path, "rb") as fh:
        mapped = np.frombuffer(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY), dtype=np.float32)
    assert _prefault(mapped) is mapped
    assert np.array_equal(mapped, data)
    assert _prefault(data) is data


def test_run_tasks_same_cells_inline_pool_and_per_pair(tmp_path, pool_always):
    """Big (memory-mapped) and small tensors: same cells whatever the executor, in row order."""
    import numpy as np

    pt_writer = pytest.importorskip("msprobe_pytorch.pt_writer")
    from msprobe_core.default_plugins.tensor_metrics.stage import compute_pair, run_tasks

    rng = np.random.default_rng(0)
    tasks = []
    for k, n in enumerate([5_000_000, 7, 1, 40_000, 5_000_000, 3]):  # 20 MB pairs take the reader's mmap path
        g = rng.standard_normal(n).astype(np.float32)
        t = g * np.float32(1.001)
        pt_writer.write_pt(tmp_path / f"t{k}.pt", t, dtype="bfloat16" if k % 2 else None)
        pt_writer.write_pt(tmp_path / f"g{k}.pt", g)
        tasks.append(TensorTask(k, str(tmp_path / f"t{k}.pt"), str(tmp_path / f"g{k}.pt"), "pytorch", "pytorch"))
    tasks.append(TensorTask(len(tasks), str(tmp_path / "missing.pt"), str(tmp_path / "g0.pt"), "pytorch", "pytorch"))
    single = run_tasks(tasks)
    with LocalExecutor(2) as ex:
        pooled = run_tasks(tasks, executor=ex)
    assert pooled == single
    assert single == {t.row: compute_pair(t)[1:] for t in tasks}
    assert single[len(tasks) - 1][1]  # the missing file: a warning, unsupported cells
