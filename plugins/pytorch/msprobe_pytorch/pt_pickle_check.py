"""Checks of a tensor pickle's opcodes before it is unpickled: memo use, expansion and depth are bounded.

A pickle that names far more memo slots, expands to far more objects or nests far deeper than ``torch.save``
ever writes is refused before :mod:`.pt_unpickle` runs it. Part of :mod:`.pt_reader`.
"""

from __future__ import annotations

from typing import Any

from msprobe_core.plugin import TensorReadError

_MEMO_LIMIT = 1 << 16  # memo slots a tensor pickle may name (torch uses a handful)
#: objects a value of a tensor pickle may expand to (shared parts counted each time), and how deep it may nest:
#: torch writes a few dozen objects, three levels deep
_EXPANDED_LIMIT = 100_000
_DEPTH_LIMIT = 64


def _opcode_table() -> dict[int, tuple[int, int]]:
    """opcode byte -> (kind, size): 0 fixed ``size`` bytes, 1 a ``size``-byte length then data, 2/3 one/two lines."""
    import pickletools

    table: dict[int, tuple[int, int]] = {}
    prefix = {-2: 1, -3: 4, -4: 4, -5: 8}
    for op in pickletools.opcodes:
        n = op.arg.n if op.arg is not None else 0
        code = ord(op.code)
        if op.name in ("GLOBAL", "INST"):
            table[code] = (3, 0)
        elif n == -1:  # UP_TO_NEWLINE
            table[code] = (2, 0)
        elif n < -1:
            table[code] = (1, prefix[n])
        else:
            table[code] = (0, n)
    return table


def _effect_table() -> dict[int, str]:
    """opcode byte -> what it does to the unpickler's stack, in the terms :func:`_check_pickle` models."""
    import pickletools

    groups = {
        "new": "EMPTY_LIST EMPTY_DICT EMPTY_TUPLE EMPTY_SET",
        "mark": "MARK",
        "from_mark": "LIST TUPLE DICT FROZENSET OBJ INST",
        "tuple1": "TUPLE1", "tuple2": "TUPLE2", "tuple3": "TUPLE3",
        "append": "APPEND", "setitem": "SETITEM", "build": "BUILD",
        "extend": "APPENDS SETITEMS ADDITEMS",
        "call2": "REDUCE NEWOBJ STACK_GLOBAL", "call3": "NEWOBJ_EX", "call1": "BINPERSID READONLY_BUFFER",
        "pop": "POP", "pop_mark": "POP_MARK", "dup": "DUP",
        "put": "PUT BINPUT LONG_BINPUT", "memoize": "MEMOIZE", "get": "GET BINGET LONG_BINGET",
        "none": "PROTO FRAME", "stop": "STOP",
    }
    by_name = {name: group for group, names in groups.items() for name in names.split()}
    # everything else pushes one atom: numbers, strings, bytes, None, bools, GLOBAL, PERSID, EXT*, NEXT_BUFFER
    return {ord(op.code): by_name.get(op.name, "atom") for op in pickletools.opcodes}


_OPCODES = _opcode_table()
_EFFECTS = _effect_table()


class _BadPickle(Exception):
    """The opcode stream is not one the unpickler would accept (checked before it runs)."""


def _check_pickle(pkl: bytes) -> None:
    """Refuse a pickle whose values would cost unbounded work or memory once unpickled, before it runs.

    Two bombs fit in a few hundred bytes. ``LONG_BINPUT 2**32-1`` makes ``pickle.Unpickler`` grow
    its memo array to that many slots (tens of GB, zeroed). And the memo lets a value hold the same
    part many times: forty levels of ``[x, x]`` are 2**40 objects to ``repr`` or ``hash``, which the
    unpickler does itself for a dict key (no Ctrl-C gets through). The opcodes are walked once: each
    container's parts are recorded, then every value's expanded size (shared parts counted each
    time, cycles once) and depth are bounded, so formatting or hashing any value later is cheap.
    Pickles already seen are remembered, so a dump of same-shaped tensors pays this once.
    """
    if pkl in _SAFE_PICKLES:
        return
    try:
        parts = _walk_pickle(pkl)
    except _BadPickle as exc:
        raise TensorReadError(f"data.pkl is not a valid tensor pickle: {exc}") from None
    _bound_values(parts)
    _SAFE_PICKLES.remember(pkl, None)


