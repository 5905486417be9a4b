"""Reading a large JSON object top-level key by top-level key, from a window on the file.

A 100 MB dump.json would otherwise live in memory twice while it is parsed (the bytes and the decoded text).
:class:`TextWindow` holds only a few megabytes of the text at a time: it reads and decodes the file in blocks, drops
the text already parsed between entries, and appends the next block when a value crosses the window's end. A
``JSONDecodeError`` while the file is not exhausted means "read more and try again"; at the end of the file it is a
real error, reported with its line and column in the whole file, exactly as parsing the whole text reports it.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable
from json.decoder import scanstring as _scanstring
from typing import IO, Any

_WS = re.compile(r"[ \t\n\r]*")
#: a number cut by the window's end can parse as a shorter number followed by up to two
#: characters (``1.5`` of ``1.5e+3`` leaves ``e+``): a value must end further from the end than that
_MARGIN = 2
_DECODER = json.JSONDecoder()
#: bytes read at a time
BLOCK_BYTES = 8 * 1024 * 1024
#: the window grows up to this many bytes a read while one value is larger than it
_MAX_BLOCK = 256 * 1024 * 1024


class TextWindow:
    """The part of a JSON text not parsed yet, read from a binary file in blocks (or a whole text)."""

    def __init__(self, text: str = "", source: IO[bytes] | None = None, block: int = BLOCK_BYTES) -> None:
        self.text = text
        self.base = 0  # offset in the whole text of ``text[0]``
        self.lines_before = 0  # line breaks in the text dropped so far
        self.last_break = -1  # offset in the whole text of the last dropped line break
        self.eof = source is None
        self._source = source
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self._first_block = self._block = block
        #: parsed text is dropped once there is more than this much of it (and it is most of the window)
        self.drop_after = min(block, 1 << 20)

    def more(self) -> bool:
        """Append the next block of text; ``False`` when the file is exhausted."""
        if self.eof:
            return False
        assert self._source is not None
        raw = self._source.read(self._block)
        if raw:
            chunk = self._decoder.decode(raw)
            self._block = min(self._block * 2, _MAX_BLOCK)  # one value larger than a block: read faster
        else:
            chunk = self._decoder.decode(b"", final=True)
            self.eof = True
        if chunk:
            self.text += chunk
        return True

    def read_all(self) -> None:
        """Read the rest of the file into the window."""
        while self.more():
            pass

    def drop(self, idx: int) -> int:
        """Forget the text before ``idx`` (already parsed); returns the new index of ``idx`` (0)."""
        text = self.text
        breaks = text.count("\n", 0, idx)
        if breaks:
            self.lines_before += breaks
            self.last_break = self.base + text.rfind("\n", 0, idx)
        self.base += idx
        self.text = text[idx:]
        self._block = self._first_block
        return 0

    def absolute(self, exc: json.JSONDecodeError) -> json.JSONDecodeError:
        """``exc`` with its position, line and column counted in the whole text."""
        if exc.doc is not self.text or not self.base:
            return exc
        pos = exc.pos
        new = json.JSONDecodeError(exc.msg, exc.doc, pos)
        new.pos = self.base + pos
        new.lineno = self.lines_before + exc.doc.count("\n", 0, pos) + 1
        last = exc.doc.rfind("\n", 0, pos)
        new.colno = pos - last if last >= 0 else self.base + pos - self.last_break
        return new


class ObjectStream:
    """A JSON document read top-level key by top-level key from a :class:`TextWindow`.

    With ``stream_key`` (e.g. ``"data"``) the members of that key's object are decoded one
    at a time and handed to ``on_entry``, so the whole document never exists as Python
    objects at once; the other top-level keys are collected in :attr:`header`. Without it,
    every top-level member goes to ``on_entry``.
    """

    def __init__(
        self,
        window: TextWindow,
        stream_key: str | None,
        not_object: Callable[[Any], Exception],
        scanner_messages: bool = False,
    ) -> None:
        self.w = window
        self.stream_key = stream_key
        self.not_object = not_object  # the error for a document that is not an object
        self.header: dict[str, Any] = {}
        # a missing key quote or colon is reported as json.loads words it (scanner_messages), or as
        # the dump.json reader always has
        self._no_key = "Expecting property name enclosed in double quotes" if scanner_messages else "Expecting '\"'"
        self._no_colon = "Expecting ':' delimiter" if scanner_messages else "Expecting ':'"

    # every step below is retried after reading more when the window ends inside it
    def _attempt(self, step: Callable[[int], tuple], idx: int) -> tuple:
        w = self.w
        while True:
            try:
                result = step(idx)
            except ValueError:  # a JSONDecodeError, or an over-long integer that the window may have cut
                if w.more():
                    continue
                raise
            if result[-1] + _MARGIN >= len(w.text) and w.more():  # a value near the window's end may be cut short
                continue
            return result

    def _peek(self, idx: int) -> tuple[str, int]:
        """The next non-blank character at or after ``idx`` ('' at the end) and its index.

        ``idx`` is just after parsed text. Blanks that run to the window's end are dropped before more is
        read, so a file padded with a gigabyte of blanks is read in a window of a few blocks: an index
        taken before this call may be stale after it; the one returned is not.
        """
        w = self.w
        while True:
            pos = _WS.match(w.text, idx).end()
            if pos < len(w.text) or w.eof:
                return w.text[pos : pos + 1], pos
            idx = w.drop(pos)
            w.more()

    def _key_step(self, idx: int) -> tuple[str, int]:
        text = self.w.text
        idx = _WS.match(text, idx).end()
        if text[idx : idx + 1] != '"':
            raise json.JSONDecodeError(self._no_key, text, idx)
        key, idx = _scanstring(text, idx + 1)
        idx = _WS.match(text, idx).end()
        if text[idx : idx + 1] != ":":
            raise json.JSONDecodeError(self._no_colon, text, idx)
        return key, idx + 1

    def _value_step(self, idx: int) -> tuple[Any, int]:
        text = self.w.text
        return _DECODER.raw_decode(text, _WS.match(text, idx).end())

    def _after_step(self, idx: int) -> tuple[bool, int]:
        """Skip a ``,`` (more members follow: True) or the closing ``}`` (False)."""
        text = self.w.text
        idx = _WS.match(text, idx).end()
        char = text[idx : idx + 1]
        if char == ",":
            return True, idx + 1
        if char == "}":
            return False, idx + 1
        raise json.JSONDecodeError("Expecting ',' delimiter", text, idx)

    def read(self, on_entry: Callable[[str, Any], None]) -> None:
        """Parse the document, calling ``on_entry(key, value)`` for each streamed member."""
        try:
            self._read(on_entry)
        except json.JSONDecodeError as exc:
            raise self.w.absolute(exc) from None

    def _read(self, on_entry: Callable[[str, Any], None]) -> None:
        w = self.w
        char, first = self._peek(0)
        if char != "{":
            w.read_all()
            text = w.text
            value, end = _DECODER.raw_decode(text, first)  # not an object: let the caller name it
            if _WS.match(text, end).end() != len(text):
                raise json.JSONDecodeError("Extra data", text, _WS.match(text, end).end())
            raise self.not_object(value)
        char, pos = self._peek(first + 1)
        if self.stream_key is None:  # every member is an entry
            idx = self._members(pos, on_entry)
        elif char == "}":
            idx = pos + 1
        else:
            idx = pos
            more = True
            while more:
                key, idx = self._attempt(self._key_step, idx)
                char, start = self._peek(idx)
                if key == self.stream_key and char == "{":
                    self.header[key] = True
                    idx = self._members(start + 1, on_entry)
                else:
                    value, idx = self._attempt(self._value_step, start)
                    self.header[key] = value
                more, idx = self._attempt(self._after_step, self._peek(idx)[1])
                if more:
                    idx = self._peek(idx)[1]
        char, end = self._peek(idx)  # blanks to the end of the file, dropped as they are read
        if char:
            raise json.JSONDecodeError("Extra data", w.text, end)

    def _maybe_drop(self, idx: int) -> int:
        # drop parsed text once it is most of the window (copying the small rest is cheap then)
        if idx > self.w.drop_after and idx * 2 > len(self.w.text):
            return self.w.drop(idx)
        return idx

    def _members(self, idx: int, on_entry: Callable[[str, Any], None]) -> int:
        char, idx = self._peek(idx)
        if char == "}":
            return idx + 1
        w = self.w
        ws, scan, decode = _WS.match, _scanstring, _DECODER.raw_decode
        while True:
            # the common member, well inside the window, parsed inline; anything else by the retrying steps
            text = w.text
            try:
                i = ws(text, idx).end()
                if text[i] != '"':
                    raise IndexError
                key, i = scan(text, i + 1)
                i = ws(text, i).end()
                if text[i] != ":":
                    raise IndexError
                value, i = decode(text, ws(text, i + 1).end())
                inline = i + _MARGIN < len(text)
            except (ValueError, IndexError):  # the retrying steps report it, or read more first
                inline = False
            if not inline:  # the blanks around the key: dropped as they are read (see _peek)
                key, i = self._attempt(self._key_step, self._peek(idx)[1])
                value, i = self._attempt(self._value_step, self._peek(i)[1])
            on_entry(key, value)
            text = w.text
            j = ws(text, i).end()
            char = text[j : j + 1]
            if char == "," and j + 1 < len(text):
                idx = self._maybe_drop(j + 1)
            elif char == "}":
                return j + 1
            else:
                more, idx = self._attempt(self._after_step, self._peek(i)[1])
                if not more:
                    return idx
                idx = self._maybe_drop(idx)
