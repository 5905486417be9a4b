"""Reusable memory for tensor reads: the bytes of a tensor file and its converted array.

A tensor-mode worker reads thousands of files. Reading each one into freshly allocated memory costs more in page
faults (the kernel zeroes and maps every new page) than the copy from the page cache itself, so the tensor stage
hands each read an :class:`Arena`, which it resets before every read and which keeps its memory from one read to the
next. The arena in use is a context variable (:func:`use_arena`, :func:`current_arena`), so readers registered by
plugins through ``FrameworkSpec.read_tensor`` find it without a new argument; a reader called outside the tensor
stage (the classic interface, tests) gets ``None`` and allocates as before.

An array carved from an arena is valid until the arena's next :meth:`Arena.reset`: the tensor stage resets an arena
only once the pair read into it is finished. Memory stays bounded: an arena grows to at most twice what one read
needed.
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ALIGN", "Arena", "current_arena", "use_arena"]

#: byte alignment of every block handed out (torch aligns storages to 64 bytes)
ALIGN = 64


class Arena:
    """A bump allocator over one reusable byte buffer."""

    __slots__ = ("_buf", "_shift", "_used")

    def __init__(self) -> None:
        self._buf: np.ndarray | None = None
        self._shift = 0  # bytes from the buffer's start to its first ALIGN-aligned address
        self._used = 0

    @property
    def capacity(self) -> int:
        """Bytes of the current buffer."""
        return 0 if self._buf is None else int(self._buf.size)

    def reset(self) -> None:
        """Forget every block handed out since the last reset (their memory is reused)."""
        self._used = 0

    def take(self, nbytes: int) -> np.ndarray:
        """A writable, ``ALIGN``-aligned ``uint8`` array of ``nbytes`` bytes (contents undefined).

        When the buffer is too small a larger one replaces it (blocks already handed
        out keep the old one alive until they are dropped), sized so that the same
        sequence of requests fits at once after the next reset.
        """
        start = -(-self._used // ALIGN) * ALIGN
        buf = self._buf
        if buf is None or start + nbytes > buf.size - ALIGN:
            import numpy as np

            want = max(2 * self.capacity, start + nbytes + 2 * ALIGN, 1 << 20)
            buf = self._buf = np.empty(want, np.uint8)
            self._shift = (-buf.ctypes.data) % ALIGN
            start = 0
        lo = self._shift + start
        self._used = start + nbytes
        return buf[lo:lo + nbytes]


_CURRENT: contextvars.ContextVar[Arena | None] = contextvars.ContextVar("msprobe_arena", default=None)


def current_arena() -> Arena | None:
    """The arena tensor readers should carve their memory from, or ``None`` (allocate)."""
    return _CURRENT.get()


class use_arena:  # noqa: N801 - used like a function: ``with use_arena(a):``
    """Make ``arena`` (reset first) the current one inside a ``with`` block.

    A plain class rather than ``contextlib.contextmanager``: it is entered twice per tensor pair.
    """

    __slots__ = ("_arena", "_token")

    def __init__(self, arena: Arena | None) -> None:
        self._arena = arena

    def __enter__(self) -> Arena | None:
        if self._arena is not None:
            self._arena.reset()
        self._token = _CURRENT.set(self._arena)
        return self._arena

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._token)
