"""Every file msprobe-core or a plugin writes goes through here: atomic, explicit, one-line errors.

* :func:`atomic_path` yields a hidden temporary path in the destination directory
  (``.<name>.msprobe-<random>.part``); the file is renamed into place only when the block
  finishes without an exception, so an interrupted or failed run (Ctrl-C, SIGTERM,
  disk full, a crash) never leaves a file under the final name that looks complete.
* Inside a run (:func:`output_policy`, entered by ``run.jobs.run_jobs``) a destination
  that already existed *before the run* is not replaced unless ``--force`` was given:
  :class:`~msprobe_core.errors.OutputError` says so. Files written earlier in the same
  run (e.g. a generated mapping shared by several ranks, possibly by another worker
  process: recognised by a modification time after the run started) may be replaced.
  Outside a run, existing files are replaced (plain library use).
* :func:`write_text_atomic` and :func:`open_atomic` are the helpers for extra outputs
  (json summaries, yaml mappings, html reports…).
* :func:`output_error` turns an :class:`OSError` into an ``OutputError`` whose
  one-line message says what happened (no space left, read-only file system,
  a file where a directory should be…).
"""

from __future__ import annotations

import contextvars
import errno
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..errors import OutputError, os_reason
from .leftovers import PART_SUFFIX, WRITE_PROBE_PREFIX, part_name, run_lock_name, take_lock

__all__ = [
    "atomic_path",
    "open_atomic",
    "output_error",
    "output_policy",
    "prepare_output_dir",
    "write_text_atomic",
]

#: how text outputs encode what UTF-8 cannot (a lone surrogate from a JSON ``\\ud800`` escape, or from a
#: file name that is not UTF-8): as the ``\\udcff`` escape, never an error that loses the whole file
TEXT_ERRORS = "backslashreplace"

def output_error(exc: OSError, path: object, what: str = "result") -> OutputError:
    """An :class:`OutputError` naming ``path`` and the reason behind ``exc`` (one line)."""
    return OutputError(f"cannot write {what}: {os_reason(exc)}", path=path)


@dataclass
class _Policy:
    force: bool
    started: float = field(default_factory=time.time)
    written: set[str] = field(default_factory=set)

    def from_earlier_run(self, final: Path) -> bool:
        """Whether ``final`` exists and was not written by this run."""
        try:
            mtime = os.lstat(final).st_mtime
        except FileNotFoundError:
            return False
        except OSError:
            return True
        return os.path.abspath(final) not in self.written and mtime < self.started


_POLICY: contextvars.ContextVar[_Policy | None] = contextvars.ContextVar("msprobe_output_policy", default=None)


@contextmanager
def output_policy(*, force: bool, started: float | None = None) -> Iterator[None]:
    """Within the block, :func:`atomic_path` refuses to replace files from before the run (unless ``force``).

    ``started`` (a ``time.time()``) is when the run began, default now; worker
    processes pass the run's own start so that files other workers of the same run
    wrote are recognised as this run's.
    """
    token = _POLICY.set(_Policy(force) if started is None else _Policy(force, started))
    try:
        yield
    finally:
        _POLICY.reset(token)


def would_clobber(final: Path) -> bool:
    """True when writing ``final`` now would replace a file from before this run without ``--force``."""
    policy = _POLICY.get()
    if policy is None or policy.force:
        return False
    return policy.from_earlier_run(final)


def _clobber_error(final: Path) -> OutputError:
    return OutputError("already exists (from an earlier run); pass --force to replace it", path=final)


STAMP_FORMAT = "%Y%m%d%H%M%S"
_STAMP_IN_NAME = re.compile(r"_(\d{14})(?=[._]|$)")


def _stamps_in(directories: Iterable[Path]) -> set[str]:
    """The timestamps that names of files in ``directories`` carry (``compare_result_rank0_<stamp>.csv``…)."""
    found: set[str] = set()
    for directory in directories:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            found.update(_STAMP_IN_NAME.findall(name))
    return found


