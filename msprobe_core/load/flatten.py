"""The walk of one dump entry's values into rows of a :class:`~msprobe_core.model.DumpTable`.

The walk follows msprobe's naming exactly (one row per leaf, names built from list indices and dict keys,
``data_name`` overriding the walked name) so that row names and row order agree with msprobe's result tables. Every
leaf field the result uses is type-checked inline; a wrong type is a :class:`FieldProblem`, which names the JSON
path of the value only when one is raised.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

from ..errors import DumpFormatError
from ..files.validation import describe, find_json_path, json_path
from ..model import NA, STATE_PARAMETERS_GRAD, DumpTable
from .dialects import LEAF_FIELDS, P2P_FIELDS, Unrecognised, note_dialect


def crc32_text(value: Any) -> str:
    """msprobe's md5 fallback for leaves without an ``md5``: crc32 of ``str(value)``."""
    # a lone surrogate (a JSON "\\udcff" escape) is hashed as the escape the outputs show, not refused
    return format(zlib.crc32(str(value).encode("utf-8", "backslashreplace")), "08x")


def _type_name(value: Any) -> str:
    return str(type(value))


#: the md5 fallback of a tensor leaf without ``md5``: crc32 of the empty text, one shared string
EMPTY_CRC = crc32_text("")
_NONE_TYPE = type(None)
#: JSON types a statistic (Max/Min/Mean/Norm) may have; msprobe writes numbers, bools or null.
_STAT_TYPES = frozenset({float, int, bool, str, _NONE_TYPE})
#: an md5 is a crc32 text; the xor checksum of a 0-d tensor (26.0-26.2) is a float
_MD5_TYPES = frozenset({str, int, float, bool, _NONE_TYPE})


class FieldProblem(Exception):
    """A malformed value met while flattening; becomes a :class:`DumpFormatError` with its JSON path.

    ``container``/``key`` locate the value (the leaf object and the field name, or
    the list/object holding a bare value); the path is searched for only when this
    is raised, so well-formed dumps never pay for it.
    """

    def __init__(self, container: Any, key: object, message: str) -> None:
        super().__init__(message)
        self.container = container
        self.key = key
        self.message = message

    def to_error(self, source: Path, api_key: str, entry: Any) -> DumpFormatError:
        where = ("data", api_key)
        base = json_path(where) if self.container is None else find_json_path(entry, self.container, where)
        if self.key is not None:
            base += json_path((self.key,))[1:]
        return DumpFormatError(f"{base}: {self.message}", path=source)


def _field_problem(leaf: dict, field: str, name: str, expected: str) -> FieldProblem:
    return FieldProblem(leaf, field, f"'{field}' of {name} must be {expected}, got {describe(leaf.get(field))}")


class Flattener:
    """Walks API entries and appends rows to a :class:`DumpTable` (one instance per file).

    Every leaf field the result uses is type-checked here, inline (a few ``type() is`` tests a leaf); a wrong type
    raises :class:`FieldProblem`, never a stray exception. The walk runs once per leaf of a 100k-entry dump, so it is
    built as closures over the bound ``append`` methods of the columns and the per-file caches (no attribute look-ups
    per leaf), and the strings that repeat (dtypes, shapes, md5 fallbacks, prefixes) are kept once.
    """

    def __init__(self, table: DumpTable) -> None:
        self.t = table
        self._md5_seen = [False]
        # the same few dtype, shape and call spellings repeat on every row: keep one copy of each
        self._dtypes: dict[str, str] = {}
        self._shapes: dict[tuple, str] = {}
        self._crcs: dict[str, str] = {}
        self.strings: dict[str, str] = {}
        #: what the file held that the loader does not understand (see :mod:`msprobe_core.load.dialects`)
        self.unrecognised = Unrecognised()
        self.add_null, self.add_leaf, self.walk = _build_walk(self)

    def keep_account(self) -> None:
        """Put the account of what was not understood on the table (nothing when all was)."""
        if self.unrecognised:
            self.t.unrecognised = self.unrecognised.records(str(self.t.source))

    @property
    def has_md5(self) -> bool:
        """Whether some leaf carried an ``md5`` (the dump is in md5 mode)."""
        return self._md5_seen[0]

    @has_md5.setter
    def has_md5(self, value: bool) -> None:
        self._md5_seen[0] = value


