#!/usr/bin/env python3
"""Benchmark: highlight a synthetic classic (msprobe 8.3.3) statistics result of N rows.

    python benchmarks/bench_highlight.py [--rows 1000000] [--write OUT.xlsx] [--write-core OUT.xlsx]

Builds a result table of ``rows`` rows (APIs of 2 inputs + 1 parameter + 1 output; a third of the
outputs break a red or yellow rule, some rows have inconsistent requires_grad), then times

* ``highlight``: every rule of spec compare-legacy.md §7 over all rows, and the Err_message update;
* ``write`` (with ``--write``): the classic workbook with its fills, continued on further sheets
  past 1,048,500 rows (``msprobe_core.default_plugins.xlsx.stream``, the streaming writer);
* ``write_core`` (with ``--write-core``): the same table through the core ``--xlsx`` writer
  (``msprobe_core.default_plugins.xlsx.workbook.write_xlsx``, same streaming writer, no fills).

Prints one ``name: seconds`` line per stage (``*_cpu``: CPU seconds of this process, every thread
counted, which leaves out time lost to other processes on a busy machine) and the row/colour counts.

Measured on the 2-core development machine while other jobs kept it busy (load 5-8: wall times are
pessimistic, CPU seconds are the steadier figure), 27 columns, statistics mode, about 8% of the rows
red and 8% yellow:

=========  ========================================  ==========================================
rows       openpyxl write-only (before)               xlsx_stream (after)
=========  ========================================  ==========================================
100,000    write 80 s (34 s CPU), core 74 s (26)      write 4-7 s (2.6 s CPU), core 6 s (2.2)
1,000,000  write 38 min at load 10 (382 s CPU)        write 33-47 s (20 s CPU, 126 MB), core 20 s CPU
=========  ========================================  ==========================================
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from msprobe_classic.highlight import apply_messages, find_rows  # noqa: E402
from msprobe_classic.table import header  # noqa: E402


@dataclass
class SyntheticTable:
    """A classic statistics table: its columns and cells, and each row's API key and state."""

    columns: list[str]
    data: dict[str, list]
    api_key: list[str]
    state: list[str]

    def __len__(self) -> int:
        return len(self.api_key)

    def rows(self):
        return zip(*(self.data[c] for c in self.columns))


def synthetic_table(rows: int) -> SyntheticTable:
    """A statistics-mode classic table with ``rows`` rows (rounded down to whole APIs of 4 rows)."""
    cols = header("statistics", False)
    n_api = max(1, rows // 4)
    states = ["input", "input", "parameters", "output"]
    data: dict[str, list] = {}
    names, keys, state_col = [], [], []
    for a in range(n_api):
        key = f"Functional.op{a % 97}.{a}.forward"
        keys.extend([key] * 4)
        state_col.extend(states)
        names.extend([f"{key}.input.0", f"{key}.input.1", f"{key}.parameters.weight", f"{key}.output.0"])
    n = len(names)
    data["NPU Name"] = names
    data["Bench Name"] = list(names)
    for c in ("NPU Dtype", "Bench Dtype"):
        data[c] = ["torch.float32"] * n
    for c in ("NPU Tensor Shape", "Bench Tensor Shape"):
        data[c] = ["[2, 8, 32]"] * n
    for c in ("NPU Requires_grad", "Bench Requires_grad"):
        data[c] = ["True"] * n
    kind = [a % 3 for a in range(n_api)]  # 0 clean, 1 red (rel > 0.5), 2 yellow (order of magnitude)
    max_diff, rel = [], []
    for k in kind:
        if k == 2:
            max_diff.extend([2.0, 2.0, 0.0, 50.0])
        else:
            max_diff.extend([0.001, 0.002, 0.0, 0.003])
        rel.extend(["0.1%", "0.2%", "0.0%", "80.0%" if k == 1 else "0.3%"])
    data["Max diff"] = max_diff
    for c in ("Min diff", "Mean diff", "L2norm diff"):
        data[c] = [0.0] * n
    data["MaxRelativeErr"] = rel
    for c in ("MinRelativeErr", "MeanRelativeErr", "NormRelativeErr"):
        data[c] = ["0.0%"] * n
    for c in ("NPU max", "Bench max", "NPU mean", "Bench mean", "NPU l2norm", "Bench l2norm"):
        data[c] = [1.5] * n
    for c in ("NPU min", "Bench min"):
        data[c] = [-1.5] * n
    consistent = [True] * n
    for i in range(7, n, 1000):
        consistent[i] = False
    data["Requires_grad Consistent"] = consistent
    data["Result"] = [""] * n
    data["Err_message"] = [""] * n
    assert set(data) == set(cols)
    return SyntheticTable(cols, data, keys, state_col)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--write", type=Path, default=None, help="also write the highlighted workbook here")
    parser.add_argument("--write-core", type=Path, default=None, help="also write the table with the core xlsx writer")
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    table = synthetic_table(args.rows)
    t1, c1 = time.perf_counter(), time.process_time()
    hl = find_rows("statistics", table.data, table.api_key, table.state)
    table.data["Err_message"] = apply_messages(table.data["Err_message"], hl)
    t2, c2 = time.perf_counter(), time.process_time()
    print(f"rows: {len(table)}  red: {hl.red_rows}  yellow: {hl.yellow_rows}")
    print(f"build: {t1 - t0:.2f}")
    print(f"highlight: {t2 - t1:.2f}")
    print(f"highlight_cpu: {c2 - c1:.2f}")
    if args.write:
        from msprobe_classic.xlsx import write_workbook

        t3, c3 = time.perf_counter(), time.process_time()
        write_workbook(args.write, table.columns, table.rows(), len(table), hl.colour, True)
        print(f"write: {time.perf_counter() - t3:.2f}")
        print(f"write_cpu: {time.process_time() - c3:.2f}")
    if args.write_core:
        from msprobe_core.default_plugins.xlsx.workbook import write_xlsx
        from msprobe_core.result import ResultTable

        core = ResultTable("statistics", table.columns, table.data, list(range(len(table))))
        t4, c4 = time.perf_counter(), time.process_time()
        write_xlsx(core, args.write_core)
        print(f"write_core: {time.perf_counter() - t4:.2f}")
        print(f"write_core_cpu: {time.process_time() - c4:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
