"""The hooks of the default plugin ``tensor_metrics`` (declared through ``msprobe_add_hookspecs``): what its tensor
stage tells the plugins that watch the computed rows of a tensor-mode table (the default plugin ``tensor_log``), and
the six metric cells of a pair, which it answers for a plugin that reads tensors of its own (the kernel plugin).

An implementation is marked ``@hookimpl(optionalhook=True)``: with this plugin turned off the hooks are not declared,
tensor mode computes no metric cells to watch, and a caller of ``msprobe_compare_tensors`` finds no hook to ask.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msprobe_core.plugin import hookspec

if TYPE_CHECKING:
    import numpy

    from msprobe_core.plugin import CompareOptions, DumpTable, MatchResult, PluginHost


@hookspec
def msprobe_tensor_rows_compared(target: DumpTable, golden: DumpTable, match: MatchResult,
                                 columns: dict[str, list[Any]], names: list[str], options: CompareOptions,
                                 host: PluginHost) -> None:
    """A tensor-mode table's metric columns are computed: look at them (log, count), change nothing.

    Called once per tensor-mode job (per chunk of a streamed one), in the process that ran its tensor stage,
    after every tensor metric of the rows is in ``columns`` (column name -> one cell per row of ``match``, in
    ``match`` order); ``names`` are the metric columns in the table's order. The default plugin ``tensor_log``
    logs each row with ``-tensor_log``. The return value is ignored; an installed plugin's implementation that
    raises is named in a warning (once) and the run goes on. Declared by the default plugin ``tensor_metrics``.

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def msprobe_compare_tensors(npu: numpy.ndarray, bench: numpy.ndarray) -> tuple[Any, ...] | None:
    """Tensor mode's six metric cells of a pair of arrays (squeezed as msprobe does; never modify them), or ``None``.

    Called by a plugin that reads tensors of its own (the kernel plugin, per pair of ``.npy`` files, from several
    threads) through its metric set's host: ``ctx.host.pm.hook.msprobe_compare_tensors(npu=n, bench=b)``. The
    answer is ``(Cosine, EucDist, MaxAbsErr, MaxRelativeErr, One Thousandth Err Ratio, Five Thousandths Err
    Ratio)``, floats or msprobe's strings (``unsupported``, ``shape unmatched``, ``N/A``, ``Nan``). Declared and
    answered by the default plugin ``tensor_metrics``; turned off, the hook is not declared (the caller looks it up
    with ``getattr(host.pm.hook, "msprobe_compare_tensors", None)``) and the caller's cells say ``N/A``.

    .. versionadded:: 0.1
    """
