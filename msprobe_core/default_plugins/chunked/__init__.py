"""``chunked``: a big statistics or md5 job matched on the dumps' indexes, then read, built and written a chunk at
a time (docs/streaming-design.md): memory stays flat and a forked worker takes half of the chunks.

Registered through ``msprobe_register_strategies``, the hook a third party's strategy uses; the core offers it
every job big enough where it runs (``MSPROBE_STREAM_MIN_BYTES``, ``MSPROBE_RANK_STREAM_MIN_BYTES``) and runs
whole tables when it declines one or when it is turned off (``-p no:chunked``, ``MSPROBE_DISABLE_PLUGINS=chunked``):
the result files are the same either way. It also lends the whole-table strategy a second process for a big
result's last rows (``StrategySpec.tail``, :mod:`.tailbuild`). It streams what the loaders index: a loader opts in by returning a
:class:`~msprobe_core.plugin.DumpIndex` when asked for one (docs/plugins.md, "Being compared chunk by chunk").
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from msprobe_core.plugin import Register, StrategySpec, hookimpl


def _choose(job: Any, options: Any, host: Any, on_worker: bool) -> Any:
    from .streamed import choose

    return choose(job, options, host, on_worker)


def _tail(target: Any, golden: Any, match: Any, options: Any, build: Callable[..., Any], directory: Path,
          sink: Any = None) -> Any:
    """A forked child building, spelling (and, given a summary ``sink``, summarising) the last rows of a big
    whole-table result (:mod:`.tailbuild`)."""
    from .tailbuild import start_tail, wants_tail

    if not wants_tail(target, match, options):
        return None
    return start_tail(target, golden, match, options, build, directory, sink)


@hookimpl
def msprobe_register_strategies(register: Register[StrategySpec]) -> None:
    """The chunk-by-chunk strategy (the modules are imported only when a big job is offered to it), which also lends
    the whole tables a forked child for a big result's last rows."""
    register(StrategySpec("chunked", _choose, order=100, tail=_tail))



@hookimpl
def msprobe_read_index_stack(path: Path) -> Any:
    """``stack.json`` of a target read in chunks, as its records without the API names (:mod:`.stackrecords`; made
    per entry once matching is done: :func:`.stackindex.entry_stacks`), or ``None`` for a layout only the whole file
    tells (the core reads its dict then)."""
    from .stackrecords import read_stack_records

    return read_stack_records(path)
