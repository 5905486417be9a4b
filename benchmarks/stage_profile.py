#!/usr/bin/env python3
"""Where the time and the memory of one ``msprobe compare`` go, stage by stage.

Runs our compare in this process (``msprobe_core.cli.main``) with the engine's stage
functions wrapped, and prints one line per stage: wall and CPU seconds (this process,
plus the forked children it reaped during the stage: the target's load, the build of
the last rows), the process's peak RSS during the stage (``VmHWM`` after resetting it
through ``/proc/self/clear_refs`` at the stage's start) and its RSS at the end (what the
stage left behind). The stages:

* ``load``: both ``dump.json`` and ``stack.json`` (``pipeline.job.load_pair``);
* ``match``: name normalisation, the mapper, the dtype gate (``pipeline.whole.match_tables``);
* ``tail``: forking the child that builds and writes the last rows (``pipeline.whole._start_tail``);
* ``build``: metrics and verdicts of the whole result (``pipeline.build.build_result``);
* ``write``: the result file(s) (``pipeline.whole.write_result``, waiting for the tail child);
* ``summary``: the job's summary partial made from its result (``run.jobs.job_partial``); ``merge``: the
  partials (or, without them, the tables' views) added to the run's summary (``finish.add_outcomes``);
  ``view``: a table's view for the HTML report; ``format``: the console summary;
* ``report``: the HTML report, with ``--compare-args "--report html"``;
* ``other``: the rest of the run (start-up excluded: imports are done before the clock starts).

Nothing here changes what the compare does; ``--no-fork`` sets ``MSPROBE_NO_FORK=1`` (one
process: the CPU seconds are then the whole work of each stage).

Example::

    python benchmarks/stage_profile.py /work/bench-data/statistics-1000000-s0 --json stages.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STAGES = ("load", "match", "tail", "build", "write", "summary", "merge", "view", "format", "report")


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _reset_peak() -> bool:
    """Reset this process's peak RSS (``VmHWM``) to its current RSS; False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


