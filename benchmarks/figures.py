#!/usr/bin/env python3
"""Every figure of ``docs/performance.md`` with one command, kept as JSON and printed as its tables.

``run`` measures, one piece after the other (each with :mod:`bench_compare`, under an
exclusive ``flock`` of ``--lock`` when given, so that it never overlaps another benchmark):

* ``growth-N``, one piece per size of ``--entries`` (default 100,000, 1,000,000 and 10,000,000
  entries per side): ours on the statistics pair of that size (time, CPU, µs per entry, peak
  memory both ways; a size over the time or memory budget is reported with what it had
  reached); the growth curve (ratios to the first completed size) is drawn from them all;
* ``ranks8``: 8 ranks × 12,500 entries (and msprobe on them, given ``--reference-cmd``); ``ranks1000``: 1,000 ranks × 10,000 entries (time,
  tree memory, the parent's peak RSS and its RSS over the run);
* ``reference``: ours and msprobe (``--reference-cmd``) on the 100,000-entry statistics pair and
  the 2 GB tensor pair, alternating, results checked cell by cell.

The JSON (``--json``) is rewritten (atomically) after every piece, so an interrupted run loses
at most the piece it was in: ``--resume`` keeps the pieces already recorded and measures only
the others (a piece whose tool failed, or that was skipped for lack of disk, is measured again;
one over its time or memory budget is a figure and is kept; ``--redo`` measures named pieces
again). ``--only`` picks pieces (``growth`` stands for every ``growth-N``). Then it prints the
markdown tables; ``table`` prints those of one or more such JSON files side by side (one
column each: before / after) and, with ``--doc``, writes them into ``docs/performance.md``::

    .venv/bin/python benchmarks/figures.py run --label "main 135f689" \\
        --workdir /work/bench-data --lock /work/bench.lock --resume \\
        --reference-cmd /work/venvs/msp-26.2.0/bin/msprobe --json benchmarks/results/main-135f689.json
    .venv/bin/python benchmarks/figures.py table benchmarks/results/main-135f689.json \\
        benchmarks/results/after.json --doc docs/performance.md

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

PIECES = ("growth", "ranks8", "ranks1000", "reference")  # growth: one growth-N piece per size


def piece_names(entries: str) -> list[str]:
    """Every piece, in the order they run: one ``growth-N`` per size of ``entries``, then the others."""
    return [f"growth-{n}" for n in bench_compare.entry_counts(entries)] + list(PIECES[1:])


def selected(only: list[str], entries: str) -> list[str]:
    """The pieces ``only`` names (``growth``: every size), in running order; ``SystemExit`` on an unknown one."""
    every = piece_names(entries)
    bad = [x for x in only if x not in every and x != "growth"]
    if bad:
        raise SystemExit(f"unknown piece(s) {', '.join(bad)}: choose from growth, {', '.join(every)}")
    return [x for x in every if x in only or ("growth" in only and x.startswith("growth-"))]


def finished(result: dict[str, Any]) -> bool:
    """Whether a recorded piece is a figure to keep on ``--resume`` (a budget stop is; a failure or a skip is not)."""
    if any(r["status"].startswith("exit") for r in result.get("runs", [])):
        return False
    return not any("skipped" in s for s in result.get("summary", {}).values())


def piece_argv(piece: str, args: argparse.Namespace) -> list[str] | None:
    """bench_compare's command line for one piece (``None``: the piece needs a reference it was not given)."""
    common = ["--workdir", str(args.workdir), "--repeat", str(args.repeat), "--timeout", str(args.timeout),
              "--mem-budget-gb", str(args.mem_budget_gb), "--keep-free-gb", str(args.keep_free_gb),
              "--drop-over-gb", str(args.drop_over_gb), "--sink-over-gb", str(args.sink_over_gb)]
    if piece.startswith("growth-"):
        return [*common, "--scenario", "growth", "--entries", piece.split("-", 1)[1]]
    if piece == "ranks8":  # small enough for msprobe too (~1.5 min): a ratio where one is available
        return [*common, "--scenario", "ranks", "--ranks", str(args.ranks), "--rank-entries", str(args.rank_entries),
                *(["--reference-cmd", args.reference_cmd] if args.reference_cmd else [])]
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


