"""Outputs that would destroy what the run reads or a user's other file: refused before any work (``--json-summary``,
and ``msprobe report``'s outputs, which the report takes from here).

``msprobe report R.csv -o R.csv`` would read the result and then replace it with the page;
``compare ... --json-summary compare_result_<ts>.csv`` would replace a result with the summary. A path
the user names for an output is checked, before anything is read or written:

* :func:`refuse_outputs_over_inputs`: no output is one of the run's inputs (the same file, however it
  is spelled: by its resolved path, or its device and inode), and no two outputs are one file;
* :func:`refuse_other_kind`: an output that already exists holds what that output writes (an earlier
  JSON summary, an earlier HTML report): anything else (a result, a mapping, a user's file) is not
  replaced unless ``--force`` is given.

Either is a :class:`~msprobe_core.plugin.UsageError` (exit status 2) naming the path.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from msprobe_core.plugin import UsageError

#: bytes read from an existing output to see what it holds
_HEAD_BYTES = 512


def _key(path: Path) -> tuple:
    """What makes two spellings of a path one file: device and inode when it exists, else its resolved path."""
    try:
        st = os.stat(path)
    except OSError:
        return ("path", os.path.realpath(path))
    return ("inode", st.st_dev, st.st_ino)


def refuse_outputs_over_inputs(outputs: Mapping[str, Path | None], inputs: Iterable[Path]) -> None:
    """Raise ``UsageError`` when an output (``{label: path}``, ``None``: not asked for) is one of ``inputs``
    or another output."""
    read: dict[tuple, Path] = {}
    for path in inputs:
        if path is not None and os.path.isfile(path):
            read.setdefault(_key(Path(path)), Path(path))
    written: dict[tuple, str] = {}
    for label, path in outputs.items():
        if path is None:
            continue
        key = _key(Path(path))
        if key in read:
            also = f" ({read[key]})" if os.path.abspath(read[key]) != os.path.abspath(path) else ""
            raise UsageError(f"{label} {path} is one of this run's inputs{also}: writing it would destroy what the "
                             "run reads; name another file", path=path)
        if key in written:
            raise UsageError(f"{label} and {written[key]} name the same file; name two files", path=path)
        written[key] = label


def _head(path: Path) -> bytes | None:
    """The first bytes of ``path`` (``None``: not a regular file, or unreadable)."""
    try:
        if not os.path.isfile(path):
            return None
        with open(path, "rb") as fh:
            return fh.read(_HEAD_BYTES)
    except OSError:
        return None


def looks_like_json_object(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a JSON object (what a JSON summary is)."""
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")


def looks_like_html(head: bytes) -> bool:
    """Whether a file starting with ``head`` is an HTML page (what a report is)."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return text.startswith(b"<!doctype html") or text.startswith(b"<html")


def refuse_other_kind(label: str, path: Path | None, holds: Callable[[bytes], bool], what: str, *,
                      force: bool | None = None) -> None:
    """Raise ``UsageError`` when ``path`` exists, is not empty and does not hold ``what`` (``holds(head)``).

    ``force``: the command's ``--force`` (``None``: it has none), which lets the file be replaced.
    """
    if path is None or force:
        return
    head = _head(Path(path))
    if head is None or not head.strip() or holds(head):
        return
    hint = "name another file" if force is None else "pass --force to replace it, or name another file"
    raise UsageError(f"{label} {path} already exists and is not {what} (a result? a user's file?): it is not "
                     f"replaced; {hint}", path=path)
