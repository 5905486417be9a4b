"""A streamed compare's chunk worker: a forked child builds, writes and summarises the later chunks.

With the worker (:mod:`msprobe_core.default_plugins.chunked.chunkworker`) the result files must be byte for byte, the
summary key for key and the console line for line what one process gives; a worker that fails or is
killed must change nothing but the time; an interrupted run must leave neither result files nor side
files. The worker normally starts only above 100,000 rows: these tests lower that bar, and make chunks
(and CSV parts) so small that every boundary falls inside the worker's share.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

import msprobe_core.plugin as plugin_api
from msprobe_core.cli.main import main
from msprobe_core.default_plugins.chunked import chunking, chunkworker
from msprobe_core.default_plugins.fast_scan import scan as dumpscan
from msprobe_core.default_plugins.forking import children as forking
from msprobe_core.default_plugins.summary.accumulate import ViewAccumulator
from msprobe_core.files.removals import finish_removals
from msprobe_core.write import writers

from .conftest import corpora_dir, no_corpora_reason
from .waiting import BOUND, process_gone, wait_until

pytestmark = [
    pytest.mark.skipif(dumpscan.Scanner is None, reason="the C scanner is not built here"),
    pytest.mark.skipif(not hasattr(os, "fork") or forking.usable_cores() < 2, reason="needs fork and two cores"),
]

CORPORA = corpora_dir()
CASES = ["pytorch/c01", "pytorch/c05", "pytorch/c08", "mindspore/ms_l0_stat_bug_2steps", "mindspore/ms_mix_stat_gelu",
         "mindspore/x_l0_stat_cm_bug"]


def _pair(case: str) -> tuple[Path, Path]:
    root = CORPORA / case
    if not root.is_dir():
        pytest.skip(no_corpora_reason() if not CORPORA.is_dir() else f"{case} not in the corpora")
    return tuple(next(p for p in sorted((root / side).iterdir()) if p.is_dir()) for side in ("target", "golden"))


@pytest.fixture
def workers_started(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each streamed result's worker started (the bar lowered to every result)."""
    monkeypatch.setattr(chunkworker, "MIN_ROWS", 0)
    monkeypatch.delenv(chunkworker.ENV_NO_CHUNK_WORKER, raising=False)
    monkeypatch.setenv(forking.ENV_NO_FORK, "")
    started: list[bool] = []
    real = chunkworker.start_worker

    def recording(*args: Any, **kwargs: Any) -> Any:
        worker = real(*args, **kwargs)
        started.append(worker is not None)
        return worker

    monkeypatch.setattr(chunkworker, "start_worker", recording)
    return started


def _run_alone(target: Path, golden: Path, out: Path, capsys: pytest.CaptureFixture,
               monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, bytes], dict[str, Any], list[str]]:
    """:func:`_run` with the chunk worker switched off: what one process writes, the reference of a worker run."""
    monkeypatch.setenv(chunkworker.ENV_NO_CHUNK_WORKER, "1")
    try:
        return _run(target, golden, out, capsys)
    finally:
        monkeypatch.delenv(chunkworker.ENV_NO_CHUNK_WORKER)


