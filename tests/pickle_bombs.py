"""Tensor pickles of a few hundred bytes that would make formatting or hashing their values run for ever.

Each level of a nested list or tuple holds the level below twice (through the pickle memo), so a value
of depth ``n`` is ``2**n`` objects when ``repr`` or ``hash`` walks it: ``n = 40`` is a trillion.
"""

from __future__ import annotations

from msprobe_pytorch.pt_writer import tensor_pickle

DEPTH = 40


def shared_levels(n: int = DEPTH, kind: str = "list") -> bytes:
    """Opcodes leaving on the stack a list (or tuple) of depth ``n`` whose every level holds the one below twice."""
    out = b"]" if kind == "list" else b")"  # EMPTY_LIST / EMPTY_TUPLE
    out += b"q\x00"  # BINPUT 0
    for i in range(1, n + 1):
        get = b"h" + bytes([i - 1])  # BINGET i-1
        out += b"0"  # POP: the level below stays in the memo only
        out += (b"(" + get + get + b"l") if kind == "list" else (get + get + b"\x86")  # LIST / TUPLE2
        out += b"q" + bytes([i])  # BINPUT i
    return out


_REBUILD = b"ctorch._utils\n_rebuild_tensor_v2\n"
_PID = b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x04tQ"
_VIEW = b"K\x04\x85K\x01\x85\x89"  # size (4,), stride (1,), requires_grad False
_HOOKS = b"ccollections\nOrderedDict\n)R"


def _rebuild(offset: bytes, view: bytes = _VIEW, pid: bytes = _PID, metadata: bytes = b"") -> bytes:
    return b"\x80\x02" + _REBUILD + b"(" + pid + offset + view + _HOOKS + metadata + b"tR."


#: name -> data.pkl bytes
BOMBS: dict[str, bytes] = {
    # persistent_load gets a nested list instead of ('storage', ...): formatting it in the message
    "persistent-id": b"\x80\x02" + shared_levels() + b"Q.",
    # the storage offset of _rebuild_tensor_v2 is a nested tuple: formatting it in the message
    "storage-offset": _rebuild(shared_levels(kind="tuple")),
    # one entry of the tensor's size is a nested tuple
    "size-entry": _rebuild(b"K\x00", view=b"(" + shared_levels(kind="tuple") + b"t" + b"K\x01\x85\x89"),
    # a dict (the tensor metadata) whose key is a nested tuple: hashing it while unpickling
    "dict-key": _rebuild(b"K\x00", metadata=b"}" + shared_levels(kind="tuple") + b"\x88s"),
    # the storage location is a nested list: str() of it for the storage record
    "location": _rebuild(b"K\x00", pid=b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000"
                                       + shared_levels() + b"K\x04tQ"),
}

#: a well-formed tensor pickle of the same family (the bombs differ from it only where it says)
GOOD = tensor_pickle("float32", 4, (4,), (1,))
