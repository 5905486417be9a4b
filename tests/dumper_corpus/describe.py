"""Summarise the dump format and compare output of corpus folders (for FINDINGS.md / README.md).

Usage: python tests/dumper_corpus/describe.py tests/data/dumpers/VERSION [...]
Prints, per case: folder layout, dump.json top-level keys, the kinds of entry names and the keys
of their values, statistic keys and their JSON types, the stack.json layout, and per oracle
variant the result files, their header and the first row names.
"""
from __future__ import annotations

import csv
import json
import re
import sys
from collections import Counter
from pathlib import Path


def leaves(obj, out: list) -> None:
    if isinstance(obj, dict):
        if "type" in obj or "dtype" in obj:
            out.append(obj)
            return
        for v in obj.values():
            leaves(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            leaves(v, out)


def name_shape(name: str) -> str:
    return re.sub(r"\.\d+(?=\.|$)", ".N", re.sub(r"^(\w+)\.[\w.]+?\.(\d+)", r"\1.<api>.\2", name))


def describe_dump(path: Path) -> list[str]:
    d = json.loads(path.read_text())
    lines = [f"  top keys: {list(d)}  task={d.get('task')} level={d.get('level')}"
             f" framework={d.get('framework', '<absent>')}"]
    data = d.get("data", {})
    entry_keys = Counter()
    kinds = Counter()
    for name, val in data.items():
        kinds[name.rsplit(".", 1)[-1] if not name.split(".")[-1].isdigit()
              else name.rsplit(".", 2)[-2] + ".<N>"] += 1
        if isinstance(val, dict):
            entry_keys[tuple(val)] += 1
        else:
            entry_keys[(f"<{type(val).__name__}>",)] += 1
    lines.append(f"  entries: {len(data)}; name endings: {dict(kinds)}")
    lines.append(f"  entry value key sets: {dict(entry_keys)}")
    lv: list = []
    leaves(data, lv)
    stat = Counter()
    for leaf in lv:
        for k, v in leaf.items():
            stat[(k, type(v).__name__, leaf.get("dtype", "-") if k in ("Mean", "Norm", "md5") else "")] += 1
    lines.append("  leaf keys (key, json type, dtype for Mean/Norm/md5): "
                 + ", ".join(f"{k}:{t}{'/' + dt if dt else ''}={n}" for (k, t, dt), n in sorted(stat.items())))
    odd = [n for n in data if "parameters" in n or "grad_" in n or "recompute" in json.dumps(data[n])[:0]]
    if odd:
        lines.append(f"  parameter/grad entries e.g.: {odd[:4]}")
    return lines


def describe_stack(path: Path) -> str:
    s = json.loads(path.read_text())
    if not s:
        return "  stack.json: empty"
    k, v = next(iter(s.items()))
    if isinstance(v, list) and len(v) == 2 and isinstance(v[0], list):
        return f"  stack.json: {{\"{k}\": [[names...], [frames...]]}} ({len(s)} groups)"
    return f"  stack.json: {{api: [frames]}} e.g. key {k!r} ({len(s)} entries)"


def describe_case(case: Path) -> list[str]:
    out = [f"## {case.parent.name}/{case.name}"]
    for side in ("target",):
        dumps = sorted((case / side).glob("**/dump.json"))
        for dj in dumps:
            out.append(f"  layout: {dj.parent.relative_to(case)}/ {sorted(p.name for p in dj.parent.iterdir())}")
            out += describe_dump(dj)
            st = dj.parent / "stack.json"
            if st.exists():
                out.append(describe_stack(st))
    for var in sorted((case / "oracle").glob("*/")):
        if not var.is_dir():
            continue
        cmd = (var / "cmd.txt").read_text().strip().replace("\n", " ") if (var / "cmd.txt").exists() else "?"
        out.append(f"  oracle {var.name}: {cmd}")
        for f in sorted(var.iterdir()):
            if f.suffix == ".csv":
                rows = list(csv.reader(f.open()))
                out.append(f"    {f.name}: {len(rows) - 1} rows; header={rows[0]}")
                out.append(f"      first names: {[r[0] for r in rows[1:4]]}")
                bw = [r[0] for r in rows[1:] if "backward" in r[0] or "grad" in r[0]]
                out.append(f"      backward-ish rows: {len(bw)} e.g. {bw[:2]}")
            elif f.suffix == ".xlsx":
                try:
                    import openpyxl
                    ws = openpyxl.load_workbook(f, read_only=True).worksheets[0]
                    rows = [list(r) for r in ws.iter_rows(values_only=True)]
                    out.append(f"    {f.name}: {len(rows) - 1} rows; header={rows[0]}")
                    out.append(f"      first names: {[r[0] for r in rows[1:4]]}")
                    bw = [r[0] for r in rows[1:] if r[0] and ("backward" in r[0] or "grad" in r[0])]
                    out.append(f"      backward-ish rows: {len(bw)} e.g. {bw[:2]}")
                except Exception as exc:  # noqa: BLE001 - a summary tool, keep going
                    out.append(f"    {f.name}: unreadable ({exc})")
            elif f.name not in ("cmd.txt", "renames.txt"):
                out.append(f"    {f.name}")
        con = (var / "console.txt")
        if con.exists():
            errs = [ln.strip() for ln in con.read_text(errors="replace").splitlines()
                    if "ERROR" in ln or "Error" in ln or "Traceback" in ln][:3]
            if errs:
                out.append(f"    console errors: {errs}")
    return out


def main() -> None:
    for root in sys.argv[1:]:
        for case in sorted(Path(root).iterdir()):
            if case.is_dir():
                print("\n".join(describe_case(case)))


if __name__ == "__main__":
    main()
