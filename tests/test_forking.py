"""The default plugin ``forking``: the CSV writer shares big tables with a forked child (same bytes, and the same
bytes when the child fails or the plugin is turned off), and the watched child every accelerator runs."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from msprobe_core.default_plugins.forking import children as forking
from msprobe_core.default_plugins.statistics_metrics.coded import CodedTextColumn
from msprobe_core.host.defaults import DISABLE_ENV
from msprobe_core.host.registry import PluginHost
from msprobe_core.result import ResultTable
from msprobe_core.running import running_with
from msprobe_core.write import writers
from tests.test_csv_writer import reference_csv

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


@pytest.fixture
def split_always(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(forking, "MIN_SPLIT_ROWS", 1)
    # the split runs (slower) on one core too; threads earlier tests left running (dask, progress) hold
    # no lock the child's writing code takes
    monkeypatch.setattr(forking, "fork_allowed", lambda: True)
    monkeypatch.setattr(writers, "CSV_CHUNK_ROWS", 7)
    monkeypatch.delenv(DISABLE_ENV, raising=False)
    assert forking.fork_worthwhile(2), "a fork must be allowed in this test process"
    with running_with(PluginHost(autoload=False)):  # the writer asks the run's plugins (msprobe_csv_tail)
        yield


def _table(n: int) -> tuple[list[str], dict[str, list]]:
    rng = np.random.default_rng(n)
    values = rng.standard_normal(n) * 10.0 ** rng.integers(-9, 9, n)
    codes = rng.integers(0, 3, n).astype(np.int8)
    data = {
        "NPU Name": [f"Functional.linear.{i}.forward.input.0" for i in range(n)],
        "Shape": [f"[{i}, 4]" for i in range(n)],
        "Max diff": CodedTextColumn(values, codes, ["", "N/A", "Nan"]),
        "NPU max": [float(v) if i % 5 else None for i, v in enumerate(values)],
        "Note": ['say "hi", =1+1' if i % 7 == 0 else "-x" for i in range(n)],
    }
    return list(data), data


def _write(tmp_path: Path, columns: list[str], data: dict[str, list]) -> bytes:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    [path] = writers.write_csv(ResultTable("statistics", columns, data, [0] * len(data[columns[0]])), out / "r.csv")
    assert sorted(p.name for p in out.iterdir()) == ["r.csv"]  # no side file or temporary file left
    body = path.read_bytes()
    path.unlink()
    return body


def _spawns(monkeypatch: pytest.MonkeyPatch, wrap=lambda work: work) -> list[int | None]:
    """Record the pid of every child the plugin forks (its work wrapped by ``wrap``)."""
    real_spawn, pids = forking.spawn, []

    def spawn(work, *args):
        child = real_spawn(wrap(work), *args)
        pids.append(child.pid)
        return child

    monkeypatch.setattr(forking, "spawn", spawn)
    return pids


@pytest.mark.exercises_hooks("msprobe_csv_tail")
@pytest.mark.parametrize("rows", [2, 3, 50, 101])
def test_split_write_equals_the_csv_module(tmp_path: Path, split_always: None, rows: int,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    pids = _spawns(monkeypatch)
    columns, data = _table(rows)
    expected = reference_csv(columns, {c: list(v) for c, v in data.items()}).encode()
    assert _write(tmp_path, columns, data) == expected
    assert len(pids) == 1 and pids[0] is not None  # the second half was the child's


def test_one_row_is_not_split(tmp_path: Path, split_always: None, monkeypatch: pytest.MonkeyPatch) -> None:
    pids = _spawns(monkeypatch)
    columns, data = _table(1)
    assert _write(tmp_path, columns, data) == reference_csv(columns, {c: list(v) for c, v in data.items()}).encode()
    assert pids == []


def test_a_failing_child_leaves_the_work_to_the_parent(tmp_path: Path, split_always: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(work):  # the child fails (as on a full disk) before writing anything
        def fail() -> None:
            raise OSError("no room")

        return fail

    pids = _spawns(monkeypatch, failing)
    columns, data = _table(40)
    expected = reference_csv(columns, {c: list(v) for c, v in data.items()}).encode()
    assert _write(tmp_path, columns, data) == expected
    assert len(pids) == 1


def test_a_childs_success_and_failure_are_known(tmp_path: Path) -> None:
    mark = tmp_path / "mark"
    assert forking.spawn(lambda: mark.write_text("done")).wait()
    assert mark.read_text() == "done"

    def boom() -> None:
        raise RuntimeError("boom")

    assert not forking.spawn(boom).wait()


def test_the_child_is_killed_and_its_side_file_removed_when_the_writer_fails(tmp_path: Path, split_always: None,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def slow(work):
        def run() -> None:
            work()
            time.sleep(60)

        return run

    pids = _spawns(monkeypatch, slow)
    real_rows = writers.write_csv_rows

    def failing_rows(fh, header, *args):  # the writer's own half fails (the child spells with the real one)
        real_rows(fh, header, *args)
        raise KeyError("parent failed")

    monkeypatch.setattr(writers, "write_csv_rows", failing_rows)
    columns, data = _table(40)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(KeyError):
        writers.write_csv(ResultTable("statistics", columns, data, [0] * 40), out / "r.csv")
    with pytest.raises(ChildProcessError):  # already reaped: the writer did not leave it running
        os.waitpid(pids[0], os.WNOHANG)
    assert list(out.iterdir()) == []  # neither the side file nor the temporary file is left


def test_no_fork_when_disabled_or_small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forking, "usable_cores", lambda: 2)
    monkeypatch.setenv(forking.ENV_NO_FORK, "1")
    assert not forking.fork_allowed()
    monkeypatch.delenv(forking.ENV_NO_FORK)
    assert not forking.fork_worthwhile(forking.MIN_SPLIT_ROWS - 1)
    monkeypatch.setattr(forking, "usable_cores", lambda: 1)
    assert not forking.fork_worthwhile(forking.MIN_SPLIT_ROWS)


def test_forking_turned_off_the_writer_spells_every_row_itself_and_nothing_forks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``-p no:forking``: nothing answers ``msprobe_csv_tail`` (the file is the same, spelled in this process), and
    no accelerator of the run may fork (``fork_allowed``: chunked's and pair_loading's children stay unforked)."""
    monkeypatch.setattr(forking, "MIN_SPLIT_ROWS", 1)
    monkeypatch.setattr(writers, "CSV_CHUNK_ROWS", 7)
    pids = _spawns(monkeypatch)
    columns, data = _table(101)
    expected = reference_csv(columns, {c: list(v) for c, v in data.items()}).encode()
    monkeypatch.setenv(DISABLE_ENV, "forking")
    host = PluginHost(autoload=False)
    assert host.csv_tail(tmp_path / "r.csv", [data[c] for c in columns], 0, 101) is None
    with running_with(host):
        assert _write(tmp_path, columns, data) == expected
        assert forking.turned_off() and not forking.fork_allowed()
    assert pids == []
    monkeypatch.delenv(DISABLE_ENV)
    with running_with(PluginHost(autoload=False)):
        assert not forking.turned_off()


