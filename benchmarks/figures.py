#!/usr/bin/env python3
"""Every figure of ``docs/performance.md`` with one command, kept as JSON and printed as its tables.

``run`` measures, one piece after the other (each with :mod:`bench_compare`, under an
exclusive ``flock`` of ``--lock`` when given, so that it never overlaps another benchmark):

* ``growth``: ours on statistics pairs of 100,000, 1,000,000 and 10,000,000 entries per side
  (time, CPU, µs per entry, peak memory both ways, ratios to the first size; a size over the
  time or memory budget is reported with what it had reached);
* ``ranks8``: 8 ranks × 12,500 entries; ``ranks1000``: 1,000 ranks × 10,000 entries (time,
  tree memory, the parent's peak RSS and its RSS over the run);
* ``reference``: ours and msprobe (``--reference-cmd``) on the 100,000-entry statistics pair and
  the 2 GB tensor pair, alternating, results checked cell by cell.

It writes one JSON (``--json``) and prints the markdown tables. ``table`` prints the tables of
one or more such JSON files side by side (one column each: before / after)::

    flock /work/bench.lock true  # (the lock is taken piece by piece with --lock)
    .venv/bin/python benchmarks/figures.py run --label "main 135f689" \\
        --workdir /work/bench-data --lock /work/bench.lock \\
        --reference-cmd /work/venvs/msp-26.2.0/bin/msprobe --json benchmarks/results/baseline.json
    .venv/bin/python benchmarks/figures.py table benchmarks/results/baseline.json benchmarks/results/final.json

The big pairs (10M entries, 1,000 ranks: ~22 GB each, golden ``stack.json`` a hard link to the
target's) are deleted once measured (``--drop-over-gb``, default 10), so they never sit on disk
together, and their results (~19 GB of CSV each) are deleted file by file as they are finished
(``--sink-over-gb``, default 5; see ``bench_compare.ResultSink``).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_compare  # noqa: E402

PIECES = ("growth", "ranks8", "ranks1000", "reference")


def piece_argv(piece: str, args: argparse.Namespace) -> list[str] | None:
    """bench_compare's command line for one piece (``None``: the piece needs a reference it was not given)."""
    common = ["--workdir", str(args.workdir), "--repeat", str(args.repeat), "--timeout", str(args.timeout),
              "--mem-budget-gb", str(args.mem_budget_gb), "--keep-free-gb", str(args.keep_free_gb),
              "--drop-over-gb", str(args.drop_over_gb), "--sink-over-gb", str(args.sink_over_gb)]
    if piece == "growth":
        return [*common, "--scenario", "growth", "--entries", args.entries]
    if piece == "ranks8":
        return [*common, "--scenario", "ranks", "--ranks", str(args.ranks), "--rank-entries", str(args.rank_entries)]
    if piece == "ranks1000":
        return [*common, "--scenario", "ranks", "--ranks", str(args.big_ranks), "--rank-entries",
                str(args.big_rank_entries)]
    if not args.reference_cmd:
        return None
    return [*common, "--scenario", "statistics", "--scenario", "tensor", "--entries", str(args.reference_entries),
            "--gb", str(args.reference_gb), "--reference-cmd", args.reference_cmd]


@contextlib.contextmanager
def exclusive(lock: Path | None) -> Iterator[None]:
    """Hold ``lock`` (``flock``, as the shell's ``flock LOCK cmd``) while the block runs."""
    if lock is None:
        yield
        return
    with open(lock, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"(waiting for {lock} …)", flush=True)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def run(args: argparse.Namespace) -> int:
    """Measure every piece asked for; write the JSON (after each piece) and print the tables."""
    doc: dict[str, Any] = {"label": args.label, "pieces": {}}
    if args.json.is_file() and args.resume:
        doc = json.loads(args.json.read_text())
    rc = 0
    for piece in args.only:
        argv = piece_argv(piece, args)
        if argv is None:
            print(f"\n#### {piece}: skipped (needs --reference-cmd)")
            continue
        part = args.json.with_name(args.json.stem + f".{piece}.part.json")
        print(f"\n#### {piece}: bench_compare.py {' '.join(argv)}", flush=True)
        with exclusive(args.lock):
            started = time.strftime("%Y-%m-%d %H:%M:%S %z")
            rc |= bench_compare.main([*argv, "--json", str(part)])
        result = json.loads(part.read_text())
        result["started"] = started
        doc["pieces"][piece] = result
        doc.setdefault("machine", result["machine"])
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
        part.unlink()
    print()
    print(tables([doc]))
    return rc


