"""One exception hierarchy for msprobe-core.

Every failure the user can cause (bad paths, malformed input, unsupported combinations) is a :class:`MsprobeError`;
the CLI turns it into a one-line message and an exit code in exactly one place (``msprobe_core.cli.guard``).
Failures confined to one tensor (:class:`TensorReadError`) never stop a run: they turn only their own row into
``unsupported`` with a warning.
"""

from __future__ import annotations

import errno
import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def one_line(text: str) -> str:
    """``text`` with line breaks and other control characters escaped (``\\n``, ``\\x00``).

    Messages quote names taken from untrusted files; escaping keeps every message
    on one line and stops a crafted name from forging extra log lines.
    """
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: {"\n": "\\n", "\r": "\\r", "\t": " "}.get(m.group(), f"\\x{ord(m.group()):02x}"), text)


_OS_REASONS = {
    errno.ENOENT: "no such file or directory",
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large for this file system or the file size limit (ulimit -f)",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOTDIR: "a component of the path is a file, not a directory",
    errno.EEXIST: "a file is in the way (expected a directory)",
    errno.EISDIR: "a directory is in the way (expected a file)",
    errno.ENAMETOOLONG: "file name too long",
    errno.EIO: "input/output error",
    errno.ELOOP: "too many levels of symbolic links",
}


def os_reason(exc: OSError) -> str:
    """A short lower-case reason for an ``OSError`` (``permission denied``, ``no space left on device``…)."""
    return _OS_REASONS.get(exc.errno or -1) or exc.strerror or str(exc) or type(exc).__name__


#: what each exit status of the ``msprobe`` command means (README "Exit codes"; msprobe's own where it has one)
EXIT_STATUSES: dict[int, str] = {
    0: "success (and the --fail-on gate, if given, passed)",
    1: "the run failed, in whole or in part (a rank pair, a plugin, an internal error; msprobe: any failure)",
    2: "usage or input error: nothing was compared (msprobe: argparse errors)",
    3: "the compare succeeded and the --fail-on gate found rows with that verdict or a worse one",
    130: "interrupted (Ctrl-C); 143: terminated (SIGTERM); 129: hung up (SIGHUP)",
}


class MsprobeError(Exception):
    """Base class of every expected failure; ``exit_code`` is what the CLI returns."""

    exit_code: int = 2

    def __init__(self, message: str, *, path: object | None = None) -> None:
        self.path = None if path is None else str(path)
        super().__init__(message)

    def __str__(self) -> str:  # one line, naming the file when there is one
        msg = one_line(super().__str__())
        if self.path and self.path not in msg:
            return f"{one_line(self.path)}: {msg}"
        return msg


class UsageError(MsprobeError):
    """Wrong combination of command-line options or API arguments."""


class OptionError(UsageError, TypeError):
    """A compare option is unknown or has a bad value; ``option`` is its Python name.

    The message names the option as the caller spelled it (``--rank`` on the command
    line, ``rank`` in Python). Also a ``TypeError``, as Python raises for a bad keyword.
    """

    def __init__(self, message: str, *, option: str | None = None) -> None:
        self.option = option
        super().__init__(message)


class InputError(MsprobeError):
    """An input file or directory is missing, unreadable or malformed."""


class DumpFormatError(InputError):
    """A dump.json / debug.json / stack.json does not have the expected structure."""


class MappingError(InputError):
    """A mapping YAML (api/cell/data/layer) is malformed."""


class RankMismatchError(InputError):
    """The two step directories cannot be paired rank by rank."""


class OutputError(MsprobeError):
    """The output directory or file cannot be written."""


class CompareFailed(MsprobeError):
    """Some part of a multi-part run (e.g. one rank) failed; others may have succeeded.

    ``outcomes`` holds every job's outcome when the run got that far, so the
    results that were written can still be summarised.
    """

    exit_code = 1
    outcomes: list | None = None


class PluginFailed(MsprobeError):
    """A plugin's code ended what it was asked to do in a way no run can go on from (it called ``sys.exit()``).

    The message names the plugin and the hook.
    """

    exit_code = 1


class Interrupted(MsprobeError):
    """The user interrupted the run (Ctrl-C)."""

    exit_code = 130


class TensorReadError(Exception):
    """One tensor file could not be read safely; only its own row fails."""

    def __init__(self, message: str, *, path: object | None = None) -> None:
        self.path = None if path is None else str(path)
        super().__init__(message)

    def __str__(self) -> str:  # always one line: it ends up in a warning
        return one_line(super().__str__())


class UnsafePickleError(TensorReadError):
    """A pickle names a global outside the allow-list; nothing it names was imported."""


class UnsafePathError(TensorReadError):
    """A tensor file name resolves outside its dump directory (``..``, absolute path, symlink out)."""


class GateFailed(MsprobeError):
    """``--fail-on``: some result row has the named verdict or a worse one (the compare itself succeeded).

    Its own exit status, 3, so that a CI gate tells "the runs differ" from a run that failed (1, msprobe's status
    for every failure) or could not start (2): see ``EXIT_STATUSES``.
    """

    exit_code = 3