class StageClock:
    """Wall, CPU (self + reaped children) and memory per stage; a stage called twice adds up."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, float]] = {}
        self.depth = 0
        self.can_reset = _reset_peak()
        #: stage name -> callable(args, kwargs) run before the stage's clock starts (not timed)
        self.before: dict[str, Callable[[tuple, dict], None]] = {}
        #: stage name -> callable(result) run after the stage's clock stopped (not timed)
        self.after: dict[str, Callable[[Any], None]] = {}

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        clock = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            if clock.depth:  # a stage inside a stage (build_result inside a runner): counted by the outer one
                return fn(*args, **kwargs)
            if name in clock.before:
                clock.before[name](args, kwargs)
            clock.depth += 1
            if clock.can_reset:
                _reset_peak()
            pid = os.getpid()
            w0, c0 = time.perf_counter(), time.process_time()
            ch0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            result = None
            try:
                result = fn(*args, **kwargs)
                return result
            finally:
                clock.depth -= 1
                if os.getpid() == pid:  # not in a forked child that runs the same stage on a part
                    ch1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    rec = clock.records.setdefault(name, {"wall_s": 0.0, "cpu_s": 0.0, "child_cpu_s": 0.0,
                                                          "peak_rss_mib": 0.0, "rss_after_mib": 0.0, "calls": 0,
                                                          "minor_faults": 0})
                    rec["wall_s"] += time.perf_counter() - w0
                    rec["cpu_s"] += time.process_time() - c0
                    rec["child_cpu_s"] += (ch1.ru_utime + ch1.ru_stime) - (ch0.ru_utime + ch0.ru_stime)
                    rec["peak_rss_mib"] = max(rec["peak_rss_mib"], _status_kib("VmHWM") / 1024)
                    rec["rss_after_mib"] = _status_kib("VmRSS") / 1024
                    rec["calls"] += 1
                    rec["minor_faults"] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0
                    if name in clock.after and result is not None:
                        clock.after[name](result)

        return timed


# --------------------------------------------------------------------------- memory per structure
def _item_sizes(values: Any, seen: set[int]) -> int:
    """Bytes of the distinct objects among ``values`` (an object shared by several cells counted once; a
    container already counted in another structure, ``seen``, not again)."""
    distinct = {id(v): v for v in values}
    total = 0
    for key, v in distinct.items():
        if isinstance(v, (list, tuple, dict)):
            if key not in seen:
                seen.add(key)
                total += deep_size(v, seen)
        else:
            total += sys.getsizeof(v)
    return total


def deep_size(obj: Any, seen: set[int] | None = None) -> int:
    """Bytes ``obj`` holds: the object, its items and attributes, numpy buffers (an item shared inside a
    container counted once; a container listed in ``seen`` was counted elsewhere)."""
    import numpy as np

    seen = set() if seen is None else seen
    if isinstance(obj, np.ndarray):
        return obj.nbytes + (obj.base.nbytes if isinstance(obj.base, np.ndarray) and obj.base is not obj else 0)
    if isinstance(obj, (list, tuple)):
        return sys.getsizeof(obj) + _item_sizes(obj, seen)
    if isinstance(obj, dict):
        return sys.getsizeof(obj) + _item_sizes(obj.keys(), seen) + _item_sizes(obj.values(), seen)
    if isinstance(obj, (str, bytes, int, float, bool)) or obj is None:
        return sys.getsizeof(obj)
    total = sys.getsizeof(obj)
    attrs: list[Any] = []
    for klass in type(obj).__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if hasattr(obj, slot):
                attrs.append(getattr(obj, slot))
    if hasattr(obj, "__dict__"):
        attrs.extend(vars(obj).values())
    return total + sum(deep_size(a, seen) for a in attrs)


def structure_sizes(target: Any, golden: Any, match: Any, table: Any) -> dict[str, float]:
    """MiB held by each structure of a compare once the result is built (the dump tables, the pairs,
    the result's own columns: a result column that *is* a dump table's column is not counted again, nor
    a nested container two structures share; a scalar shared by two structures is counted in each)."""
    from msprobe_core.model import ROW_COLUMNS

    mib = 1 / 2**20
    sizes: dict[str, float] = {}
    owned: set[int] = set()
    seen: set[int] = set()  # nested containers (stack lines…) are counted in the first structure holding them
    for side, t in (("target", target), ("golden", golden)):
        sizes[f"{side}.apis ({len(t.apis):,} ApiEntry)"] = deep_size(t.apis, seen) * mib
        for col in ROW_COLUMNS:
            values = getattr(t, col)
            owned.add(id(values))
            sizes[f"{side}.{col}"] = deep_size(values, seen) * mib
        if t.stack is not None:
            sizes[f"{side}.stack"] = deep_size(t.stack, seen) * mib
    sizes["match.target"] = deep_size(match.target, seen) * mib
    sizes["match.golden"] = deep_size(match.golden, seen) * mib
    sizes["result.group_of_row"] = deep_size(table.group_of_row, seen) * mib
    for name in table.columns:
        column = table.data[name]
        kind = type(column).__name__
        if id(column) in owned:
            sizes[f"result[{name}] (shares the dump table's {kind})"] = 0.0
        else:
            sizes[f"result[{name}] ({kind})"] = deep_size(column, seen) * mib
    return sizes


def install(clock: StageClock) -> Callable[[], None]:
    """Wrap the engine's and the summary's stage functions (module attributes, as they are looked up);
    returns the function that puts the originals back."""
    import msprobe_core.plugin as plugin_api
    from msprobe_core.default_plugins.report import html as report
    from msprobe_core.default_plugins.summary import finish
    from msprobe_core.pipeline import build, whole
    from msprobe_core.pipeline import job as engine
    from msprobe_core.run import jobs

    saved: list[tuple[Any, str, Any]] = []
    for module, stages in ((engine, (("load", "load_pair"),)),
                           (whole, (("match", "match_tables"), ("tail", "_start_tail"), ("write", "write_result"))),
                           (build, (("build", "build_result"),)),
                           (plugin_api, (("build", "build_result"),)),  # the chunked plugin builds through it
                           (jobs, (("summary", "job_partial"),)),
                           (finish, (("merge", "add_outcomes"), ("view", "view_from_table"),
                                     ("format", "format_summary"))),
                           (report, (("report", "write_report"),))):
        for name, attr in stages:
            original = getattr(module, attr)
            saved.append((module, attr, module.__dict__.get(attr)))
            setattr(module, attr, clock.wrap(name, original))

    from msprobe_core.default_plugins.chunked import chunking, csvparts, streamed
    from msprobe_core.write import stage as write_stage

    for owner, name, attr in ((streamed, "match", "match_indexes"), (write_stage, "write", "write_result"),
                              (chunking.ChunkSource, "read", "tables"), (csvparts.ChunkedResult, "write", "append")):
        saved.append((owner, attr, owner.__dict__.get(attr)))
        setattr(owner, attr, clock.wrap(name, getattr(owner, attr)))

    def restore() -> None:
        for module, attr, original in saved:
            if original is None:
                delattr(module, attr)
            else:
                setattr(module, attr, original)

    return restore


def profile(root: Path, out: Path, extra: list[str], sizes: bool = False) -> dict[str, Any]:
    """Compare ``root/target/step0`` with ``root/golden/step0`` into ``out``; the stage records and totals.

    ``sizes``: also measure the memory of each structure once the result is built (before the write,
    outside every stage's clock; slow on millions of rows).
    """
    from msprobe_core.cli.main import main

    clock = StageClock()
    restore = install(clock)
    held: dict[str, Any] = {}
    measured: dict[str, float] = {}
    spent = {"wall_s": 0.0, "cpu_s": 0.0}  # measuring the structures: not part of the run
    whole_env = os.environ.get("MSPROBE_WHOLE_TABLES")
    if sizes:  # the structures of the whole-table path (a streamed compare holds one chunk at a time)
        os.environ["MSPROBE_WHOLE_TABLES"] = "1"
        clock.after["load"] = lambda pair: held.update(tables=pair)
        clock.after["match"] = lambda match: held.update(match=match)

        def measure(args: tuple, kwargs: dict) -> None:
            if "tables" in held and "match" in held and not measured:
                t0, c0 = time.perf_counter(), time.process_time()
                measured.update(structure_sizes(*held["tables"], held["match"], args[0]))
                spent["wall_s"] += time.perf_counter() - t0
                spent["cpu_s"] += time.process_time() - c0
            held.clear()

        clock.before["write"] = measure
    target, golden = root / "target" / "step0", root / "golden" / "step0"
    ranks = sorted(p.name for p in target.iterdir() if p.is_dir())
    if len(ranks) == 1:  # one rank: the dump files themselves, as a user compares one pair
        target, golden = target / ranks[0] / "dump.json", golden / ranks[0] / "dump.json"
    _reset_peak()
    w0, c0 = time.perf_counter(), time.process_time()
    ch0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        rc = main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(out), "-q", *extra])
    finally:
        restore()
        if sizes and whole_env is None:
            os.environ.pop("MSPROBE_WHOLE_TABLES", None)
    ch1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = {
        "wall_s": time.perf_counter() - w0 - spent["wall_s"],
        "cpu_s": time.process_time() - c0 - spent["cpu_s"],
        "child_cpu_s": (ch1.ru_utime + ch1.ru_stime) - (ch0.ru_utime + ch0.ru_stime),
        # the stages reset the peak: the run's peak is the largest of theirs and of what followed them
        "peak_rss_mib": max([_status_kib("VmHWM") / 1024, *(r["peak_rss_mib"] for r in clock.records.values())]),
        "children_peak_rss_mib": ch1.ru_maxrss / 1024,
    }
    rows = 0
    for f in sorted(out.glob("*.csv")):
        with open(f, "rb") as fh:
            rows += sum(1 for _ in fh) - 1
    return {"rc": rc, "rows": rows, "stages": clock.records, "total": total, "sizes_mib": measured}


#: a streamed compare's own stages: ``read``: pass 2, the entries of each chunk (``ChunkSource.tables``);
#: its ``match`` is ``streamed.match_indexes``, its ``build`` each chunk's, its ``write`` each chunk's append
STREAMED_STAGES = ("read",)


def print_profile(name: str, result: dict[str, Any]) -> None:
    """One line per stage, then the total."""
    stages, total = result["stages"], result["total"]
    print(f"== {name}: exit {result['rc']}, {result['rows']:,} result rows")
    print(f"   {'stage':<8} {'wall s':>8} {'cpu s':>8} {'child cpu':>9} {'peak RSS':>9} {'RSS after':>9} "
          f"{'faults':>9}  (RSS in MiB, minor page faults in thousands)")
    known = {"wall_s": 0.0, "cpu_s": 0.0, "child_cpu_s": 0.0}
    for stage in (*STAGES, *STREAMED_STAGES):
        rec = stages.get(stage)
        if rec is None:
            continue
        for k in known:
            known[k] += rec[k]
        print(f"   {stage:<8} {rec['wall_s']:8.2f} {rec['cpu_s']:8.2f} {rec['child_cpu_s']:9.2f} "
              f"{rec['peak_rss_mib']:9.0f} {rec['rss_after_mib']:9.0f} {rec['minor_faults'] / 1000:9.0f}")
    print(f"   {'other':<8} {total['wall_s'] - known['wall_s']:8.2f} {total['cpu_s'] - known['cpu_s']:8.2f} "
          f"{total['child_cpu_s'] - known['child_cpu_s']:9.2f}")
    print(f"   {'total':<8} {total['wall_s']:8.2f} {total['cpu_s']:8.2f} {total['child_cpu_s']:9.2f} "
          f"{total['peak_rss_mib']:9.0f}   (children's peak {total['children_peak_rss_mib']:.0f})", flush=True)
    if result.get("sizes_mib"):
        sizes = result["sizes_mib"]
        print(f"   memory per structure once the result is built: {sum(sizes.values()):,.0f} MiB in all")
        for name, mib in sorted(sizes.items(), key=lambda kv: -kv[1]):
            if mib >= 0.5 or "shares" in name:
                print(f"     {mib:9.1f}  {name}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", type=Path, help="a generated scenario directory (target/step0, golden/step0)")
    p.add_argument("--no-fork", action="store_true", help="run everything in this process (MSPROBE_NO_FORK=1)")
    p.add_argument("--compare-args", default="", help="extra arguments for the compare (e.g. '--report html')")
    p.add_argument("--sizes", action="store_true", help="also measure the memory of each structure of the whole-table path (slow)")
    p.add_argument("--json", type=Path, default=None, help="also write the records here")
    p.add_argument("--keep-output", type=Path, default=None, help="write the result here and keep it")
    args = p.parse_args(argv)
    os.environ["MSPROBE_NO_PROGRESS"] = "1"
    if args.no_fork:
        os.environ["MSPROBE_NO_FORK"] = "1"
    import msprobe_core.cli.main  # noqa: F401 - imports before the clock starts
    import msprobe_core.default_plugins.summary.finish  # noqa: F401
    import msprobe_core.pipeline.job  # noqa: F401

    with tempfile.TemporaryDirectory(prefix="msprobe-stages-") as tmp:
        out = args.keep_output or Path(tmp) / "out"
        result = profile(args.scenario, out, args.compare_args.split(), args.sizes)
    print_profile(args.scenario.name + (" (no fork)" if args.no_fork else ""), result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0 if result["rc"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