# --------------------------------------------------------------------------- tables
BEGIN, END = "<!-- figures.py table: begin -->", "<!-- figures.py table: end -->"


def update_doc(doc: Path, text: str) -> None:
    """Put ``text`` between the ``BEGIN``/``END`` marks of ``doc`` (the rest of the page is untouched)."""
    page = doc.read_text()
    if page.count(BEGIN) != 1 or page.count(END) != 1 or page.index(BEGIN) > page.index(END):
        raise SystemExit(f"{doc}: needs one {BEGIN} … {END} block")
    head, rest = page.split(BEGIN)
    tail = rest.split(END)[1]
    doc.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")
    print(f"(tables written into {doc})")


def _mib(v: float | None) -> str:
    return "–" if v is None else f"{v:,.0f}"


def _growth_rows(doc: dict[str, Any]) -> dict[int, dict[str, Any]]:
    growth = doc["pieces"].get("growth", {}).get("growth", [])
    return {g["entries"]: g for g in growth}


def _stat_cell(g: dict[str, Any] | None, first: dict[str, Any] | None) -> tuple[str, str]:
    """(time cell, memory cell) of one growth size."""
    if g is None:
        return "not measured", ""
    if g["status"] != "ok":
        if "wall_s_at_stop" not in g:
            return g["status"], ""
        return (f"**{g['status']}**: stopped after {g['wall_s_at_stop']:.0f} s ({g['cpu_s_at_stop']:.0f} s CPU)",
                f"{_mib(g['max_rss_mib'])} / {_mib(g['tree_pss_mib_at_stop'])} at the stop")
    ratio = "" if g is first else f" (×{g['time_ratio']:.1f} wall, ×{g['cpu_ratio']:.1f} CPU for ×{g['entries_ratio']:g} entries)"
    return (f"{g['wall_s_median']:.1f} s / {g['cpu_s_median']:.1f} s CPU, {g['us_per_entry']:.0f} µs/entry{ratio}",
            f"{_mib(g['max_rss_mib'])} / {_mib(g['tree_pss_mib'])}")


def _ranks_cells(doc: dict[str, Any], piece: str) -> tuple[str, str]:
    result = doc["pieces"].get(piece)
    if not result:
        return "not measured", ""
    (name, s), = [(k, v) for k, v in result["summary"].items()]
    if "ours" not in s:
        why = s.get("skipped") or s.get("failed", {}).get("ours", "failed")
        run = next((r for r in result["runs"] if r["scenario"] == name and r["tool"] == "ours"), None)
        if run is None:
            return str(why), ""
        return (f"**{why}**: stopped after {run['wall_s']:.0f} s ({run['cpu_s']:.0f} s CPU)",
                f"tree {_mib(run['tree_pss_mib'])}, parent {_mib(run['parent_peak_rss_mib'])} at the stop")
    o = s["ours"]
    q = o.get("parent_rss_mib_quartiles")
    growth = f"; parent RSS at ¼ ½ ¾ end: {' / '.join(_mib(v) for v in q)}" if q else ""
    return (f"{o['wall_s_median']:.1f} s / {o['cpu_s_median']:.1f} s CPU, {o['rows_per_s_best']:,.0f} rows/s",
            f"tree {_mib(o['tree_pss_mib_peak'])}, max RSS {_mib(o['max_rss_mib_peak'])}, "
            f"parent {_mib(o['parent_peak_rss_mib'])}{growth}")


