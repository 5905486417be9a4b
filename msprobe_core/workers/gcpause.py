"""Pausing Python's cyclic garbage collector while millions of small acyclic objects are made.

Parsed JSON, row cells, parsed numbers and spelled cells hold no reference cycles: they are freed by
reference counting, and the collector's repeated scans of them only cost time (more than the parse of a
big dump, +0.4 s for a summary at 1M entries).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused(freeze: bool = False) -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (nothing changes when it was already off).

    ``freeze``: move what the block allocated to the permanent generation before collecting again. Left in
    the youngest generation, all of it would be scanned by the first collection after the block (about a
    second for a big table); it is freed by reference counting as usual either way.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if freeze:
                gc.freeze()
            gc.enable()
