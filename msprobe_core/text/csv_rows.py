"""CSV text of many rows at once, byte for byte what ``csv.writer(fh, lineterminator="\\n")`` writes,
except that a field holding a carriage return is always quoted.

``csv.writer.writerows`` costs ~0.3 µs a field; a result has millions. Here a chunk of rows is built from
its columns: a column of text is scanned once (one ``"\\x00".join``) for a character that makes the csv
module quote a field, and quoted cell by cell (once per distinct cell) only if one is there; a column of
numbers (:func:`number_column`) is spelled by the C join itself; the rows are joined in one C-level pass.

Which characters make the running Python's csv module quote a field is asked of the module itself once,
not assumed; ``\\r`` and ``\\n`` are added whatever it says: Python 3.11 does not quote a lone ``\\r`` when
the line terminator is ``\\n``, and every CSV reader (the csv module, pandas, spreadsheets) ends a row
there, so a name starting with ``\\r=`` would start a forged row whose first cell is a formula.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

try:
    from .._dumpscan import join_rows as _join_rows
except ImportError:  # built without its C extension: the rows are joined in Python
    _join_rows = None

__all__ = ["ALWAYS_QUOTED", "csv_chunk", "csv_line", "number_column", "quote_cells", "quote_chars"]

# characters the csv module might quote a field for, with the default dialect and lineterminator="\n"
_CANDIDATES = ',"\n\r\t \x00\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029'


#: quoted whatever the csv module does: a reader ends a row at either
ALWAYS_QUOTED = "\r\n"


@lru_cache(maxsize=1)
def quote_chars() -> str:
    """The characters that make a field quoted: those ``csv.writer(fh, lineterminator="\\n")`` quotes for,
    asked of the csv module, and :data:`ALWAYS_QUOTED`."""
    found = []
    for c in _CANDIDATES:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow([f"a{c}b", "x"])
        if buf.getvalue().startswith('"') or c in ALWAYS_QUOTED:
            found.append(c)
    return "".join(found)


@lru_cache(maxsize=1)
def _needs_quote() -> re.Pattern[str]:
    return re.compile("[" + re.escape(quote_chars()) + "]")


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def quote_cells(texts: list[str], charset: str | None = None) -> list[str]:
    """``texts`` as fields of a CSV row: quoted (quotes doubled) where the csv module would quote them.

    ``charset``, when given, holds every character to quote for that the texts contain
    (it may hold more): without one the texts are returned without a scan.
    """
    if charset is None:
        charset = "\x00".join(texts)
    if not any(c in charset for c in quote_chars()):
        return texts
    needs = _needs_quote().search
    memo = dict.fromkeys(texts)  # shapes, dtypes and stacks repeat: quote each distinct text once
    for text in memo:
        memo[text] = _quoted(text) if needs(text) else text
    return list(map(memo.__getitem__, texts))


def csv_chunk(columns: Sequence[list[str]], charsets: Sequence[str | None] | None = None) -> str:
    """The CSV lines (each ending in ``\\n``) of the rows whose fields are ``columns`` (text, column-wise, or
    :func:`number_column`).

    ``charsets`` (one per column, see :func:`quote_cells`) lets columns of numbers skip the quoting scan.
    A row of one empty field is spelled ``""``, as the csv module spells it (a blank line is no row).
    """
    if not columns:
        return ""
    if charsets is None:
        charsets = [None] * len(columns)
    quoted = [col if col.__class__ is tuple else quote_cells(col, charset) for col, charset in zip(columns, charsets)]
    joined = None if _join_rows is None or len(quoted) == 1 else _join_rows(quoted)  # in C: no string per row, number
    if joined is not None:
        return joined
    quoted = [quote_cells(col[4]()) if col.__class__ is tuple else col for col in quoted]  # numbers spelled here
    if not quoted[0]:
        return ""
    if len(quoted) == 1:
        return "".join(f"{text}\n" if text else '""\n' for text in quoted[0])
    return "\n".join(map(",".join, zip(*quoted))) + "\n"


def number_column(values: Any, overrides: list[str | None] | None, suffix: str, quote_negative: bool,
                  spell: Callable[[], list[str]]) -> tuple[Any, ...]:
    """A column for :func:`csv_chunk` that the C join spells from orjson's digits (repr's): cell ``i`` is ``repr(x) +
    suffix`` of ``values[i]`` (a C-contiguous float64 array, finite), after an apostrophe if negative and
    ``quote_negative``, or ``overrides[i]`` (CSV text) where not None; ``spell()`` gives the cells for a Python join."""
    import orjson  # lazily: start-up paths (msprobe --help) import nothing heavy

    if overrides is not None:  # each distinct text quoted once, as quote_cells would (the same list: nothing to quote)
        distinct = list(set(overrides) - {None})
        if (quoted := quote_cells(distinct)) is not distinct:
            overrides = list(map(dict(zip(distinct, quoted)).get, overrides))
    body = orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY)[1:-1]
    return (body, overrides, suffix.encode(), quote_negative, spell)


def csv_line(fields: list[str]) -> str:
    """One CSV line (a header) as :func:`csv_chunk` spells rows."""
    return csv_chunk([[f] for f in fields])
