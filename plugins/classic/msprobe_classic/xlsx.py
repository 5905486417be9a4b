"""Writing the classic result workbook, with or without row fills (spec compare-legacy.md §5.3, §7.3).

Both writers stream rows through the sheets of the ``xlsx`` format (``WriterSpec.open_sheets`` of the
default plugin ``xlsx``: a million rows in seconds, where openpyxl needs a quarter of an hour). A highlighted
row is one style index (red ``FFFF0000`` or yellow ``FFFF00`` solid fill) given to every
cell of the row, so colouring adds almost nothing to the write. Values are converted a
column chunk at a time, with the per-cell rules of :func:`highlight_value` and
:func:`plain_value`. Past 1,048,500 rows the table continues on further sheets
(``part_0``, ``part_1``… of equal size, as msprobe names them) and those rows are
highlighted too.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from msprobe_core.plugin import (
    OutputError,
    UsageError,
    any_formula_like,
    atomic_path,
    get_host,
    neutralise,
    run_host,
)

from .highlight import RED, YELLOW

if TYPE_CHECKING:
    from msprobe_core.plugin import PluginHost

log = logging.getLogger("msprobe")
#: the result prefixes of the classic interface (the suffix after them, e.g. ``_rank0``, names the advisor file too)
PREFIXES = ("debug_compare_result", "compare_result")

MAX_SHEET_ROWS = 1_048_500
RED_RGB = "FFFF0000"
YELLOW_RGB = "FFFF00"


def highlight_value(value: Any) -> Any:
    """8.3.3 ``compare_result_df_convert``: numbers stay, everything else becomes text (inf/nan get a TAB)."""
    t = type(value)
    if t is float:
        if value != value or value in (math.inf, -math.inf):
            return f"{value}\t"
        return value
    if t is int:
        return value
    if isinstance(value, (np.floating, np.integer)) and not isinstance(value, np.bool_):
        return highlight_value(value.item())
    text = str(value)
    if text in ("inf", "-inf", "nan"):
        return text + "\t"
    return neutralise(text)


def plain_value(value: Any) -> Any:
    """A cell as pandas ``to_excel`` writes it: bools and numbers typed, NaN empty, inf as text."""
    t = type(value)
    if t is bool or t is int:
        return value
    if t is float:
        if value != value:
            return None
        if value in (math.inf, -math.inf):
            return "inf" if value > 0 else "-inf"
        return value
    if value is None:
        return None
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return plain_value(value.item())
    if t is str:
        return neutralise(value) if value != "" else None
    return neutralise(str(value))


def _slices(n: int) -> list[tuple[str, int, int]]:
    if n <= MAX_SHEET_ROWS:
        return [("", 0, n)]
    parts = -(-n // MAX_SHEET_ROWS)
    size = -(-n // parts)
    return [(f"part_{i}", i * size, min((i + 1) * size, n)) for i in range(parts)]


def _highlight_column(values: list[Any]) -> list[Any]:
    """:func:`highlight_value` over one column chunk; columns it would not change are returned as they are."""
    kinds = set(map(type, values))
    if kinds == {int} or (kinds == {float} and all(map(math.isfinite, values))):
        return values
    if kinds == {str} and not any_formula_like(values) and not any(t in values for t in ("inf", "-inf", "nan")):
        return values
    return list(map(highlight_value, values))


def _plain_column(values: list[Any]) -> list[Any]:
    """:func:`plain_value` over one column chunk (numbers and bools are written as they are)."""
    kinds = set(map(type, values))
    if kinds <= _PLAIN_KINDS:  # the stream writer spells NaN as an empty cell and inf as text, as plain_value does
        return values
    if kinds == {str} and all(values) and not any_formula_like(values):
        return values
    return list(map(plain_value, values))


_PLAIN_KINDS = frozenset({bool, int, float})


def write_workbook(
    path: Path,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    n_rows: int,
    colour: np.ndarray | None,
    highlighted: bool,
) -> Path:
    """Write one result workbook atomically; ``colour`` (per row: 0/RED/YELLOW) only with ``highlighted``."""
    open_sheets = open_sheets_of(run_host() or get_host())
    styles = [RED_RGB, YELLOW_RGB, "header"]
    style_of_code = np.zeros(max(RED, YELLOW) + 1, dtype=np.int64)
    style_of_code[RED], style_of_code[YELLOW] = 1, 2
    row_styles = style_of_code[colour].tolist() if colour is not None and highlighted else None
    convert = _highlight_column if highlighted else _plain_column
    first_name = "Sheet" if highlighted else "Sheet1"
    it = iter(rows)
    try:
        with atomic_path(path) as tmp, open_sheets(tmp, styles) as book:
            for name, start, end in _slices(n_rows):
                book.add_sheet(name or first_name)
                book.append(list(columns), style=0 if highlighted else 3)
                written = book.append_rows(
                    islice(it, end - start), None if row_styles is None else row_styles[start:end], convert
                )
                if written != end - start:
                    raise ValueError(f"the table has {start + written} rows, not {n_rows}")
    except OSError as exc:
        raise OutputError(f"cannot write result ({exc.strerror or exc})", path=path) from None
    return path


def open_sheets_of(host: PluginHost) -> Callable[[Path, Sequence[str]], Any]:
    """The sheets of ``host``'s ``xlsx`` format (the default plugin ``xlsx``'s streaming workbook), which the
    classic workbook is written with; a one-line usage error when it has none (``-p no:xlsx``)."""
    try:
        spec = host.writer("xlsx")
    except UsageError as exc:
        raise UsageError(f"the classic interface writes xlsx workbooks: {exc}") from None
    if spec.open_sheets is None:
        raise UsageError(f"the classic interface writes xlsx workbooks, and the xlsx format of "
                         f"{spec.plugin or 'a plugin'} opens no sheets of a plugin's own layout")
    return spec.open_sheets


def write_classic(table: Any, path: Path, options: Any) -> list[Path]:
    """The ``classic-xlsx`` writer: the classic workbook (fills from the highlight rule) and the advisor.

    ``table`` is a result of the classic metric sets and verdict rules; ``path`` is
    ``{prefix}{suffix}_{timestamp}.xlsx``, and the advisor is ``advisor{suffix}_{timestamp}.txt``
    beside it (unless ``-c``/``auto_analyze=False``). A file of that name is replaced, with
    8.3.3's warning.
    """
    from . import advisor
    from .settings import findings_of, settings_of

    settings = settings_of(options)
    if settings is None:
        raise UsageError("the classic-xlsx format writes the results of the classic interface "
                         "(msprobe -f FRAMEWORK compare -i compare.json) only")
    path = Path(path)
    if path.exists():
        log.warning("%s will be deleted.", path)
        path.unlink()
    log.info("Saving result excel file in progress. The file path is: %s.", path.resolve())
    if settings.highlight:
        log.info("Coloring Excel in progress.")
    written = [write_workbook(path, table.columns, table.rows(), len(table), findings_of(table.meta).fills,
                               settings.highlight)]
    if settings.auto_analyze:
        stem, _, stamp = path.stem.rpartition("_")
        suffix = next((stem[len(p):] for p in PREFIXES if stem.startswith(p)), "")
        advice = advisor.analyse(table.mode, table.data)
        written.append(advisor.write_advice(advice, path.parent, suffix, stamp))
    return written
