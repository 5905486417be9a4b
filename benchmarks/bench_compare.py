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
    python benchmarks/bench_compare.py --scenario growth --entries 100000,1000000,3000000 --repeat 1

``--reference-cmd`` is a command prefix: ``compare -tp T -gp G -o OUT`` is
appended, or, when it contains ``{target}``, ``{golden}`` and ``{output}``,
those are filled in. Memory is measured two ways: ``tree PSS`` is the peak,
sampled every 0.2 s, of the summed proportional set size of the child and all
its descendants (what a process pool really costs), and ``max RSS`` is the
largest single-process peak RSS the kernel recorded for the child and
the descendants it waited for (``wait4``; what ``/usr/bin/time -v`` reports).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import dumpgen  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")
#: Seconds between two samples of the tree's memory. Reading ``smaps_rollup`` walks the page
#: tables of the measured process and holds its memory-map lock, and the sampler needs a core:
#: sampling every 50 ms slowed both tools measurably on a 2-core machine (a tool using both cores
#: more than a single-threaded one); 0.2 s still catches the peak of runs lasting seconds.
SAMPLE_S = 0.2


# --------------------------------------------------------------------------- measuring
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


def _tree_memory(root: int) -> int:
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


@dataclass
class Run:
    """One timed run of one tool."""

    tool: str
    scenario: str
    rep: int
    wall_s: float
    rc: int
    rows: int
    bytes: int
    tree_pss_mib: float
    max_rss_mib: float

    @property
    def gbps(self) -> float:
        return self.bytes / self.wall_s / 1e9 if self.wall_s else 0.0

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.wall_s if self.wall_s else 0.0


def measure(cmd: list[str], log: Path, timeout: float, env: dict[str, str] | None = None) -> tuple[float, int, int, int]:
    """Run ``cmd``; returns (wall seconds, exit code, peak tree PSS bytes, max single-process RSS bytes).

    The max RSS comes from ``wait4`` on the child: Linux reports there the largest peak RSS of
    the child and of every descendant it waited for (its pool workers).
    """
    peak = 0
    with open(log, "w") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        stop = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not stop.is_set():
                peak = max(peak, _tree_memory(proc.pid))
                stop.wait(SAMPLE_S)

        def watchdog() -> None:
            if not stop.wait(timeout):
                proc.kill()

        threads = [threading.Thread(target=sample, daemon=True), threading.Thread(target=watchdog, daemon=True)]
        for t in threads:
            t.start()
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = rc = os.waitstatus_to_exitcode(status)
        stop.set()
        for t in threads:
            t.join()
    return wall, rc, peak, usage.ru_maxrss * 1024


def count_rows(out: Path) -> int:
    """Data rows of every result CSV under ``out``."""
    rows = 0
    for csv_file in sorted(out.glob("*.csv")):
        with open(csv_file, "rb") as fh:
            rows += max(0, sum(1 for _ in fh) - 1)
    return rows


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
def scenario_dir(args: argparse.Namespace, kind: str, entries: int | None = None) -> tuple[str, Path, dict[str, Any]]:
    """Name, directory and generation parameters of one scenario (``entries``: of a statistics scenario)."""
    if kind == "tensor":
        params = {"gb": args.gb}
        name = f"tensor-{args.gb:g}gb"
    elif kind == "statistics":
        entries = entries if entries is not None else args.entries[0]
        params = {"entries": entries}
        name = f"statistics-{entries}"
    else:
        params = {"entries": args.rank_entries, "ranks": args.ranks}
        name = f"ranks-{args.ranks}x{args.rank_entries}"
    return name, args.workdir / f"{name}-s{args.seed}", params


def ensure_scenario(args: argparse.Namespace, kind: str, entries: int | None = None) -> tuple[str, Path, dict[str, Any]]:
    """Generate the scenario's dumps unless a complete copy is already there."""
    name, root, params = scenario_dir(args, kind, entries)
    manifest = root / "manifest.json"
    if args.regen and root.exists():
        shutil.rmtree(root)
    if not manifest.is_file():
        if root.exists():
            shutil.rmtree(root)
        print(f"generating {name} under {root} …", flush=True)
        t0 = time.perf_counter()
        dumpgen.generate(kind, root, seed=args.seed, **params)
        print(f"  generated in {time.perf_counter() - t0:.1f} s", flush=True)
    info = json.loads(manifest.read_text())
    return name, root, info


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


