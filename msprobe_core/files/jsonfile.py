"""JSON documents in: the one reader of JSON files (size cap, one-line errors, bounded nesting), whole or streamed.

:func:`read_json_file` parses a small document whole; :func:`parse_streamed` reads a large object
member by member through :mod:`msprobe_core.files.jsonstream`, so a 100 MB dump.json never lives in
memory as one text (:func:`read_small_object`: one of at most a block decoded whole). Either way a missing,
special, huge, empty or non-UTF-8 file, and malformed JSON, is an :class:`~msprobe_core.errors.InputError` naming it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import InputError
from .jsonstream import BLOCK_BYTES, ObjectStream, TextWindow

MAX_JSON_BYTES = 10 * 1024**3


def check_json_file(path: Path, what: str = "json") -> int:
    """The size of a JSON file to read, with one-line errors for missing, special or huge files."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise InputError("file does not exist", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot access file ({exc.strerror})", path=path) from None
    if not path.is_file():
        raise InputError(f"expected a {what} file, found a directory or special file", path=path)
    if size > MAX_JSON_BYTES:
        raise InputError(f"file is {size} bytes, larger than the {MAX_JSON_BYTES}-byte limit", path=path)
    return size


def read_json_text(path: Path, what: str = "json") -> str:
    """The text of a JSON file, with one-line errors for missing, huge, empty or non-UTF-8 files."""
    check_json_file(path, what)
    try:
        raw = path.read_bytes()
    except PermissionError:
        raise InputError("file is not readable (permission denied)", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror})", path=path) from None
    if not raw.strip():
        raise InputError(f"{what} file is empty", path=path)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=path) from None


def json_error(exc: json.JSONDecodeError, path: Path) -> InputError:
    """The one-line error of a JSON syntax error in ``path``."""
    return InputError(f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", path=path)


def read_json_file(path: Path, what: str = "json") -> Any:
    """Parse a JSON file (``NaN``/``Infinity`` tokens allowed) or raise :class:`InputError`."""
    text = read_json_text(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise json_error(exc, path) from None
    except ValueError as exc:  # e.g. an integer literal longer than Python's digit limit
        raise InputError(f"malformed JSON: {exc}", path=path) from None
    except RecursionError:
        raise InputError("JSON nesting is too deep", path=path) from None


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    """What says a file is still the one being read: size, modification time, inode, device."""
    return st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev


def changed_while_read(path: Path) -> InputError:
    """The error of a file rewritten or replaced while it was read (its parsed members mix two versions)."""
    return InputError("the file changed while it was being read (written or replaced meanwhile); "
                      "compare it once it is complete", path=path)


def _check_unchanged(path: Path, before: tuple[int, int, int, int], handle: Any = None) -> None:
    """Raise :func:`changed_while_read` when ``path`` (or the open ``handle`` on it) is no longer ``before``."""
    try:
        now = [_identity(os.stat(path))]
        if handle is not None:
            now.append(_identity(os.fstat(handle.fileno())))
    except OSError:
        raise changed_while_read(path) from None
    if any(n != before for n in now):
        raise changed_while_read(path)


@contextmanager
def json_window(path: Path, what: str) -> Iterator[TextWindow]:
    """A :class:`TextWindow` on a JSON file: the whole text for a small file, blocks for a large one.

    Errors while parsing a large file are reported as reading the whole file first
    would: an empty or non-UTF-8 file is named as such before any parse error. A file
    that is rewritten in place or replaced before the block ends is refused
    (:func:`changed_while_read`): what was parsed of it may mix its two versions.
    """
    size = check_json_file(path, what)
    try:
        before = _identity(os.stat(path))
    except OSError:
        before = None
    if size <= BLOCK_BYTES:
        yield TextWindow(read_json_text(path, what))
        if before is not None:
            _check_unchanged(path, before)
        return
    try:
        handle = path.open("rb")
    except OSError:
        read_json_text(path, what)  # raises the one-line error of a whole-file read
        raise
    with handle:
        try:
            yield TextWindow(source=handle, block=BLOCK_BYTES)
        except Exception:
            if before is not None:  # a text cut or spliced by a writer: that is the error, not its syntax
                _check_unchanged(path, before, handle)
            read_json_text(path, what)  # empty, unreadable or not UTF-8: that error comes first
            raise
        if before is not None:
            _check_unchanged(path, before, handle)


def read_small_object(path: Path, what: str) -> dict[str, Any] | None:
    """The object in a JSON file of at most :data:`BLOCK_BYTES` (whose text :func:`json_window` holds whole anyway)
    decoded by one ``orjson.loads`` call, with that window's errors and change check; ``None`` for a larger file, a
    text orjson refuses, or not an object: stream it then. Objects, lists and strings come as the streamed reader's
    decoder makes them (a repeated key: its first place, its last value); numbers may not (a float for an integer
    past 64 bits), nor nesting near the recursion limit: a caller that keeps those streams the file instead."""
    if check_json_file(path, what) > BLOCK_BYTES:
        return None
    import orjson  # lazily: start-up paths (msprobe --help) import nothing they do not run

    with json_window(path, what) as window:
        try:
            doc = orjson.loads(window.text)
        except ValueError:  # orjson.JSONDecodeError: malformed, or beyond what orjson reads
            return None
    return doc if doc.__class__ is dict else None


def parse_streamed(path: Path, what: str, stream_key: str | None, not_object: Callable[[Any], Exception],
                    on_entry: Callable[[str, Any], None], scanner_messages: bool = False) -> dict[str, Any]:
    """Stream a JSON object file through :class:`ObjectStream`; returns its header members.

    ``on_entry(key, value)`` gets each member of ``stream_key`` (every top-level member when ``None``)
    as it is decoded; ``not_object(value)`` is the error for a document that is not an object.
    """
    try:
        with json_window(path, what) as window:
            stream = ObjectStream(window, stream_key, not_object, scanner_messages)
            stream.read(on_entry)
    except json.JSONDecodeError as exc:
        raise json_error(exc, path) from None
    except ValueError as exc:  # e.g. an integer literal longer than Python's digit limit
        raise InputError(f"malformed JSON: {exc}", path=path) from None
    except RecursionError:
        raise InputError("JSON nesting is too deep", path=path) from None
    return stream.header
