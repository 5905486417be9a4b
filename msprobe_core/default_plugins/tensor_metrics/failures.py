"""A plugin's tensor metric that raises: its cell says ``unsupported`` and the run says so, once per metric.

A third-party metric must not stop the run, but a metric that raises on every row must not pass for
one that found nothing to compute either: the worker puts a :class:`MetricFailed` in the cell (it is
picklable, so it crosses the executor), and the parent turns each back into ``unsupported`` and
warns once per metric, naming its plugin, how many rows failed and the first error and where it was
raised.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("msprobe")


@dataclass(frozen=True)
class MetricFailed:
    """What one metric raised on one pair: ``RuntimeError: boom (at metric.py:12)``."""

    error: str


def failure_of(fn: Callable[..., Any], exc: BaseException) -> MetricFailed:
    """The cell of a metric ``fn`` that raised ``exc``: the error and the innermost line of ``fn``'s own file."""
    code = getattr(fn, "__code__", None)
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if code is not None and f.filename == code.co_filename] or frames[-1:]
    where = f" (at {own[-1].filename.rsplit('/', 1)[-1]}:{own[-1].lineno})" if own else ""
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return MetricFailed(f"{type(exc).__name__}{': ' + text if text else ''}{where}")


def settle_failures(columns: MutableMapping[str, list[Any]], specs: Sequence[Any], unsupported: str) -> None:
    """Replace every :class:`MetricFailed` in the plugin metrics' ``columns`` by ``unsupported``; warn per metric."""
    for spec in specs:
        cells = columns.get(spec.column)
        if not cells:
            continue
        failed = [n for n, cell in enumerate(cells) if isinstance(cell, MetricFailed)]
        if not failed:
            continue
        first = cells[failed[0]].error
        for n in failed:
            cells[n] = unsupported
        owner = f"plugin '{spec.plugin}': " if getattr(spec, "plugin", "") else ""
        log.warning("%smetric '%s' raised on %d of %d rows, whose '%s' cells say %s; the first: %s",
                    owner, spec.column, len(failed), len(cells), spec.column, unsupported, first)