def _build_walk(fl: Flattener):  # noqa: C901 - one hot loop, kept in one place on purpose
    """The (add_null, add_leaf, walk) closures of one flattener."""
    t = fl.t
    a_api, a_name, a_state = t.row_api.append, t.name.append, t.state.append
    a_dtype, a_shape, a_rg = t.dtype.append, t.shape.append, t.requires_grad.append
    a_max, a_min, a_mean, a_norm = t.max.append, t.min.append, t.mean.append, t.norm.append
    a_md5, a_dn = t.md5.append, t.data_name.append
    dtypes, shapes, crcs, md5_seen = fl._dtypes, fl._shapes, fl._crcs, fl._md5_seen
    stat_types, md5_types = _STAT_TYPES, _MD5_TYPES
    empty_crc = EMPTY_CRC
    pgrad = STATE_PARAMETERS_GRAD
    leaf_fields, p2p_fields = LEAF_FIELDS, P2P_FIELDS
    unrecognised = fl.unrecognised

    def add_null(name: str, state: str, api_idx: int) -> None:
        a_api(api_idx)
        a_name(name)
        a_state(state)
        a_dtype(None)
        a_shape(None)
        a_rg(None)
        a_max(None)
        a_min(None)
        a_mean(None)
        a_norm(None)
        a_md5(None)
        a_dn("-1")

    def stat(value: Any, leaf: dict, name: str) -> Any:
        # the uncommon statistic (not a plain float): validate all four in order, as msprobe's fields
        if value.__class__ not in stat_types:
            bad = next(k for k in ("Max", "Min", "Mean", "Norm") if leaf.get(k).__class__ not in stat_types)
            raise _field_problem(leaf, bad, name, "a number, a boolean, a string or null")
        if value.__class__ is int and not _float_sized(value):
            bad = next(k for k in ("Max", "Min", "Mean", "Norm") if not _float_sized(leaf.get(k)))
            raise _field_problem(leaf, bad, name, "a number within the range of a float")
        return _stat(value)

    def add_leaf(leaf: dict, name: str, state: str, api_idx: int) -> None:
        if not leaf_fields.issuperset(leaf):
            for field in leaf:
                if field not in leaf_fields:
                    unrecognised.add("leaf field", field, name)
        data_name = leaf.get("data_name")
        if data_name is None:
            data_name = "-1"
            row_name = name
        elif data_name.__class__ is str:
            if data_name:
                row_name = data_name.rsplit(".", 1)[0] if "." in data_name else data_name
            else:
                data_name = "-1"
                row_name = name
        else:
            raise _field_problem(leaf, "data_name", name, "a file name (string)")
        md5 = leaf.get("md5")
        if md5 is not None:
            if md5.__class__ is not str:
                if md5.__class__ not in md5_types:
                    raise _field_problem(leaf, "md5", name, "a string")
                md5 = _number_md5(md5, fl.t)
            md5_seen[0] = True
            if not md5:  # msprobe's compare takes an empty md5 as none: the crc32 text stands in
                md5 = None
        if "dtype" in leaf:
            dtype = leaf["dtype"]
            if dtype is not None:
                if dtype.__class__ is not str:
                    raise _field_problem(leaf, "dtype", name, "a string")
                dtype = dtypes.get(dtype) or dtypes.setdefault(dtype, dtype)
            shape = leaf.get("shape")
            if shape is None:
                shape_text = None
            elif shape.__class__ is list:
                try:
                    key = tuple(shape)
                    shape_text = shapes.get(key)
                except TypeError:  # unhashable items
                    shape_text = key = None
                if shape_text is None:
                    # validated once per distinct shape: a list of non-negative integers
                    if key is None or not all(d.__class__ is int and d >= 0 for d in shape):
                        raise _field_problem(leaf, "shape", name, "a list of non-negative integers")
                    shape_text = shapes.setdefault(key, str(shape))
            else:
                raise _field_problem(leaf, "shape", name, "a list")
            # the common statistic is a float that is not NaN: one class test and one compare
            mx = leaf.get("Max")
            if mx.__class__ is not float or mx != mx:
                mx = stat(mx, leaf, name)
            mn = leaf.get("Min")
            if mn.__class__ is not float or mn != mn:
                mn = stat(mn, leaf, name)
            me = leaf.get("Mean")
            if me.__class__ is not float or me != me:
                me = stat(me, leaf, name)
            nm = leaf.get("Norm")
            if nm.__class__ is not float or nm != nm:
                nm = stat(nm, leaf, name)
            rg = leaf.get("requires_grad")
            if rg is True:
                requires_grad = "True"
            elif rg is False:
                requires_grad = "False"
            elif rg is None:
                requires_grad = None
            elif rg.__class__ is str:
                requires_grad = rg
            else:
                raise _field_problem(leaf, "requires_grad", name, "a boolean")
            if md5 is None:
                md5 = empty_crc
        else:
            dtype, shape_text, mx, md5 = non_tensor(leaf, name, md5, crcs)
            requires_grad = None
            if mx.__class__ is list:
                mx, mn, me, nm = mx
            else:
                mn = me = nm = mx
        a_api(api_idx)
        a_name(row_name)
        a_state(state)
        a_dtype(dtype)
        a_shape(shape_text)
        a_rg(requires_grad)
        a_max(mx)
        a_min(mn)
        a_mean(me)
        a_norm(nm)
        a_md5(md5)
        a_dn(data_name)

    def walk(value: Any, name: str, state: str, api_idx: int, depth: int = 0) -> None:
        if depth > _MAX_DEPTH:
            raise FieldProblem(value, None, f"entry {name} is nested deeper than {_MAX_DEPTH} levels")
        cls = value.__class__
        if value is None:
            add_null(name, state, api_idx)
        elif cls is list or isinstance(value, list):
            keep_index = pgrad not in name or pgrad not in name.split(".")
            fast = depth < _MAX_DEPTH  # an item one level down still passes the depth check
            for i, item in enumerate(value):
                # fast path for the common shapes: a leaf record or null directly in the list
                if fast and item.__class__ is dict and "class_type" not in item and item.get("type").__class__ is str:
                    add_leaf(item, f"{name}.{i}" if keep_index else name, state, api_idx)
                    continue
                if fast and item is None:
                    add_null(f"{name}.{i}" if keep_index else name, state, api_idx)
                    continue
                try:
                    walk(item, f"{name}.{i}" if keep_index else name, state, api_idx, depth + 1)
                except FieldProblem as p:
                    if p.container is None:
                        p.container, p.key = value, i
                    raise
        elif cls is dict or isinstance(value, dict):
            if value.get("class_type") == _P2P_CLASS:
                if not p2p_fields.issuperset(value):
                    for field in value:
                        if field not in p2p_fields:
                            unrecognised.add("leaf field", field, name)
                tensor = value.get("tensor")
                if isinstance(tensor, dict) and isinstance(tensor.get("type"), str):
                    add_leaf(tensor, name, state, api_idx)
                else:
                    add_null(name, state, api_idx)
            elif isinstance(value.get("type"), str):
                add_leaf(value, name, state, api_idx)
            else:
                for k, v in value.items():
                    try:
                        walk(v, f"{name}.{k}", state, api_idx, depth + 1)
                    except FieldProblem as p:
                        if p.container is None:
                            p.container, p.key = value, k
                        raise
        else:
            raise FieldProblem(
                None, None, f"entry {name} holds a bare {describe(value)} where an argument record was expected"
            )

    return add_null, add_leaf, walk


