"""A compact wire form of a :class:`DumpTable`, for handing a loaded table between processes.

Pickling a table as it is costs about as much as loading it again (millions of
small objects, each memoised). The wire form sends each column as a few large
buffers instead, chosen by what the column holds:

* ``cat``: strings (or ``None``) with few distinct values → the distinct values
  and one small integer code per row;
* ``join``: many distinct strings → one string joined with a separator that is
  checked absent from every value;
* ``num``: statistics → a float64 array plus a map of the rows whose value is
  not a ``float`` (ints, strings, ``None``…) to that exact value;
* ``int``: machine-size integers → an int64 array;
* ``stat``: a statistics column held as arrays (the default plugin ``fast_scan``'s ``StatCells``) → its
  class, its arrays' bytes and its dict of other values (its ``to_wire``, read back by the class's ``from_wire``);
* ``obj``: anything else, pickled as it is.

:func:`decode_table` rebuilds a table equal to the original value by value and
type by type (floats round-trip exactly through float64). The form is a
sequence of parts (:func:`encode_parts`, rebuilt in order by :class:`TableBuilder`)
so that a sender and a receiver can work on consecutive parts at the same time.
:func:`can_encode` is false for a table the form cannot carry faithfully (a
subclass, extra attributes, non-list columns); the caller then loads the table itself.
"""

from __future__ import annotations

import dataclasses
from array import array
from collections.abc import Iterator
from itertools import compress, repeat
from operator import attrgetter, is_not
from typing import Any

from msprobe_core.plugin import ROW_COLUMNS, STAT_COLUMNS, ApiEntry, DumpTable, dump_json

_NONE = type(None)
#: row columns of a table, in field order
COLUMNS = ROW_COLUMNS
_FIELDS = frozenset(f.name for f in dataclasses.fields(DumpTable))
_API_FIELDS = tuple(f.name for f in dataclasses.fields(ApiEntry))
_SEPARATORS = ("\x00", "\x01", "\x1f", "\n")
#: a string column with more distinct values than this fraction of rows is joined, not coded
_CAT_MAX_SHARE = 0.25
#: the C scanner's coding of a column of few distinct values (msprobe_core.plugin.dump_json): None where not built
_category_codes = getattr(dump_json.dump_scanner(), "category_codes", None)


def _few_distinct(sample: list[Any]) -> bool:
    """Whether a column's first rows hold few enough distinct values for it to be coded (a joined column of every
    name otherwise costs a hash of each)."""
    return len(set(sample)) <= max(16, len(sample) * _CAT_MAX_SHARE)


def _categories(values: list[Any]) -> tuple[Any, ...] | None:
    """The ``cat`` form of a non-empty column of str and None with few distinct values, by the C scanner's
    ``category_codes`` (the values, their codes and the width of a code as :func:`_encode_strings` makes them, without
    a Python call per row); ``None`` for any other column, or where the scanner is not built."""
    sample = values[:4096]
    if _category_codes is None or not {str, _NONE}.issuperset(map(type, sample)) or not _few_distinct(sample):
        return None
    found = _category_codes(values, max(16, int(len(values) * _CAT_MAX_SHARE)))
    if found is None:
        return None
    uniques, codes, width = found
    return ("cat", uniques, codes if width == 1 else array("H" if width == 2 else "I", codes))


def _encode_strings(values: list[Any], types: set[type]) -> tuple[Any, ...]:
    # a sample decides first: hashing every name of a 362k-row column only to join it costs more than the join
    few = _few_distinct(values[:4096])
    distinct = dict.fromkeys(values) if few else {}
    if few and len(distinct) <= max(16, len(values) * _CAT_MAX_SHARE):
        uniques = list(distinct)
        code_of = {v: i for i, v in enumerate(uniques)}
        codes: Any
        if len(uniques) <= 256:  # the usual case: one byte a row
            codes = bytes(map(code_of.__getitem__, values))
        else:
            codes = array("I" if len(uniques) > 65535 else "H", map(code_of.__getitem__, values))
        return ("cat", uniques, codes)
    if types == {str}:
        for sep in _SEPARATORS:
            text = sep.join(values)
            if text.count(sep) == len(values) - 1:  # no value holds the separator: split gives them back
                return ("join", sep, text, len(values))
    return ("obj", values)


