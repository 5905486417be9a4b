"""The forward calls of a dump as ``--auto-map`` sees them: a tree of modules and API calls with signatures.

A *call* is one forward ``data`` key of ``dump.json`` (a module's ``….forward.N`` or an API's ``….N.forward``);
its parent comes from ``construct.json`` beside the dump (none at L1, or when the file is missing). What a call
is made of, for pairing, is its *signature*: the shapes and dtype families of its inputs and outputs, the
shapes of its parameters and, for API calls, the op name without its framework prefix (``Functional.linear``
and ``Mint.nn.functional.linear`` are both ``linear``). Module class names and paths are *not* part of it: they
are what differs between two spellings of one model, so they only break ties.

Nothing here knows a framework: module and API calls are told apart by the shape of the key
(``forward.N`` last for a module, ``N.forward`` for an API), as msprobe writes both frameworks' dumps.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path

from msprobe_core.default_plugins.diff_analyze.construct import load_construct
from msprobe_core.plugin import DumpTable

log = logging.getLogger("msprobe")

#: row kinds by the first part of a row's suffix after its call key
INPUT, OUTPUT, PARAM = "input", "output", "parameters"

#: ops (as :func:`op_name` spells them) that only convert a tensor's dtype: no numeric effect when the dtype stays
#: (dtype names themselves, such as a method named after one, are the framework specs' knowledge, not listed here)
CAST_OPS = frozenset({"cast", "to", "type", "typeas", "float", "half", "double", "contiguous", "clone"})
#: ops that only lay the same elements out anew: no numeric effect when the element count stays
LAYOUT_OPS = frozenset({"reshape", "view", "viewas", "flatten", "unflatten", "squeeze", "unsqueeze", "expanddims",
                        "transpose", "permute", "swapaxes", "t", "contiguous"})
#: ops that read a tensor's shape or size and compute nothing
SHAPE_OPS = frozenset({"shape", "size", "dim", "numel", "rank", "tensorshape", "dynamicshape"})


def folded_shape(shape: str | None) -> tuple[int, str]:
    """A shape up to a reshape of its leading dimensions: its element count and its last dimension
    (``[2, 8, 64]`` and ``[16, 64]`` → ``(1024, "64")``; -1 and the text itself for no shape)."""
    numel = _numel(shape) if shape and shape.startswith("[") else None
    if numel is None:
        return -1, str(shape)
    return numel, shape.strip("[]").rsplit(",", 1)[-1].strip()  # type: ignore[union-attr]


def _numel(shape: str | None) -> int | None:
    """The element count of a shape written ``[2, 4, 16]`` (``None`` when it is not a shape)."""
    if not shape or not shape.startswith("["):
        return None
    n = 1
    for part in shape.strip("[]").split(","):
        part = part.strip()
        if not part:
            continue
        if not part.lstrip("-").isdigit():
            return None
        n *= int(part)
    return n


@dataclass
class Call:
    """One forward call: its key, where it sits in the tree, and its signature parts."""

    index: int
    key: str
    prefix: str
    number: str
    is_module: bool
    op: str
    inputs: tuple[tuple[str | None, str], ...]
    outputs: tuple[tuple[str | None, str], ...]
    params: tuple[str | None, ...]
    rows: tuple[int, ...]
    parent: int | None = None
    children: list[int] = field(default_factory=list)
    #: its parent in ``construct.json`` when that is no dumped call (``optimizer``)
    outer: str | None = None

    def token(self, level: int) -> Hashable:
        """The alignment token at ``level``: 1 full signature, 2 shapes (no dtypes), 3 shapes without the op,
        4 shapes up to a reshape, tensor inputs in any order, without the op."""
        if level == 1:
            return (self.is_module, self.op, self.inputs, self.outputs, self.params)
        shapes_in = tuple(s for s, _ in self.inputs)
        shapes_out = tuple(s for s, _ in self.outputs)
        if level == 2:
            return (self.is_module, self.op, shapes_in, shapes_out, self.params)
        # the loosest level leaves out arguments that are no tensor: one library gives a default explicitly
        # (``nn.SiLU`` calls ``silu(x, False)``), the other leaves it out (``F.silu(x)``)
        tensors_in = tuple(s for s, d in self.inputs if d and not d.startswith("<"))
        if level == 4:
            # one library flattens the batch and sequence dimensions before its matmul and restores them after
            # (``[16, 32] @ w`` against ``linear([2, 8, 32], w)``), or passes a table before the ids (a gather
            # against an embedding): the same elements in another shape, the same operands in another order
            return (self.is_module, tuple(sorted(map(folded_shape, tensors_in))),
                    tuple(map(folded_shape, shapes_out)), self.params, self.inert)
        # ... but never lets a call with no numeric effect (a cast to its own dtype) stand for one with an
        # effect of the same shapes (a square, a pow): the op it leaves out was all that told them apart
        return (self.is_module, tensors_in, shapes_out, self.params, self.inert)

    @property
    def io(self) -> Hashable:
        """Input and output shapes only: what a module pair must agree on."""
        return (tuple(s for s, _ in self.inputs), tuple(s for s, _ in self.outputs))

    @property
    def inert(self) -> bool:
        """An API call with no numeric effect: a cast to the dtype it had, a reshape of the same elements, a
        shape query. Such calls are what two implementations of the same math differ by most (one framework
        casts and reshapes where the other does not), so they never count against a pairing."""
        if self.is_module:
            return False
        if self.op in SHAPE_OPS:
            return True
        if self.op not in CAST_OPS and self.op not in LAYOUT_OPS:
            return False
        ins = [(s, d) for s, d in self.inputs if s is not None and s.startswith("[")]
        outs = [(s, d) for s, d in self.outputs if s is not None and s.startswith("[")]
        if not ins or len(outs) != 1:
            return False
        (shape_in, dtype_in), (shape_out, dtype_out) = ins[0], outs[0]
        return dtype_in == dtype_out and _numel(shape_in) is not None and _numel(shape_in) == _numel(shape_out)

    @property
    def path(self) -> str:
        """The module path or API name (the key without the call number and direction)."""
        return self.prefix


@dataclass
class CallTree:
    """Every forward call of one dump, in dump order, with parent/child links and the leaves in forward order."""

    table: DumpTable
    calls: list[Call]
    by_key: dict[str, int]
    leaves: list[int]
    has_construct: bool
    _leaves_under: dict[int, list[int]] = field(default_factory=dict)
    _api_of: dict[str, int] = field(default_factory=dict)
    _row_of: dict[str, int] = field(default_factory=dict)
    _shape: tuple[list[int], list[int], list[int]] | None = None
    _bottom_up: list[int] = field(default_factory=list)
    _chains: dict[int, list[int]] = field(default_factory=dict)
    _roots: set[int] | None = None
    _span: tuple[list[int], list[int]] | None = None

    def holds(self, a: int, b: int) -> bool:
        """Whether call ``a`` holds call ``b`` (``b`` is ``a`` or inside it), in constant time after one walk."""
        if self._span is None:
            n = len(self.calls)
            first, last = [0] * n, [0] * n
            clock = 0
            stack: list[tuple[int, bool]] = [(c.index, False) for c in reversed(self.calls) if c.parent is None]
            while stack:
                i, done = stack.pop()
                if done:
                    last[i] = clock
                    continue
                first[i] = clock
                clock += 1
                stack.append((i, True))
                stack.extend((k, False) for k in reversed(self.calls[i].children))
            self._span = (first, last)
        first, last = self._span
        return first[a] <= first[b] < max(last[a], first[a] + 1)

    def roots(self) -> set[int]:
        """The root modules: top-level modules holding every other module call (computed once)."""
        if self._roots is None:
            n_modules = sum(1 for c in self.calls if c.is_module)
            self._roots = set()
            for c in self.calls:
                if c.is_module and c.parent is None and c.children:
                    count, stack = 0, [c.index]
                    while stack:
                        i = stack.pop()
                        count += self.calls[i].is_module
                        stack.extend(self.calls[i].children)
                    if count == n_modules:
                        self._roots.add(c.index)
        return self._roots

    def rows_by_suffix(self, key: str) -> dict[str, str]:
        """The rows of data key ``key`` (any direction) by their suffix after the key: ``{".input.0": name}``."""
        if not self._api_of:
            self._api_of.update((a.key, k) for k, a in enumerate(self.table.apis))
        api = self.table.apis[self._api_of[key]]
        names = self.table.name
        return {names[r][len(key):]: names[r] for r in range(api.first_row, api.first_row + api.n_rows)}

    def shape_of(self, name: str) -> str | None:
        """The shape of the row called ``name``."""
        if not self._row_of:
            self._row_of.update((n, r) for r, n in enumerate(self.table.name))
        return self.table.shape[self._row_of[name]]

    def descendants_leaves(self, index: int) -> list[int]:
        """The leaves under call ``index`` (itself when it is a leaf), in forward order (computed once per call)."""
        cached = self._leaves_under.get(index)
        if cached is not None:
            return cached
        out: list[int] = []
        stack = [index]
        while stack:
            i = stack.pop()
            kids = self.calls[i].children
            if not kids:
                out.append(i)
            else:
                stack.extend(reversed(kids))
        self._leaves_under[index] = out
        return out

    def _tree_shape(self) -> tuple[list[int], list[int], list[int]]:
        """(depth, leaf count, wrapper rank) of every call, in one walk of the tree (computed once)."""
        if self._shape is not None:
            return self._shape
        n = len(self.calls)
        depth, leaf_count, rank = [0] * n, [0] * n, [0] * n
        order: list[int] = []
        stack = [c.index for c in self.calls if c.parent is None]
        while stack:
            i = stack.pop()
            order.append(i)
            for k in self.calls[i].children:
                depth[k] = depth[i] + 1
                stack.append(k)
        for i in reversed(order):  # children before their parent
            kids = self.calls[i].children
            if not kids:
                leaf_count[i] = 1
                continue
            leaf_count[i] = sum(leaf_count[k] for k in kids)
            if len(kids) == 1 and self.calls[kids[0]].children:
                rank[i] = rank[kids[0]] + 1
        self._shape = (depth, leaf_count, rank)
        self._bottom_up = order[::-1]
        return self._shape

    def bottom_up(self) -> list[int]:
        """Every call, each after the calls inside it."""
        self._tree_shape()
        return self._bottom_up

    def leaf_count(self, index: int) -> int:
        """How many leaves call ``index`` holds (1 for a leaf)."""
        return self._tree_shape()[1][index]

    def wrapper_rank(self, index: int) -> int:
        """How many modules below ``index`` hold exactly its calls (0: none; 2: it wraps a wrapper of a module)."""
        return self._tree_shape()[2][index]

    def wrapper_chain(self, lowest: int) -> list[int]:
        """``lowest`` and the calls around it holding exactly its leaves, nearest first (computed once a chain)."""
        chain = self._chains.get(lowest)
        if chain is None:
            leaf_count = self._tree_shape()[1]
            chain = [lowest]
            parent = self.calls[lowest].parent
            while parent is not None and leaf_count[parent] == leaf_count[lowest]:
                chain.append(parent)
                parent = self.calls[parent].parent
            self._chains[lowest] = chain
        return chain

    def lowest_common(self, a: int | None, b: int) -> int | None:
        """The lowest call holding both ``a`` and ``b`` (one of them, or an ancestor); ``None`` when they share
        no call, or when ``a`` is ``None``. Climbs only from the deeper call to where the two paths meet."""
        if a is None:
            return None
        depth = self._tree_shape()[0]
        calls = self.calls
        x: int | None = a
        y: int | None = b
        while x is not None and y is not None and depth[x] > depth[y]:
            x = calls[x].parent
        while x is not None and y is not None and depth[y] > depth[x]:
            y = calls[y].parent
        while x is not None and y is not None and x != y:
            x, y = calls[x].parent, calls[y].parent
        return x if x == y else None

    def ancestors(self, index: int) -> list[int]:
        """The parents of call ``index``, nearest first."""
        out = []
        p = self.calls[index].parent
        while p is not None:
            out.append(p)
            p = self.calls[p].parent
        return out


def dtype_family(dtype: str | None) -> str:
    """``torch.float32``, ``Float32``, ``mindspore.float32`` → ``float32``: the dtype as both frameworks mean it."""
    if not dtype:
        return ""
    return dtype.rsplit(".", 1)[-1].lower()


def op_name(prefix: str) -> str:
    """An API call's op without its framework's namespace or underscores: ``Tensor.__add__`` → ``add``,
    ``Functional.layer_norm`` and MindSpore's ``Primitive.layer_norm.LayerNorm`` → ``layernorm``."""
    return prefix.rsplit(".", 1)[-1].replace("_", "").lower()