#: armed by the test below: the next fork of this process signals itself from inside ``os.fork``'s own hooks
_SIGNAL_IN_FORK: list[int] = []


def _signal_in_fork() -> None:
    if _SIGNAL_IN_FORK:
        os.kill(os.getpid(), _SIGNAL_IN_FORK.pop())


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_signal_in_fork)


@pytest.mark.parametrize("other_thread", [False, True])
def test_a_stop_signal_during_the_fork_is_raised_after_it_and_the_child_killed(tmp_path: Path,
                                                                                other_thread: bool) -> None:
    """A SIGTERM that lands while ``os.fork`` runs its hooks must not be lost (its handler's exception would be
    ignored inside the hook and the run would go on): it is held, raised once the child is known, and the
    child, which the caller will never see, is killed. Also when another thread is there for the kernel to
    hand the signal to (as a BLAS thread may be): blocking it in this thread would not do."""
    import signal
    import threading
    import time

    stop = threading.Event()
    if other_thread:
        threading.Thread(target=stop.wait, daemon=True).start()

    def on_term(signum: int, frame: object) -> None:  # as the command line's handler does
        raise KeyboardInterrupt

    marker = tmp_path / "child ran"

    def work() -> None:
        time.sleep(0.5)
        marker.write_text("the child was not killed")

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        _SIGNAL_IN_FORK.append(signal.SIGTERM)
        with pytest.raises(KeyboardInterrupt):
            forking.spawn(work)
        assert signal.getsignal(signal.SIGTERM) is on_term  # put back
    finally:
        stop.set()
        _SIGNAL_IN_FORK.clear()
        signal.signal(signal.SIGTERM, previous)
    time.sleep(0.8)
    assert not marker.exists()
    assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # nothing is left held


