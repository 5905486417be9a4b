"""What the summary and the report know of a result's mode: the core's three, and what plugins declare of theirs.

A plugin's mode (its :class:`~msprobe_core.host.specs.MetricSpec`) may say how its rows are named
(``row_names``: execution order and each row's call come from the file names), how a result of the
mode is recognised when read back (``recognizes``), and whether its rows are judged on relative error
(``relative_errors``); its verdict column says which cells are warnings and errors
(:attr:`~msprobe_core.result_columns.ColumnSpec.levels`). This module is where the report asks for
them, so no report module names a plugin's mode or columns. ``host``: the plugin host to ask (default:
the run's, :func:`msprobe_core.running.run_host`; outside a run the core's modes alone).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from msprobe_core.plugin import MODE_MD5, MODE_STATISTICS, MODE_TENSOR

if TYPE_CHECKING:
    from msprobe_core.plugin import MetricSpec, PluginHost, RowNames
    from msprobe_core.result_columns import ColumnSpec

#: the dump modes the core's own result tables have
CORE_MODES = (MODE_TENSOR, MODE_STATISTICS, MODE_MD5)


def _host(host: PluginHost | None) -> PluginHost | None:
    if host is not None:
        return host
    from msprobe_core.plugin import run_host

    return run_host()


def _metric_sets(host: PluginHost | None) -> list[MetricSpec]:
    """Every metric set of the host, conditional ones first (none outside a run)."""
    h = _host(host)
    return [] if h is None else [*h.conditional_metrics, *h.metrics.values()]


def _plugin_specs(host: PluginHost | None) -> list[MetricSpec]:
    """The metric sets of the modes plugins add (not those of the core's modes), conditional ones first."""
    return [s for s in _metric_sets(host) if s.mode not in CORE_MODES]


def mode_spec(mode: str, host: PluginHost | None = None) -> MetricSpec | None:
    """The metric set that declares plugin mode ``mode`` (``None`` for the core's modes and unknown ones)."""
    if mode in CORE_MODES:
        return None
    return next((s for s in _plugin_specs(host) if s.mode == mode), None)


def result_modes(host: PluginHost | None = None) -> tuple[str, ...]:
    """Every mode a result table may have: the core's, then the plugins'."""
    return CORE_MODES + tuple(dict.fromkeys(s.mode for s in _plugin_specs(host)))


def recognised_mode(columns: Sequence[str], host: PluginHost | None = None) -> str | None:
    """The plugin mode whose ``recognizes`` takes a result header (``None``: no plugin's)."""
    for spec in _plugin_specs(host):
        if spec.recognizes is not None and spec.recognizes(columns):
            return spec.mode
    return None


def row_names(mode: str, host: PluginHost | None = None) -> RowNames | None:
    """The row-name grammar of ``mode`` (``None``: rows are dump names, in execution order)."""
    spec = mode_spec(mode, host)
    return spec.row_names if spec is not None else None


def mode_frameworks(mode: str, host: PluginHost | None = None) -> tuple[str, str] | None:
    """The frameworks a metric set of ``mode`` declares for all its results (``MetricSpec.frameworks``)."""
    for spec in _metric_sets(host):
        if spec.mode == mode and spec.frameworks:
            return tuple(spec.frameworks)  # type: ignore[return-value]
    return None


def relative_errors(mode: str, host: PluginHost | None = None) -> bool:
    """Whether rows of ``mode`` are judged on error relative to the golden tensor (``MetricSpec.relative_errors``)."""
    spec = mode_spec(mode, host)
    return spec is not None and spec.relative_errors


def verdict_columns(host: PluginHost | None = None) -> list[ColumnSpec]:
    """The verdict columns plugins declare with their warning and error cells (``ColumnSpec.levels``)."""
    h = _host(host)
    if h is None:
        from msprobe_core.plugin import result_columns

        return result_columns.CORE_COLUMNS.verdict_levels()
    return h.columns.verdict_levels()


def page_declarations(views: Sequence[Any], host: PluginHost | None = None) -> dict[str, Any]:
    """What the report's page needs of the modes of ``views``: the verdict columns it pins, and, per
    mode named by file paths, the row-name grammar (``pattern`` in JavaScript's spelling, ``readable``)."""
    names: dict[str, dict[str, str]] = {}
    for view in views:
        grammar = row_names(view.mode, host)
        if grammar is not None and view.mode not in names:
            names[view.mode] = {"pattern": grammar.js_pattern(), "readable": grammar.readable}
    return {"verdictColumns": [c.name for c in verdict_columns(host)], "rowNames": names}
