"""Run one command and watch it: wall and CPU time, memory of its process tree, time and memory budgets.

Memory is measured two ways: ``tree PSS`` is the peak, sampled every ``SAMPLE_S``, of the summed
proportional set size of the command and all its descendants (what a process pool really costs),
and ``max RSS`` is the largest single-process peak RSS the kernel recorded for the command and the
descendants it waited for (``wait4``; what ``/usr/bin/time -v`` reports). ``parent`` is the command's
own process: its peak RSS (``VmHWM``, last sampled value) and a thinned series of its RSS over time
(does the parent grow with the number of rank pairs?).

Budgets stop a run instead of letting it take the machine: past ``timeout`` seconds, when the tree's
PSS passes ``mem_budget`` bytes, when the machine's available memory falls under ``min_available``
or its free disk under ``min_free_disk`` (other people's processes need them), the whole process
group is killed and the run is reported as
over that budget, with the time and memory it had reached. No RLIMIT_AS: a tool that maps a 10 GB
dump file would fail on address space it never makes resident.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")
#: Seconds between two samples of the tree's memory. Reading ``smaps_rollup`` walks the page
#: tables of the measured process and holds its memory-map lock, and the sampler needs a core:
#: sampling every 50 ms slowed both tools measurably on a 2-core machine (a tool using both cores
#: more than a single-threaded one); 0.2 s still catches the peak of runs lasting seconds.
SAMPLE_S = 0.2
#: Points kept of the parent's RSS series (thinned by halving as the run goes on).
SERIES_POINTS = 128


def _children_of() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(b")") + 2 :].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _direct_children(pid: int) -> list[int] | None:
    """Children of ``pid`` from ``/proc/PID/task/*/children`` (cheap), or ``None`` where the kernel lacks it."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    kids: list[int] = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                kids.extend(int(k) for k in fh.read().split())
        except FileNotFoundError:
            return None
        except OSError:
            continue
    return kids


def tree_memory(root: int) -> int:
    """Summed PSS (RSS where PSS cannot be read) of ``root`` and its descendants, in bytes."""
    tree: dict[int, list[int]] | None = None
    todo, total = [root], 0
    while todo:
        pid = todo.pop()
        kids = _direct_children(pid)
        if kids is None:  # no children files: one scan of /proc for the whole tree
            tree = tree if tree is not None else _children_of()
            kids = tree.get(pid, [])
        todo.extend(kids)
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            try:
                with open(f"/proc/{pid}/statm") as fh:
                    total += int(fh.read().split()[1]) * PAGE
            except OSError:
                pass
    return total


def process_rss(pid: int) -> tuple[int, int]:
    """(current RSS, peak RSS) of one process in bytes, from ``/proc/PID/status`` (0, 0 once it is gone)."""
    rss = hwm = 0
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, hwm


def available_memory() -> int:
    """``MemAvailable`` of the machine in bytes (a large number where it cannot be read)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 1 << 62


@dataclass
class Measured:
    """What one watched run gave. ``status``: ``ok``, ``exit N``, or the budget it went over."""

    wall_s: float
    cpu_s: float
    rc: int
    status: str
    tree_pss: int
    max_rss: int
    parent_peak_rss: int
    parent_series: list[tuple[float, int]] = field(default_factory=list)  # (seconds, RSS bytes)


class _Series:
    """(time, value) points, at most ``SERIES_POINTS``, spread over the whole run (every other dropped when full)."""

    def __init__(self) -> None:
        self.points: list[tuple[float, int]] = []
        self.step = 1
        self.n = 0

    def add(self, t: float, value: int) -> None:
        if self.n % self.step == 0:
            self.points.append((t, value))
            if len(self.points) >= SERIES_POINTS:
                self.points = self.points[::2]
                self.step *= 2
        self.n += 1


def measure(cmd: list[str], log: Path, timeout: float, env: dict[str, str] | None = None, *,
            mem_budget: int | None = None, min_available: int = 0,
            min_free_disk: tuple[Path, int] | None = None) -> Measured:
    """Run ``cmd`` (its output to ``log``) in a process group of its own and watch it until it ends.

    ``min_free_disk``: (a path, bytes) — stop the run when the file system of that path has fewer
    bytes free (a full disk breaks everybody's work, not only this run).
    """
    peak = parent_hwm = 0
    over: list[str] = []
    series = _Series()
    with open(log, "w") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        stop = threading.Event()

        def kill(reason: str) -> None:
            if not over:
                over.append(reason)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass

        def sample() -> None:
            nonlocal peak, parent_hwm
            while not stop.is_set():
                now = tree_memory(proc.pid)
                rss, hwm = process_rss(proc.pid)
                peak = max(peak, now)
                parent_hwm = max(parent_hwm, hwm)
                if rss:
                    series.add(time.perf_counter() - start, rss)
                if mem_budget is not None and now > mem_budget:
                    kill(f"over memory budget ({mem_budget / 2**30:.1f} GiB tree PSS)")
                elif min_available and available_memory() < min_available:
                    kill(f"stopped: the machine's available memory fell under {min_available / 2**30:.1f} GiB")
                elif min_free_disk and shutil.disk_usage(min_free_disk[0]).free < min_free_disk[1]:
                    kill(f"stopped: free disk fell under {min_free_disk[1] / 1e9:.0f} GB")
                stop.wait(SAMPLE_S)

        def watchdog() -> None:
            if not stop.wait(timeout):
                kill(f"over time budget ({timeout:.0f} s)")

        threads = [threading.Thread(target=sample, daemon=True), threading.Thread(target=watchdog, daemon=True)]
        for t in threads:
            t.start()
        _pid, wait_status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = rc = os.waitstatus_to_exitcode(wait_status)
        stop.set()
        for t in threads:
            t.join()
        if rc != 0:  # workers of a killed run, or left behind by a crashed one (the group is the run's own)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
    status = over[0] if over else "ok" if rc == 0 else f"exit {rc}"
    return Measured(wall, usage.ru_utime + usage.ru_stime, rc, status, peak, usage.ru_maxrss * 1024,
                    parent_hwm, series.points)