def _stop_myself() -> None:
    """A child's work that stops its own process, as ``kill -STOP`` from outside would."""
    import signal

    os.kill(os.getpid(), signal.SIGSTOP)


def test_a_stopped_child_is_given_up_after_the_stall_limit(monkeypatch: pytest.MonkeyPatch,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    """Waiting for a child's exit (the tail child, the CSV writer's child): a child stopped for good is killed
    after the stall limit, counts as failed, and one warning line names it; the wait does not last forever."""
    monkeypatch.setenv(forking.ENV_STALL_S, "0.5")
    child = forking.spawn(_stop_myself, "child under test")
    with caplog.at_level("WARNING", logger="msprobe"):
        assert not child.wait()
    assert child.reaped
    with pytest.raises(ChildProcessError):  # reaped: nothing left behind
        os.waitpid(child.pid, os.WNOHANG)
    said = [r.getMessage() for r in caplog.records if "made no progress" in r.getMessage()]
    assert said == [f"The child under test (pid {child.pid}) made no progress for 0.5 s; it was stopped and "
                    "this process does its share itself."]


def test_a_stalled_child_is_given_up_while_its_pipe_is_read(monkeypatch: pytest.MonkeyPatch,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """Reading a child's answers (the pair-load child, the chunk worker): the same watch, through the pipe."""
    monkeypatch.setenv(forking.ENV_STALL_S, "0.5")
    read_fd, write_fd = os.pipe()

    def work() -> None:
        os.write(write_fd, b"first")
        _stop_myself()
        os.write(write_fd, b"never")

    child = forking.spawn(work, "child under test")
    os.close(write_fd)
    with forking.pipe_reader(read_fd, child.watch()) as pipe, caplog.at_level("WARNING", logger="msprobe"):
        assert pipe.read(5) == b"first"
        with pytest.raises(forking.Stalled):
            pipe.read(5)
        child.give_up(0.5)
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)
    assert len([r for r in caplog.records if "made no progress" in r.getMessage()]) == 1


def test_a_working_child_is_waited_for_past_the_stall_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child that works (spends CPU time) for longer than the stall limit is waited for, not given up."""
    import time

    monkeypatch.setenv(forking.ENV_STALL_S, "1")

    def busy() -> None:  # three stall limits of CPU time: however long that takes on this machine
        while time.process_time() < 3:
            pass

    assert forking.spawn(busy).wait()


def test_the_stall_limit_setting() -> None:
    """The setting (or its first name) where given, else a minute or twice this process's own share."""
    env = dict(os.environ)
    try:
        for name in (forking.ENV_STALL_S, forking.ENV_STALL_S_FORMER):
            os.environ.pop(name, None)
        assert forking.stall_limit(1.0) == 60 and forking.stall_limit(100.0) == 200
        os.environ[forking.ENV_STALL_S_FORMER] = "3"
        assert forking.stall_limit(100.0) == 3
        os.environ[forking.ENV_STALL_S] = "0.25"
        assert forking.stall_limit(100.0) == 0.25
    finally:
        os.environ.clear()
        os.environ.update(env)


def _fork_allowed_here(as_worker: bool) -> bool:
    import multiprocessing

    if not as_worker:  # the same process, its pool-worker mark taken away: the other conditions hold
        multiprocessing.parent_process = lambda: None
    return forking.fork_allowed()


def test_a_pool_worker_never_forks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker of a multiprocessing pool (a rank's job on the local executor) may not fork an accelerator child:
    what decides is that it is a pool's worker (without that mark, the same worker may)."""
    import multiprocessing

    monkeypatch.delenv(forking.ENV_NO_FORK, raising=False)
    monkeypatch.setattr(forking, "usable_cores", lambda: 2)
    monkeypatch.setattr(forking, "turned_off", lambda: False)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply(_fork_allowed_here, (True,)) is False
        assert pool.apply(_fork_allowed_here, (False,)) is True
