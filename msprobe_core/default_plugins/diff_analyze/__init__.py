"""First-divergence analysis (``-da/--diff_analyze``): which call made the two runs part ways, and why.

Framework-neutral: it works on the result tables the engine builds (any mapper,
any framework plugin) and on the names of the dumped calls; communication ops
are recognised by rules plugins can extend (``msprobe_register_comm_ops``, which this plugin declares:
:mod:`.hookspecs`; it registers the usual op names, :mod:`.comm`). It takes a run with ``-da`` through ``msprobe_run_jobs``
(:func:`.runner.run_diff_analyze`); turned off (``-p no:diff_analyze``), ``-da`` is no option.
"""

from __future__ import annotations

from typing import Any

from msprobe_core.plugin import DUMP_KINDS, CommOpSpec, CompareJob, CompareOptions, OptionSpec, Register, hookimpl


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``-da/--diff_analyze`` (``first_diff_analyze`` in the Python API, msprobe's keyword)."""
    register(OptionSpec("diff_analyze", ("-da", "--diff_analyze"), "Find the first divergent node.", kind="flag",
                        default=False, aliases=("first_diff_analyze",), kinds=DUMP_KINDS))


@hookimpl
def msprobe_add_hookspecs(pluginmanager: Any) -> None:
    """``msprobe_register_comm_ops``: the rules naming the communication ops this plugin follows between ranks."""
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def msprobe_register_comm_ops(register: Register[CommOpSpec]) -> None:
    """The usual collective and point-to-point op names under a ``*distributed*``/``*comm*`` API family."""
    from .comm import DEFAULT_SPEC

    register(DEFAULT_SPEC)


@hookimpl
def msprobe_run_jobs(jobs: list[CompareJob], options: CompareOptions, host: Any, run: Any) -> list[Any] | None:
    """With ``-da``: every rank pair compared and analysed here (``None``: a layout the analysis does not read,
    which the plain compare then runs, as msprobe does)."""
    if not getattr(options, "diff_analyze", False):
        return None
    from msprobe_core.plugin import stage

    from .runner import run_diff_analyze

    stage("first-divergence analysis (-da)", f"{len(jobs)} pair{'s' if len(jobs) > 1 else ''}")
    return run_diff_analyze(jobs, options, host, stamp=run.stamp)
