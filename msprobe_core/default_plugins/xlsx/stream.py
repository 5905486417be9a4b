"""A dependency-free streaming xlsx writer (zipfile and hand-built SpreadsheetML).

openpyxl builds a Python object per cell and needs about 15 minutes for a million-row
result on a small machine; this writer renders each sheet in chunks of rows
(:data:`CHUNK_ROWS`) straight into its zip member (``ZipFile.open(name, "w",
force_zip64=True)``), with the parts that a workbook needs and nothing else (no theme,
no shared strings, no document properties). It never holds more than one chunk of rows:
a sheet of any length is written in constant memory.

Speed comes from doing the per-cell work in C: each column of a chunk is classified with
C-level scans (one type? finite? text needing no escape?), the classes pick a compiled
f-string that renders a whole row, and only columns that need it (mixed types, escapes,
empty cells) are rendered cell by cell in Python. The deflate work runs in a second
thread (zlib releases the GIL), overlapping with the rendering. The output is
deterministic: the same rows give the same bytes.

Cells are typed as openpyxl's write-only mode types them, so a workbook reads back the
same with openpyxl (normal and read-only mode) and pandas:

* ``str``: an inline string, XML-escaped; truncated to 32,767 characters as openpyxl
  does; characters XML 1.0 forbids (control characters other than TAB/LF/CR, lone
  surrogates, U+FFFE/U+FFFF) are written in OOXML's ``_xHHHH_`` escape (openpyxl's
  :func:`openpyxl.utils.escape.escape` spelling, which Excel and LibreOffice decode;
  openpyxl would refuse the cell); CR is kept as ``&#13;``; the empty string is an empty
  cell element (read back as ``None``);
* ``bool``: ``t="b"``;
* ``int``: a number, all digits;
* ``float``: a number spelled with :func:`repr` (it reads back as the same float), an
  integral value without ``.0`` (``2`` as openpyxl writes it, read back as ``int``); NaN
  is an empty cell and ±inf the text ``inf``/``-inf`` (numbers cannot hold them);
* ``None``: no cell (an empty cell carrying the row's style in a styled row);
* numpy scalars as their Python value; anything else as ``str(value)``.

Rows can carry a style (an index into the ``styles`` given to the writer): fill colours
for highlighting, a bold bordered header. Usage::

    with atomic_path(path) as tmp, XlsxStreamWriter(tmp, styles=[fill_style("FFFF0000")]) as xw:
        xw.add_sheet("Sheet1")
        xw.append(["NPU Name", "Max diff"])
        xw.append(["Functional.add.0.forward.output.0", 0.5], style=1)
"""

from __future__ import annotations

import queue
import re
import threading
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from types import TracebackType
from typing import Any

from .sheet import checked_column, column_letter, render_rows, xml_text

__all__ = [
    "CellStyle",
    "HEADER_STYLE",
    "MAX_SHEET_NAME",
    "MAX_SHEET_ROWS",
    "XlsxStreamWriter",
    "fill_style",
]

MAX_SHEET_NAME = 31
MAX_SHEET_ROWS = 1_048_576
"""Rows a sheet holds (Excel's limit)."""
CHUNK_ROWS = 2048
"""Rows rendered and handed to the zip stream at a time."""

_NS_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_NS_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_NS_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_XML_DECL = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed member times: the same table gives the same bytes

_BAD_SHEET_CHARS = re.compile(r"[\[\]:*?/\\]")


def _argb(colour: str) -> str:
    """An ``AARRGGBB`` colour; 6 hex digits get alpha ``00`` as openpyxl gives them."""
    text = colour.upper()
    if len(text) == 6:
        text = "00" + text
    if len(text) != 8 or any(c not in "0123456789ABCDEF" for c in text):
        raise ValueError(f"colour must be RRGGBB or AARRGGBB hex, got {colour!r}")
    return text


@dataclass(frozen=True)
class CellStyle:
    """A cell format: solid fill colour (``AARRGGBB`` or ``RRGGBB``), bold font, thin border, alignment."""

    fill: str | None = None
    bold: bool = False
    border: bool = False
    horizontal: str | None = None
    vertical: str | None = None


HEADER_STYLE = CellStyle(bold=True, border=True, horizontal="center", vertical="top")
"""pandas ``to_excel``'s header cells: bold, thin border all round, centred, top-aligned."""


def fill_style(colour: str) -> CellStyle:
    """A style that only fills the cell with ``colour`` (solid pattern)."""
    return CellStyle(fill=_argb(colour))


