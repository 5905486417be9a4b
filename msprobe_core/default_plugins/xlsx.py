"""The default plugin ``xlsx``: the ``xlsx`` output format (``--output_format xlsx``) and its shorthand ``--xlsx``.

The workbook itself is written by the core's streaming xlsx writer (:func:`msprobe_core.plugin.write_xlsx`, part by
part :func:`msprobe_core.plugin.open_xlsx_chunked`), which the classic plugin's workbook uses too. Turned off
(``-p no:xlsx``), ``--xlsx`` is no option of ``msprobe compare`` and ``xlsx`` is no output format; results are CSV.
"""

from __future__ import annotations

from msprobe_core.plugin import OptionSpec, Register, WriterSpec, hookimpl, open_xlsx_chunked, write_xlsx


@hookimpl
def msprobe_register_writers(register: Register[WriterSpec]) -> None:
    """``xlsx``: one workbook (``Sheet1``, or ``part_N`` sheets past 1,048,500 rows), also written part by part."""
    register(WriterSpec("xlsx", ".xlsx", write_xlsx, open_chunked=open_xlsx_chunked))


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``--xlsx``: ``--output_format xlsx`` in one flag (read by the host as it builds the options)."""
    register(OptionSpec("xlsx", ("--xlsx",), "Write xlsx instead of csv.", kind="flag", default=False,
                        attribute=False))