#: the ``type()`` spellings of non-tensor values, one string object each
_TYPE_NAMES: dict[type, str] = {}


def non_tensor(leaf: dict, name: str, md5: str | None, crcs: dict[str, str]) -> tuple[Any, str, Any, str]:
    """(dtype, shape, statistic or list of four statistics, md5) of a non-tensor leaf."""
    kind = leaf.get("type")
    value = leaf.get("value")
    if kind == "torch.Size":
        dtype, shape_text, stats = "torch.Size", str(value), None
    elif kind == "slice":
        dtype, stats = "slice", None
        shape_text = f"({len(value)},)" if isinstance(value, list) else "()"
    elif kind == "ellipsis":
        dtype, shape_text, stats = "ellipsis", "[]", value
    elif name.rsplit(".", 1)[-1] in _RANK_PARTS:
        dtype, shape_text, stats = str(kind), "[]", str(value)
        if md5 is None:
            md5 = stats
    elif kind == _PROCESS_GROUP:
        ranks = str(leaf.get("group_ranks"))
        dtype, shape_text, stats = str(kind), "[]", ranks
        if md5 is None:
            md5 = ranks
    else:
        vtype = value.__class__
        if vtype is int and not _float_sized(value):
            raise _field_problem(leaf, "value", name, "a number within the range of a float")
        dtype = _TYPE_NAMES.get(vtype) or _TYPE_NAMES.setdefault(vtype, _type_name(value))
        shape_text = "[]"
        stats = _stat(value)
    if md5 is None:
        text = "" if value is None and "value" not in leaf else str(value)
        md5 = crcs.get(text)
        if md5 is None:
            md5 = crcs[text] = crc32_text(text)
    if stats.__class__ is list:  # a list statistic is one value repeated, not four values
        stats = [stats] * 4
    return dtype, shape_text, stats, md5


def _float_sized(value: Any) -> bool:
    """False for an integer too large for a float (every statistic is compared as a float: 10**400 cannot be)."""
    if value.__class__ is not int:
        return True
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _number_md5(value: Any, table: DumpTable) -> Any:
    """An md5 given as a number (the xor checksum of a 0-d tensor) as msprobe's compare keeps it.

    msprobe keeps the number (the writers spell it as any float cell: ``1.5``, `` inf`` in a CSV, a
    number in an xlsx) and compares it by equality; a zero is empty to it, like a missing md5
    (``None`` here: the crc32 fallback stands in); NaN becomes ``N/A`` (and equals ``N/A``);
    a boolean becomes ``True``/``False``.
    """
    note_dialect(table, "md5 values that are numbers (xor checksums of 0-d tensors, 26.x) kept as numbers")
    if value.__class__ is bool:
        return "True" if value else "False"
    if not value:
        return None
    if value != value:
        return NA
    return value


def _stat(value: Any) -> Any:
    """A statistic as msprobe keeps it: bools become ``"True"``/``"False"``, NaN the text ``"Nan"``."""
    if value is True:
        return "True"
    if value is False:
        return "False"
    if value != value:
        return "Nan"
    return value


_MAX_DEPTH = 400
_P2P_CLASS = "torch.distributed.P2POp"
_RANK_PARTS = frozenset({"src", "dst", "group_src", "group_dst"})
_PROCESS_GROUP = "torch.ProcessGroup"
