"""What the HTML report and ``msprobe report`` take from the ``summary`` default plugin's machinery, in one place.

The page draws the summary: it reads results as the summary's views (:mod:`..summary.views`) and chunks, their
first divergence, their model tree and steps, and ``msprobe report`` makes the summary of result files. The report
depends on the summary this one way (the summary imports nothing of the report: an import contract in
``pyproject.toml``); on a run, what the summary made comes through the run-finished hooks (``run.summary``).
Each name is imported from its home on first use, as :mod:`msprobe_core.plugin` does: ``msprobe --help`` (which
registers ``msprobe report``) loads none of them.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

#: home module (in the summary's package) -> the names the report takes from it
_HOMES: dict[str, tuple[str, ...]] = {
    "views": ("VERDICTS", "VERDICT_LEVEL", "ResultHead", "ResultView", "SpelledColumns", "detect_mode",
              "guess_frameworks", "head_of", "main_metric", "node_of", "plot_metrics", "row_verdicts", "view_grammar"),
    "divergence": ("Divergence", "analysis_queries", "carried_in", "carried_into", "choose_divergence",
                   "first_divergence_of", "is_mixed_layout", "read_analysis"),
    "modes": ("page_declarations",),
    "chunks": ("CHUNK_ROWS", "CellWindow", "ResultChunk", "concat_chunks", "table_chunks", "view_chunks"),
    "accumulate": ("SummaryAccumulator", "ViewAccumulator", "ViewPartial"),
    "finish": ("finish_summary", "labelled", "summarise_run"),
    "unpaired": ("parse_share",),
    "drift": ("carried_input",),
    "summary": ("summarize", "write_json_summary"),
    "calls": ("CallNumbers",),
    "tree": ("ALIAS_KEY", "build_tree", "row_tree_index"),
    "result_files": ("label_from_path", "read_files_as_view", "read_result_chunks"),
    # the outputs refused before any work (the summary's --json-summary, msprobe report's -o too)
    "refusals": ("looks_like_html", "looks_like_json_object", "refuse_other_kind", "refuse_outputs_over_inputs"),
}
_HOME_OF = {name: home for home, names in _HOMES.items() for name in names}


def _module(home: str) -> ModuleType:  # noqa: PLR0911, C901 - one import each, spelled out for the import contracts
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
    if home == "calls":
        from msprobe_core.default_plugins.summary import calls
        return calls
    if home == "tree":
        from msprobe_core.default_plugins.summary import tree
        return tree
    if home == "refusals":
        from msprobe_core.default_plugins.summary import refusals
        return refusals
    from msprobe_core.default_plugins.summary import result_files
    return result_files


def __getattr__(name: str) -> Any:
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_module(home), name)
    globals()[name] = value  # found once
    return value
