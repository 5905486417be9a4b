"""MindSpore's graph/pynative mixed L0 dumps: one compare per ``<graph|pynative>/<step>`` directory both runs have.

A MindSpore run that switches between graph and PyNative mode dumps each mode's steps apart
(``dump/graph/step0/rank0/dump.json``, ``dump/pynative/step0/proc<PID>/dump.json``). Given two such roots (an
entry named ``graph`` or ``pynative`` in both), every folder and entry both have is compared as its step directory
would be (``rank*``/``proc<PID>`` inside it, by the core's discovery), into ``<output>/<folder>/<step>/``, msprobe's
layout, each job labelled ``<folder>/<step>/<rank dir>``. No further mixed dump is looked for inside.

The plugin claims such roots through ``msprobe_discover_jobs``, before the default plugins' discoveries (an
installed plugin's plain implementation is called before them: a mixed dump holding ``step<N>`` directories too is
not the default plugin ``steps``'s) and the core's; the kernel plugin's (``tryfirst``) refuses its ``--rank`` for
them first. Without the plugin, the core finds no rank directory there and the install hint names this plugin
(the known plugins' table lists the layout).

Only :func:`mixed_folders` runs in every directory compare: it lists the two roots and imports nothing.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from msprobe_core.plugin import CompareJob, CompareOptions

#: the folders of a mixed dump, one per execution mode (msprobe's ``Const.MIX_DUMP_NAMES``)
MIX_DIRS = ("graph", "pynative")


def mixed_folders(target: Path, golden: Path) -> list[str]:
    """The folders of a mixed dump (``graph``, ``pynative``) that both ``target`` and ``golden`` hold, sorted; empty
    when they are no two mixed dump roots, or cannot be listed (the core's discovery then says why)."""
    if not (target.is_dir() and golden.is_dir()):
        return []
    try:
        return sorted(set(os.listdir(target)) & set(os.listdir(golden)) & set(MIX_DIRS))
    except OSError:
        return []


def _natural_key(name: str) -> tuple:
    """``step2`` before ``step10``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def mixed_jobs(target: Path, golden: Path, options: CompareOptions, folders: list[str]) -> list[CompareJob]:
    """One compare job per entry of each of ``folders`` that both roots hold as a directory (the step directory's
    own discovery inside), written under ``<output>/<folder>/<step>/``; an ``InputError`` when there is none."""
    from msprobe_core.plugin import InputError, discover_jobs, list_dir

    jobs: list[CompareJob] = []
    for folder in folders:
        t_dir, g_dir = target / folder, golden / folder
        steps = sorted(set(list_dir(t_dir)) & set(list_dir(g_dir)), key=_natural_key)
        for step in steps:
            if not (t_dir / step).is_dir() or not (g_dir / step).is_dir():
                continue
            sub = replace(options, output_dir=Path(options.output_dir) / folder / step)
            for job in discover_jobs(t_dir / step, g_dir / step, sub, depth=1):
                job.label = f"{folder}/{step}/{job.label}"
                jobs.append(job)
    if not jobs:
        raise InputError(f"no common step directories under {', '.join(folders)}", path=target)
    return jobs