def split_forward(key: str) -> tuple[str, str, bool] | None:
    """(prefix, call number, is_module) of a forward key, ``None`` for any other key."""
    parts = key.split(".")
    if len(parts) >= 3 and parts[-2] == "forward" and parts[-1].isdigit():
        return ".".join(parts[:-2]), parts[-1], True
    if len(parts) >= 3 and parts[-1] == "forward" and parts[-2].isdigit():
        return ".".join(parts[:-2]), parts[-2], False
    return None


def read_construct(dump: Path) -> dict[str, str | None] | None:
    """``construct.json`` beside ``dump`` as ``{call key: parent key}``, ``None`` when absent or unreadable.

    Read as ``-da`` reads it (:func:`msprobe_core.default_plugins.diff_analyze.construct.load_construct`): a cycle
    of enclosing calls, or a link out of the dump directory, is an input error naming the file.
    """
    return load_construct(dump, "--auto-map pairs these calls without their module tree") or None


def _dumped_parent(construct: dict[str, str | None], by_key: dict[str, int], key: str,
                   memo: dict[str, int | None]) -> int | None:
    """The nearest enclosing call of ``key`` that was dumped (a parent that was not: its own parent, and so on).

    ``construct`` has no cycle (:func:`read_construct`); ``memo`` keeps each undumped call's answer, so that a
    deep chain of calls that were not dumped is walked once, not once per call under it.
    """
    walked: list[str] = []
    parent = construct.get(key)
    found: int | None = None
    while parent is not None:
        if parent in by_key:
            found = by_key[parent]
            break
        if parent in memo:
            found = memo[parent]
            break
        walked.append(parent)
        parent = construct.get(parent)
    for undumped in walked:
        memo[undumped] = found
    return found