def _reference_cells(doc: dict[str, Any], prefix: str) -> tuple[str, str]:
    result = doc["pieces"].get("reference")
    if not result:
        return "not measured", ""
    found = [(k, v) for k, v in result["summary"].items() if k.startswith(prefix)]
    if not found or "speedup_median" not in found[0][1]:
        return "not measured", ""
    s = found[0][1]
    o, r = s["ours"], s["reference"]
    extra = f", ours {o['gbps_best']:.2f} GB/s" if prefix == "tensor" else ""
    return (f"**{s['speedup_median']:.1f}×** wall ({o['wall_s_median']:.1f} vs {r['wall_s_median']:.1f} s), "
            f"{s['speedup_cpu']:.1f}× CPU{extra}; {s.get('agreement', '')}",
            f"{_mib(o['max_rss_mib_peak'])} vs {_mib(r['max_rss_mib_peak'])} max RSS "
            f"({s['memory_ratio_rss']:.2f}×), {_mib(o['tree_pss_mib_peak'])} vs {_mib(r['tree_pss_mib_peak'])} "
            f"tree PSS")


def tables(docs: list[dict[str, Any]]) -> str:
    """The markdown of the current-figures table (one column pair per JSON) and each JSON's growth curve."""
    heads = [f"{d.get('label', '?')} ({d.get('machine', {}).get('commit', '?')}, "
             f"{d.get('machine', {}).get('date', '?')[:10]})" for d in docs]
    lines = ["| figure | target (issue 15) | " + " | ".join(f"{h}: time | memory (MiB)" for h in heads) + " |",
             "|---|---|" + "---|---|" * len(docs)]
    rows: list[tuple[str, str, list[tuple[str, str]]]] = []
    sizes = sorted({e for d in docs for e in _growth_rows(d)})
    for entries in sizes:
        target = {1_000_000: "≤ 11× the 100k time; ≤ 1 GB peak RSS",
                  10_000_000: "completes; ≤ 1.5 GB peak RSS"}.get(entries, "")
        cells = []
        for d in docs:
            g = _growth_rows(d)
            first = next((r for r in g.values() if r["status"] == "ok"), None)
            cells.append(_stat_cell(g.get(entries), first))
        rows.append((f"statistics, {entries:,} entries per side", target, cells))
    for piece, target in (("ranks8", ""), ("ranks1000", "completes; memory bounded by one rank pair per worker")):
        info = next((v["info"] for d in docs for v in d["pieces"].get(piece, {}).get("summary", {}).values()
                     if "info" in v), None)
        figure = f"{info['ranks']:,} ranks × {info['entries_per_side'] // info['ranks']:,} entries" if info else piece
        rows.append((figure, target, [_ranks_cells(d, piece) for d in docs]))
    rows.append(("vs msprobe 26.2.0: statistics, 100,000 entries", "≥ 20×",
                 [_reference_cells(d, "statistics") for d in docs]))
    rows.append(("vs msprobe 26.2.0: tensor, 2 GB", "≥ 10× and ≥ 1.5 GB/s",
                 [_reference_cells(d, "tensor") for d in docs]))
    for figure, target, cells in rows:
        lines.append(f"| {figure} | {target} | " + " | ".join(f"{a} | {b}" for a, b in cells) + " |")
    lines.append("")
    lines.append("Memory cells: max RSS / tree PSS in MiB, unless named.")
    for d, head in zip(docs, heads):
        growth = d["pieces"].get("growth", {}).get("growth", [])
        if not growth:
            continue
        lines += ["", f"Growth curve, {head}:", "",
                  "| entries per side | result rows | wall (s) | CPU (s) | µs/entry (wall) | µs/entry (CPU) | "
                  "× wall | × CPU | × entries | growth (× wall / × entries) | max RSS (MiB) | tree PSS (MiB) |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for g in growth:
            if g["status"] != "ok":
                lines.append(f"| {g['entries']:,} | {_stat_cell(g, None)[0]} | | | | | | | | | "
                             f"{_mib(g.get('max_rss_mib'))} | {_mib(g.get('tree_pss_mib_at_stop'))} |")
                continue
            lines.append(f"| {g['entries']:,} | {g['rows']:,} | {g['wall_s_median']:.1f} | {g['cpu_s_median']:.1f} | "
                         f"{g['us_per_entry']:.1f} | {g['cpu_us_per_entry']:.1f} | {g['time_ratio']:.2f} | "
                         f"{g['cpu_ratio']:.2f} | {g['entries_ratio']:g} | {g['growth']:.2f} | "
                         f"{_mib(g['max_rss_mib'])} | {_mib(g['tree_pss_mib'])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="measure every figure and write the JSON")
    r.add_argument("--json", type=Path, required=True, help="where the figures go (benchmarks/results/…)")
    r.add_argument("--label", default="figures", help="the column's name in the tables (e.g. 'main 135f689')")
    r.add_argument("--only", default=",".join(PIECES),
                   help=f"comma-separated pieces to measure (default: all of {', '.join(PIECES)})")
    r.add_argument("--resume", action="store_true", help="add the pieces to an existing --json instead of replacing it")
    r.add_argument("--workdir", type=Path, default=bench_compare.parse_args([]).workdir,
                   help="where the pairs are generated and cached (as bench_compare's --workdir)")
    r.add_argument("--reference-cmd", default=None, help="msprobe 26.2.0's command (the reference piece)")
    r.add_argument("--reference-entries", type=int, default=100_000,
                   help="the reference piece's statistics pair (default 100000)")
    r.add_argument("--reference-gb", type=float, default=2.0, help="the reference piece's tensor pair, GB (default 2)")
    r.add_argument("--entries", default="100000,1000000,10000000", help="growth sizes (default 100k, 1M, 10M)")
    r.add_argument("--ranks", type=int, default=8, help="ranks of the ranks8 piece (default 8)")
    r.add_argument("--rank-entries", type=int, default=12_500, help="its entries per rank (default 12500)")
    r.add_argument("--big-ranks", type=int, default=1000, help="ranks of the ranks1000 piece (default 1000)")
    r.add_argument("--big-rank-entries", type=int, default=10_000, help="its entries per rank (default 10000)")
    r.add_argument("--repeat", type=int, default=1, help="runs per tool and scenario (default 1)")
    r.add_argument("--timeout", type=float, default=3600, help="time budget of one run, seconds (default 3600)")
    r.add_argument("--mem-budget-gb", type=float, default=12.0, help="memory budget of one run, GiB tree PSS (default 12)")
    r.add_argument("--keep-free-gb", type=float, default=15.0, help="GB of disk left free (default 15)")
    r.add_argument("--drop-over-gb", type=float, default=10.0, help="delete generated pairs above this size once measured")
    r.add_argument("--sink-over-gb", type=float, default=5.0,
                   help="results larger than this are deleted file by file as they are finished (default 5)")
    r.add_argument("--lock", type=Path, default=None, help="flock this file around each piece (e.g. /work/bench.lock)")
    t = sub.add_parser("table", help="print the markdown tables of one or more figures JSON files, side by side")
    t.add_argument("files", type=Path, nargs="+")
    t.add_argument("--doc", type=Path, default=None,
                   help=f"also write them into this page, between {BEGIN} and {END} (docs/performance.md)")
    args = p.parse_args(argv)
    if args.command == "table":
        text = tables([json.loads(f.read_text()) for f in args.files])
        print(text)
        if args.doc:
            update_doc(args.doc, text)
        return 0
    args.only = [x.strip() for x in args.only.split(",") if x.strip()]
    bad = [x for x in args.only if x not in PIECES]
    if bad:
        p.error(f"unknown piece(s) {', '.join(bad)}: choose from {', '.join(PIECES)}")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
