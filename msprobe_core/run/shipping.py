"""Work shipped to another machine's processes: every path made absolute here first.

A Dask worker started elsewhere has its own working directory: a relative dump path would name nothing
there, and a relative output directory would put the result under the worker's directory rather than the
user's. The docs ask for storage shared under the same paths; what is left is to say those paths the way
every process reads them alike (:func:`absolute_paths`), on the client, before any work leaves it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path, PurePath
from typing import Any, TypeVar

T = TypeVar("T")

#: how deep :func:`absolute_paths` looks into nested values (a job's notes, an option's list)
_DEPTH = 8


def absolute_paths(value: T, cwd: Path | None = None, _depth: int = 0) -> T:
    """``value`` with every relative :class:`~pathlib.Path` in it joined to ``cwd`` (default: this process's
    working directory), in dataclasses (their ``init`` fields), dicts, lists and tuples, as far down as
    :data:`_DEPTH`. Nothing else changes: what holds no relative path is returned as is (the same object).

    Joined, not resolved: ``..`` and symbolic links are left for the file system to follow, as it would have
    here."""
    if isinstance(value, PurePath):
        if value.is_absolute():
            return value
        return (cwd or Path.cwd()) / value  # type: ignore[return-value]
    if _depth >= _DEPTH:
        return value
    cwd = cwd or Path.cwd()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changed = {}
        for f in dataclasses.fields(value):
            if not f.init:
                continue
            old = getattr(value, f.name)
            new = absolute_paths(old, cwd, _depth + 1)
            if new is not old:
                changed[f.name] = new
        return dataclasses.replace(value, **changed) if changed else value  # type: ignore[type-var]
    if type(value) is dict:
        items = {k: absolute_paths(v, cwd, _depth + 1) for k, v in value.items()}
        return items if any(items[k] is not v for k, v in value.items()) else value  # type: ignore[return-value]
    if type(value) in (list, tuple):
        seq: list[Any] = [absolute_paths(v, cwd, _depth + 1) for v in value]  # type: ignore[attr-defined]
        if all(a is b for a, b in zip(seq, value)):  # type: ignore[call-overload]
            return value
        return type(value)(seq)  # type: ignore[return-value, call-arg]
    return value
