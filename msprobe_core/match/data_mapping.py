"""``-dm data_mapping.yaml``: an explicit target-row → golden-row name mapping."""

from __future__ import annotations

from pathlib import Path

from ..errors import MappingError
from ..files.validation import read_yaml


def load_data_mapping(path: Path) -> dict[str, str]:
    """``{target_row_name: golden_row_name}`` from a data-mapping YAML (unquoted integers are names too)."""
    doc = read_yaml(path, "data mapping", error=MappingError)  # no tags, no aliases, bounded size
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise MappingError(f"data mapping must be a mapping of names, got {type(doc).__name__}", path=path)
    from ..files.schemas import NameMapping, validate  # pydantic, only when a mapping is read

    return validate(NameMapping, doc, path=path, error=MappingError).root

