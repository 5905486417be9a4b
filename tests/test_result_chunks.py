"""Result files read back in chunks (report.result_files.read_result_chunks), as ``msprobe report`` reads them.

The chunks of a file, whatever their size, are the rows of the whole file in order, with the whole result's
label, mode, columns, files and frameworks; a later part with another header is left out; a malformed row
stops the reading with the same one-line error (same row number) as reading the whole file.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msprobe_core import result_columns as C
from msprobe_core.default_plugins.summary.chunks import ResultChunk
from msprobe_core.default_plugins.summary.result_files import read_files_as_view, read_result_chunks, read_result_file
from msprobe_core.errors import InputError
from msprobe_core.result import result_columns

COLUMNS = result_columns("statistics", True)
_CELLS = st.sampled_from(["1.0", "nan", "N/A", "", "a,b", 'say "x"', "two\nlines", "torch.float32", "[2, 3]"])


def _write(path: Path, rows: list[list[str]], header: list[str] = COLUMNS, blank_every: int = 0) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for k, row in enumerate(rows, 1):
            w.writerow(row)
            if blank_every and k % blank_every == 0:
                fh.write("\r\n")  # a blank line is no row
    return path


def _rows(draw: st.DrawFn, n: int) -> list[list[str]]:
    rows = []
    for k in range(n):
        row = [draw(_CELLS) for _ in COLUMNS]
        row[COLUMNS.index(C.NPU_NAME)] = row[COLUMNS.index(C.BENCH_NAME)] = f"Functional.linear.{k}.forward.input.0"
        rows.append(row)
    return rows


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_chunks_are_the_rows_of_the_whole_file(tmp_path_factory, data):
    d = tmp_path_factory.mktemp("r")
    n_parts = data.draw(st.integers(1, 3))
    parts = [_write(d / f"compare_result_rank0_20250101000000_part_{k}.csv", _rows(data.draw, data.draw(st.integers(0, 9))),
                    blank_every=data.draw(st.integers(0, 3))) for k in range(n_parts)]
    if data.draw(st.booleans()):  # a part of another table in between: read, not shown
        parts.insert(1, _write(d / "other.csv", [["x", "y"]], header=[C.NPU_NAME, "Other"]))
    rows = data.draw(st.integers(1, 5))
    whole = read_files_as_view(parts, "rank0")
    chunks = list(read_result_chunks(parts, "rank0", rows))
    assert chunks and all(isinstance(c, ResultChunk) for c in chunks)
    assert [c.start for c in chunks] == [sum(len(x) for x in chunks[:k]) for k in range(len(chunks))]
    assert all(0 < len(c) <= rows for c in chunks) or (len(chunks) == 1 and not len(whole))
    for c in chunks:
        assert (c.label, c.mode, c.columns, c.files, c.frameworks) == (whole.label, whole.mode, whole.columns,
                                                                        whole.files, whole.frameworks)
    assert {col: [v for c in chunks for v in c.cells[col]] for col in COLUMNS} == whole.cells
    assert whole.files == [p for p in parts if p.name != "other.csv"]


@pytest.mark.parametrize("rows", [1, 2, 3, 1000])
def test_a_malformed_row_stops_the_reading_as_for_the_whole_file(tmp_path, rows):
    good = [["1"] * len(COLUMNS) for _ in range(4)]
    path = _write(tmp_path / "r.csv", [*good, ["1", "2"], *good])
    with pytest.raises(InputError) as whole:
        read_result_file(path)
    with pytest.raises(InputError) as chunked:
        for _ in read_result_chunks([path], rows=rows):
            pass
    assert str(chunked.value) == str(whole.value)
    assert "row 5 has 2 fields" in str(chunked.value)


def test_an_empty_result_is_one_empty_chunk(tmp_path):
    path = _write(tmp_path / "r.csv", [])
    chunks = list(read_result_chunks([path], rows=3))
    assert len(chunks) == 1 and len(chunks[0]) == 0 and chunks[0].columns == COLUMNS