def _run(target: Path, golden: Path, out: Path, capsys: pytest.CaptureFixture, *extra: str,
         rc: int = 0) -> tuple[dict[str, bytes], dict[str, Any], list[str]]:
    """The result files, the JSON summary (stamps and paths neutralised) and the console's lines of a run."""
    capsys.readouterr()
    code = main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out), "-q",
                 "--json-summary", str(out.parent / f"{out.name}.json"), *extra])
    console = capsys.readouterr()
    assert code == rc
    finish_removals()
    files = {re.sub(r"_\d{14}", "", str(p.relative_to(out))): p.read_bytes() for p in sorted(out.rglob("*"))
             if p.is_file()}
    assert not [p for p in out.rglob(".*")], "a temporary or side file was left behind"
    text = (out.parent / f"{out.name}.json").read_text().replace(str(out.resolve()), "OUT") if rc == 0 else "{}"
    said = re.sub(r"_\d{14}", "", console.out + console.err).replace(str(out.resolve()), "OUT")
    lines = [re.sub(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ", "", line) for line in said.splitlines()]  # when logged
    return files, json.loads(re.sub(r"_\d{14}", "", text)), lines


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize(("chunk", "round_rows"), [("1", 0), ("7", 0), ("3", 20)])
def test_the_worker_gives_what_one_process_gives(case: str, chunk: str, round_rows: int, tmp_path: Path,
                                                  workers_started: list[bool], capsys: pytest.CaptureFixture,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    target, golden = _pair(case)
    monkeypatch.setenv(chunking.ENV_CHUNK_ROWS, chunk)
    if round_rows:
        monkeypatch.setattr(chunkworker, "ROUND_ROWS", round_rows)  # many rounds
    monkeypatch.setattr(plugin_api, "CSV_MAX_ROWS", 11)  # first: the plugin API caches the value it finds
    monkeypatch.setattr(writers, "CSV_MAX_ROWS", 11)  # part files switch inside both shares
    monkeypatch.setenv(chunkworker.ENV_NO_CHUNK_WORKER, "1")
    alone = _run(target, golden, tmp_path / "alone", capsys)
    assert not workers_started
    monkeypatch.delenv(chunkworker.ENV_NO_CHUNK_WORKER)
    shared = _run(target, golden, tmp_path / "with_worker", capsys)
    assert workers_started and all(workers_started), "the worker did not start"
    assert shared[0] == alone[0]
    assert shared[1] == alone[1]
    assert shared[2] == alone[2]
    assert len(alone[0]) > 1, "the result was meant to span several part files"


def test_the_children_log_records_come_after_this_process_s_in_chunk_order(
        tmp_path: Path, workers_started: list[bool], capsys: pytest.CaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from msprobe_core.pipeline import build

    real = build.build_result

    def telling(target: Any, golden: Any, match: Any, *args: Any, **kwargs: Any) -> Any:
        logging.getLogger("msprobe").error("built rows from %s", target.name[match.target[0]])
        return real(target, golden, match, *args, **kwargs)

    monkeypatch.setattr(build, "build_result", telling)
    monkeypatch.setattr(plugin_api, "build_result", telling)  # where the chunked plugin takes it
    monkeypatch.setenv(chunking.ENV_CHUNK_ROWS, "3")
    target, golden = _pair("pytorch/c05")
    alone = _run_alone(target, golden, tmp_path / "alone", capsys, monkeypatch)
    shared = _run(target, golden, tmp_path / "with_worker", capsys)
    assert all(workers_started)
    built = [line for line in alone[2] if "built rows" in line]
    assert len(built) > 4 and shared[2] == alone[2]


@pytest.mark.parametrize("how", ["raises", "killed"])
@pytest.mark.parametrize("at_round", [1, 3])
def test_a_failed_worker_changes_nothing_but_the_time(how: str, at_round: int, tmp_path: Path,
                                                      workers_started: list[bool], capsys: pytest.CaptureFixture,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    target, golden = _pair("pytorch/c08")
    monkeypatch.setenv(chunking.ENV_CHUNK_ROWS, "2")
    monkeypatch.setattr(chunkworker, "ROUND_ROWS", 12)
    alone = _run_alone(target, golden, tmp_path / "alone", capsys, monkeypatch)
    real = chunkworker._build_share
    rounds = []

    def failing(*args: Any, **kwargs: Any) -> Any:  # runs in the child only
        rounds.append(1)
        if len(rounds) < at_round:
            return real(*args, **kwargs)
        if how == "killed":
            os.kill(os.getpid(), 9)
        raise MemoryError("the worker ran out of memory")

    monkeypatch.setattr(chunkworker, "_build_share", failing)
    shared = _run(target, golden, tmp_path / "with_worker", capsys)
    monkeypatch.setattr(chunkworker, "_build_share", real)
    assert all(workers_started) and workers_started
    assert shared == alone


class _Interrupt(ViewAccumulator):
    """Ctrl-C in this process after its second chunk (the worker runs meanwhile)."""

    fed = 0

    def feed_table(self, table: Any, start: int = 0) -> None:
        super().feed_table(table, start)
        if os.getpid() == _Interrupt.parent:
            _Interrupt.fed += 1
            if _Interrupt.fed == 2:
                raise KeyboardInterrupt

    parent = os.getpid()


def test_ctrl_c_while_the_worker_runs_leaves_no_result_and_no_side_file(
        tmp_path: Path, workers_started: list[bool], monkeypatch: pytest.MonkeyPatch) -> None:
    from msprobe_core import api
    from msprobe_core.pipeline.sink import KEEP_TABLES, SUMMARY_SINK

    target, golden = _pair("pytorch/c05")
    monkeypatch.setenv(chunking.ENV_CHUNK_ROWS, "1")
    monkeypatch.setattr(_Interrupt, "parent", os.getpid())
    monkeypatch.setattr(_Interrupt, "fed", 0)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        api.compare(target, golden, out, extra={SUMMARY_SINK: _Interrupt, KEEP_TABLES: False})
    finish_removals()
    assert workers_started == [True]
    assert not list(out.rglob("*")) if out.exists() else True
    assert not [p for p in tmp_path.rglob(".msprobe-*")]


def test_no_worker_for_xlsx_or_a_sink_without_a_continuation(tmp_path: Path, workers_started: list[bool],
                                                             capsys: pytest.CaptureFixture,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    target, golden = _pair("pytorch/c05")
    monkeypatch.setenv(chunking.ENV_CHUNK_ROWS, "2")
    _run(target, golden, tmp_path / "xlsx", capsys, "--xlsx")
    assert workers_started == []
    out = tmp_path / "html"
    _run(target, golden, out, capsys, "--report", "html")  # the report's sampling sink has no continuation
    assert workers_started == []
    shutil.rmtree(out)


def test_the_split_gives_each_process_whole_chunks() -> None:
    chunks = [(0, 3), (3, 10), (10, 11), (11, 20)]
    assert chunkworker.split_chunk(chunks) == 2  # the chunk holding row 10 of 20
    assert chunkworker.split_chunk([(0, 100), (100, 101)]) == 1  # at least one chunk each
    assert chunkworker.split_chunk([(0, 1), (1, 100)]) == 1
    assert chunkworker.split_chunk(chunks[2:]) == 1  # rows counted from the first chunk's


def test_rounds_cover_every_chunk_once_each_split_in_two() -> None:
    Round = chunkworker.Round
    chunks = [(k * 10, k * 10 + 10) for k in range(10)]
    assert chunkworker.plan_rounds(chunks, 40) == [Round(0, 2, 4), Round(4, 6, 8), Round(8, 9, 10)]
    assert chunkworker.plan_rounds(chunks, 1000) == [Round(0, 5, 10)]
    # a chunk bigger than a round still goes with a second one; a last lone chunk is built here
    assert chunkworker.plan_rounds([(0, 50), (50, 60), (60, 70)], 20) == [Round(0, 1, 2), Round(2, 3, 3)]


def test_side_files_never_hold_more_than_two_rounds(tmp_path: Path, workers_started: list[bool],
                                                    capsys: pytest.CaptureFixture,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker runs at most one round ahead: whatever the result's size, its side files hold about a round."""
    from msprobe_core.default_plugins.chunked.sidedir import SIDE_MARKER

    target, golden = _pair("pytorch/c05")
    monkeypatch.setenv(chunking.ENV_CHUNK_ROWS, "2")
    monkeypatch.setattr(chunkworker, "ROUND_ROWS", 10)
    held: list[int] = []
    real = chunkworker.ChunkWorker.taken

    def counting(self: Any, result: Any) -> None:
        import time

        time.sleep(0.05)  # the worker had time to run ahead, as far as it may
        held.append(len({p.name.split("-part-")[0] for p in self.side.iterdir() if p.name != SIDE_MARKER}))
        real(self, result)

    monkeypatch.setattr(chunkworker.ChunkWorker, "taken", counting)
    _run(target, golden, tmp_path / "out", capsys)
    assert all(workers_started) and len(held) > 5
    assert max(held) <= 2


# --- the real command, signalled while its worker runs ---------------------------------------------------------

def _worker_seen(proc: Any, out: Path) -> bool:
    """Wait until the run's chunk worker has made its side directory (``False``: the run ended first)."""
    wait_until(lambda: proc.poll() is not None or list(out.glob(".msprobe-*.chunks")), poll=0.002)
    return bool(list(out.glob(".msprobe-*.chunks")))


def _only_child(proc: Any) -> str:
    """The pid of the run's one child (its chunk worker) once it shows, "" if the run ended first."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    found: list[str] = []

    def seen() -> bool:
        found[:] = [children.read_text().strip() if children.exists() else ""]
        return bool(found[0]) or proc.poll() is not None

    wait_until(seen, poll=0)
    return found[0]


@pytest.fixture(scope="module")
def big_pair(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A pair of 40,000 APIs (120,000 result rows: above the worker's 100,000)."""
    from .test_hostile_inputs import _big_stats_pair

    return _big_stats_pair(tmp_path_factory.mktemp("big"), 40_000)


@pytest.mark.parametrize(("sig", "code"), [(2, 130), (15, 143)])
def test_a_signal_while_the_worker_runs_leaves_nothing(big_pair: list[str], tmp_path: Path, sig: int,
                                                       code: int) -> None:
    from .test_hostile_inputs import _spawn

    out = tmp_path / "out"
    proc = _spawn([*big_pair, "-o", str(out)], env={**os.environ, chunking.ENV_CHUNK_ROWS: "1000"})
    if not _worker_seen(proc, out):
        proc.kill()
        pytest.fail(f"no chunk worker started: {proc.communicate()}")
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert not (list(out.iterdir()) if out.is_dir() else []), "a result or side file was left"


def test_a_worker_killed_from_outside_changes_nothing_but_the_time(big_pair: list[str], tmp_path: Path) -> None:
    from .test_hostile_inputs import _spawn

    env = {**os.environ, chunking.ENV_CHUNK_ROWS: "1000"}
    alone = _spawn([*big_pair, "-o", str(tmp_path / "alone")], env={**env, chunkworker.ENV_NO_CHUNK_WORKER: "1"})
    assert alone.wait(timeout=600) == 0
    out = tmp_path / "killed"
    proc = _spawn([*big_pair, "-o", str(out)], env=env)
    assert _worker_seen(proc, out), proc.communicate()
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    for pid in children.read_text().split() if children.exists() else []:
        os.kill(int(pid), 9)  # the chunk worker (the target's indexing child has ended by now)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err

    def files(root: Path) -> dict[str, bytes]:
        return {re.sub(r"_\d{14}", "", p.name): p.read_bytes() for p in root.iterdir()}

    assert files(out) == files(tmp_path / "alone")


def test_a_run_killed_outright_leaves_its_side_files_to_a_later_runs_sweep(big_pair: list[str], tmp_path: Path) -> None:
    """SIGKILL cannot be handled: the side directory stays, locked while the run (or its worker) lives, and a
    later run's sweep removes it once nothing holds it."""
    from msprobe_core.default_plugins.sweep import sweep_stale

    from .test_hostile_inputs import _spawn

    out = tmp_path / "out"
    proc = _spawn([*big_pair, "-o", str(out)], env={**os.environ, chunking.ENV_CHUNK_ROWS: "1000"})
    assert _worker_seen(proc, out), proc.communicate()
    (side,) = out.glob(".msprobe-*.chunks")
    worker = _only_child(proc)
    assert worker and " " not in worker, worker
    assert side not in sweep_stale(out, older_than=0) and side.is_dir()  # in use: left alone
    proc.kill()
    proc.communicate()
    # the orphaned worker stops when it finds the run gone (however long its round takes on this machine)
    assert wait_until(lambda: process_gone(int(worker)), poll=0.05), f"the orphaned worker {worker} never ended"
    assert side in sweep_stale(out, older_than=0)  # nothing holds it now: the sweep removes it
    assert not side.exists()
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


# --- a wedged worker: stopped, or stuck in I/O -----------------------------------------------------------------

def test_a_worker_blocked_in_io_is_replaced_and_changes_nothing(tmp_path: Path, workers_started: list[bool],
                                                                capsys: pytest.CaptureFixture,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker blocks opening a real FIFO nobody writes to: after the stall limit this process kills it and
    builds its share; files, summary and console are those of one process."""
    import signal

    target, golden = _pair("pytorch/c08")
    monkeypatch.setenv(chunking.ENV_CHUNK_ROWS, "2")
    monkeypatch.setattr(chunkworker, "ROUND_ROWS", 12)
    alone = _run_alone(target, golden, tmp_path / "alone", capsys, monkeypatch)
    fifo = tmp_path / "never-written"
    os.mkfifo(fifo)
    real = chunkworker._build_share
    rounds: list[int] = []

    def blocking(*args: Any, **kwargs: Any) -> Any:  # runs in the child only
        rounds.append(1)
        if len(rounds) == 2:
            with open(fifo, "rb") as blocked:  # blocks until a writer comes: none ever does
                blocked.read()
        return real(*args, **kwargs)

    def hung(signum: int, frame: Any) -> None:  # not an OSError: the run must not take it for a failed read
        pytest.fail("the run waited for its wedged worker")

    monkeypatch.setattr(chunkworker, "_build_share", blocking)
    monkeypatch.setenv("MSPROBE_CHUNK_WORKER_STALL_S", "0.5")
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(int(BOUND))  # without the stall limit the run would wait forever: fail instead
    try:
        shared = _run(target, golden, tmp_path / "with_worker", capsys)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert workers_started == [True]
    assert shared == alone


def test_a_stopped_worker_is_replaced_after_the_stall_limit(big_pair: list[str], tmp_path: Path) -> None:
    """The real command's real worker gets SIGSTOP: after the stall limit (1 s here) the run kills it, builds its
    share itself and says so in one line; the files are those of a run without the worker."""
    import signal
    import subprocess

    from .test_hostile_inputs import _spawn

    env = {**os.environ, chunking.ENV_CHUNK_ROWS: "1000"}
    alone = _spawn([*big_pair, "-o", str(tmp_path / "alone")], env={**env, chunkworker.ENV_NO_CHUNK_WORKER: "1"})
    alone_out, _ = alone.communicate(timeout=600)
    assert alone.returncode == 0
    out = tmp_path / "stopped"
    proc = _spawn([*big_pair, "-o", str(out)], env={**env, "MSPROBE_CHUNK_WORKER_STALL_S": "1"})
    assert _worker_seen(proc, out), proc.communicate()
    worker = _only_child(proc)  # the fork follows the side directory
    assert worker and " " not in worker, worker
    os.kill(int(worker), signal.SIGSTOP)
    try:
        stdout, stderr = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        os.kill(int(worker), signal.SIGKILL)
        proc.communicate()
        pytest.fail("the run waited for its stopped worker")
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr and not stderr.strip(), stderr
    said = [line for line in stdout.splitlines() if "chunk worker" in line]
    assert len(said) == 1 and f"chunk worker (pid {worker}) made no progress for 1 s" in said[0], said
    assert "[WARNING]" in said[0]
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(int(worker), 0)

    def files(root: Path) -> dict[str, bytes]:
        return {re.sub(r"_\d{14}", "", p.name): p.read_bytes() for p in root.iterdir()}

    assert files(out) == files(tmp_path / "alone")

    def console(text: str, root: Path) -> list[str]:  # stamps, pids and the output folder neutralised
        text = re.sub(r"_\d{14}", "", text.replace(str(root), "OUT"))
        return [re.sub(r"^\S+ \S+ \(\d+\) ", "", line) for line in text.splitlines() if line not in said]

    assert console(stdout, out) == console(alone_out, tmp_path / "alone")