def _encode_numbers(values: list[Any], types: list[type]) -> tuple[Any, ...]:
    # positions of the values that are not floats, found at C speed (no Python loop over every row)
    odd = list(compress(range(len(values)), map(is_not, types, repeat(float))))
    others = {i: values[i] for i in odd}
    if odd:
        values = values.copy()
        for i in odd:
            values[i] = 0.0
    return ("num", array("d", values), others)


def _held_as_arrays(values: Any) -> bool:
    """Whether a column is a statistics column held as arrays, which gives its own wire form (``to_wire``)."""
    return type(values) is not list and hasattr(type(values), "to_wire") and hasattr(type(values), "from_wire")


def encode_column(values: list[Any]) -> tuple[Any, ...]:
    """The wire form of one column (see the module docstring)."""
    if _held_as_arrays(values):
        return ("stat", type(values), *values.to_wire())
    if values.__class__ is list and values and (cat := _categories(values)) is not None:
        return cat
    row_types = list(map(type, values))
    types = set(row_types)
    if types <= {str, _NONE} and values:
        return _encode_strings(values, types)
    if types == {int}:
        try:
            return ("int", array("q", values))
        except OverflowError:
            return ("obj", values)
    if float in types:
        return _encode_numbers(values, row_types)
    return ("obj", values)


def decode_column(wire: tuple[Any, ...], ints: list[int] | None = None) -> list[Any]:
    """Rebuild a column from :func:`encode_column`'s form.

    ``ints`` (``list(range(n))``), when given, supplies the int objects of an ``int``
    column so that equal values share one object, as the loader's columns do.
    """
    kind = wire[0]
    if kind == "cat":
        uniques, codes = wire[1], wire[2]
        return _take(uniques, codes)
    if kind == "join":
        sep, text, n = wire[1], wire[2], wire[3]
        return text.split(sep) if n else []
    if kind == "num":
        values = wire[1].tolist()
        for i, v in wire[2].items():
            values[i] = v
        return values
    if kind == "stat":
        return wire[1].from_wire(*wire[2:])
    if kind == "int":
        arr = wire[1]
        if ints is not None and (not arr or (min(arr) >= 0 and max(arr) < len(ints))):
            return _take(ints, arr)
        return arr.tolist()
    return wire[1]


def _take(items: list[Any], codes: bytes | array) -> list[Any]:
    """``[items[c] for c in codes]``, the same objects, by one numpy gather (twice as fast as a map; an index out of
    range raises ``IndexError`` as the map would)."""
    import numpy as np

    pool = np.empty(len(items), dtype=object)
    pool[:] = items
    dtype = np.uint8 if isinstance(codes, bytes) else np.dtype(codes.typecode)
    return pool[np.frombuffer(codes, dtype=dtype)].tolist()


def can_encode(table: DumpTable) -> bool:
    """Whether the wire form carries ``table`` faithfully (a plain table with list columns)."""
    if type(table) is not DumpTable or set(vars(table)) != _FIELDS:
        return False
    if any(type(getattr(table, c)) is not list and (c not in STAT_COLUMNS or not _held_as_arrays(getattr(table, c)))
           for c in COLUMNS) or type(table.apis) is not list:
        return False
    return all(type(a) is ApiEntry for a in table.apis)


def encode_parts(table: DumpTable, consume: bool = False) -> Iterator[tuple[str, Any]]:
    """The wire form of ``table`` (which :func:`can_encode`) as a sequence of parts.

    The parts are produced one at a time so that a sender can write each as soon as it
    is ready while the receiver rebuilds the previous one (:class:`TableBuilder`).
    ``consume`` empties each column of ``table`` once it is encoded, so a process that
    only sends the table never holds it twice.
    """
    apis = table.apis
    yield "meta", {f: getattr(table, f) for f in _FIELDS if f not in COLUMNS and f != "apis"}
    yield "apis", {f: encode_column(list(map(attrgetter(f), apis))) for f in _API_FIELDS}
    if consume:
        table.apis = []
    for c in COLUMNS:
        part = encode_column(getattr(table, c))
        if consume:
            setattr(table, c, [])
        yield c, part


