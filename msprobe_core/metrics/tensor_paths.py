"""Where a tensor file of a dump is: ``data_name`` joined to the dump's tensor directory, never outside it."""

from __future__ import annotations

from pathlib import Path


def safe_tensor_path(base: Path | None, data_name: str) -> Path:
    """``base/data_name``, refusing names that leave ``base`` (``..``, absolute paths, symlinks out).

    Delegates to :func:`msprobe_core.files.validation.resolve_within`, the one helper every loader uses.
    """
    from ..files.validation import resolve_within

    return resolve_within(base, data_name, what="data_name")
