"""What the HTML report and ``msprobe report`` take from modules that leave the core at the same time (issue 33).

The summary (``msprobe_core.default_plugins.report``: the result views, the first divergence, the result chunks, the summary
itself) and the garbage-collector pause are being moved into
default plugins of their own by other changes; until they land, the report reaches them through this one
module, so that rewiring them is one edit here. Each name is imported from its home on first use, as
:mod:`msprobe_core.plugin` does: ``msprobe --help`` (which registers ``msprobe report``) loads none of them.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

#: home module -> the names the report takes from it
_HOMES: dict[str, tuple[str, ...]] = {
    # the summary's (another default plugin, moving at the same time)
    "views": ("VERDICTS", "VERDICT_LEVEL", "ResultHead", "ResultView", "SpelledColumns", "detect_mode",
              "guess_frameworks", "head_of", "main_metric", "node_of", "plot_metrics", "row_verdicts", "view_grammar"),
    "divergence": ("Divergence", "analysis_queries", "carried_in", "carried_into", "choose_divergence",
                   "first_divergence_of", "is_mixed_layout", "read_analysis"),
    "modes": ("page_declarations",),
    "chunks": ("CHUNK_ROWS", "CellWindow", "ResultChunk", "concat_chunks", "table_chunks", "view_chunks"),
    "accumulate": ("SummaryAccumulator", "ViewAccumulator", "ViewPartial"),
    "finish": ("finish_summary",),
    "unpaired": ("parse_share",),
    "drift": ("carried_input",),
    "summary": ("summarize", "write_json_summary"),
    # the process pool's (the default plugin local_executor's, the pause still in the core's workers/)
    "gcpause": ("gc_paused",),
}
_HOME_OF = {name: home for home, names in _HOMES.items() for name in names}


def _module(home: str) -> ModuleType:  # noqa: PLR0911 - one import each, spelled out for the import contracts
    if home == "views":
        from msprobe_core.default_plugins.summary import views
        return views
    if home == "divergence":
        from msprobe_core.default_plugins.summary import divergence
        return divergence
    if home == "modes":
        from msprobe_core.default_plugins.summary import modes
        return modes
    if home == "chunks":
        from msprobe_core.default_plugins.summary import chunks
        return chunks
    if home == "accumulate":
        from msprobe_core.default_plugins.summary import accumulate
        return accumulate
    if home == "finish":
        from msprobe_core.default_plugins.summary import finish
        return finish
    if home == "unpaired":
        from msprobe_core.default_plugins.summary import unpaired
        return unpaired
    if home == "drift":
        from msprobe_core.default_plugins.summary import drift
        return drift
    if home == "summary":
        from msprobe_core.default_plugins.summary import summary
        return summary
    from msprobe_core.workers import gcpause
    return gcpause


def __getattr__(name: str) -> Any:
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_module(home), name)
    globals()[name] = value  # found once
    return value
