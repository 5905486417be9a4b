"""The streaming xlsx writer: value round trips, escaping, fills, sheet splits, and agreement with openpyxl.

Workbooks are read back with openpyxl (normal and read-only mode) and pandas, the readers
our users and ``merge_result``/``oracle_diff`` use. The differential tests write the same
tables with the openpyxl write-only code this writer replaced and compare every cell,
its type and its fill.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import openpyxl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msprobe_classic import xlsx as legacy_xlsx
from msprobe_classic.highlight import RED, YELLOW

from msprobe_core.default_plugins.xlsx import stream as xlsx_stream
from msprobe_core.default_plugins.xlsx import workbook
from msprobe_core.default_plugins.xlsx.sheet import column_letter, xml_text
from msprobe_core.default_plugins.xlsx.stream import HEADER_STYLE, XlsxStreamWriter, fill_style
from msprobe_core.default_plugins.xlsx.workbook import xlsx_cell
from msprobe_core.result import ResultTable

RED_FILL, YELLOW_FILL = "FFFF0000", "00FFFF00"

# value written -> value read back by openpyxl
ROUND_TRIP: list[tuple[Any, Any]] = [
    ("plain", "plain"),
    ("a<b&c>\"'", "a<b&c>\"'"),
    ("</t></is></c><c>", "</t></is></c><c>"),
    ("]]>", "]]>"),
    ("日本語テキスト", "日本語テキスト"),
    ("emoji 😀 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "emoji 😀 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢"),
    ("e\u0301 combining", "e\u0301 combining"),
    (" lead", " lead"),
    ("trail ", "trail "),
    ("   ", "   "),
    ("\ttab", "\ttab"),
    ("line\nbreak", "line\nbreak"),
    ("cr\rlf\r\n", "cr\rlf\r\n"),
    ("nul\x00bell\x07esc\x1b", "nul_x0000_bell_x0007_esc_x001b_"),
    ("\x0b\x0c\x1f", "_x000b__x000c__x001f_"),
    ("lone \ud800 surrogate", "lone _xd800_ surrogate"),
    ("non-chars \ufffe\uffff", "non-chars _xfffe__xffff_"),
    ("x" * 32767, "x" * 32767),
    ("y" * 40000, "y" * 32767),
    ("=1+1", "=1+1"),  # the writer writes text as text; neutralising is the callers' rule
    ("", None),
    (None, None),
    (True, True),
    (False, False),
    (0, 0),
    (-5, -5),
    (2**53 + 1, 2**53 + 1),
    (1.5, 1.5),
    (0.1, 0.1),
    (1 / 3, 1 / 3),
    (0.1 + 0.2, 0.30000000000000004),
    (1e-300, 1e-300),
    (5e-324, 5e-324),
    (1.7976931348623157e308, 1.7976931348623157e308),
    (123456789.123456789, 123456789.123456789),
    (2.0, 2),  # integral floats as openpyxl writes them: read back as int
    (-0.0, 0),
    (1e15, 10**15),
    (1e16, 1e16),
    (float("nan"), None),
    (float("inf"), "inf"),
    (float("-inf"), "-inf"),
    (np.float32(0.1), float(np.float32(0.1))),
    (np.float64(2.5), 2.5),
    (np.int64(7), 7),
    (np.bool_(True), True),
    (np.str_("numpy text"), "numpy text"),
    (Path("a/b"), "a/b"),
]


def _write(path: Path, rows: list[list[Any]], styles: list[int] | None = None, **kw: Any) -> Path:
    with XlsxStreamWriter(path, styles=[fill_style("FFFF0000"), fill_style("FFFF00"), HEADER_STYLE], **kw) as xw:
        xw.add_sheet("Sheet1")
        for k, row in enumerate(rows):
            xw.append(row, style=styles[k] if styles else 0)
    return path


def _read(path: Path, read_only: bool = False) -> dict[str, list[list[Any]]]:
    wb = openpyxl.load_workbook(path, read_only=read_only)
    try:
        return {ws.title: [list(r) for r in ws.iter_rows(values_only=True)] for ws in wb.worksheets}
    finally:
        wb.close()


def _fills(path: Path) -> list[set[str]]:
    ws = openpyxl.load_workbook(path).worksheets[0]
    return [{c.fill.fgColor.rgb for c in row if c.fill is not None and c.fill.fill_type} for row in ws.iter_rows()]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("read_only", [False, True])
def test_every_value_kind_round_trips(tmp_path, read_only):
    path = _write(tmp_path / "r.xlsx", [[v, k] for k, (v, _) in enumerate(ROUND_TRIP)])
    rows = _read(path, read_only)["Sheet1"]
    assert len(rows) == len(ROUND_TRIP)
    for (written, expected), row in zip(ROUND_TRIP, rows):
        assert _same(row[0], expected), (written, row[0], expected)


def test_typed_columns_and_mixed_columns_read_the_same(tmp_path):
    """A value reads back the same whether its column takes a fast path (one type) or the general one."""
    for written, expected in ROUND_TRIP:
        uniform = [[written]] * 5
        mixed = [[written], [object()], [written], [None], [written]]
        a = openpyxl.load_workbook(_write(tmp_path / "u.xlsx", uniform)).worksheets[0]
        b = openpyxl.load_workbook(_write(tmp_path / "m.xlsx", mixed)).worksheets[0]
        for got in (a["A1"].value, a["A5"].value, b["A1"].value, b["A3"].value, b["A5"].value):
            assert _same(got, expected), (written, got, expected)


def test_pandas_reads_it(tmp_path):
    pd = pytest.importorskip("pandas")
    path = _write(tmp_path / "r.xlsx", [["name", "x", "ok"], ["a&b", 0.1, True], ["日本", 2.5, False], ["c", None, True]])
    df = pd.read_excel(path)
    assert list(df.columns) == ["name", "x", "ok"]
    assert df["name"].tolist() == ["a&b", "日本", "c"]
    assert df["x"].tolist()[:2] == [0.1, 2.5] and math.isnan(df["x"].tolist()[2])
    assert df["ok"].tolist() == [True, False, True]
    assert pd.read_excel(path, sheet_name=None).keys() == {"Sheet1"}


def test_fills_and_header_style(tmp_path):
    rows = [["h1", "h2", "h3"], ["a", 1, None], ["b", 2.5, ""], ["c", True, 3], ["d", "e", None]]
    path = _write(tmp_path / "f.xlsx", rows, styles=[3, 1, 2, 0, 1])
    fills = _fills(path)
    assert fills == [set(), {RED_FILL}, {YELLOW_FILL}, set(), {RED_FILL}]
    ws = openpyxl.load_workbook(path).worksheets[0]
    header = next(ws.iter_rows())
    assert all(c.font.b and c.border.left.style == "thin" and c.border.bottom.style == "thin" for c in header)
    assert {(c.alignment.horizontal, c.alignment.vertical) for c in header} == {("center", "top")}
    body = list(ws.iter_rows())[1]
    assert not body[0].font.b
    # every cell of a coloured row is filled, the empty ones too
    assert ws["C2"].fill.fgColor.rgb == RED_FILL and ws["C2"].value is None
    assert ws["C3"].fill.fgColor.rgb == YELLOW_FILL


def test_colour_spelling():
    assert fill_style("ffff00").fill == "00FFFF00"
    assert fill_style("FFFF0000").fill == "FFFF0000"
    with pytest.raises(ValueError):
        fill_style("red")


def test_sheets_ragged_rows_and_wide_rows(tmp_path):
    path = tmp_path / "s.xlsx"
    wide = list(range(30))
    with XlsxStreamWriter(path) as xw:
        xw.add_sheet("first")
        xw.append(["a", "b", "c"])
        xw.append([1])
        xw.append([1, None, 3])
        xw.add_sheet("second")
        xw.append(wide)
        xw.append_rows([[k, str(k)] for k in range(5000)])  # more than one chunk
        assert xw.sheet_names == ["first", "second"] and xw.rows_in_sheet == 5001
    for read_only in (False, True):
        data = _read(path, read_only)
        assert list(data) == ["first", "second"]
        assert data["first"][0] == ["a", "b", "c"] and data["first"][1][0] == 1 and data["first"][2][2] == 3
        assert data["second"][0] == wide
        assert data["second"][1:] == [[k, str(k)] + [None] * (len(data["second"][1]) - 2) for k in range(5000)]
    ws = openpyxl.load_workbook(path)["second"]
    assert ws.cell(row=1, column=30).coordinate == "AD1" and ws["AD1"].value == 29


def test_column_letters():
    assert [column_letter(i) for i in (0, 25, 26, 51, 701, 702, 16383)] == ["A", "Z", "AA", "AZ", "ZZ", "AAA", "XFD"]


def test_xml_text():
    assert xml_text("a&b<c>d\re\x01") == "a&amp;b&lt;c&gt;d&#13;e_x0001_"
    assert xml_text("plain \t\n") == "plain \t\n"


def test_empty_workbook_and_empty_sheet(tmp_path):
    with XlsxStreamWriter(tmp_path / "e.xlsx"):
        pass
    assert _read(tmp_path / "e.xlsx") == {"Sheet1": []}
    with XlsxStreamWriter(tmp_path / "h.xlsx") as xw:
        xw.add_sheet("only header")
        xw.append(["a", "b"])
        xw.append_rows([])
    assert _read(tmp_path / "h.xlsx", read_only=True) == {"only header": [["a", "b"]]}


def test_sheet_name_and_style_checks(tmp_path):
    with XlsxStreamWriter(tmp_path / "x.xlsx", styles=[fill_style("FF0000")]) as xw:
        for bad in ("", "a" * 32, "a/b", "x[1]", "'q'"):
            with pytest.raises(ValueError):
                xw.add_sheet(bad)
        with pytest.raises(ValueError, match="add_sheet"):
            xw.append([1])
        xw.add_sheet("S & <T>")
        with pytest.raises(ValueError, match="duplicate"):
            xw.add_sheet("s & <t>")
        with pytest.raises(ValueError, match="no style"):
            xw.append([1], style=2)
        with pytest.raises(ValueError, match="unknown style"):
            xw.append_rows([[1]], styles=[5])
        with pytest.raises(ValueError, match="convert"):
            xw.append_rows([[1], [2]], convert=lambda col: col[:1])
    assert list(_read(tmp_path / "x.xlsx")) == ["S & <T>"]


def test_sheet_row_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(xlsx_stream, "MAX_SHEET_ROWS", 10)
    with XlsxStreamWriter(tmp_path / "l.xlsx") as xw:
        xw.add_sheet("a")
        assert xw.append_rows([[k] for k in range(10)]) == 10
        with pytest.raises(ValueError, match="at most 10"):
            xw.append([11])
            xw.add_sheet("b")  # flushes the pending row


def test_same_table_same_bytes_and_zip64_members(tmp_path):
    rows = [["a", 1.5, True], ["b", None, 3]]
    a = _write(tmp_path / "a.xlsx", rows, styles=[0, 1]).read_bytes()
    b = _write(tmp_path / "b.xlsx", rows, styles=[0, 1]).read_bytes()
    assert a == b
    with zipfile.ZipFile(tmp_path / "a.xlsx") as zf:
        assert zf.testzip() is None
        names = zf.namelist()
        assert {"[Content_Types].xml", "_rels/.rels", "xl/workbook.xml", "xl/_rels/workbook.xml.rels",
                "xl/styles.xml", "xl/worksheets/sheet1.xml"} <= set(names)


def test_failure_leaves_a_closed_file(tmp_path):
    path = tmp_path / "bad.xlsx"
    with pytest.raises(RuntimeError, match="boom"), XlsxStreamWriter(path) as xw:
        xw.add_sheet("a")
        xw.append_rows([[k] for k in range(5000)])
        raise RuntimeError("boom")
    path.unlink()  # the file handle is released


def test_deflate_failure_is_reported(tmp_path):
    """A write failure in the deflate thread (disk full) surfaces in the writing thread."""
    xw = XlsxStreamWriter(tmp_path / "d.xlsx")
    xw.add_sheet("a")

    def broken(data: bytes) -> int:
        raise OSError(28, "No space left on device")

    xw._member.write = broken  # the zip member stream the thread writes to
    with pytest.raises(OSError, match="No space"), xw:
        for _ in range(10):
            xw.append_rows([[k] for k in range(xlsx_stream.CHUNK_ROWS)])
    (tmp_path / "d.xlsx").unlink()


# -- hypothesis: arbitrary text and numbers ---------------------------------------------------

_values = st.one_of(
    st.text(max_size=40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**62), max_value=2**62),
    st.booleans(),
    st.none(),
)


def _expected(v: Any) -> Any:
    if v is None or v == "":
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return int(v) if repr(v).endswith(".0") else v
    if isinstance(v, str):
        return "".join(xml_text(ch) if ch not in "&<>\r" else ch for ch in v)
    return v


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(_values, min_size=1, max_size=4), min_size=1, max_size=12))
def test_arbitrary_values_round_trip(tmp_path, rows):
    path = _write(tmp_path / "h.xlsx", rows)
    got = _read(path, read_only=True)["Sheet1"]
    assert len(got) == len(rows)
    for row, back in zip(rows, got):
        back = back + [None] * (len(row) - len(back))
        for v, b in zip(row, back):
            assert _same(b, _expected(v)), (v, b)


# -- the writers that use it: same cells as the openpyxl code it replaced ------------------------

MIXED = {
    "NPU Name": ["Functional.add.0.forward.input.0", "=cmd|x", " lead", "日本語", "a;=b", "x" * 33000, "inf", "-1.5"],
    "Max diff": [0.5, float("nan"), float("inf"), float("-inf"), 2.0, np.float32(0.1), 1e-300, -0.0],
    "Count": [1, 2, np.int64(3), 4, 5, 6, 7, 8],
    "Flag": [True, False, np.bool_(True), True, False, True, False, True],
    "Result": ["", "pass", None, "", "error", "N/A", "nan", "None"],
    "Err_message": ["", "maximum or minimum is nan, -inf, or inf\nline 2", "", "x", "", "", "", "+cmd"],
}


def _table(data: dict[str, list[Any]]) -> ResultTable:
    cols = list(data)
    return ResultTable("statistics", cols, {c: list(v) for c, v in data.items()}, list(range(len(data[cols[0]]))))


def _openpyxl_core(table: ResultTable, path: Path) -> None:
    """The core writer as it was: openpyxl write-only, xlsx_cell per cell."""
    from openpyxl import Workbook

    wb = Workbook(write_only=True)
    ws = wb.create_sheet("Sheet1")
    ws.append(table.columns)
    for row in table.rows():
        ws.append([xlsx_cell(v) for v in row])
    wb.save(path)


def _openpyxl_legacy(columns, rows, colour, highlighted, path: Path) -> None:
    """The classic writer as it was (one sheet): openpyxl write-only, shared fill styles."""
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Alignment, Border, Font, PatternFill, Side

    wb = Workbook(write_only=True)
    ws = wb.create_sheet("Sheet" if highlighted else "Sheet1")
    convert = legacy_xlsx.highlight_value if highlighted else legacy_xlsx.plain_value
    styles = {}
    for code, rgb in ((RED, "FFFF0000"), (YELLOW, "FFFF00")):
        probe = WriteOnlyCell(ws)
        probe.fill = PatternFill(start_color=rgb, end_color=rgb, fill_type="solid")
        styles[code] = probe._style
    if highlighted:
        ws.append(list(columns))
    else:
        thin = Side(style="thin")
        header = []
        for c in columns:
            cell = WriteOnlyCell(ws, c)
            cell.font = Font(bold=True)
            cell.border = Border(left=thin, right=thin, top=thin, bottom=thin)
            cell.alignment = Alignment(horizontal="center", vertical="top")
            header.append(cell)
        ws.append(header)
    for k, row in enumerate(rows):
        values = [convert(v) for v in row]
        code = int(colour[k]) if colour is not None and highlighted else 0
        if code:
            cells = []
            for v in values:
                cell = WriteOnlyCell(ws, v)
                cell._style = styles[code]
                cells.append(cell)
            ws.append(cells)
        else:
            ws.append(values)
    wb.save(path)


def _cells(path: Path, read_only: bool) -> list[list[tuple[Any, str | None, bool | None]]]:
    wb = openpyxl.load_workbook(path, read_only=read_only)
    out = []
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            out.append([
                (c.value, None if read_only else (c.fill.fgColor.rgb if c.fill.fill_type else None),
                 None if read_only else bool(c.font.b))
                for c in row
            ])
    wb.close()
    return out


def _agree(ours: Path, reference: Path) -> None:
    for read_only in (False, True):
        a, b = _cells(ours, read_only), _cells(reference, read_only)
        assert len(a) == len(b)
        for ra, rb in zip(a, b):
            assert len(ra) == len(rb), (ra, rb)
            for (va, fa, ba), (vb, fb, bb) in zip(ra, rb):
                assert (fa, ba) == (fb, bb)
                if isinstance(vb, float):  # openpyxl kept 16 significant digits, we keep all 17
                    assert isinstance(va, float) and math.isclose(va, vb, rel_tol=1e-15), (va, vb)
                else:
                    assert _same(va, vb), (va, vb)


def test_core_writer_agrees_with_openpyxl(tmp_path):
    table = _table(MIXED)
    workbook.write_xlsx(table, tmp_path / "ours.xlsx")
    _openpyxl_core(table, tmp_path / "ref.xlsx")
    _agree(tmp_path / "ours.xlsx", tmp_path / "ref.xlsx")
    values = _read(tmp_path / "ours.xlsx")["Sheet1"]
    assert values[1][1] == 0.5 and values[2][1] is None and values[3][1] == "inf" and values[4][1] == "-inf"
    assert values[2][0] == "'=cmd|x" and values[5][0] == "'a;=b" and values[8][4] == "None"
    assert values[6][1] == np.float32(0.1).item()  # every digit of the float


@pytest.mark.parametrize("highlighted", [True, False])
def test_classic_writer_agrees_with_openpyxl(tmp_path, highlighted):
    table = _table(MIXED)
    colour = np.array([0, RED, YELLOW, 0, RED, YELLOW, 0, RED], dtype=np.int8)
    legacy_xlsx.write_workbook(tmp_path / "ours.xlsx", table.columns, table.rows(), len(table), colour, highlighted)
    _openpyxl_legacy(table.columns, list(table.rows()), colour, highlighted, tmp_path / "ref.xlsx")
    _agree(tmp_path / "ours.xlsx", tmp_path / "ref.xlsx")
    wb = openpyxl.load_workbook(tmp_path / "ours.xlsx")
    assert wb.sheetnames == (["Sheet"] if highlighted else ["Sheet1"])
    if highlighted:
        assert _fills(tmp_path / "ours.xlsx")[1:] == [set(), {RED_FILL}, {YELLOW_FILL}] * 2 + [set(), {RED_FILL}]


def test_core_writer_splits_sheets(tmp_path, monkeypatch):
    monkeypatch.setattr(workbook, "XLSX_SHEET_ROWS", 3)
    n = 8
    table = _table({"NPU Name": [f"op.{k}" for k in range(n)], "v": [k / 3 for k in range(n)]})
    assert workbook.write_xlsx(table, tmp_path / "r.xlsx") == [tmp_path / "r.xlsx"]
    data = _read(tmp_path / "r.xlsx", read_only=True)
    assert list(data) == ["part_0", "part_1", "part_2"]
    assert all(rows[0] == ["NPU Name", "v"] for rows in data.values())
    body = [r for rows in data.values() for r in rows[1:]]
    assert body == [[f"op.{k}", k / 3 if k % 3 else k // 3] for k in range(n)]
    monkeypatch.setattr(workbook, "XLSX_SHEET_ROWS", 8)
    workbook.write_xlsx(table, tmp_path / "one.xlsx")
    assert list(_read(tmp_path / "one.xlsx")) == ["Sheet1"]


def test_classic_writer_splits_and_colours_every_sheet(tmp_path, monkeypatch):
    monkeypatch.setattr(legacy_xlsx, "MAX_SHEET_ROWS", 4)
    n = 10
    table = _table({"NPU Name": [f"op.{k}" for k in range(n)], "Max diff": [float(k) for k in range(n)]})
    colour = np.array([k % 3 for k in range(n)], dtype=np.int8)
    path = legacy_xlsx.write_workbook(tmp_path / "r.xlsx", table.columns, table.rows(), n, colour, True)
    wb = openpyxl.load_workbook(path)
    assert wb.sheetnames == ["part_0", "part_1", "part_2"]
    got = []
    for ws in wb.worksheets:
        rows = list(ws.iter_rows())
        assert [c.value for c in rows[0]] == ["NPU Name", "Max diff"]
        for row in rows[1:]:
            got.append((row[0].value, {c.fill.fgColor.rgb for c in row if c.fill.fill_type}))
    want = {0: set(), RED: {RED_FILL}, YELLOW: {YELLOW_FILL}}
    assert got == [(f"op.{k}", want[k % 3]) for k in range(n)]


def test_classic_writer_checks_the_row_count(tmp_path):
    with pytest.raises(ValueError, match="rows"):
        legacy_xlsx.write_workbook(tmp_path / "r.xlsx", ["a"], iter([[1], [2]]), 3, None, False)
    assert not list(tmp_path.iterdir())


@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice is not installed")
def test_libreoffice_opens_it(tmp_path):
    rows = [["name", "x", "ok"], ["a&b", 0.1, True], ["日本", 2.5, False]]
    path = _write(tmp_path / "lo.xlsx", rows, styles=[3, 1, 2])
    subprocess.run(["soffice", "--headless", "--convert-to", "csv", "--outdir", str(tmp_path), str(path)],
                   check=True, capture_output=True, timeout=600)
    text = (tmp_path / "lo.csv").read_text(encoding="utf-8", errors="replace")
    assert "a&b" in text and "0.1" in text and "2.5" in text
