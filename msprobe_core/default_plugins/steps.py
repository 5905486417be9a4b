"""Dump roots holding ``step<N>`` directories: one compare per step both runs have.

msprobe's dumper writes ``dump/step0/rank0/…``, ``dump/step1/rank0/…``; msprobe's own compare wants one step
directory per run. Given the two roots, every step both have is compared as its step directory would be
(``rank*``/``proc*`` inside it as usual), into ``<output>/step<N>/`` so that the steps' result files never
collide (the layout of the graph/pynative mixed dumps' per-step outputs). ``--step`` keeps only the steps it
names. A step only one run has is named in a warning and in the summary (``CompareJob.steps_absent``),
never skipped silently.

A step directory's name is exactly ``step<N>`` (no leading zero, nothing after the number): ``step1\n`` or
``step01`` would otherwise stand for step 1 beside ``step1`` and hide it. Such a directory is named, escaped,
in a warning and not compared.

The plugin claims such roots through ``msprobe_discover_jobs``, ahead of the core's discovery, and declares
``--step``; turned off (``-p no:steps``), ``--step`` is no option and two dump roots are refused with a line
that says this plugin compares them.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from msprobe_core.plugin import (
    STEP_DIR,
    CompareJob,
    CompareOptions,
    InputError,
    OptionSpec,
    Register,
    UsageError,
    discover_jobs,
    holds_step_dirs,
    hookimpl,
    option_label,
    warn_if_symlink,
)

log = logging.getLogger("msprobe")

#: a name that starts like a step directory's: one that is not exactly ``step<N>`` is warned about
_STEP_LIKE = re.compile(r"step[0-9]")


def parse_ids(value: str | None) -> list[int]:
    """A ``1,2,3`` option value (``--step``) as sorted distinct ids, blank items ignored; ``None`` or blank means
    every id (``[]``). Anything but non-negative integers is a :class:`ValueError` saying so."""
    items = [item.strip() for item in (value or "").split(",") if item.strip()]
    bad = next((item for item in items if not (item.isascii() and item.isdigit())), None)
    if bad is not None:
        raise ValueError(f"expects comma-separated non-negative integers, got {bad!r} in {value!r}")
    return sorted({int(item) for item in items})


def check_ids(value: str) -> str:
    """``value`` when :func:`parse_ids` accepts it (an option's check)."""
    parse_ids(value)
    return value


def step_dirs(path: Path, *, warn: bool = False) -> dict[int, str]:
    """The ``step<N>`` directories directly below ``path``, by step number.

    ``warn``: name in a warning each directory that starts like one but is not exactly ``step<N>``
    (``step1\n``, ``step01``, ``step1 ``): it is not a step and is not compared.
    """
    try:
        dirs = [n.name for n in path.iterdir() if n.is_dir()]
    except OSError:
        return {}
    steps: dict[int, str] = {}
    for name in sorted(dirs):
        if STEP_DIR.fullmatch(name):
            steps[int(name[4:])] = name
        elif warn and _STEP_LIKE.match(name):
            log.warning("%s: the directory %s is not a step directory (its name is not exactly step<N>); "
                        "not compared.", path, ascii(name))
    return steps


def is_step_root(path: Path) -> bool:
    """Whether ``path`` is a directory holding ``step<N>`` directories (and so is no step directory itself)."""
    return path.is_dir() and bool(step_dirs(path))


def step_jobs(target: Path, golden: Path, options: CompareOptions,
              discover: Callable[..., list[CompareJob]]) -> list[CompareJob]:
    """One compare per step present in both roots (``discover``: the step directory's own discovery)."""
    t_steps, g_steps = step_dirs(target, warn=True), step_dirs(golden, warn=True)
    if not t_steps or not g_steps:
        empty, side = (target, "target") if not t_steps else (golden, "golden")
        other = golden if empty is target else target
        raise InputError(
            f"{other} holds step directories ({', '.join(sorted((t_steps or g_steps).values()))}) but "
            f"{option_label(side, short=True)} {empty} holds none; point both at dump roots or both at step "
            "directories",
            path=empty,
        )
    try:
        wanted = parse_ids(options.step)
    except ValueError as exc:  # the Python API's value is checked by the option's own check already
        raise UsageError(f"--step {exc}") from None
    absent: list[dict[str, str]] = []
    for number in sorted(set(t_steps) ^ set(g_steps)):
        if wanted and number not in wanted:
            continue
        has, root = ("target", target) if number in t_steps else ("golden", golden)
        name = t_steps.get(number) or g_steps[number]
        lacks = "golden" if has == "target" else "target"
        log.warning("%s exists only in the %s dump (%s), not compared: the %s dump has no %s.",
                    name, has, root / name, lacks, name)
        absent.append({"step": name, "side": has, "path": str(root / name)})
    common = [n for n in sorted(set(t_steps) & set(g_steps)) if not wanted or n in wanted]
    for number in wanted:
        if number not in t_steps and number not in g_steps:
            if common:  # else the error below says it, once
                log.warning("--step %d: neither dump has step%d, not compared (target: %s; golden: %s).", number,
                            number, ", ".join(t_steps[k] for k in sorted(t_steps)),
                            ", ".join(g_steps[k] for k in sorted(g_steps)))
            absent.append({"step": f"step{number}", "side": "", "path": ""})
    if not common:
        raise InputError(
            "no step is present in both dumps" + (f" for --step {options.step}" if wanted else "")
            + f" (target: {', '.join(t_steps[k] for k in sorted(t_steps))}; "
            f"golden: {', '.join(g_steps[k] for k in sorted(g_steps))})",
            path=target,
        )
    jobs: list[CompareJob] = []
    for number in common:
        name = t_steps[number]
        sub = replace(options, output_dir=Path(options.output_dir) / name)
        for job in discover(target / name, golden / g_steps[number], sub, depth=1):
            job.label = f"{name}/{job.label}"
            job.step = name
            job.steps_absent = absent
            jobs.append(job)
    return jobs


@hookimpl
def msprobe_discover_jobs(target: Path, golden: Path, options: CompareOptions) -> list[CompareJob] | None:
    """Two dump roots holding ``step<N>`` directories: one compare per step both have (else not ours)."""
    if not holds_step_dirs(target, golden):
        return None
    for path, side in ((target, "target"), (golden, "golden")):
        warn_if_symlink(path, option_label(side, short=True))
    return step_jobs(target, golden, options, discover_jobs)


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``--step``: the steps of two dump roots to compare (also read by a dump format's plugin that has steps)."""
    register(OptionSpec("step", ("--step",), "Steps to compare (1,2,3): the step<N> dirs of two dump roots, or the "
                        "steps a dump format's plugin reads (default: all).", metavar="IDS", validate=check_ids))
