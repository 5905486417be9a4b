#!/usr/bin/env python3
"""Benchmark ``msprobe compare``: ours against a reference msprobe, side by side, on synthetic dumps.

Generates (once, cached under ``--workdir``) realistic dump pairs with
:mod:`dumpgen` and times each tool on them, alternating ours / reference /
ours / reference in the same run, with the page cache warmed first. For every
run it prints wall time, GB/s (bytes of both dumps / wall), rows/s (rows of the
result CSVs / wall) and peak memory of the child process tree, and checks that
both tools' results agree (with ``../shared/tools/oracle_diff.py`` when present).

Examples::

    python benchmarks/bench_compare.py --scenario tensor --gb 2
    python benchmarks/bench_compare.py --scenario statistics --entries 100000 \\
        --reference-cmd /tmp/msprobe-ref/bin/msprobe
    python benchmarks/bench_compare.py --scenario all --reference-cmd /tmp/msprobe-ref/bin/msprobe \\
        --json bench.json
    python benchmarks/bench_compare.py --scenario growth --entries 100000,1000000,10000000 --repeat 1
    python benchmarks/bench_compare.py --scenario ranks --ranks 1000 --rank-entries 10000 --repeat 1

``--reference-cmd`` is a command prefix: ``compare -tp T -gp G -o OUT`` is
appended, or, when it contains ``{target}``, ``{golden}`` and ``{output}``,
those are filled in. Each run is watched by :mod:`procwatch`: wall and CPU
time (user + system of the tool and the workers it waited for), ``tree PSS``
(peak of the summed proportional set size of the tool and its descendants,
sampled every 0.2 s), ``max RSS`` (largest single-process peak, ``wait4``) and
the parent process's own peak RSS and RSS over time (``parent``).

Long runs are bounded: a run past ``--timeout`` seconds or ``--mem-budget-gb``
GiB of tree PSS (or while the machine's available memory falls under
``--min-available-gb``) is stopped and reported as over that budget, with the
time and memory it had reached; a pair that does not fit on disk with
``--keep-free-gb`` GB left is skipped and reported; a pair larger than half the
available memory is measured cold (warming it would only evict other files).
``--drop-over-gb`` deletes a big generated pair once it is measured.
``benchmarks/figures.py`` runs every figure of ``docs/performance.md`` with one command.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import dumpgen  # noqa: E402
import procwatch  # noqa: E402


@dataclass
class Run:
    """One timed run of one tool (``status``: ``ok``, ``exit N`` or the budget it went over)."""

    tool: str
    scenario: str
    rep: int
    wall_s: float
    rc: int
    rows: int
    bytes: int
    tree_pss_mib: float
    max_rss_mib: float
    cpu_s: float = 0.0
    status: str = "ok"
    parent_peak_rss_mib: float = 0.0
    parent_rss_series: list[tuple[float, float]] = field(default_factory=list)  # (seconds, MiB)
    load_avg: float = 0.0  # the machine's 1-minute load average when the run started (others' work)
    result_files: int = 0  # result CSVs finished (a stopped run: how far it got)

    @property
    def gbps(self) -> float:
        return self.bytes / self.wall_s / 1e9 if self.wall_s else 0.0

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.wall_s if self.wall_s else 0.0


def count_rows(out: Path) -> int:
    """Data rows of every result CSV under ``out``."""
    return sum(file_rows(csv_file) for csv_file in sorted(out.glob("*.csv")))


def file_rows(path: Path) -> int:
    """Data rows of one result CSV (its lines less the header)."""
    lines = 0
    buf = bytearray(1 << 22)
    with open(path, "rb", buffering=0) as fh:
        while n := fh.readinto(buf):
            lines += buf.count(b"\n", 0, n)
    return max(0, lines - 1)


class ResultSink:
    """Deletes a running compare's finished result CSVs once they are ``delay`` seconds old, rows counted first.

    For results bigger than the disk holds beside their pair (10M entries: ~19 GB of CSV). The tool
    still writes every byte; a file appears under its final name only when complete (written under a
    temporary name, then renamed) and is deleted only after the kernel's writeback delay
    (``vm.dirty_expire_centisecs``, 30 s by default), so its pages have gone to disk as in a real run.
    """

    def __init__(self, out: Path, delay: float = 35.0) -> None:
        self.out = out
        self.delay = delay
        self.rows = 0
        self.files = 0
        self.bytes = 0
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> ResultSink:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_event.set()
        self.thread.join()

    def _loop(self) -> None:
        while not self.stop_event.wait(1.0):
            now = time.time()
            for f in sorted(self.out.glob("*.csv")):
                try:
                    size, mtime = f.stat().st_size, f.stat().st_mtime
                except OSError:
                    continue
                if now - mtime >= self.delay:
                    self.rows += file_rows(f)
                    self.bytes += size
                    self.files += 1
                    f.unlink()


def warm(path: Path) -> int:
    """Read every file under ``path`` once (page cache); returns the bytes read."""
    total = 0
    buf = bytearray(1 << 22)
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            with open(os.path.join(dirpath, f), "rb", buffering=0) as fh:
                while n := fh.readinto(buf):
                    total += n
    return total


# --------------------------------------------------------------------------- scenarios
#: bytes per entry of a statistics pair, both sides (dump.json and stack.json; 2,422,869,134 at 1M entries)
STAT_PAIR_BYTES_PER_ENTRY = 2_423
#: bytes of result CSV per entry of a statistics pair (~3.6 rows per entry), for the disk check
STAT_RESULT_BYTES_PER_ENTRY = 1_500


class Skipped(Exception):
    """A scenario or run that is not attempted (not enough disk); the message says why."""


def scenario_dir(args: argparse.Namespace, kind: str, entries: int | None = None) -> tuple[str, Path, dict[str, Any]]:
    """Name, directory and generation parameters of one scenario (``entries``: of a statistics scenario)."""
    if kind == "tensor":
        params: dict[str, Any] = {"gb": args.gb}
        name = f"tensor-{args.gb:g}gb"
    elif kind == "statistics":
        entries = entries if entries is not None else args.entries[0]
        params = {"entries": entries}
        name = f"statistics-{entries}"
    else:
        params = {"entries": args.rank_entries, "ranks": args.ranks}
        name = f"ranks-{args.ranks}x{args.rank_entries}"
    return name, args.workdir / f"{name}-s{args.seed}", params


def estimated_bytes(kind: str, params: dict[str, Any]) -> tuple[int, int]:
    """(bytes of the dump pair, bytes of one statistics result) a scenario will need on disk, roughly."""
    if kind == "tensor":
        return int(params["gb"] * 1e9), 1 << 20
    entries = params["entries"] * params.get("ranks", 1)
    return entries * STAT_PAIR_BYTES_PER_ENTRY, entries * STAT_RESULT_BYTES_PER_ENTRY


def free_disk(path: Path) -> int:
    """Free bytes on the file system that holds ``path`` (or its nearest existing parent)."""
    while not path.exists():
        path = path.parent
    return shutil.disk_usage(path).free


def check_disk(path: Path, need: int, keep_free_gb: float, what: str) -> None:
    """Raise ``Skipped`` unless ``need`` bytes fit under ``path`` with ``keep_free_gb`` GB left over."""
    free = free_disk(path)
    if free - need < keep_free_gb * 1e9:
        raise Skipped(f"{what} needs ~{need / 1e9:.1f} GB of disk, {free / 1e9:.1f} GB are free and "
                      f"{keep_free_gb:g} GB must stay free (--keep-free-gb)")


def ensure_scenario(args: argparse.Namespace, kind: str, entries: int | None = None) -> tuple[str, Path, dict[str, Any]]:
    """Generate the scenario's dumps unless a complete copy is already there (``Skipped``: no room for it)."""
    name, root, params = scenario_dir(args, kind, entries)
    manifest = root / "manifest.json"
    if args.regen and root.exists():
        shutil.rmtree(root)
    if not manifest.is_file():
        if root.exists():
            shutil.rmtree(root)
        pair, result = estimated_bytes(kind, params)
        link_stack = kind != "tensor" and pair > args.link_stack_over_gb * 1e9
        if link_stack:
            pair -= pair * 207 // STAT_PAIR_BYTES_PER_ENTRY // 2  # one stack.json instead of two
        if args.sink_over_gb is not None and result > args.sink_over_gb * 1e9:
            result = min(result, 3 * 10**9)
        check_disk(root, pair + result, args.keep_free_gb, f"generating {name}")
        print(f"generating {name} under {root}{' (golden stack.json: a hard link)' if link_stack else ''} …",
              flush=True)
        t0 = time.perf_counter()
        dumpgen.generate(kind, root, seed=args.seed, link_stack=link_stack, progress=_progress_printer(t0), **params)
        print(f"  generated in {time.perf_counter() - t0:.1f} s", flush=True)
    info = json.loads(manifest.read_text())
    if "note" in info:  # dumpgen writes no note: someone made or changed this pair by hand (e.g. hard-linked ranks)
        raise Skipped(f"{root} was not generated as is by dumpgen ({info['note']}); use another --workdir or --regen")
    return name, root, info


