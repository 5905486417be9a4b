"""The chunked CSV writer writes exactly what ``csv.writer`` + ``csv_cell`` wrote, for any table.

The reference below is the writer as it was before the chunked one: every cell
through :func:`msprobe_core.text.cells.csv_cell`, every row through the csv module, with
one change: a field holding a carriage return is quoted too (the csv module of
Python 3.11 leaves it bare when rows end in ``\n``, and readers start a row there).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msprobe_core.default_plugins.statistics_metrics.coded import CodedTextColumn
from msprobe_core.result import ResultTable
from msprobe_core.text.cells import csv_cell, csv_column
from msprobe_core.text.columns import StackColumn
from msprobe_core.text.csv_rows import quote_cells, quote_chars
from msprobe_core.write import writers


def reference_csv(columns: list[str], data: dict[str, list]) -> str:
    """What the csv module writes for the table, every cell spelled by csv_cell."""
    import io

    def line(row: list[str]) -> str:  # "\r\n" as the terminator makes the csv module quote for "\r" too
        buf = io.StringIO(newline="")
        csv.writer(buf, lineterminator="\r\n").writerow(row)
        return buf.getvalue()[:-2] + "\n"

    return "".join(map(line, [columns, *zip(*([csv_cell(v) for v in data[c]] for c in columns))]))


def write(tmp_path: Path, columns: list[str], data: dict[str, list]) -> list[Path]:
    table = ResultTable("statistics", columns, data, [0] * (min(map(len, data.values())) if data else 0))
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    for old in out.iterdir():
        old.unlink()
    return writers.write_csv(table, out / "r.csv")


texts = st.one_of(
    st.text(max_size=12),
    st.text(alphabet=',"\r\n;\t =+-@%＋－\x00\'a1.<&>\x1b', max_size=8),
    st.sampled_from(["", "N/A", "-1.5", "-inf", "=1+1", "@x", "1;=2", "a,b", 'say "hi"', " inf", "nan%",
                     "[1, 4096]", "torch.float32", "-0.5%", "1;-2", "+", "-", "<class 'float'>", "a&b"]),
)
floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-5, 1.5e-7, 9.99e-5, 1e16, 1e15, -3.16e-09, 2.0, 1e-4, 5e-324]),
)
cells = st.one_of(
    texts, floats, st.integers(min_value=-(2**70), max_value=2**70), st.booleans(), st.none(),
    floats.map(np.float64), st.floats(width=32).map(np.float32), st.integers(-1000, 1000).map(np.int64),
    st.booleans().map(np.bool_), st.tuples(st.integers(0, 3)), st.lists(texts, max_size=2),
)


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], dict[str, list]]:
    n_cols = draw(st.integers(0, 5))
    n_rows = draw(st.integers(0, 12))
    names = [f"c{j}" + draw(st.sampled_from(["", ",x", '"q"', "=f"])) for j in range(n_cols)]
    data = {}
    for name in names:
        style = draw(st.sampled_from(["mixed", "float", "str", "int", "bool"]))
        strategy = {"mixed": cells, "float": floats, "str": texts, "int": st.integers(), "bool": st.booleans()}[style]
        data[name] = draw(st.lists(strategy, min_size=n_rows, max_size=n_rows + draw(st.integers(0, 2))))
    return names, data


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tables(), st.sampled_from([1, 2, 3, 16384]))
def test_same_bytes_as_csv_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table, chunk: int) -> None:
    columns, data = table
    monkeypatch.setattr(writers, "CSV_CHUNK_ROWS", chunk)
    [path] = write(tmp_path, columns, data)
    assert path.read_bytes() == reference_csv(columns, data).encode("utf-8")


def test_parts_past_the_row_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writers, "CSV_MAX_ROWS", 4)
    monkeypatch.setattr(writers, "CSV_CHUNK_ROWS", 3)
    data = {"a": [float(i) for i in range(10)], "b": [f"x,{i}" for i in range(10)]}
    paths = write(tmp_path, ["a", "b"], data)
    assert [p.name for p in paths] == ["r_part_1.csv", "r_part_2.csv", "r_part_3.csv"]
    for k, p in enumerate(paths):
        part = {c: v[4 * k : 4 * k + 4] for c, v in data.items()}
        assert p.read_bytes() == reference_csv(["a", "b"], part).encode()
    monkeypatch.setattr(writers, "CSV_MAX_ROWS", 10)
    [one] = write(tmp_path, ["a", "b"], data)  # exactly the limit: one file, no _part_ suffix
    assert one.name == "r.csv"


def _coded(values: list, codes: list, suffix: str = "") -> CodedTextColumn:
    return CodedTextColumn(np.array(values, dtype=np.float64), np.array(codes, dtype=np.int8),
                           ("", "N/A", "Diff", "inf", "-inf", "Nan", "0", "=x"), suffix)


def test_lean_columns_write_as_their_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writers, "CSV_CHUNK_ROWS", 2)
    diff = _coded([1.5, -2.0, 0.0, 1e-7, math.nan, math.inf, -0.0], [0, 0, 1, 0, 0, 0, 7])
    rel = _coded([1.5, -2.0, 0.0, 1e-7, 3e-5, 1e16, -0.0], [0, 0, 2, 3, 0, 0, 0], "%")
    lines = ["File a.py, line 1, in f, \n x = 1", 'say "x"']
    stack = StackColumn([lines, None, None, lines, ["=cmd"], None, None])
    data = {"d": diff, "r": rel, "s": stack}
    [path] = write(tmp_path, ["d", "r", "s"], data)
    as_lists = {c: list(v) for c, v in data.items()}
    assert path.read_bytes() == reference_csv(["d", "r", "s"], as_lists).encode()
    assert "'-2.0%" in path.read_text()  # negative relative error text is formula-like: neutralised as before
    assert csv_column(rel) == [csv_cell(v) for v in list(rel)]


def test_quote_chars_come_from_the_csv_module() -> None:
    chars = quote_chars()
    assert "," in chars and '"' in chars and "\n" in chars and "\r" in chars
    assert quote_cells(["a", "b"]) == ["a", "b"]
    assert quote_cells(['a"b', "c,d", "e"]) == ['"a""b"', '"c,d"', "e"]
    assert quote_cells(["1,5"], charset="0123456789.") == ["1,5"]  # the caller vouches: no scan


@pytest.mark.parametrize("how", ["kernel", "fails at once", "fails half way", "absent"])
def test_append_file_appends_every_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    import os

    from msprobe_core.write.writers import append_file

    head, tail = b"header,row\n" * 1000, bytes(range(256)) * 5000
    (tmp_path / "out").write_bytes(head)
    (tmp_path / "side").write_bytes(tail)
    real = getattr(os, "copy_file_range", None)
    if how == "absent":
        monkeypatch.delattr(os, "copy_file_range", raising=False)
    elif how != "kernel":
        calls = []

        def flaky(src, dst, count, src_at, dst_at):
            calls.append(src_at)
            if how == "fails half way" and len(calls) == 1 and real is not None:
                return real(src, dst, min(count, len(tail) // 2), src_at, dst_at)
            raise OSError(18, "Invalid cross-device link")

        monkeypatch.setattr(os, "copy_file_range", flaky, raising=False)
    with open(tmp_path / "out", "r+b") as out, open(tmp_path / "side", "rb") as src:
        append_file(src, out)
    assert (tmp_path / "out").read_bytes() == head + tail


@pytest.mark.parametrize("prefix", ["\r", "\n", "\r\n", "\t", " ", "\x00", "\u200b", "\t \r"])
def test_no_value_starts_a_row_or_a_formula(tmp_path: Path, prefix: str) -> None:
    """A value starting with CR/LF and a formula stays in its own cell, and the formula is neutralised."""
    import pandas as pd

    evil = f"{prefix}=HYPERLINK(\"http://x\",\"y\")"
    data = {"NPU Name": [evil, "b", f"{prefix}@SUM(1)"], "v": [1.0, 2.0, 3.0], "w": ["x", evil, "z"]}
    [path] = write(tmp_path, list(data), data)
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert len(rows) == 4 and all(len(r) == 3 for r in rows), rows
    assert rows[1][0] == "'" + evil and rows[2][2] == "'" + evil and rows[3][0] == f"'{prefix}@SUM(1)"
    assert len(pd.read_csv(path)) == 3


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.text(max_size=6), max_size=8), max_size=5))
def test_rows_joined_in_c_as_in_python(columns: list[list[str]]) -> None:
    """The C join of a chunk's fields gives the text Python's joins give (over the shortest column), and hands
    back every chunk holding a non-ASCII field (``None``: Python joins it)."""
    from msprobe_core.text import csv_rows

    if csv_rows._join_rows is None:
        pytest.skip("msprobe_core._dumpscan is not built here")
    joined = csv_rows._join_rows(columns)
    if any(not f.isascii() for col in columns for f in col[:min(map(len, columns))]):
        assert joined is None
    else:
        assert joined == ("\n".join(map(",".join, zip(*columns))) + "\n" if columns and min(map(len, columns)) else "")
