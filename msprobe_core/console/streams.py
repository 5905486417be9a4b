"""The process's standard streams: closed or broken ones do not change a run's outcome.

The results are files; what is printed only reports on them. A daemon or CI runner may start
``msprobe`` with a descriptor closed (``>&-``), a reader may go away (``| head -c1``), a disk may
fill up (``> /dev/full``): the run still writes its files and ends with its own exit code.
"""

from __future__ import annotations

import os
import sys

#: the standard descriptors, their ``sys`` names and how /dev/null is opened in their place
_STANDARD = ((0, "stdin", os.O_RDONLY, "r"), (1, "stdout", os.O_WRONLY, "w"), (2, "stderr", os.O_WRONLY, "w"))


def fill_closed_standard_fds() -> None:
    """Put ``/dev/null`` on a closed descriptor 0, 1 or 2, and give ``sys`` a stream on it.

    Python leaves ``sys.stdout`` (or ``stderr``) ``None`` when the descriptor was closed at start;
    every print and log line would then fail. Worse, the next file opened would get the free
    number, and whatever writes to "stdout" (a C library, a forked worker) would write into it.
    """
    for fd, name, flags, mode in _STANDARD:  # in order: os.open takes the lowest free number
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        try:
            null = os.open(os.devnull, flags)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        except OSError:  # no /dev/null: leave it as it is
            continue
        if getattr(sys, name) is None:
            stream = open(fd, mode, encoding="utf-8", errors="backslashreplace", closefd=False)
            setattr(sys, name, stream)
            setattr(sys, f"__{name}__", stream)


class TolerantStream:
    """A text stream whose failing writes are dropped, not raised: the console stopped taking output.

    The first failure is kept (:attr:`failed`), the descriptor is pointed at ``/dev/null`` (so that
    the interpreter's last flush at exit cannot fail either) and later output is dropped.
    """

    def __init__(self, stream: object) -> None:
        self._stream = stream
        self.failed: OSError | None = None

    def write(self, text: str) -> int:
        """Write ``text``, or drop it once the stream has failed."""
        if self.failed is None:
            try:
                return self._stream.write(text)  # type: ignore[attr-defined, no-any-return]
            except OSError as exc:
                self._fail(exc)
        return len(text)

    def flush(self) -> None:
        """Flush, unless the stream has failed."""
        if self.failed is None:
            try:
                self._stream.flush()  # type: ignore[attr-defined]
            except OSError as exc:
                self._fail(exc)

    def _fail(self, exc: OSError) -> None:
        self.failed = exc
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._stream.fileno())  # type: ignore[attr-defined]
            os.close(null)
        except (OSError, ValueError, AttributeError):  # not a real descriptor (a test's capture)
            pass

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def tolerate_broken_stderr() -> None:
    """Make ``sys.stderr`` drop what a broken or full stderr refuses (the exit code stays the run's)."""
    if sys.stderr is not None and not isinstance(sys.stderr, TolerantStream):
        sys.stderr = TolerantStream(sys.stderr)  # type: ignore[assignment]