def _walk_pickle(pkl: bytes) -> list[list[int]]:
    """The parts of every container the pickle builds (object ids; ``-1`` stands for any atom)."""
    parts: list[list[int]] = []
    stack: list[int] = []
    marks: list[int] = []
    memo: dict[int, int] = {}
    at, end = 0, len(pkl)
    try:
        while at < end:
            code = pkl[at]
            at += 1
            spec = _OPCODES.get(code)
            if spec is None:
                raise _BadPickle(f"unknown opcode {code:#04x}")
            kind, size = spec
            index = -1
            if kind == 0:
                if code in (0x71, 0x68):  # BINPUT, BINGET
                    index = pkl[at]
                elif code in (0x72, 0x6A):  # LONG_BINPUT, LONG_BINGET
                    index = int.from_bytes(pkl[at : at + 4], "little")
                at += size
            elif kind == 1:
                length = int.from_bytes(pkl[at : at + size], "little", signed=size == 4)
                if length < 0:
                    raise _BadPickle("negative length")
                at += size + length
            else:
                line_at = at
                for _ in range(kind - 1):  # one line, or two for GLOBAL/INST
                    nl = pkl.find(b"\n", at)
                    if nl < 0:
                        raise _BadPickle("unterminated line")
                    at = nl + 1
                if code in (0x70, 0x67):  # PUT, GET <decimal>
                    try:
                        index = int(pkl[line_at : at - 1])
                    except ValueError:
                        raise _BadPickle("bad memo index") from None
            if at > end:
                raise _BadPickle("truncated")
            effect = _EFFECTS[code]
            if effect == "atom":
                stack.append(-1)
            elif effect == "new":
                parts.append([])
                stack.append(len(parts) - 1)
            elif effect == "mark":
                marks.append(len(stack))
            elif effect == "from_mark":
                m = marks.pop()
                parts.append(stack[m:])
                del stack[m:]
                stack.append(len(parts) - 1)
            elif effect in ("tuple1", "tuple2", "tuple3", "call1", "call2", "call3"):
                n = int(effect[-1])
                if len(stack) < n:
                    raise _BadPickle("stack underflow")
                parts.append(stack[-n:])
                del stack[-n:]
                stack.append(len(parts) - 1)
            elif effect in ("append", "setitem", "build"):
                n = 2 if effect == "setitem" else 1
                if len(stack) <= n:
                    raise _BadPickle("stack underflow")
                _grow(parts, stack[-n - 1], stack[-n:])
                del stack[-n:]
            elif effect == "extend":
                m = marks.pop()
                if m < 1:
                    raise _BadPickle("stack underflow")
                _grow(parts, stack[m - 1], stack[m:])
                del stack[m:]
            elif effect == "pop":
                if stack:
                    stack.pop()
                else:
                    marks.pop()
            elif effect == "pop_mark":
                del stack[marks.pop():]
            elif effect == "dup":
                stack.append(stack[-1])
            elif effect in ("put", "memoize"):
                if effect == "memoize":
                    index = len(memo)
                if index > _MEMO_LIMIT:
                    raise TensorReadError("data.pkl stores a memo slot past 65536; refused (a tensor pickle uses a few)")
                memo[index] = stack[-1]
            elif effect == "get":
                stack.append(memo[index])
            elif effect == "stop":
                break
    except (IndexError, KeyError):
        raise _BadPickle("stack underflow or unknown memo slot") from None
    return parts


def _grow(parts: list[list[int]], obj: int, items: list[int]) -> None:
    if obj < 0:
        raise _BadPickle("adds items to an object that holds none")
    parts[obj].extend(items)


def _bound_values(parts: list[list[int]]) -> None:
    """Raise when a value would expand past :data:`_EXPANDED_LIMIT` objects or nest past :data:`_DEPTH_LIMIT`."""
    size = [0] * len(parts)
    depth = [0] * len(parts)
    state = bytearray(len(parts))  # 0 not seen, 1 on the path (a cycle back to it counts once), 2 done
    for root in range(len(parts)):
        if state[root]:
            continue
        path = [(root, 0)]
        state[root] = 1
        while path:
            obj, k = path[-1]
            kids = parts[obj]
            if k < len(kids):
                path[-1] = (obj, k + 1)
                kid = kids[k]
                if kid >= 0 and not state[kid]:
                    state[kid] = 1
                    path.append((kid, 0))
                    if len(path) > _DEPTH_LIMIT:
                        raise TensorReadError(f"data.pkl nests values more than {_DEPTH_LIMIT} levels deep;"
                                              " refused (a tensor pickle nests three)")
                continue
            total, deep = 1, 0
            for kid in kids:
                if kid >= 0 and state[kid] == 2:
                    total += size[kid]
                    deep = max(deep, depth[kid])
                else:
                    total += 1
            size[obj], depth[obj] = min(total, _EXPANDED_LIMIT + 1), deep + 1
            if total > _EXPANDED_LIMIT or deep >= _DEPTH_LIMIT:
                raise TensorReadError(f"data.pkl holds a value that expands to more than {_EXPANDED_LIMIT}"
                                      " objects or nests too deep; refused (a tensor pickle holds a few dozen)")
            state[obj] = 2
            path.pop()


#: bytes the two caches below may hold in keys (and in what the keys describe): entries are counted by
#: size, not number, so thousands of distinct large data.pkl members cannot fill the memory
_CACHE_BYTES = 8 << 20
#: a data.pkl larger than this is not cached at all (torch writes a few hundred bytes)
_CACHE_ITEM_MAX = 64 << 10


class _BytesCache(dict):
    """A dict keyed by data.pkl bytes that stops growing at :data:`_CACHE_BYTES` of keys."""

    used = 0

    def remember(self, key: bytes, value: Any) -> None:
        if len(key) > _CACHE_ITEM_MAX or self.used + len(key) > _CACHE_BYTES or key in self:
            return
        self[key] = value
        self.used += len(key)

    def clear(self) -> None:
        super().clear()
        self.used = 0


_SAFE_PICKLES = _BytesCache()