def _progress_printer(t0: float) -> Any:
    last = [t0]

    def report(rank: int, written: int) -> None:
        now = time.perf_counter()
        if now - last[0] >= 60:
            last[0] = now
            print(f"  … rank {rank}: {written:,} entries ({now - t0:.0f} s)", flush=True)

    return report


def compile_ours() -> None:
    """Byte-compile this checkout's packages once, as a regular ``pip install`` does for every package.

    An editable install leaves that to the first run, and where ``PYTHONDONTWRITEBYTECODE`` is set
    (as on the project's machine) every run compiles every module again (~0.1 s) while the reference,
    installed from wheels, runs from ``.pyc`` files.
    """
    dirs = [REPO / "msprobe_core"] + sorted(p.parent for p in REPO.glob("plugins/*/msprobe_*/__init__.py"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", *map(str, dirs)], env=env, check=False,
                   stdout=subprocess.DEVNULL)


def tool_cmd(tool: str, args: argparse.Namespace, target: Path, golden: Path, out: Path) -> list[str]:
    """The command line of one tool on one scenario."""
    if tool == "ours":
        prefix = shlex.split(args.ours_cmd) if args.ours_cmd else [sys.executable, "-m", "msprobe_core"]
        return [*prefix, "compare", "-tp", str(target), "-gp", str(golden), "-o", str(out), *shlex.split(args.ours_args)]
    ref = args.reference_cmd
    if "{target}" in ref:
        return shlex.split(ref.format(target=target, golden=golden, output=out))
    return [*shlex.split(ref), "compare", "-tp", str(target), "-gp", str(golden), "-o", str(out)]


def check_agreement(ours: Path, ref: Path) -> str:
    """Compare the two tools' CSVs with the shared oracle_diff tool; a one-line verdict."""
    tool = Path(os.environ.get("MSPROBE_SHARED", REPO.parent / "shared")) / "tools" / "oracle_diff.py"
    if not tool.is_file():
        return "not checked (oracle_diff.py not found)"
    ours_files, ref_files = sorted(ours.glob("*.csv")), sorted(ref.glob("*.csv"))
    if len(ours_files) != len(ref_files) or not ours_files:
        return f"DIFFER: {len(ours_files)} result files vs {len(ref_files)}"
    bad = []
    for a, b in zip(ours_files, ref_files):
        proc = subprocess.run([sys.executable, str(tool), str(a), str(b)], capture_output=True, text=True)
        if proc.returncode != 0:
            bad.append(f"{a.name}: {proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.returncode}")
    return "agree (oracle_diff, every file)" if not bad else "DIFFER: " + "; ".join(bad)


def entry_counts(text: str) -> list[int]:
    """``--entries``: one count or a comma-separated list (``100000,1000000``; ``1e6`` and ``1_000_000`` too)."""
    try:
        counts = [int(float(x.replace("_", ""))) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of entry counts: {text!r}") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"entry counts must be positive: {text!r}")
    return counts


def _quartiles(series: list[tuple[float, float]]) -> list[float] | None:
    """The parent's RSS (MiB) at 25, 50, 75 and 100% of the run, from its sampled series."""
    if not series:
        return None
    end = series[-1][0]
    out = []
    for q in (0.25, 0.5, 0.75, 1.0):
        at = [mib for t, mib in series if t <= q * end + 1e-9]
        out.append(at[-1] if at else series[0][1])
    return out


def tool_summary(runs: list[Run]) -> dict[str, Any]:
    """Medians and peaks of one tool's runs on one scenario (``None`` where none completed)."""
    mine = [r for r in runs if r.status == "ok"]
    if not mine:
        return {}
    return {
        "wall_s_median": statistics.median(r.wall_s for r in mine),
        "wall_s_best": min(r.wall_s for r in mine),
        "cpu_s_median": statistics.median(r.cpu_s for r in mine),
        "gbps_best": max(r.gbps for r in mine),
        "rows_per_s_best": max(r.rows_per_s for r in mine),
        "tree_pss_mib_peak": max(r.tree_pss_mib for r in mine),
        "max_rss_mib_peak": max(r.max_rss_mib for r in mine),
        "parent_peak_rss_mib": max(r.parent_peak_rss_mib for r in mine),
        "parent_rss_mib_quartiles": _quartiles(mine[-1].parent_rss_series),
        "rows": mine[-1].rows,
    }


def growth_table(runs: list[Run], names: list[str], infos: dict[str, dict[str, Any]],
                 skipped: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Per size of the growth scenario: median wall and CPU, peaks, and the ratios to the first completed size.

    A size that went over a budget, failed or was skipped has a row too, with its ``status`` and
    what it had reached (wall and memory at the stop), and no ratios.
    """
    table: list[dict[str, Any]] = []
    first: dict[str, Any] | None = None
    for name in names:
        info = infos.get(name, {})
        entries = info.get("entries_per_side") or int(name.rsplit("-", 1)[-1])
        if skipped and name in skipped:
            table.append({"scenario": name, "entries": entries, "status": skipped[name]})
            continue
        mine = [r for r in runs if r.scenario == name and r.tool == "ours"]
        ok = [r for r in mine if r.status == "ok"]
        if not ok:
            if mine:
                last = mine[-1]
                table.append({"scenario": name, "entries": entries, "status": last.status,
                              "wall_s_at_stop": last.wall_s, "cpu_s_at_stop": last.cpu_s,
                              "tree_pss_mib_at_stop": last.tree_pss_mib, "max_rss_mib": last.max_rss_mib,
                              "rows_at_stop": last.rows,
                              "parent_rss_mib_series": last.parent_rss_series})
            continue
        row: dict[str, Any] = {"scenario": name, "entries": entries, "status": "ok", "rows": ok[-1].rows,
                               "wall_s_median": statistics.median(r.wall_s for r in ok),
                               "cpu_s_median": statistics.median(r.cpu_s for r in ok),
                               "max_rss_mib": max(r.max_rss_mib for r in ok),
                               "tree_pss_mib": max(r.tree_pss_mib for r in ok)}
        row["us_per_entry"] = row["wall_s_median"] / entries * 1e6
        row["cpu_us_per_entry"] = row["cpu_s_median"] / entries * 1e6
        first = first or row
        row["time_ratio"] = row["wall_s_median"] / first["wall_s_median"]
        row["cpu_ratio"] = row["cpu_s_median"] / first["cpu_s_median"] if first["cpu_s_median"] else None
        row["entries_ratio"] = entries / first["entries"]
        row["growth"] = row["time_ratio"] / row["entries_ratio"]  # 1.0: linear; above: dearer per entry
        table.append(row)
    return table


def print_growth(table: list[dict[str, Any]]) -> None:
    """The growth curve: one line per size."""
    print("\n== growth (ours, statistics mode; median per size; growth = x time / x entries, 1.00 is linear)")
    print(f"   {'entries':>11} {'rows':>11} {'wall s':>9} {'cpu s':>9} {'us/entry':>9} {'x time':>8} {'x cpu':>7} "
          f"{'x entries':>9} {'growth':>7} {'max RSS MiB':>12} {'tree PSS MiB':>13}")
    for r in table:
        if r["status"] != "ok":
            reached = ""
            if "wall_s_at_stop" in r:
                reached = (f" (stopped after {r['wall_s_at_stop']:.0f} s, {r['cpu_s_at_stop']:.0f} s CPU, "
                           f"tree PSS {r['tree_pss_mib_at_stop']:.0f} MiB, max RSS {r['max_rss_mib']:.0f} MiB)")
            print(f"   {r['entries']:>11,} {r['status']}{reached}", flush=True)
            continue
        print(f"   {r['entries']:>11,} {r['rows']:>11,} {r['wall_s_median']:9.2f} {r['cpu_s_median']:9.2f} "
              f"{r['us_per_entry']:9.1f} {r['time_ratio']:8.2f} {r['cpu_ratio'] or 0:7.2f} {r['entries_ratio']:9.1f} "
              f"{r['growth']:7.2f} {r['max_rss_mib']:12.0f} {r['tree_pss_mib']:13.0f}", flush=True)


def machine_info(args: argparse.Namespace) -> dict[str, Any]:
    """Where and on what the figures were taken."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    core = subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h", "--", "msprobe_core", "plugins",
                           "pyproject.toml"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    core_dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no", "--",
                                 "msprobe_core", "plugins", "pyproject.toml"], capture_output=True, text=True).stdout.strip()
    mem = 0
    try:
        with open("/proc/meminfo") as fh:
            mem = int(fh.readline().split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "cores_usable": usable, "cores": os.cpu_count(),
            "memory_gib": round(mem / 2**30, 1), "python": sys.version.split()[0],
            "commit": commit + ("+dirty" if dirty else ""), "core_commit": core + ("+dirty" if core_dirty else ""), "reference_cmd": args.reference_cmd,
            "ours_args": args.ours_args}


def run_scenario(args: argparse.Namespace, name: str, root: Path, info: dict[str, Any], tools: list[str],
                 env: dict[str, str], runs: list[Run]) -> dict[str, Any]:
    """Time every tool on one scenario (alternating, ``--repeat`` times); returns its summary."""
    target, golden = root / "target" / "step0", root / "golden" / "step0"
    nbytes = info["bytes_both_sides"]
    print(f"\n== {name}: {info['ranks']} rank(s), {info['entries_per_side']:,} entries and "
          f"{info['tensor_rows_per_side']:,} tensors per side, {nbytes / 1e9:.3f} GB both sides")
    available = procwatch.available_memory()
    if nbytes > available / 2:  # it would not stay cached: reading it first only evicts other files
        cache = "cold"
        print(f"   page cache not warmed: {nbytes / 1e9:.1f} GB is more than half the available memory "
              f"({available / 1e9:.1f} GB); the runs read from disk")
    else:
        cache = "warm"
        t0 = time.perf_counter()
        warm(root)
        print(f"   page cache warmed ({time.perf_counter() - t0:.1f} s)")
    kind = info.get("kind", "statistics")
    result_bytes = estimated_bytes(kind, {"gb": nbytes / 1e9, "entries": info["entries_per_side"],
                                          "ranks": 1})[1]
    sink = args.sink_over_gb is not None and result_bytes > args.sink_over_gb * 1e9
    if sink:
        summary_note = (f"results sunk: ~{result_bytes / 1e9:.0f} GB of CSV; each finished result file is "
                        "deleted 35 s after it appears (rows counted first)")
        print(f"   {summary_note}")
        result_bytes = min(result_bytes, 3 * 10**9)  # what is on disk at once: the files of the last 35 s
    mem_budget = int(args.mem_budget_gb * 2**30) if args.mem_budget_gb else None
    last_out: dict[str, Path] = {}
    stopped: set[str] = set()
    summary: dict[str, Any] = {"info": info, "page_cache": cache}
    if sink:
        summary["results_sunk"] = summary_note
    for rep in range(args.repeat):
        for tool in tools:
            if tool in stopped:
                continue
            out = args.workdir / "out" / f"{name}-{tool}-{rep}"
            if out.exists():
                shutil.rmtree(out)
            prev = last_out.get(tool)
            if prev is not None and not args.keep_outputs:
                shutil.rmtree(prev, ignore_errors=True)
            try:
                check_disk(out, result_bytes, args.keep_free_gb, f"the result of {name}")
            except Skipped as e:
                print(f"   {tool:<9} run {rep + 1}: skipped: {e}")
                summary.setdefault("skipped", {})[tool] = str(e)
                stopped.add(tool)
                continue
            out.mkdir(parents=True)
            cmd = tool_cmd(tool, args, target, golden, out)
            load = os.getloadavg()[0]
            with ResultSink(out) if sink else contextlib.nullcontext() as sunk:
                m = procwatch.measure(cmd, out.parent / f"{out.name}.log", args.timeout, env, mem_budget=mem_budget,
                                      min_available=int(args.min_available_gb * 2**30),
                                      min_free_disk=(out, int(args.keep_free_gb * 1e9)))
            # rows of the finished result files only (a file gets its name when complete), also for a stopped run
            rows = count_rows(out) + (sunk.rows if sunk else 0)
            files = len(list(out.glob("*.csv"))) + (sunk.files if sunk else 0)
            run = Run(tool, name, rep, m.wall_s, m.rc, rows, nbytes,
                      m.tree_pss / 2**20, m.max_rss / 2**20, m.cpu_s, m.status, m.parent_peak_rss / 2**20,
                      [(round(t, 2), round(b / 2**20, 1)) for t, b in m.parent_series], load, files)
            runs.append(run)
            status = "" if m.status == "ok" else f"  {m.status.upper()} (log: {out.parent / (out.name + '.log')})"
            print(f"   {tool:<9} run {rep + 1}: {run.wall_s:8.2f} s  cpu {run.cpu_s:8.2f} s  {run.gbps:7.3f} GB/s  "
                  f"{run.rows_per_s:11,.0f} rows/s  tree PSS {run.tree_pss_mib:7.0f} MiB  max RSS "
                  f"{run.max_rss_mib:7.0f} MiB  parent {run.parent_peak_rss_mib:7.0f} MiB  rows {run.rows:,}  "
                  f"load {load:.1f}{status}",
                  flush=True)
            last_out[tool] = out
            if m.status != "ok":
                stopped.add(tool)  # over a budget or failing: another repetition would only do it again
    for tool in tools:
        mine = tool_summary([r for r in runs if r.scenario == name and r.tool == tool])
        if mine:
            summary[tool] = mine
        else:
            failed = [r.status for r in runs if r.scenario == name and r.tool == tool]
            summary.setdefault("failed", {})[tool] = failed[-1] if failed else "not run"
    if info["ranks"] > 1 and "ours" in summary:
        q = summary["ours"]["parent_rss_mib_quartiles"]
        if q:
            print(f"   ours: parent RSS at 25 / 50 / 75 / 100% of the run: {' / '.join(f'{v:.0f}' for v in q)} MiB")
    if "ours" in summary and "reference" in summary:
        o, r = summary["ours"], summary["reference"]
        summary["speedup_median"] = r["wall_s_median"] / o["wall_s_median"]
        summary["speedup_cpu"] = r["cpu_s_median"] / o["cpu_s_median"] if o["cpu_s_median"] else None
        summary["memory_ratio_pss"] = o["tree_pss_mib_peak"] / r["tree_pss_mib_peak"] if r["tree_pss_mib_peak"] else None
        summary["memory_ratio_rss"] = o["max_rss_mib_peak"] / r["max_rss_mib_peak"] if r["max_rss_mib_peak"] else None
        print(f"   => ours is {summary['speedup_median']:.1f}x faster (median wall), {summary['speedup_cpu'] or 0:.1f}x "
              f"by CPU time, {o['tree_pss_mib_peak']:.0f} vs {r['tree_pss_mib_peak']:.0f} MiB tree PSS "
              f"({o['max_rss_mib_peak']:.0f} vs {r['max_rss_mib_peak']:.0f} MiB max RSS)")
        if not args.no_check:
            summary["agreement"] = check_agreement(last_out["ours"], last_out["reference"])
            print(f"   results: {summary['agreement']}")
    if not args.keep_outputs and (args.growth_only or any(m != "ok" for m in [r.status for r in runs
                                                                               if r.scenario == name])):
        for out in last_out.values():  # big outputs, or half-written ones
            shutil.rmtree(out, ignore_errors=True)
    return summary


# --------------------------------------------------------------------------- main
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", action="append", choices=["tensor", "statistics", "ranks", "growth", "all"],
                   help="what to run (repeatable; default: all but growth). growth: ours only on statistics "
                        "dumps of every --entries size, then the curve (time and peak memory per size, ratios "
                        "to the first)")
    p.add_argument("--workdir", type=Path, default=Path(os.environ.get("MSPROBE_BENCH_DIR", "/tmp/msprobe-bench")),
                   help="where the generated dumps and outputs live (default $MSPROBE_BENCH_DIR or "
                        "/tmp/msprobe-bench)")
    p.add_argument("--gb", type=float, default=2.0, help="tensor scenario: GB of .pt files, both sides (default 2)")
    p.add_argument("--entries", type=entry_counts, default=[100_000],
                   help="statistics and growth scenarios: dump.json entries per side, or a comma-separated "
                        "list of sizes (default 100000; growth: 100000,1000000 unless given)")
    p.add_argument("--ranks", type=int, default=8, help="ranks scenario: number of ranks (default 8)")
    p.add_argument("--rank-entries", type=int, default=12_500,
                   help="ranks scenario: entries per rank and side (default 12500)")
    p.add_argument("--repeat", type=int, default=2, help="runs of each tool, alternating (default 2)")
    p.add_argument("--reference-cmd", default=None, help="reference msprobe command prefix (e.g. /tmp/msprobe-ref/bin/msprobe)")
    p.add_argument("--ours-cmd", default=None, help="our command prefix (default: this python -m msprobe_core)")
    p.add_argument("--ours-args", default="", help="extra arguments for our compare (e.g. '--workers 2')")
    p.add_argument("--timeout", type=float, default=3600,
                   help="seconds before a run is stopped and reported as over its time budget (default 3600)")
    p.add_argument("--mem-budget-gb", type=float, default=12.0,
                   help="GiB of tree PSS past which a run is stopped and reported as over its memory budget "
                        "(default 12; 0: none)")
    p.add_argument("--min-available-gb", type=float, default=1.5,
                   help="stop a run when the machine's available memory falls under this many GiB (default 1.5)")
    p.add_argument("--keep-free-gb", type=float, default=15.0,
                   help="GB of disk that must stay free after generating a pair or writing a result; a scenario "
                        "that needs more is skipped and reported as such (default 15)")
    p.add_argument("--sink-over-gb", type=float, default=None,
                   help="when a run's result would be larger than this many GB, delete each finished result file "
                        "35 s after it appears (rows counted first; see ResultSink)")
    p.add_argument("--link-stack-over-gb", type=float, default=5.0,
                   help="generate pairs larger than this with the golden stack.json a hard link to the target's "
                        "(the same bytes; default 5)")
    p.add_argument("--drop-over-gb", type=float, default=None,
                   help="delete a generated pair larger than this many GB once it is measured (disk)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--regen", action="store_true", help="regenerate the dumps even if present")
    p.add_argument("--no-check", action="store_true", help="skip the ours-vs-reference agreement check")
    p.add_argument("--keep-outputs", action="store_true", help="keep every run's output directory")
    p.add_argument("--json", type=Path, default=None, help="also write every run and the summary here")
    args = p.parse_args(argv)
    args.explicit_entries = any(a == "--entries" or a.startswith("--entries=")
                                for a in (argv if argv is not None else sys.argv[1:]))
    args.growth_only = False
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    kinds = args.scenario or ["all"]
    if "all" in kinds:
        kinds = ["tensor", "statistics", "ranks", *(["growth"] if "growth" in kinds else [])]
    growth_sizes = args.entries if args.explicit_entries else [100_000, 1_000_000]
    # (kind, entries, tools, part of the growth curve) of every scenario run, in order
    cases: list[tuple[str, int | None, list[str], bool]] = []
    for kind in dict.fromkeys(kinds):
        if kind == "statistics":
            cases += [("statistics", n, [], False) for n in args.entries]
        elif kind == "growth":
            cases += [("statistics", n, ["ours"], True) for n in growth_sizes]
        else:
            cases.append((kind, None, [], False))
    tools = ["ours"] + (["reference"] if args.reference_cmd else [])
    env = dict(os.environ, MSPROBE_NO_PROGRESS="1")
    machine = machine_info(args)
    print(f"machine: {machine['cores_usable']} usable of {machine['cores']} cores, {machine['memory_gib']} GiB, "
          f"python {machine['python']}; tree {machine['commit']}; tools: {', '.join(tools)}")
    if not args.ours_cmd:
        compile_ours()
    runs: list[Run] = []
    summary: dict[str, Any] = {}
    growth_names: list[str] = []
    infos: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    for kind, entries, only, in_growth in cases:
        name = scenario_dir(args, kind, entries)[0]
        if in_growth:
            growth_names.append(name)
        if name in summary or name in skipped:
            continue  # asked for twice (statistics and growth at one size): measured once
        try:
            name, root, info = ensure_scenario(args, kind, entries)
        except Skipped as e:
            print(f"\n== {name}: skipped: {e}", flush=True)
            skipped[name] = f"skipped: {e}"
            summary[name] = {"skipped": str(e)}
            continue
        infos[name] = info
        args.growth_only = bool(only)
        summary[name] = run_scenario(args, name, root, info, only or tools, env, runs)
        if args.drop_over_gb is not None and info["bytes_both_sides"] > args.drop_over_gb * 1e9:
            shutil.rmtree(root, ignore_errors=True)
            print(f"   (deleted the generated pair, {info['bytes_both_sides'] / 1e9:.1f} GB, --drop-over-gb)")
    growth = growth_table(runs, list(dict.fromkeys(growth_names)), infos, skipped) if growth_names else []
    if growth:
        print_growth(growth)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"machine": machine, "argv": argv if argv is not None else sys.argv[1:],
                                         "runs": [asdict(r) | {"gbps": r.gbps, "rows_per_s": r.rows_per_s}
                                                  for r in runs], "summary": summary, "growth": growth}, indent=1))
    # a size over a budget or skipped for disk is a figure (reported above); a tool that fails is not
    return 1 if any(r.status.startswith("exit") for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