@contextmanager
def run_stamp(directory: Path, *, also: Iterable[Path] = (), keep_earlier: bool = True,
              now: float | None = None) -> Iterator[str]:
    """The timestamp (``YYYYmmddHHMMSS``) of a run's file names in ``directory``, held for the block.

    Result names carry only a timestamp (``compare_result_<stamp>.csv``, msprobe's naming), so
    two runs into one directory in the same second would write the same names. Each run
    holds its stamp by creating ``.msprobe-run-<stamp>.lock`` exclusively: normally the
    current second; when another live run holds it, or (``keep_earlier``) a file in
    ``directory`` or the directories in ``also`` already carries it, the next free second
    (the log says so). The directory is created (the run's caller has had the plugins tidy it first:
    ``msprobe_output_dirs_ready``).
    """
    directory = Path(directory)
    created = []  # the directories made here, outermost first: removed again if the run writes nothing
    missing = directory.absolute()
    while not os.path.lexists(missing) and missing != missing.parent:
        created.insert(0, missing)
        missing = missing.parent
    fd: int | None = None
    lock = ""
    try:  # from the first directory made on: an interrupt at any instant leaves none of them empty
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise OutputError("output path exists and is not a directory", path=directory) from None
        except OSError as exc:
            raise output_error(exc, directory, "output directory") from None
        dirs = [directory, *(Path(d) for d in also if Path(d) != directory)]
        taken = _stamps_in(dirs) if keep_earlier else set()
        start = int(time.time() if now is None else now)
        for k in range(3600):
            stamp = time.strftime(STAMP_FORMAT, time.localtime(start + k))
            if stamp in taken:
                continue
            lock = run_lock_name(directory, stamp)
            try:
                fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
            except FileExistsError:
                continue
            except OSError as exc:
                raise output_error(exc, directory, "to output directory") from None
            break
        else:
            raise OutputError("every timestamp of the next hour is taken by files or other runs", path=directory)
        take_lock(fd)
        if k:
            import logging

            first = time.strftime(STAMP_FORMAT, time.localtime(start))
            why = "files of an earlier run carry" if first in taken else "another msprobe run is writing with"
            logging.getLogger("msprobe").warning(
                "In %s %s the timestamp %s; this run's files are named with %s.", directory, why, first, stamp)
        yield stamp
    finally:
        if fd is not None:
            os.close(fd)
            try:
                os.unlink(lock)
            except OSError:
                pass
        for made in reversed(created):  # a run that stopped before writing anything leaves nothing behind
            try:
                os.rmdir(made)
            except OSError:  # not empty (or not ours to remove)
                break