def write_json(path: Path, doc: dict[str, Any]) -> None:
    """Write ``doc`` to ``path`` atomically (a temporary file renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(path)


def run(args: argparse.Namespace) -> int:
    """Measure every piece asked for; write the JSON (after each piece) and print the tables."""
    doc: dict[str, Any] = {"label": args.label, "pieces": {}}
    if args.json.is_file() and args.resume:
        doc = json.loads(args.json.read_text())
    rc = 0
    redo = selected(args.redo, args.entries) if args.redo else []
    for piece in selected(args.only, args.entries):
        kept = doc["pieces"].get(piece)
        if kept and finished(kept) and piece not in redo:
            print(f"\n#### {piece}: kept from {args.json} (measured {kept.get('started', '?')})")
            continue
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
        doc["growth"] = growth_curve(doc)
        write_json(args.json, doc)
        part.unlink()
    print()
    print(tables([doc]))
    return rc


def growth_curve(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The growth curve over every ``growth-N`` piece of ``doc``, by size (ratios to the first completed size)."""
    parts = sorted((v for k, v in doc["pieces"].items() if k.startswith("growth")),
                   key=lambda v: min((g["entries"] for g in v.get("growth", [])), default=0))
    fields = set(bench_compare.Run.__dataclass_fields__)
    runs, names, infos, skipped = [], [], {}, {}
    for part in parts:
        runs += [bench_compare.Run(**{k: v for k, v in r.items() if k in fields}) for r in part.get("runs", [])]
        for g in part.get("growth", []):
            names.append(g["scenario"])
            info = part.get("summary", {}).get(g["scenario"], {}).get("info")
            if info:
                infos[g["scenario"]] = info
            if g["status"].startswith("skipped"):
                skipped[g["scenario"]] = g["status"]
    return bench_compare.growth_table(runs, list(dict.fromkeys(names)), infos, skipped)


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


def _core(machine: dict[str, Any]) -> str:
    """The commit of the code measured (the last one that touched the core or a plugin)."""
    return machine.get("core_commit") or machine.get("commit", "?")


def _mib(v: float | None) -> str:
    return "–" if v is None else f"{v:,.0f}"


def _growth_rows(doc: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {g["entries"]: g for g in growth_curve(doc)}


def _stat_cell(g: dict[str, Any] | None, first: dict[str, Any] | None) -> tuple[str, str]:
    """(time cell, memory cell) of one growth size."""
    if g is None:
        return "not measured", ""
    if g["status"] != "ok":
        if "wall_s_at_stop" not in g:
            return g["status"], ""
        return (f"**{g['status']}**: stopped after {g['wall_s_at_stop']:.0f} s (main process {g['cpu_s_at_stop']:.0f} s CPU)",
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
        reached = f", {run['result_files']:,} rank results written" if run.get("result_files") else ""
        return (f"**{why}**: stopped after {run['wall_s']:.0f} s (main process {run['cpu_s']:.0f} s CPU){reached}",
                f"tree {_mib(run['tree_pss_mib'])}, parent {_mib(run['parent_peak_rss_mib'])} at the stop")
    o = s["ours"]
    q = o.get("parent_rss_mib_quartiles")
    growth = f"; parent RSS at ¼ ½ ¾ end: {' / '.join(_mib(v) for v in q)}" if q else ""
    ratio = ""
    if "speedup_median" in s:
        r = s["reference"]
        ratio = (f"; **{s['speedup_median']:.1f}×** msprobe 26.2.0 ({r['wall_s_median']:.1f} s, tree "
                 f"{_mib(r['tree_pss_mib_peak'])} MiB; {s.get('agreement', '')})")
    return (f"{o['wall_s_median']:.1f} s / {o['cpu_s_median']:.1f} s CPU, {o['rows_per_s_best']:,.0f} rows/s{ratio}",
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
    heads = [f"{d.get('label', '?')} (core {_core(d.get('machine', {}))}, "
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
        lines += ["", f"Measured, {head}: " + "; ".join(
            f"{piece} {v.get('started', '?')[:16]} on core {_core(v.get('machine', {}))} (harness "
            f"{v.get('machine', {}).get('commit', '?')})" for piece, v in d["pieces"].items()) + "."]
    for d, head in zip(docs, heads):
        growth = growth_curve(d)
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
                   help="comma-separated pieces to measure: growth (every size) or growth-N, ranks8, ranks1000, "
                        "reference (default: all)")
    r.add_argument("--resume", action="store_true",
                   help="keep the pieces an existing --json already has and measure only the others")
    r.add_argument("--redo", default="", help="with --resume: comma-separated pieces to measure again all the same")
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
    args.redo = [x.strip() for x in args.redo.split(",") if x.strip()]
    try:
        selected(args.only + args.redo, args.entries)
    except SystemExit as e:
        p.error(str(e))
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
