#!/usr/bin/env python3
"""The sampled HTML report of a big result file, made chunk by chunk: page size, CPU time, peak RSS.

Reads a compare result CSV in blocks of rows (never the whole table), feeds each block to a
:class:`~msprobe_core.default_plugins.report.sampling.ViewSampler` as a
:class:`~msprobe_core.default_plugins.summary.chunks.ResultChunk`, and writes the report page from the sample
(``write_report(..., samples=...)``). This measures what the sampled report itself costs, apart from
reading a whole result into memory (``msprobe report`` reads whole files until the report reads
chunks; its summary is built from the whole views).

The summary on the page here is a stand-in: the sample's own summary with the whole result's row
and verdict counts and its first divergence mapped back to the whole result (an incremental summary
is another part of the streaming work). Everything else on the page is what a run would show.

Example::

    python benchmarks/report_sample.py /work/bench-data/out/compare_result_rank0_*.csv --out report.html
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("result", type=Path, nargs="+", help="a compare result CSV, or its _part_N files in order")
    p.add_argument("--out", type=Path, required=True, help="the report page to write")
    p.add_argument("--rows", type=int, default=65536, help="rows per chunk")
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = p.parse_args(argv)

    from msprobe_core.default_plugins.report.html import write_report
    from msprobe_core.default_plugins.report.sampling import Budget, ViewSampler
    from msprobe_core.default_plugins.summary.chunks import ResultChunk
    from msprobe_core.default_plugins.summary.result_files import label_from_path
    from msprobe_core.default_plugins.summary.summary import summarize
    from msprobe_core.default_plugins.summary.views import detect_mode, guess_frameworks

    t0, c0 = time.perf_counter(), time.process_time()
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    sampler = ViewSampler(Budget())
    files = list(args.result)
    label = label_from_path(files[0])
    frameworks, start = None, 0
    for path in files:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            columns = next(reader)
            mode = detect_mode(columns)
            while True:
                block = [row for _, row in zip(range(args.rows), reader) if row]
                if not block and start:
                    break
                cells = {c: list(col) for c, col in zip(columns, zip(*block))} if block else {c: [] for c in columns}
                if frameworks is None:
                    frameworks = guess_frameworks(cells, mode)
                sampler.feed(ResultChunk(label, mode, columns, cells, files, frameworks, start=start))
                start += len(block)
                if not block:
                    break
    sample = sampler.finish()
    c_sampled = time.process_time()

    summary = summarize([sample.view()], files=[args.out])  # the stand-in (see the module's doc)
    summary["rows"] = sample.total
    summary["verdicts"] = dict(sample.verdicts)
    for fd in [summary.get("first_divergence"), *summary.get("first_divergence_by_rank", [])]:
        if fd:
            fd["index"] = sample.positions[fd["index"]]
    write_report([], summary, args.out, samples=[sample])
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    figures = {
        "result": [str(f) for f in files], "rows": sample.total, "rows_shown": len(sample.positions),
        "chunk_rows": args.rows, "page_bytes": args.out.stat().st_size,
        "cpu_s": round(cpu, 2), "cpu_sampling_s": round(c_sampled - c0, 2), "wall_s": round(wall, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print(json.dumps(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