def _share(values: list[Any], like: list[Any]) -> list[Any]:
    """``values`` with each item replaced by the equal object at the same position of ``like``.

    The two dumps of a pair usually hold the same names in the same order: sharing the
    objects saves a copy of every name and lets later joins compare by identity.
    """
    return [b if a == b else a for a, b in zip(values, like)] + values[len(like):]


def _decode_shared(part: tuple[Any, ...], like: list[Any]) -> list[Any]:
    """A string column decoded with the objects of ``like`` wherever the values are equal.

    When a joined column is exactly ``like`` (the usual pair: same calls, same names) no
    string is built at all: ``like`` holds the same number of values, joined the same way,
    none holding the separator (the count of separators shows it), so they are the values.
    """
    if part[0] == "join":
        sep, text, n = part[1], part[2], part[3]
        if len(like) == n and all(v.__class__ is str for v in like[:1]):
            try:
                if sep.join(like) == text:
                    return list(like)
            except TypeError:  # a value of like is not a string
                pass
    return _share(decode_column(part), like)


class TableBuilder:
    """Rebuilds a table from the parts of :func:`encode_parts`, in order.

    With ``like`` (the other table of the pair), equal names, API keys and category
    strings reuse ``like``'s objects where they line up (same values, less memory).
    """

    def __init__(self, like: DumpTable | None = None) -> None:
        self.like = like
        self.meta: dict[str, Any] | None = None
        self.apis: list[ApiEntry] | None = None
        self.columns: dict[str, list[Any]] = {}
        self._ints: list[int] = []

    def add(self, name: str, part: Any) -> None:
        """Decode one part (``meta``, ``apis``, then each column)."""
        like = self.like
        if name == "meta":
            self.meta = part
        elif name == "apis":
            shared = ("key", "call") if like is not None else ()
            a = {k: decode_column(w) for k, w in part.items() if k not in shared}
            for k in shared:  # the golden's API keys and call spellings, where they line up
                a[k] = _decode_shared(part[k], list(map(attrgetter(k), like.apis)))
            self.apis = dump_json.api_entries(tuple(a[f] for f in _API_FIELDS))
            self._ints = list(range(len(self.apis)))  # row_api: one int object per API, as the loader builds it
        elif name in COLUMNS and name not in self.columns:
            if like is not None and part[0] == "cat" and name in ("dtype", "shape", "state"):
                known = {k: k for k in set(getattr(like, name))}
                part = ("cat", [known.get(u, u) if u is not None else None for u in part[1]], part[2])
            if like is not None and name == "name":
                self.columns[name] = _decode_shared(part, like.name)
            else:
                self.columns[name] = decode_column(part, self._ints if name == "row_api" else None)
        else:
            raise ValueError(f"unexpected part {name!r}")

    def table(self) -> DumpTable:
        """The rebuilt table (every part received)."""
        if self.meta is None or self.apis is None or len(self.columns) != len(COLUMNS):
            raise ValueError("incomplete table")
        return DumpTable(apis=self.apis, **self.meta, **self.columns)


def encode_table(table: DumpTable, consume: bool = False) -> list[tuple[str, Any]] | None:
    """The whole wire form of ``table`` (a list of parts), or ``None`` when it cannot be sent faithfully."""
    return list(encode_parts(table, consume)) if can_encode(table) else None


def decode_table(parts: list[tuple[str, Any]], like: DumpTable | None = None) -> DumpTable:
    """Rebuild the table :func:`encode_table` sent (see :class:`TableBuilder` for ``like``)."""
    builder = TableBuilder(like)
    for name, part in parts:
        builder.add(name, part)
    return builder.table()
