"""``chunked``: a big statistics or md5 job matched on the dumps' indexes, then read, built and written a chunk at
a time (docs/streaming-design.md): memory stays flat and a forked worker takes half of the chunks.

Registered through ``msprobe_register_strategies``, the hook a third party's strategy uses; the core offers it
every job big enough where it runs (``MSPROBE_STREAM_MIN_BYTES``, ``MSPROBE_RANK_STREAM_MIN_BYTES``) and runs
whole tables when it declines one or when it is turned off (``-p no:chunked``, ``MSPROBE_DISABLE_PLUGINS=chunked``):
the result files are the same either way. It streams what the loaders index: a loader opts in by returning a
:class:`~msprobe_core.plugin.DumpIndex` when asked for one (docs/plugins.md, "Being compared chunk by chunk").
"""

from __future__ import annotations

from typing import Any

from msprobe_core.plugin import Register, StrategySpec, hookimpl


def _choose(job: Any, options: Any, host: Any, on_worker: bool) -> Any:
    from .streamed import choose

    return choose(job, options, host, on_worker)


@hookimpl
def msprobe_register_strategies(register: Register[StrategySpec]) -> None:
    """The chunk-by-chunk strategy (the modules are imported only when a big job is offered to it)."""
    register(StrategySpec("chunked", _choose, order=100))
