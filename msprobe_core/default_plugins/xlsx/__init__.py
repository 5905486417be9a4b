"""The default plugin ``xlsx``: the ``xlsx`` output format (``--output_format xlsx``) and its shorthand ``--xlsx``.

The workbook is written by this plugin's streaming writer (:mod:`.stream`, its sheet XML :mod:`.sheet`): a result
table whole (:mod:`.workbook`) or part by part (:mod:`.parts`), and, for a plugin that lays out a workbook of its own
(the classic plugin's, with row fills), sheet by sheet and row by row through the format's ``open_sheets``. Turned
off (``-p no:xlsx``), ``--xlsx`` is no option of ``msprobe compare``, ``xlsx`` is no output format and results are
CSV.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msprobe_core.plugin import OptionSpec, Register, WriterSpec, hookimpl

if TYPE_CHECKING:
    from msprobe_core.plugin import ResultTable


def write_xlsx(table: ResultTable, path: Path) -> list[Path]:
    """The workbook of ``table`` (:func:`.workbook.write_xlsx`, imported with the first one written: registering
    the format, which ``msprobe --help`` does, loads no writer and no numpy)."""
    from .workbook import write_xlsx as write

    return write(table, path)


def open_xlsx_chunked(path: Path, rows: int) -> Any:
    """The workbook written part by part (:class:`.parts.ChunkedWorkbook`, imported when used)."""
    from .parts import ChunkedWorkbook

    return ChunkedWorkbook(path, rows)


def open_xlsx_sheets(path: Path, styles: Sequence[str] = ()) -> Any:
    """A workbook at ``path`` written sheet by sheet, row by row (:class:`.stream.XlsxStreamWriter`); each style a
    fill colour (``RRGGBB`` or ``AARRGGBB`` hex) or ``"header"`` (bold, bordered, centred, as pandas' header)."""
    from .stream import HEADER_STYLE, XlsxStreamWriter, fill_style

    return XlsxStreamWriter(path, [HEADER_STYLE if style == "header" else fill_style(style) for style in styles])


@hookimpl
def msprobe_register_writers(register: Register[WriterSpec]) -> None:
    """``xlsx``: one workbook (``Sheet1``, or ``part_N`` sheets past 1,048,500 rows), also written part by part,
    and its sheets open to a plugin's own layout."""
    register(WriterSpec("xlsx", ".xlsx", write_xlsx, open_chunked=open_xlsx_chunked, open_sheets=open_xlsx_sheets))


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``--xlsx``: ``--output_format xlsx`` in one flag (read by the host as it builds the options)."""
    register(OptionSpec("xlsx", ("--xlsx",), "Write xlsx instead of csv.", kind="flag", default=False,
                        attribute=False))
