"""The chunked xlsx writer and the stream writer's bulk float path give the bytes of the cell-by-cell path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from msprobe_core.default_plugins.statistics_metrics.coded import CodedTextColumn
from msprobe_core.default_plugins.xlsx import sheet as xlsx_sheet
from msprobe_core.default_plugins.xlsx import stream as xlsx_stream
from msprobe_core.default_plugins.xlsx import workbook
from msprobe_core.default_plugins.xlsx.workbook import xlsx_cell
from msprobe_core.files.outputs import atomic_path
from msprobe_core.result import ResultTable
from msprobe_core.text.columns import StackColumn
from tests.test_csv_writer import tables


def reference_xlsx(path: Path, columns: list[str], data: dict[str, list], n: int) -> bytes:
    """Every cell through xlsx_cell and the stream writer's per-cell renderer (no template, no bulk floats)."""
    rows = zip(*(list(data[c]) for c in columns))
    with atomic_path(path) as tmp, xlsx_stream.XlsxStreamWriter(tmp) as book:
        book.add_sheet("Sheet1")
        book.append(columns)
        book.append_rows(list(rows)[:n], convert=lambda values: list(map(xlsx_cell, values)))
    return path.read_bytes()


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xlsx_stream, "CHUNK_ROWS", 4)
    monkeypatch.setattr(workbook, "XLSX_STREAM_CHUNK", 4)
    monkeypatch.setattr(workbook, "XLSX_CHUNK_ROWS", 8)
    monkeypatch.setattr(xlsx_sheet, "_BULK_FLOATS", 2)


def _write_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, columns: list[str], data: dict[str, list]):
    n = min(map(len, data.values())) if data else 0
    table = ResultTable("statistics", columns, data, [0] * n)
    out = tmp_path / "new.xlsx"
    out.unlink(missing_ok=True)
    workbook.write_xlsx(table, out)
    with monkeypatch.context() as m:  # the general path: every column rendered cell by cell
        m.setattr(xlsx_sheet, "_column_kind", lambda values: xlsx_sheet._CELLS)
        m.setattr(xlsx_sheet, "_BULK_FLOATS", 10**9)
        ref = tmp_path / "ref.xlsx"
        ref.unlink(missing_ok=True)
        expected = reference_xlsx(ref, columns, data, n)
    return out.read_bytes(), expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tables())
def test_same_bytes_as_cell_by_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_chunks, table) -> None:
    columns, data = table
    got, expected = _write_both(tmp_path, monkeypatch, columns, data)
    assert got == expected


def test_lean_and_float_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_chunks) -> None:
    n = 21
    rng = np.random.default_rng(0)
    values = rng.standard_normal(n) * np.exp(rng.standard_normal(n) * 10)
    codes = (np.arange(n) % 5 == 0).astype(np.int8)
    floats = values.tolist()
    floats[3], floats[7], floats[8] = float("nan"), float("inf"), 2.0
    data = {
        "d": CodedTextColumn(values, codes, ("", "N/A")),
        "r": CodedTextColumn(values, codes * 2, ("", "N/A", "=x"), "%"),
        "s": StackColumn([["a, b"] if k % 4 == 0 else None for k in range(n)]),
        "f": floats,
        "g": values.tolist(),
        "m": [None if k % 3 == 0 else (k if k % 3 == 1 else float(k) / 7) for k in range(n)],
    }
    got, expected = _write_both(tmp_path, monkeypatch, list(data), data)
    assert got == expected
