#!/usr/bin/env python3
# Copied from the shared folder's tools/oracle_diff.py (the project's own cell-by-cell diff tool, not msprobe code);
# tests/fixtures.py uses the shared one when present and this copy otherwise.
"""Diff a compare result table against a reference ("oracle") table, cell by cell.

    oracle_diff.py OURS REFERENCE [--rtol 1e-5] [--atol 1e-8] [--ignore COL ...] [--strip REGEX] [--show 3]

OURS and REFERENCE are .csv or .xlsx result files (xlsx needs openpyxl; for xlsx the
row fill colours are compared too). Rows are paired by position; a row whose first two
columns (NPU Name, Bench Name) differ counts as misplaced. Cells agree when both parse
as numbers within tolerance (nan == nan, inf == inf), when both are the same Python
literal ("[2, 8]" == "[2,8]"), or when the strings are equal after stripping.
--strip REGEX removes what the pattern matches from every cell first (e.g. the absolute
dump-root prefix that kernel-compare tables carry in their name columns: '^.*/(target|golden)/').

Prints, per disagreeing column, the count and the first examples, then one last line:
    agreement: rows R/N (P%), cells C/M, header ok|differs, order ok|differs
Exit status 0 only when everything agrees.
"""
from __future__ import annotations

import argparse
import ast
import csv
import math
import re
import sys
from pathlib import Path


def read_table(path: Path) -> tuple[list[str], list[list[str]], list[str | None]]:
    """Return header, rows (as strings) and each row's fill colour (None for csv)."""
    if path.suffix.lower() == ".xlsx":
        import openpyxl  # only needed for xlsx

        ws = openpyxl.load_workbook(path, read_only=False).worksheets[0]
        rows_iter = ws.iter_rows()
        header = [("" if c.value is None else str(c.value)) for c in next(rows_iter)]
        rows, fills = [], []
        for r in rows_iter:
            rows.append([("" if c.value is None else str(c.value)) for c in r])
            colours = {c.fill.fgColor.rgb for c in r if c.fill is not None and c.fill.fill_type}
            fills.append(",".join(sorted(str(x) for x in colours)) or None)
        return header, rows, fills
    csv.field_size_limit(1 << 30)
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        rows = list(reader)
    return header, rows, [None] * len(rows)


def as_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def same(a: str, b: str, rtol: float, atol: float) -> bool:
    a, b = a.strip(), b.strip()
    if a == b:
        return True
    x, y = as_number(a), as_number(b)
    if x is not None and y is not None:
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        if math.isinf(x) or math.isinf(y):
            return x == y
        return abs(x - y) <= atol + rtol * abs(y)
    # empty cell vs nan-like spellings
    blank = {"", "nan", "NaN"}
    if a in blank and b in blank:
        return True
    try:
        return ast.literal_eval(a) == ast.literal_eval(b)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("ours", type=Path)
    p.add_argument("reference", type=Path)
    p.add_argument("--rtol", type=float, default=1e-5)
    p.add_argument("--atol", type=float, default=1e-8)
    p.add_argument("--ignore", nargs="*", default=[], help="column names to skip")
    p.add_argument("--show", type=int, default=3, help="examples per column")
    p.add_argument("--strip", default=None, help="regex removed from every cell before comparing")
    a = p.parse_args(argv)

    h1, r1, f1 = read_table(a.ours)
    h2, r2, f2 = read_table(a.reference)
    if a.strip:
        pat = re.compile(a.strip)
        r1 = [[pat.sub("", c) for c in row] for row in r1]
        r2 = [[pat.sub("", c) for c in row] for row in r2]
    header_ok = h1 == h2
    if not header_ok:
        print(f"header differs:\n  ours: {h1}\n  ref:  {h2}")
    cols = [c for c in h2 if c in h1 and c not in a.ignore]
    i1 = {c: h1.index(c) for c in cols}
    i2 = {c: h2.index(c) for c in cols}

    bad: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    rows_ok = cells_ok = cells = misplaced = 0
    n = max(len(r1), len(r2))
    for k in range(n):
        if k >= len(r1) or k >= len(r2):
            continue
        x, y = r1[k], r2[k]
        if x[:1] != y[:1] or (len(x) > 1 and len(y) > 1 and not same(x[1], y[1], a.rtol, a.atol)):
            misplaced += 1
        row_ok = True
        for c in cols:
            cells += 1
            u = x[i1[c]] if i1[c] < len(x) else ""
            v = y[i2[c]] if i2[c] < len(y) else ""
            if same(u, v, a.rtol, a.atol):
                cells_ok += 1
                continue
            row_ok = False
            counts[c] = counts.get(c, 0) + 1
            if len(bad.setdefault(c, [])) < a.show:
                bad[c].append(f"row {k + 2} {y[0]!s:.70}: ours={u!s:.80} ref={v!s:.80}")
        if f1[k] != f2[k] and f2[k] is not None:
            row_ok = False
            counts["<fill colour>"] = counts.get("<fill colour>", 0) + 1
            if len(bad.setdefault("<fill colour>", [])) < a.show:
                bad["<fill colour>"].append(f"row {k + 2} {y[0]!s:.70}: ours={f1[k]} ref={f2[k]}")
        rows_ok += row_ok
    for c, examples in bad.items():
        print(f"{c}: {counts[c]} rows differ")
        for e in examples:
            print(f"    {e}")
    if len(r1) != len(r2):
        print(f"row count differs: ours {len(r1)}, reference {len(r2)}")
    order_ok = misplaced == 0 and len(r1) == len(r2)
    pct = 100.0 * rows_ok / len(r2) if r2 else 100.0
    print(
        f"agreement: rows {rows_ok}/{len(r2)} ({pct:.2f}%), cells {cells_ok}/{cells}, "
        f"header {'ok' if header_ok else 'differs'}, order {'ok' if order_ok else 'differs'}"
    )
    return 0 if (header_ok and order_ok and rows_ok == len(r2)) else 1


if __name__ == "__main__":
    sys.exit(main())