def call_tree(table: DumpTable) -> CallTree:
    """The forward calls of ``table`` with their signatures and the tree ``construct.json`` describes."""
    calls: list[Call] = []
    by_key: dict[str, int] = {}
    for api in table.apis:
        split = split_forward(api.key)
        if split is None or api.n_rows == 0:
            continue
        prefix, number, is_module = split
        ins: list[tuple[str | None, str]] = []
        outs: list[tuple[str | None, str]] = []
        params: list[str | None] = []
        rows = tuple(range(api.first_row, api.first_row + api.n_rows))
        for r in rows:
            kind = table.name[r][len(api.key) + 1:].split(".", 1)[0]
            if kind == PARAM:
                params.append(table.shape[r])
            elif kind == OUTPUT:
                outs.append((table.shape[r], dtype_family(table.dtype[r])))
            else:
                ins.append((table.shape[r], dtype_family(table.dtype[r])))
        by_key[api.key] = len(calls)
        calls.append(Call(len(calls), api.key, prefix, number, is_module, "" if is_module else op_name(prefix),
                          tuple(ins), tuple(outs), tuple(params), rows))
    construct = read_construct(Path(table.source)) if table.source else None
    if construct:
        memo: dict[str, int | None] = {}
        for call in calls:
            raw = construct.get(call.key)
            if raw is not None and raw not in by_key:
                call.outer = raw  # ``optimizer``: a parent the dumper names but does not dump
            parent = _dumped_parent(construct, by_key, call.key, memo)
            if parent is not None and parent != call.index:
                call.parent = parent
                calls[parent].children.append(call.index)
    leaves = [c.index for c in calls if not c.children]
    return CallTree(table, calls, by_key, leaves, bool(construct))