def _styles_xml(styles: Sequence[CellStyle]) -> str:
    """``xl/styles.xml`` with one cell format per style after the default format 0."""
    fills = ['<fill><patternFill patternType="none"/></fill>', '<fill><patternFill patternType="gray125"/></fill>']
    fonts = ['<font><sz val="11"/><name val="Calibri"/><family val="2"/></font>']
    borders = ["<border><left/><right/><top/><bottom/><diagonal/></border>"]
    xfs = ['<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>']
    for style in styles:
        fill_id = font_id = border_id = 0
        attrs = ""
        if style.fill:
            rgb = _argb(style.fill)
            fills.append(
                f'<fill><patternFill patternType="solid"><fgColor rgb="{rgb}"/><bgColor rgb="{rgb}"/>'
                "</patternFill></fill>"
            )
            fill_id = len(fills) - 1
            attrs += ' applyFill="1"'
        if style.bold:
            fonts.append('<font><b val="1"/><sz val="11"/><name val="Calibri"/><family val="2"/></font>')
            font_id = len(fonts) - 1
            attrs += ' applyFont="1"'
        if style.border:
            side = 'style="thin"><color auto="1"/>'
            borders.append(
                f"<border><left {side}</left><right {side}</right><top {side}</top>"
                f"<bottom {side}</bottom><diagonal/></border>"
            )
            border_id = len(borders) - 1
            attrs += ' applyBorder="1"'
        align = ""
        if style.horizontal or style.vertical:
            attrs += ' applyAlignment="1"'
            parts = "".join(
                f' {k}="{v}"' for k, v in (("horizontal", style.horizontal), ("vertical", style.vertical)) if v
            )
            align = f"<alignment{parts}/>"
        head = f'<xf numFmtId="0" fontId="{font_id}" fillId="{fill_id}" borderId="{border_id}" xfId="0"{attrs}'
        xfs.append(f"{head}>{align}</xf>" if align else f"{head}/>")
    return (
        f'{_XML_DECL}<styleSheet xmlns="{_NS_MAIN}">'
        f'<fonts count="{len(fonts)}">{"".join(fonts)}</fonts>'
        f'<fills count="{len(fills)}">{"".join(fills)}</fills>'
        f'<borders count="{len(borders)}">{"".join(borders)}</borders>'
        '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
        f'<cellXfs count="{len(xfs)}">{"".join(xfs)}</cellXfs>'
        '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
        "</styleSheet>"
    )




"""From this many float cells in a column chunk on, their digits are spelled in one C call."""