def growth_table(runs: list[Run], names: list[str], infos: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Per size of the growth scenario: median wall, peaks, and the ratios to the first size."""
    table: list[dict[str, Any]] = []
    for name in names:
        mine = [r for r in runs if r.scenario == name and r.tool == "ours" and r.rc == 0]
        if not mine:
            continue
        entries = infos[name]["entries_per_side"]
        row = {"scenario": name, "entries": entries, "rows": mine[-1].rows,
               "wall_s_median": statistics.median(r.wall_s for r in mine),
               "max_rss_mib": max(r.max_rss_mib for r in mine), "tree_pss_mib": max(r.tree_pss_mib for r in mine)}
        row["us_per_entry"] = row["wall_s_median"] / entries * 1e6
        first = table[0] if table else row
        row["time_ratio"] = row["wall_s_median"] / first["wall_s_median"]
        row["entries_ratio"] = entries / first["entries"]
        row["growth"] = row["time_ratio"] / row["entries_ratio"]  # 1.0: linear; above: dearer per entry
        table.append(row)
    return table


def print_growth(table: list[dict[str, Any]]) -> None:
    """The growth curve: one line per size."""
    print("\n== growth (ours, statistics mode; median wall per size; growth = x time / x entries, 1.00 is linear)")
    print(f"   {'entries':>11} {'rows':>11} {'wall s':>9} {'us/entry':>9} {'x time':>8} {'x entries':>9} "
          f"{'growth':>7} {'max RSS MiB':>12} {'tree PSS MiB':>13}")
    for r in table:
        print(f"   {r['entries']:>11,} {r['rows']:>11,} {r['wall_s_median']:9.2f} {r['us_per_entry']:9.1f} "
              f"{r['time_ratio']:8.2f} {r['entries_ratio']:9.1f} {r['growth']:7.2f} {r['max_rss_mib']:12.0f} "
              f"{r['tree_pss_mib']:13.0f}", flush=True)


# --------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", action="append", choices=["tensor", "statistics", "ranks", "growth", "all"],
                   help="what to run (repeatable; default: all but growth). growth: ours only on statistics "
                        "dumps of every --entries size, then the curve (time and peak memory per size, ratios "
                        "to the first)")
    p.add_argument("--workdir", type=Path, default=Path(os.environ.get("MSPROBE_BENCH_DIR", "/tmp/msprobe-bench")),
                   help="where the generated dumps and outputs live (default /tmp/msprobe-bench)")
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
    p.add_argument("--timeout", type=float, default=3600, help="seconds before a run is killed")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--regen", action="store_true", help="regenerate the dumps even if present")
    p.add_argument("--no-check", action="store_true", help="skip the ours-vs-reference agreement check")
    p.add_argument("--keep-outputs", action="store_true", help="keep every run's output directory")
    p.add_argument("--json", type=Path, default=None, help="also write every run and the summary here")
    args = p.parse_args(argv)
    kinds = args.scenario or ["all"]
    if "all" in kinds:
        kinds = ["tensor", "statistics", "ranks", *(["growth"] if "growth" in kinds else [])]
    growth_sizes = args.entries
    if "growth" in kinds and not any(a == "--entries" or a.startswith("--entries=") for a in (argv or sys.argv[1:])):
        growth_sizes = [100_000, 1_000_000]
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

    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    print(f"machine: {usable} usable of {os.cpu_count()} cores, python {sys.version.split()[0]}; "
          f"tools: {', '.join(tools)}")
    if not args.ours_cmd:
        compile_ours()
    runs: list[Run] = []
    summary: dict[str, Any] = {}
    growth_names: list[str] = []
    infos: dict[str, dict[str, Any]] = {}
    for kind, entries, only, in_growth in cases:
        name, root, info = ensure_scenario(args, kind, entries)
        infos[name] = info
        if in_growth:
            growth_names.append(name)
        if name in summary:
            continue  # asked for twice (statistics and growth at one size): measured once
        case_tools = only or tools
        target, golden = root / "target" / "step0", root / "golden" / "step0"
        nbytes = info["bytes_both_sides"]
        print(f"\n== {name}: {info['ranks']} rank(s), {info['entries_per_side']:,} entries and "
              f"{info['tensor_rows_per_side']:,} tensors per side, {nbytes / 1e9:.3f} GB both sides")
        t0 = time.perf_counter()
        warm(root)
        print(f"   page cache warmed ({time.perf_counter() - t0:.1f} s)")
        last_out: dict[str, Path] = {}
        for rep in range(args.repeat):
            for tool in case_tools:
                out = args.workdir / "out" / f"{name}-{tool}-{rep}"
                if out.exists():
                    shutil.rmtree(out)
                out.mkdir(parents=True)
                cmd = tool_cmd(tool, args, target, golden, out)
                wall, rc, pss, rss = measure(cmd, out.parent / f"{out.name}.log", args.timeout, env)
                run = Run(tool, name, rep, wall, rc, count_rows(out), nbytes, pss / 2**20, rss / 2**20)
                runs.append(run)
                status = "" if rc == 0 else f"  EXIT {rc} (log: {out.parent / (out.name + '.log')})"
                print(f"   {tool:<9} run {rep + 1}: {wall:8.2f} s  {run.gbps:7.3f} GB/s  {run.rows_per_s:11,.0f} rows/s  "
                      f"tree PSS {run.tree_pss_mib:7.0f} MiB  max RSS {run.max_rss_mib:7.0f} MiB  "
                      f"rows {run.rows:,}{status}", flush=True)
                prev = last_out.get(tool)
                if prev is not None and not args.keep_outputs:
                    shutil.rmtree(prev, ignore_errors=True)
                last_out[tool] = out
        if only and not args.keep_outputs:  # a growth size: no agreement to check, and big outputs
            for out in last_out.values():
                shutil.rmtree(out, ignore_errors=True)
        best = {}
        for tool in case_tools:
            mine = [r for r in runs if r.scenario == name and r.tool == tool and r.rc == 0]
            if not mine:
                continue
            best[tool] = {
                "wall_s_median": statistics.median(r.wall_s for r in mine),
                "wall_s_best": min(r.wall_s for r in mine),
                "gbps_best": max(r.gbps for r in mine),
                "rows_per_s_best": max(r.rows_per_s for r in mine),
                "tree_pss_mib_peak": max(r.tree_pss_mib for r in mine),
                "max_rss_mib_peak": max(r.max_rss_mib for r in mine),
                "rows": mine[-1].rows,
            }
        if "ours" in best and "reference" in best:
            o, r = best["ours"], best["reference"]
            best["speedup_median"] = r["wall_s_median"] / o["wall_s_median"]
            best["memory_ratio_pss"] = o["tree_pss_mib_peak"] / r["tree_pss_mib_peak"] if r["tree_pss_mib_peak"] else None
            print(f"   => ours is {best['speedup_median']:.1f}x faster (median wall), "
                  f"{o['tree_pss_mib_peak']:.0f} vs {r['tree_pss_mib_peak']:.0f} MiB tree PSS "
                  f"({o['max_rss_mib_peak']:.0f} vs {r['max_rss_mib_peak']:.0f} MiB max RSS)")
            if not args.no_check:
                best["agreement"] = check_agreement(last_out["ours"], last_out["reference"])
                print(f"   results: {best['agreement']}")
        summary[name] = {"info": info, **best}
    growth = growth_table(runs, list(dict.fromkeys(growth_names)), infos) if growth_names else []
    if growth:
        print_growth(growth)
    if args.json:
        args.json.write_text(json.dumps({"runs": [asdict(r) | {"gbps": r.gbps, "rows_per_s": r.rows_per_s}
                                                   for r in runs], "summary": summary, "growth": growth}, indent=1))
    return 0 if all(r.rc == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
