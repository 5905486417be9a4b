"""The default plugin ``xlsx``: the ``xlsx`` output format (``--output_format xlsx``) and its shorthand ``--xlsx``.

The workbook itself is written by the core's streaming xlsx writer (:func:`msprobe_core.plugin.write_xlsx`, part by
part :func:`msprobe_core.plugin.open_xlsx_chunked`), which the classic plugin's workbook uses too. Turned off
(``-p no:xlsx``), ``--xlsx`` is no option of ``msprobe compare`` and ``xlsx`` is no output format; results are CSV.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from msprobe_core.plugin import OptionSpec, Register, WriterSpec, hookimpl

if TYPE_CHECKING:
    from msprobe_core.plugin import ResultTable


def write_xlsx(table: ResultTable, path: Path) -> list[Path]:
    """The workbook of ``table`` (:func:`msprobe_core.plugin.write_xlsx`, imported with the first one written:
    registering the format, which ``msprobe --help`` does, loads no writer and no numpy)."""
    from msprobe_core.plugin import write_xlsx as write

    return write(table, path)


def open_xlsx_chunked(path: Path, rows: int) -> Any:
    """The workbook written part by part (:func:`msprobe_core.plugin.open_xlsx_chunked`, imported when used)."""
    from msprobe_core.plugin import open_xlsx_chunked as open_chunked

    return open_chunked(path, rows)


@hookimpl
def msprobe_register_writers(register: Register[WriterSpec]) -> None:
    """``xlsx``: one workbook (``Sheet1``, or ``part_N`` sheets past 1,048,500 rows), also written part by part."""
    register(WriterSpec("xlsx", ".xlsx", write_xlsx, open_chunked=open_xlsx_chunked))


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``--xlsx``: ``--output_format xlsx`` in one flag (read by the host as it builds the options)."""
    register(OptionSpec("xlsx", ("--xlsx",), "Write xlsx instead of csv.", kind="flag", default=False,
                        attribute=False))
