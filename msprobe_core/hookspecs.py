"""Every hook msprobe-core calls, with its contract.

Built-in behaviour (the dump.json loader, the exact matcher, the metric sets,
the CSV and xlsx writers) is registered through these same hooks, exactly as a
third-party plugin would do it; see ``msprobe_core.builtin``.

Registry hooks receive a ``register`` callback instead of returning lists, so
the plugin manager can validate entries, reject duplicates and remember which
plugin registered what (shown by ``msprobe plugins``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from .model import CompareOptions, DumpTable
    from .registry import CompareJob

PROJECT = "msprobe_core"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def msprobe_register_frameworks(register: Callable[..., None]) -> None:
    """Describe a framework whose dumps can be compared.

    Call ``register(FrameworkSpec(...))`` (see :class:`msprobe_core.registry.FrameworkSpec`):
    the names a dump's ``framework`` field may hold, which golden frameworks a
    target of this framework can be compared with, how dtype names group into
    families for the dtype gate, and how to read one tensor file.

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def msprobe_discover_jobs(
    target: Path, golden: Path, options: CompareOptions
) -> list[CompareJob] | None:
    """Turn the two paths the user gave into compare jobs, or return ``None`` if not yours.

    Called with the paths of ``-tp``/``-gp``. The first plugin that recognises
    the layout (a file pair, a step directory with rank dirs, a kernel dump
    root, a graph/pynative mixed dump…) returns the list of jobs, each with its
    own output name. Raise :class:`msprobe_core.errors.InputError` for a layout
    you own but that is broken (e.g. rank counts differ).

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def msprobe_load_dump(path: Path, options: CompareOptions) -> DumpTable | None:
    """Load one dump file into a :class:`~msprobe_core.model.DumpTable`, or return ``None``.

    The table is an index of rows; tensors are not read here (rows carry the
    file name of their tensor, read lazily by the framework's reader). Raise
    :class:`msprobe_core.errors.InputError` for a file you claim but cannot read.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_register_normalizers(register: Callable[..., None]) -> None:
    """Register name normalisers: ``register(name, fn, order=…)``.

    ``fn(table, side, keys, options) -> list[str]`` returns new compare keys
    for every row of ``table`` (``side`` is ``"target"`` or ``"golden"``).
    Normalisers run in ascending ``order`` before any mapper; return ``keys``
    unchanged when the options say you do not apply.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_register_mappers(register: Callable[..., None]) -> None:
    """Register mappers that pair target rows with golden rows: ``register(MapperSpec(...))``.

    Of all mappers whose ``applies(options)`` is true, the one with the highest
    ``priority`` runs: ``run(ctx) -> MatchResult`` where ``ctx`` is a
    :class:`msprobe_core.registry.MatchContext` (both tables, their normalised
    keys, the options and a join helper).

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_register_metrics(register: Callable[..., None]) -> None:
    """Register metric calculators: ``register(MetricSpec(...))``.

    A metric set belongs to one dump mode (``tensor``, ``statistics``,
    ``md5``) and fills its columns for the whole matched table at once.
    Extra tensor metrics (``register(TensorMetricSpec(...))``) add a column
    after the built-in six; a metric that raises yields ``unsupported``.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_register_writers(register: Callable[..., None]) -> None:
    """Register result writers: ``register(WriterSpec(name, suffix, write))``.

    ``write(table: ResultTable, path: Path) -> list[Path]`` must write
    atomically (see :func:`msprobe_core.writers.atomic_path`) and return the
    files it created.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_register_executors(register: Callable[..., None]) -> None:
    """Register executors, the places independent tasks run: ``register(ExecutorSpec(...))``.

    ``ExecutorSpec(name, create)`` (see :mod:`msprobe_core.executors`):
    ``create(options) -> Executor`` builds the executor selected by
    ``--executor NAME`` (``options.executor``; ``options.scheduler`` holds
    ``--scheduler ADDRESS``). The run's executor spreads rank pairs and tensor
    chunks; tasks are module-level functions with picklable arguments and
    their results never depend on where they ran. The built-in ``local``
    executor is a process pool on this machine.

    .. versionadded:: 0.2
    """


@hookspec
def msprobe_register_comm_ops(register: Callable[..., None]) -> None:
    """Name communication ops for the first-divergence analysis (``-da``): ``register(CommOpSpec(...))``.

    ``CommOpSpec(name, kind)`` (see :mod:`msprobe_core.analysis.comm`): ``kind(prefix)`` gets a call
    key without call number and direction (``Distributed.all_reduce``) and returns ``"collective"``,
    ``"send"``, ``"recv"`` or ``None``. Communication ops connect ranks: a divergence on one rank
    reaches the others through them. Registered specs are asked first; the built-in rule knows the
    usual op names under any API family whose name mentions ``distributed`` or ``comm``.

    .. versionadded:: 0.2
    """


@hookspec
def msprobe_register_commands(cli: Any) -> None:
    """Add sub-commands to the ``msprobe`` click group.

    .. versionadded:: 0.1
    """
