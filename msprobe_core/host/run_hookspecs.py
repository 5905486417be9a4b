"""The hooks of a finished run, and those added after them: the second half of :mod:`msprobe_core.host.hookspecs`.

That module imports every hook here, so the host (``pm.add_hookspecs(hookspecs)``) and every reader of it see one
set of hooks; they live apart only to keep each module short.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .markers import hookspec

if TYPE_CHECKING:
    from ..model import CompareOptions
    from ..run.finished import FinishedRun, PartialSpec, RunSummary
    from .registry import PluginHost
    from .specs import CompareJob, Register


# --------------------------------------------------------------------------- the run-finished hooks
# (issue 33: the summary, the gate, the JSON summary and the HTML report are plugins; see msprobe_core.run.finished)


@hookspec
def msprobe_register_partials(register: Register[PartialSpec]) -> None:
    """Make something of each job's result where the job runs: ``register(PartialSpec(name, sink, replaces=()))``.

    Before the jobs run, ``sink(options, values, jobs)`` is asked for a picklable factory of one job's sink
    (``None``: this run needs none). Each job (on this process or a worker) feeds its result table to a new
    sink, part by part as it is built (``feed_table(table, start)``), and hands back ``sink.finish(files)``,
    which must pickle; the run-finished hooks read it with ``run.partial(name, outcome)``. The ``summary`` plugin
    registers ``"summary"`` (its per-result counts); a sink that makes another spec's partial and more names it
    in ``replaces``.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_run_outputs(run: FinishedRun) -> list[Path] | None:
    """The files this plugin will write for the finished ``run`` (e.g. a report beside the results), or ``None``.

    Called once the jobs are done, before ``msprobe_run_finished``; the core gathers them in ``run.outputs``
    (the summary lists them among the run's files). Write nothing here.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_run_finished(run: FinishedRun) -> None:
    """The jobs are done: compute and write what this plugin makes of the run (a report, a summary file).

    ``run`` (:class:`msprobe_core.plugin.FinishedRun`): the outcomes, the options and command-line values, the
    inputs, the start time, ``failed`` (some job failed; what was written is still there), ``outputs`` and the
    partials. The ``summary`` plugin's implementation is ``tryfirst``: it sets ``run.summary``
    (:class:`msprobe_core.plugin.RunSummary`) before any other runs (``None`` when that plugin is turned off).
    Print nothing meant for the user here (that is ``msprobe_run_terminal_summary``).

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_run_terminal_summary(run: FinishedRun) -> None:
    """Print what this plugin tells the user about the finished ``run`` (the summary text).

    Called after every file is written and after the core's "ends successfully" banner.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_run_gate(run: FinishedRun) -> str | None:
    """Why the finished ``run`` fails this plugin's gate (one line), or ``None`` when it passes.

    Called last, only when every job succeeded. Any reason makes ``msprobe compare`` exit with status 3 (the
    reasons joined by ``"; "``, in plugin registration order, after ``msprobe: error:``).

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def msprobe_summarize(run: FinishedRun) -> RunSummary | None:
    """The summary of a run whose results are in memory (the Python API's ``CompareResult.summary``), or ``None``.

    Nothing is written or printed; ``RunSummary.results`` holds the results' whole views (what
    ``CompareResult.write_report`` shows). The ``summary`` plugin answers.

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def msprobe_write_report(views: list[Any], summary: dict[str, Any], path: Path) -> Path | None:
    """Write the report page of results held in memory (the Python API's ``CompareResult.write_report(path)``:
    ``views``, every result's whole view; ``summary``, the run's summary as ``--json-summary`` writes it) to
    ``path``, and return the path written; ``None`` to leave it to another plugin. The ``report`` plugin answers
    with its HTML page; with no answer the call is a usage error.

    .. versionadded:: 0.1
    """


# --------------------------------------------------------------------------- trace (issue 33: MSPROBE_TRACE_PLUGINS)
@hookspec
def msprobe_plugins_loaded(host: PluginHost) -> None:
    """Every plugin of ``host`` is registered (called once per host, in each process, before the registry hooks):
    watch its hook calls here. ``host.pm.add_hookcall_monitoring(before, after)`` is pluggy's monitoring of the
    calls made through ``pm.hook``; ``host.add_hostcall_monitoring(before, after)`` the same for those the host makes
    one implementation at a time (registry, first-result and command-line hooks). The default plugin ``trace``
    (``MSPROBE_TRACE_PLUGINS``) uses both.

    .. versionadded:: 0.1
    """


# --------------------------------------------------------------------------- a run refused before any work (issue 33:
# the default plugin 'json_summary' refuses a --json-summary FILE that is one of the run's inputs)
@hookspec
def msprobe_check_run(jobs: list[CompareJob], options: CompareOptions, values: dict[str, Any]) -> None:
    """A compare's jobs are found and nothing is read or written yet: refuse the run if what your options would
    write is wrong, by raising a :class:`~msprobe_core.plugin.UsageError` or
    :class:`~msprobe_core.plugin.OutputError` naming the option and the file.

    Called once per run by ``msprobe compare`` and :func:`msprobe_core.compare`, after the options are checked and
    the jobs discovered (``jobs``: each a :class:`~msprobe_core.plugin.CompareJob`), before the output directory is
    made. ``options``: the run's options; ``values``: every option value by name (also those that are no attribute
    of the options). The default plugin ``json_summary`` refuses a ``--json-summary`` file that is one of the run's
    inputs, or an existing file that is not an earlier JSON summary. The return value is ignored.

    .. versionadded:: 0.1
    """


# --- forking (issue 33): a big CSV file's second half spelled by a forked child ---------------------------------
@hookspec(firstresult=True)
def msprobe_csv_tail(path: Path, columns: list[Sequence[Any]], start: int, stop: int) -> Any:
    """A tail spelling the second half of a CSV file elsewhere while the built-in writer spells the first, or ``None``.

    Called by the built-in ``csv`` writer in the run's process for each file it writes whole (``path``: the temporary
    file, renamed into place when complete; ``columns``: its cell lists, one per column of the header; its rows
    ``start:stop``). Return a tail as ``StrategySpec.tail`` gives one: it spells the rows from ``tail.start``
    (strictly between ``start`` and ``stop``) to ``stop`` as ``msprobe_core.plugin.write_csv_rows`` writes them,
    without the header, into the file ``tail.side``; the writer writes the header and the rows before
    ``tail.start``, appends ``tail.side`` when ``tail.finish()`` is true (else spells those rows itself), then calls
    ``tail.close()`` (stop, remove the side file), also when it fails. ``None``: the writer spells every row here.
    The default plugin ``forking`` answers past 100,000 rows on a machine with a second core (a forked child).

    .. versionadded:: 0.1
    """


# --- chunked (issue 33): the stack.json of a target read in chunks, read that strategy's way ----------------------


@hookspec(firstresult=True)
def msprobe_read_index_stack(path: Path) -> Any:
    """The ``stack.json`` at ``path`` of a target the load asks for as an index, read your way, or ``None``.

    Called by the load stage once per job whose target is asked for as a
    :class:`~msprobe_core.plugin.DumpIndex` (``index`` of ``msprobe_load_dump`` not ``None``), while the target
    loads or once it is loaded; what it returns becomes the index's ``stack``, which the strategy that asked for the
    index reads (the default plugin ``chunked`` answers with the file's records, without its API names, and makes
    them per entry once matching is done). ``None``: the core reads the file into its ``{call: frames}`` dict
    (:func:`~msprobe_core.plugin.load_stack`), as for a table. Raise what ``load_stack`` raises for a file that is
    not JSON or not an object.

    .. versionadded:: 0.1
    """