def prepare_output_dir(directory: Path) -> Path:
    """Check, before any work, that result files can be created in ``directory``; raise ``OutputError`` if not.

    Nothing is created: an existing directory gets a probe file that is removed at
    once; a missing one is checked at its closest existing ancestor (a directory we
    may write into). The directory itself is made when the first file is written.
    """
    directory = Path(directory).absolute()
    existing = directory
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if existing == directory:
        if not directory.is_dir():
            raise OutputError("output path exists and is not a directory", path=directory)
        try:
            fd, probe = tempfile.mkstemp(prefix=WRITE_PROBE_PREFIX, suffix=PART_SUFFIX, dir=directory)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise output_error(exc, directory, "to output directory") from None
        return directory
    if not existing.is_dir():
        raise OutputError(
            f"cannot create the output directory: {existing} is not a directory", path=directory
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        reason = "read-only file system" if _read_only_fs(existing) else "permission denied"
        raise OutputError(f"cannot create the output directory in {existing}: {reason}", path=directory)
    return directory


def _read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False


_FD_LINK = re.compile(r"/(?:proc/self|proc/thread-self|dev)/fd/(\d+)")


def _open_fd_behind(path: Path) -> int | None:
    """N when ``path`` is, or is a chain of symlinks to, ``/dev/fd/N`` or ``/proc/self/fd/N`` (``/dev/stdout``…)."""
    p = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on nested links
        m = _FD_LINK.fullmatch(p)
        if m:
            return int(m.group(1))
        try:
            target = os.readlink(p)
        except OSError:  # not a link (or not there)
            return None
        p = os.path.normpath(os.path.join(os.path.dirname(p), target))
    return None


def _existing_target(final: Path) -> tuple[Path, os.stat_result | None]:
    """Where writing ``final`` lands: a symlink is followed (the link stays); the target's ``stat`` if it exists."""
    if os.path.islink(final):
        final = Path(os.path.realpath(final))
    try:
        return final, os.stat(final)
    except FileNotFoundError:
        return final, None
    except OSError as exc:  # a loop of links, a component that is a file…
        raise output_error(exc, final) from None


@contextmanager
def atomic_path(final: Path) -> Iterator[Path]:
    """Yield a temporary path next to ``final``; rename it to ``final`` on success, delete it on failure.

    ``final`` may be a symlink: the file it points to is written and the link stays. A
    ``final`` that is (or points to) something other than a regular file, such as a
    device (``/dev/null``, ``/dev/stdout``) or a FIFO, is never renamed over: the block
    writes a private temporary file, whose bytes are then written into ``final`` as it
    is (:func:`_write_through`); a directory is refused.

    ``OSError`` from creating the directory or the temporary file, and from the
    rename, becomes :class:`OutputError`; errors raised inside the block propagate
    unchanged (after the temporary file is removed).
    """
    fd = _open_fd_behind(Path(final))
    if fd is not None:  # /dev/stdout: this process's open file, written where it stands (a pipe, the shell's file)
        with _write_through(Path(final), fd) as tmp:
            yield tmp
        return
    target, st = _existing_target(Path(final))
    if st is not None and not stat.S_ISREG(st.st_mode):
        if stat.S_ISDIR(st.st_mode):
            raise OutputError("a directory is in the way (expected a file)", path=final)
        with _write_through(Path(final)) as tmp:
            yield tmp
        return
    final = target
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError("output path exists and is not a directory", path=final.parent) from None
    except OSError as exc:
        raise output_error(exc, final.parent, "output directory") from None
    if would_clobber(final):
        raise _clobber_error(final)
    tmp_path: Path | None = None
    fd: int | None = None
    try:
        # the name is known before the file exists, so a signal at any instant cannot leak it
        for _ in range(100):
            tmp_path = part_name(final)
            try:
                fd = os.open(tmp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
            except FileExistsError:
                tmp_path = None
                continue
            except OSError as exc:
                tmp_path = None
                raise output_error(exc, final) from None
            break
        else:
            raise OutputError("cannot create a temporary file next to the result", path=final)
        take_lock(fd)  # held while the file is written: a later run's sweep leaves it alone
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_umask())
        _commit(tmp_path, final)
    except BaseException:
        if tmp_path is not None:
            tmp_path.unlink(missing_ok=True)
        raise
    finally:
        if fd is not None:
            os.close(fd)


@contextmanager
def _write_through(final: Path, fd: int | None = None) -> Iterator[Path]:
    """Yield a private temporary file; when the block succeeds, copy it into the special file ``final``.

    ``final`` (a device, a FIFO, or ``fd``, an open descriptor of this process that it names)
    is written as a shell redirection writes it: opened without being created, truncated or
    replaced (a FIFO waits for its reader). Nothing reaches it when the block fails, so a
    reader never sees half a result.
    """
    handle, name = tempfile.mkstemp(prefix=".msprobe-", suffix=PART_SUFFIX)
    os.close(handle)
    tmp = Path(name)
    try:
        yield tmp
        try:
            if fd is not None:
                sys.stdout.flush()  # what this process printed before comes first
                out = os.dup(fd)
            else:
                out = os.open(final, os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
            with open(tmp, "rb") as src, open(out, "wb", buffering=0) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except OSError as exc:
            raise output_error(exc, final) from None
    finally:
        tmp.unlink(missing_ok=True)


def _commit(tmp: Path, final: Path) -> None:
    """Rename ``tmp`` to ``final``; without ``--force`` never replace a file that appeared meanwhile."""
    policy = _POLICY.get()
    try:
        if policy is None or policy.force or os.path.abspath(final) in policy.written:
            os.replace(tmp, final)
        else:
            try:
                os.link(tmp, final)  # atomic no-clobber: fails if final exists
            except FileExistsError:
                if policy.from_earlier_run(final):
                    raise _clobber_error(final) from None
                os.replace(tmp, final)  # written by this run (another rank): replace, as msprobe does
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV, errno.EMLINK, errno.ENOSYS):
                    raise
                if policy.from_earlier_run(final):  # no hard links here: check, then rename
                    raise _clobber_error(final) from None
                os.replace(tmp, final)
            else:
                os.unlink(tmp)
    except OSError as exc:
        raise output_error(exc, final) from None
    if policy is not None:
        policy.written.add(os.path.abspath(final))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def open_atomic(final: Path, mode: str = "w", *, what: str = "output", **kwargs: Any) -> Iterator[IO[Any]]:
    """``open()`` for writing, atomically: the file appears under ``final`` only if the block succeeds.

    ``mode`` is ``"w"`` or ``"wb"``; text mode defaults to UTF-8. ``OSError`` while
    writing becomes :class:`OutputError` naming ``final``.
    """
    if mode not in ("w", "wb"):
        raise ValueError("open_atomic writes new files: mode must be 'w' or 'wb'")
    if mode == "w":
        kwargs.setdefault("encoding", "utf-8")
        kwargs.setdefault("errors", TEXT_ERRORS)
    with atomic_path(Path(final)) as tmp:
        try:
            with open(tmp, mode, **kwargs) as fh:
                yield fh
        except OSError as exc:
            raise output_error(exc, final, what) from None


def write_text_atomic(final: Path, text: str, *, what: str = "output") -> Path:
    """Write ``text`` (UTF-8) to ``final`` atomically; returns ``final``."""
    with open_atomic(final, "w", what=what, newline="") as fh:
        fh.write(text)
    return Path(final)

