"""Which dump files to compare, given the two paths the user named.

Handles a pair of files and a pair of step directories (``rank*`` children
paired by sorted position, or a single ``proc<PID>`` child on each side). Dump roots holding ``step<N>``
dirs (one compare per step) are the default plugin ``steps``'s (it claims them first, through
``msprobe_discover_jobs``); with it turned off such a root is refused, saying so. Any other layout is a plugin's
(it claims it first through that hook, and may hand each step directory back to :func:`discover_jobs`); a directory
holding none of these is refused, and the host adds the install hint of a known plugin whose layout it has.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from ..errors import InputError, RankMismatchError, UsageError
from ..host.specs import CompareJob
from ..model import CompareOptions
from ..options import dump_paths_label, option_label
from .document import detect_kind

log = logging.getLogger("msprobe")

RANK_DIR = re.compile(r"^rank(?:0|[1-9][0-9]*)?\Z")  # \Z: "$" also matches before a final newline
PROC_DIR = re.compile(r"^proc[0-9]+\Z")
#: a step directory's whole name (used with ``fullmatch``: ``$`` would also match before a trailing newline)
STEP_DIR = re.compile(r"step(0|[1-9][0-9]*)")


def list_dir(path: Path) -> list[str]:
    """The names in directory ``path``; one that cannot be listed is the user's input error naming it (one line)."""
    try:
        return os.listdir(path)
    except PermissionError:
        raise InputError("directory is not readable (permission denied)", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot list directory ({exc.strerror})", path=path) from None


def check_exists(path: Path, flag: str) -> None:
    """Fail with a one-line message when a user path is missing."""
    if not path.exists():
        raise InputError(f"{flag} path does not exist", path=path)


def warn_if_symlink(path: Path, flag: str) -> None:
    """Symlinked dump paths named by the user are followed, with a warning naming the real location."""
    for p in (path, path.parent) if path.is_file() else (path,):
        if p.is_symlink():
            log.warning("%s %s is a symbolic link; following it to %s.", flag, p, os.path.realpath(p))
            return


def check_within(root: Path, path: Path, what: str) -> None:
    """Refuse a rank directory or dump file below ``root`` that resolves outside it (a symlink out)."""
    from ..files.validation import is_within

    if not is_within(root, path):
        raise InputError(
            f"{what} resolves to {os.path.realpath(path)}, outside {root}; refusing to follow a symlink out of "
            f"the dump directory (point {dump_paths_label()} at the real location)",
            path=path,
        )


def file_stem(kind: str, suffix: str = "") -> str:
    """``compare_result`` or ``debug_compare_result``, plus the rank suffix."""
    return ("debug_compare_result" if kind == "debug" else "compare_result") + suffix


def discover_jobs(target: Path, golden: Path, options: CompareOptions, *, depth: int = 0) -> list[CompareJob]:
    """All compare jobs for ``-tp target -gp golden``."""
    check_exists(target, option_label("target"))
    check_exists(golden, option_label("golden"))
    if depth == 0:
        warn_if_symlink(target, option_label("target", short=True))
        warn_if_symlink(golden, option_label("golden", short=True))
    if target.is_file() != golden.is_file():
        tp, gp = option_label("target", short=True), option_label("golden", short=True)

        def kind(p: Path) -> str:
            return "a file" if p.is_file() else "a directory" if p.is_dir() else "neither a file nor a directory"

        raise UsageError(f"{tp} and {gp} must both be files or both be directories: {tp} {target} is {kind(target)}, "
                         f"{gp} {golden} is {kind(golden)}")
    out = Path(options.output_dir)
    if target.is_file():
        kinds = {detect_kind(target), detect_kind(golden)}
        if len(kinds) != 1:
            raise InputError(
                f"both files must end with dump.json or both with debug.json: {target.name} vs {golden.name}"
            )
        _refuse_step_option(options, target)
        return [CompareJob(target, golden, out, file_stem(kinds.pop()), label=target.name)]
    if depth == 0:
        if holds_step_dirs(target, golden):  # the default plugin steps claims these first: it is turned off
            root = next(p for p in (target, golden) if _step_names(p) and not (_rank_dirs(p) or _procs(p)))
            raise UsageError(
                f"{root} holds step directories ({', '.join(_step_names(root))}): comparing two dump roots step by "
                "step is the default plugin 'steps''s, which is turned off (-p no:steps or MSPROBE_DISABLE_PLUGINS); "
                f"point {dump_paths_label()} at step directories such as dump/step0", path=root)
        _refuse_step_option(options, target)
    return _rank_jobs(target, golden, out)


def _step_names(path: Path) -> list[str]:
    try:
        return sorted(n for n in os.listdir(path) if STEP_DIR.fullmatch(n) and (path / n).is_dir())
    except OSError:
        return []


def holds_step_dirs(target: Path, golden: Path) -> bool:
    """Whether ``-tp``/``-gp`` are two dump roots to compare step by step: directories, and one of them holds
    ``step<N>`` directories and no ``rank*``/``proc<PID>`` ones (an unreadable one is an ``InputError``)."""
    if not (target.is_dir() and golden.is_dir()):
        return False
    for root in (target, golden):
        list_dir(root)  # a root that cannot be listed is said so, not taken for one without steps
    return any(_step_names(p) and not (_rank_dirs(p) or _procs(p)) for p in (target, golden))


def _refuse_step_option(options: CompareOptions, target: Path) -> None:
    """``--step`` (the default plugin ``steps``'s) given for a step directory or a pair of files: there is one
    step, say so."""
    if getattr(options, "step", None) is None:
        return
    raise UsageError(
        f"--step selects the step<N> directories of two dump roots (or the steps a dump format's plugin reads) and "
        f"{option_label('target', short=True)} holds no step<N> directory; leave it out "
        + ("(a pair of files is one compare)" if target.is_file() else "(this is one step directory)"),
        path=target,
    )


def _natural_key(name: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def _rank_number(name: str) -> int:
    return int(name[4:]) if len(name) > 4 else -1


def _rank_dirs(path: Path) -> list[str]:
    return sorted(
        (n for n in list_dir(path) if RANK_DIR.match(n) and (path / n).is_dir()), key=_rank_number
    )


def _proc_dir(path: Path) -> str:
    procs = [n for n in list_dir(path) if PROC_DIR.match(n) and (path / n).is_dir()]
    if len(procs) != 1:  # a layout a plugin that is not loaded claims: the host names that plugin instead
        found = "no" if not procs else f"{len(procs)}"
        raise InputError(
            f"found {found} rank* dirs and {found} proc<PID> dirs; expected rank dirs or exactly one proc dir "
            f"(point {dump_paths_label()} at a step directory such as dump/step0)",
            path=path,
        )
    return procs[0]


def _procs(path: Path) -> list[str]:
    return sorted((n for n in list_dir(path) if PROC_DIR.match(n) and (path / n).is_dir()), key=_natural_key)


def _check_same_layout(target: Path, t_ranks: list[str], golden: Path, g_ranks: list[str]) -> None:
    """Rank dirs on one side and proc dirs on the other: two kinds of dump, said so (not "0 ranks")."""
    if bool(t_ranks) == bool(g_ranks):
        return
    if t_ranks:
        ranked, ranks, ranked_side, other, other_side = target, t_ranks, "target", golden, "golden"
    else:
        ranked, ranks, ranked_side, other, other_side = golden, g_ranks, "golden", target, "target"
    procs = _procs(other)
    if not procs:
        return
    raise RankMismatchError(
        f"{option_label(ranked_side, short=True)} {ranked} holds rank directories ({', '.join(ranks)}: one per rank) "
        f"but {option_label(other_side, short=True)} {other} holds proc<PID> directories ({', '.join(procs)}: one per "
        "process); the two dumps are laid out differently, point both at step directories of the same kind"
    )


#: a name that starts like a rank or process directory's: one that is not exactly that is warned about
_RANK_LIKE = re.compile(r"(?:rank|proc)[0-9]")


def _warn_odd_rank_names(path: Path) -> None:
    """Name, escaped, each directory in ``path`` that starts like ``rank<N>``/``proc<PID>`` but is not exactly that
    (``rank0\n``, ``rank01``): it is no rank, and is not compared."""
    for name in sorted(list_dir(path)):
        if _RANK_LIKE.match(name) and not (RANK_DIR.match(name) or PROC_DIR.match(name)) and (path / name).is_dir():
            log.warning("%s: the directory %s is not a rank directory (its name is not exactly rank<N> or "
                        "proc<PID>); not compared.", path, ascii(name))


def _rank_jobs(target: Path, golden: Path, out: Path) -> list[CompareJob]:
    t_ranks, g_ranks = _rank_dirs(target), _rank_dirs(golden)
    for side in (target, golden):
        _warn_odd_rank_names(side)
    _check_same_layout(target, t_ranks, golden, g_ranks)
    if not t_ranks:
        t_ranks, g_ranks = [_proc_dir(target)], [_proc_dir(golden)]
    if len(t_ranks) != len(g_ranks):
        raise RankMismatchError(
            f"the two runs have different numbers of ranks: {len(t_ranks)} in {target} "
            f"({', '.join(t_ranks)}), {len(g_ranks)} in {golden} ({', '.join(g_ranks) or 'none'})"
        )
    first = target / t_ranks[0]
    if (first / "dump.json").is_file():
        file_name = "dump.json"
    elif (first / "debug.json").is_file():
        file_name = "debug.json"
    else:
        raise InputError("neither dump.json nor debug.json found", path=first)
    for root, names in ((target, t_ranks), (golden, g_ranks)):
        for name in names:
            check_within(root, root / name, f"rank directory {name}")
            check_within(root, root / name / file_name, f"{name}/{file_name}")
    jobs = []
    for tr, gr in zip(t_ranks, g_ranks):
        job = CompareJob(
            target / tr / file_name,
            golden / gr / file_name,
            out,
            file_stem("debug" if file_name == "debug.json" else "dump", "_" + tr),
            label=tr,
        )
        missing = [str(p) for p in (job.target, job.golden) if not p.is_file()]
        if missing:
            job.missing = f"{file_name} not found in {', '.join(str(Path(m).parent) for m in missing)}"
        jobs.append(job)
    return jobs
