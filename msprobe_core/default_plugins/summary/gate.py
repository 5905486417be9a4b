"""The ``gate`` default plugin: ``--fail-on error|warning`` makes a run whose rows have that verdict (or worse), or
that compared too few rows (``--min-matched``), exit with status 3 (for CI).

Turned off (``-p no:gate``), ``--fail-on`` is no option.
"""

from __future__ import annotations

from msprobe_core.plugin import FinishedRun, OptionSpec, Register, hookimpl


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``--fail-on``: the verdict that fails the run."""
    register(OptionSpec("fail_on", ("--fail-on",), "Exit with status 3 when any row has this verdict or a worse one "
                        "(for CI).", kind="choice", choices=("error", "warning"), api=False))


@hookimpl
def msprobe_run_gate(run: FinishedRun) -> str | None:
    """Why the run fails ``--fail-on`` (see :func:`.finish.gate_reason`); a run without a summary (the ``summary``
    plugin turned off) fails it: a gate that cannot look does not pass."""
    fail_on = getattr(run.options, "fail_on", None)
    if not fail_on:
        return None
    if run.summary is None:
        return f"--fail-on {fail_on}: the run has no summary to judge (the plugin 'summary' is turned off)"
    from .finish import gate_reason

    return gate_reason(run.summary.data, fail_on)