class _Deflater:
    """Writes bytes to one zip member from a background thread (zlib releases the GIL while it compresses)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=4)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="xlsx-deflate", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            data = self._queue.get()
            if data is None:
                return
            if self._error is None:
                try:
                    self._stream.write(data)
                except BaseException as exc:  # noqa: BLE001 - handed to the writing thread
                    self._error = exc

    def write(self, data: bytes) -> None:
        """Queue ``data`` (blocks while four chunks are waiting); re-raises a failure of the thread."""
        if self._error is not None:
            raise self._error
        self._queue.put(data)

    def abort(self) -> None:
        """Drop what is still queued and stop the thread (the member stays open)."""
        if self._error is None:
            self._error = RuntimeError("xlsx writing aborted")
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._queue.put(None)
        self._thread.join()

    def close(self) -> None:
        """Wait for every queued chunk, close the member, re-raise a failure of the thread."""
        self._queue.put(None)
        self._thread.join()
        try:
            if self._error is not None:
                raise self._error
        finally:
            self._stream.close()


class XlsxStreamWriter:
    """Write an xlsx workbook row by row, one sheet after another, in constant memory.

    ``styles`` are the cell formats rows may use: ``style=k`` on a row gives every cell of
    the row ``styles[k - 1]`` (``0``: no style). ``compresslevel`` is zlib's (1: fast,
    files about a third larger than at the default 6).
    """

    def __init__(self, path: Path | str, styles: Sequence[CellStyle] = (), compresslevel: int = 1) -> None:
        self.path = Path(path)
        self.styles = list(styles)
        self._style_attr = [""] + [f' s="{k}"' for k in range(1, len(self.styles) + 1)]
        self._file = open(self.path, "wb")  # noqa: SIM115 - closed by close()/abort()
        try:
            self._zip = zipfile.ZipFile(self._file, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=compresslevel)
        except BaseException:
            self._file.close()
            raise
        self._member: Any = None
        self._compresslevel = compresslevel
        self._sheets: list[str] = []
        self._sink: _Deflater | None = None
        self._row = 0
        self._rows: list[Sequence[Any]] = []
        self._row_styles: list[int] = []
        self._letters: list[str] = []
        self._closed = False

    # -- sheets ---------------------------------------------------------------------------
    def add_sheet(self, name: str) -> None:
        """Finish the current sheet and start a new one called ``name``."""
        if self._closed:
            raise ValueError("the workbook is closed")
        if not name or len(name) > MAX_SHEET_NAME or _BAD_SHEET_CHARS.search(name) or name[0] == "'" or name[-1] == "'":
            raise ValueError(f"invalid sheet name {name!r}")
        if name.casefold() in (s.casefold() for s in self._sheets):
            raise ValueError(f"duplicate sheet name {name!r}")
        self._end_sheet()
        self._sheets.append(name)
        info = zipfile.ZipInfo(f"xl/worksheets/sheet{len(self._sheets)}.xml", _ZIP_TIME)
        info.compress_type = zipfile.ZIP_DEFLATED
        info._compresslevel = self._compresslevel  # type: ignore[attr-defined]  # ZipInfo has no public setter
        self._member = self._zip.open(info, "w", force_zip64=True)
        self._sink = _Deflater(self._member)
        self._sink.write(f'{_XML_DECL}<worksheet xmlns="{_NS_MAIN}" xmlns:r="{_NS_REL}"><sheetData>'.encode())
        self._row = 0

    @property
    def sheet_names(self) -> list[str]:
        """Names of the sheets started so far."""
        return list(self._sheets)

    @property
    def rows_in_sheet(self) -> int:
        """Rows appended to the current sheet (header included)."""
        return self._row + len(self._rows)

    # -- rows -----------------------------------------------------------------------------
    def append(self, row: Sequence[Any], style: int = 0) -> None:
        """Add one row to the current sheet (``style``: 1-based index into ``styles``, 0 for none)."""
        if self._sink is None:
            raise ValueError("add_sheet() first")
        if style and not 0 < style <= len(self.styles):
            raise ValueError(f"no style {style}: the writer has {len(self.styles)}")
        self._rows.append(row)
        self._row_styles.append(style)
        if len(self._rows) >= CHUNK_ROWS:
            self._flush()

    def append_rows(
        self,
        rows: Iterable[Sequence[Any]],
        styles: Iterable[int] | None = None,
        convert: Callable[[list[Any]], Sequence[Any]] | None = None,
    ) -> int:
        """Add many rows; returns how many.

        ``styles`` gives each row's style (default: none). ``convert``, when given, maps each
        column of a chunk of rows to the values to write (a column-at-a-time version of a
        per-cell conversion, for speed); it must return as many values as it is given.
        """
        self._flush()
        if self._sink is None:
            raise ValueError("add_sheet() first")
        it = iter(rows)
        style_it = None if styles is None else iter(styles)
        count = 0
        while True:
            chunk = list(islice(it, CHUNK_ROWS))
            if not chunk:
                return count
            chunk_styles = [0] * len(chunk) if style_it is None else [int(s) for s in islice(style_it, len(chunk))]
            if len(chunk_styles) != len(chunk):
                raise ValueError("fewer styles than rows")
            if any(s and not 0 < s <= len(self.styles) for s in chunk_styles):
                raise ValueError(f"unknown style in {sorted(set(chunk_styles))}: the writer has {len(self.styles)}")
            self._write_chunk(chunk, chunk_styles, convert)
            count += len(chunk)

    def _flush(self) -> None:
        rows, styles = self._rows, self._row_styles
        if rows:
            self._rows, self._row_styles = [], []
            self._write_chunk(rows, styles, None)

    def _write_chunk(
        self,
        rows: list[Sequence[Any]],
        styles: list[int],
        convert: Callable[[list[Any]], Sequence[Any]] | None,
    ) -> None:
        first = self._row + 1
        if first + len(rows) - 1 > MAX_SHEET_ROWS:
            raise ValueError(f"a sheet holds at most {MAX_SHEET_ROWS:,} rows")
        self._row += len(rows)
        numbers = range(first, first + len(rows))
        attrs = self._style_attr
        styled = any(styles)
        width = max(map(len, rows))
        while len(self._letters) < width:
            self._letters.append(column_letter(len(self._letters)))
        if all(len(r) == width for r in rows):
            columns: Iterable[Sequence[Any]] = zip(*rows)
        else:
            columns = zip(*(tuple(r) + (None,) * (width - len(r)) for r in rows))
        if convert is not None:
            columns = (checked_column(convert(list(values)), len(rows)) for values in columns)
        text = render_rows(self._letters, numbers, attrs, styles, styled, columns)
        assert self._sink is not None
        self._sink.write(text.encode("utf-8"))

    # -- finishing ------------------------------------------------------------------------
    def _end_sheet(self) -> None:
        if self._sink is None:
            return
        self._flush()
        sink = self._sink
        sink.write(b"</sheetData></worksheet>")
        sink.close()
        self._sink = self._member = None

    def close(self) -> None:
        """Finish the last sheet and write the workbook parts (a workbook needs at least one sheet)."""
        if self._closed:
            return
        try:
            if not self._sheets:
                self.add_sheet("Sheet1")
            self._end_sheet()
            for name, text in self._package_parts().items():
                info = zipfile.ZipInfo(name, _ZIP_TIME)
                info.compress_type = zipfile.ZIP_DEFLATED
                self._zip.writestr(info, text.encode("utf-8"))
            self._zip.close()
        except BaseException:
            self.abort()
            raise
        self._closed = True
        self._file.close()

    def abort(self) -> None:
        """Stop writing after a failure, release the file and the thread; the file is left incomplete (remove it)."""
        if self._closed:
            return
        self._closed = True
        sink, member = self._sink, self._member
        self._sink = self._member = None
        try:
            if sink is not None:
                sink.abort()
            if member is not None and not member.closed:
                member.close()
            self._zip.close()
        except BaseException:  # noqa: BLE001 - the failure being handled is the one to report
            # the zip could not be finished (a write handle still open): detach it from the
            # file so that its finaliser has nothing left to write or complain about
            self._zip.fp = None
        finally:
            self._file.close()

    def __enter__(self) -> XlsxStreamWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def _package_parts(self) -> dict[str, str]:
        n = len(self._sheets)
        ct = "application/vnd.openxmlformats-officedocument.spreadsheetml"
        overrides = "".join(
            f'<Override PartName="/xl/worksheets/sheet{k}.xml" ContentType="{ct}.worksheet+xml"/>'
            for k in range(1, n + 1)
        )
        sheets = "".join(
            f'<sheet name="{_attr(name)}" sheetId="{k}" r:id="rId{k}"/>' for k, name in enumerate(self._sheets, 1)
        )
        rels = "".join(
            f'<Relationship Id="rId{k}" Type="{_NS_REL}/worksheet" Target="worksheets/sheet{k}.xml"/>'
            for k in range(1, n + 1)
        )
        return {
            "[Content_Types].xml": (
                f'{_XML_DECL}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
                '<Default Extension="xml" ContentType="application/xml"/>'
                f'<Override PartName="/xl/workbook.xml" ContentType="{ct}.sheet.main+xml"/>'
                f'<Override PartName="/xl/styles.xml" ContentType="{ct}.styles+xml"/>'
                f"{overrides}"
                '<Override PartName="/docProps/app.xml" '
                'ContentType="application/vnd.openxmlformats-officedocument.extended-properties+xml"/>'
                "</Types>"
            ),
            "_rels/.rels": (
                f'{_XML_DECL}<Relationships xmlns="{_NS_PKG_REL}">'
                f'<Relationship Id="rId1" Type="{_NS_REL}/officeDocument" Target="xl/workbook.xml"/>'
                f'<Relationship Id="rId2" Type="{_NS_REL}/extended-properties" Target="docProps/app.xml"/>'
                "</Relationships>"
            ),
            "docProps/app.xml": (
                f"{_XML_DECL}<Properties "
                'xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties">'
                "<Application>msprobe-core</Application></Properties>"
            ),
            "xl/workbook.xml": (
                f'{_XML_DECL}<workbook xmlns="{_NS_MAIN}" xmlns:r="{_NS_REL}">'
                f'<bookViews><workbookView activeTab="0"/></bookViews><sheets>{sheets}</sheets></workbook>'
            ),
            "xl/_rels/workbook.xml.rels": (
                f'{_XML_DECL}<Relationships xmlns="{_NS_PKG_REL}">{rels}'
                f'<Relationship Id="rId{n + 1}" Type="{_NS_REL}/styles" Target="styles.xml"/>'
                "</Relationships>"
            ),
            "xl/styles.xml": _styles_xml(self.styles),
        }


def _attr(text: str) -> str:
    """``text`` as an attribute value in double quotes."""
    return xml_text(text).replace('"', "&quot;")
