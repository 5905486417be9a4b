"""Build the versions x cases table of tests/data/dumpers/README.md from the folders.

Usage: python tests/dumper_corpus/index.py [--write] [ROOT]   (ROOT defaults to tests/data/dumpers;
--write puts the table into ROOT/README.md between the index markers)

Each cell names the oracle variants of a case with msprobe's exit status and the row count of its
result table (``legacy 0/135`` = ran with rc 0, 135 rows; ``compare FAIL rc=1`` = no table).
``test_index.py`` checks that the table in README.md equals what this prints.
"""
from __future__ import annotations

import csv
import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "data" / "dumpers"
CASES = ["l1_stat", "l0_stat", "mix_stat", "l1_md5", "l1_xor", "l1_tensor", "l1_args"]
BEGIN, END = "<!-- index:begin -->", "<!-- index:end -->"
# Cases left out to keep the corpus small: dump.json (but for the absolute dump_data_dir) and every
# cell of the result table were equal to those of the release named here, which is kept.
OMITTED = {
    ("1.0.4", "l1_tensor"): "1.0.3",
    ("8.1.1", "l1_tensor"): "8.1.0",
    ("8.1.2", "l1_tensor"): "8.1.0",
    ("8.2.1", "l1_tensor"): "8.2.0",
    ("8.3.1", "l1_tensor"): "8.3.0",
    ("8.3.2", "l1_tensor"): "8.3.0",
    ("26.1.0", "l1_tensor"): "26.2.0",
}


def vkey(name: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", name))


def xlsx_rows(path: Path) -> int:
    """Row count of the first sheet, read from the sheet XML (no openpyxl needed)."""
    with zipfile.ZipFile(path) as zf:
        names = sorted(n for n in zf.namelist() if n.startswith("xl/worksheets/sheet"))
        xml = zf.read(names[0]).decode("utf-8", "replace")
    return max(0, len(re.findall(r"<row[ >]", xml)) - 1)


def variant_cell(var: Path) -> str:
    cmd = (var / "cmd.txt").read_text() if (var / "cmd.txt").exists() else ""
    m = re.search(r"# rc=(-?\d+)", cmd)
    rc = m.group(1) if m else "?"
    tables = sorted(p for p in var.iterdir() if p.suffix in (".csv", ".xlsx")
                    and p.name.startswith("compare_result"))
    if not tables:
        return f"{var.name} FAIL rc={rc}"
    t = tables[0]
    n = xlsx_rows(t) if t.suffix == ".xlsx" else sum(1 for _ in csv.reader(t.open())) - 1
    return f"{var.name} {rc}/{n}"


def table(root: Path = ROOT) -> str:
    versions = sorted((p for p in root.iterdir() if p.is_dir() and re.match(r"\d", p.name)),
                      key=lambda p: vkey(p.name))
    lines = ["| version | " + " | ".join(CASES) + " |", "|---" * (len(CASES) + 1) + "|"]
    for v in versions:
        cells = []
        for case in CASES:
            cdir = v / case
            if (v.name, case) in OMITTED:
                cells.append(f"omitted (= {OMITTED[(v.name, case)]})")
                continue
            if not cdir.is_dir():
                cells.append("—")
                continue
            variants = sorted(p for p in (cdir / "oracle").iterdir() if p.is_dir()) \
                if (cdir / "oracle").is_dir() else []
            cells.append("<br>".join(variant_cell(p) for p in variants) or "dump only")
        lines.append(f"| {v.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_readme(root: Path = ROOT) -> None:
    """Replace the table between the index markers of ROOT/README.md."""
    readme = root / "README.md"
    text = readme.read_text()
    start = text.index(BEGIN) + len(BEGIN)
    end = text.index(END)
    readme.write_text(text[:start] + "\n" + table(root) + "\n" + text[end:])


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--write"]
    root = Path(args[0]) if args else ROOT
    if "--write" in sys.argv:
        write_readme(root)
    else:
        print(table(root))


if __name__ == "__main__":
    main()
