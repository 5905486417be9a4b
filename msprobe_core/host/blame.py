"""Which plugin's code an unexpected exception came from, so that its bug is reported as that plugin's.

A mapper, metric, writer or loader a plugin registered runs inside the core's stages; when it
raises something that is no :class:`~msprobe_core.errors.MsprobeError`, the traceback still
says whose code it was. The innermost frame that belongs to a registered plugin's package names
the plugin: a third party's bug is then reported to its authors, not as the core's "internal error,
please report it".
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from .loading import normalized_distribution


@dataclass(frozen=True)
class Culprit:
    """The plugin whose code raised, and where."""

    #: the distribution that installed it (its registration name when it was not installed as one)
    distribution: str
    #: ``file:line`` of the innermost frame of that plugin's code
    where: str
    #: whether the distribution is one of this repository's plugins (its bug is ours to fix)
    first_party: bool


def _package_of(obj: object) -> str | None:
    module = obj.__name__ if isinstance(obj, type(sys)) else type(obj).__module__
    top = (module or "").partition(".")[0]
    return top or None


def plugin_packages(host: Any) -> dict[str, str]:
    """Top-level package -> distribution, for every registered plugin that is not part of the core."""
    out: dict[str, str] = {}
    for name, plugin in host.pm.list_name_plugin():
        package = _package_of(plugin)
        if package is None or package in ("msprobe_core", "builtins"):
            continue
        out.setdefault(package, host.distribution_of(name))
    return out


def _frames(exc: BaseException) -> list[tuple[str, str, int]]:
    """(module, file, line) of every frame of ``exc`` and the exceptions it was raised from, innermost first."""
    seen: set[int] = set()
    out: list[tuple[str, str, int]] = []
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        tb: TracebackType | None = current.__traceback__
        frames = []
        while tb is not None:
            frame = tb.tb_frame
            frames.append((str(frame.f_globals.get("__name__", "")), frame.f_code.co_filename, tb.tb_lineno))
            tb = tb.tb_next
        out.extend(reversed(frames))
        current = current.__cause__ or current.__context__
    return out


def culprit_of(exc: BaseException, host: Any) -> Culprit | None:
    """The registered plugin whose code is innermost in ``exc``'s traceback, or ``None`` (the core's own bug)."""
    if host is None:
        return None
    try:
        packages = plugin_packages(host)
    except Exception:  # a half-built host: no one to blame
        return None
    for module, filename, line in _frames(exc):
        distribution = packages.get(module.partition(".")[0])
        if distribution is not None:
            where = f"{filename.rsplit('/', 1)[-1]}:{line}"
            first_party = normalized_distribution(distribution) in getattr(host, "first_party", frozenset())
            return Culprit(distribution, where, first_party)
    return None
