"""``-dm data_mapping.yaml``: an explicit target-row → golden-row name mapping."""

from __future__ import annotations

from pathlib import Path

from .errors import MappingError


def load_yaml_file(path: Path, what: str) -> object:
    """Parse a YAML file safely or raise :class:`MappingError` naming the file."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise MappingError(f"{what} file does not exist", path=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MappingError(f"cannot read {what} file ({exc})", path=path) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        raise MappingError(f"malformed YAML{where}: {getattr(exc, 'problem', exc)}", path=path) from None


def load_data_mapping(path: Path) -> dict[str, str]:
    """``{target_row_name: golden_row_name}`` from a data-mapping YAML."""
    doc = load_yaml_file(path, "data mapping")
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise MappingError(f"data mapping must be a mapping of names, got {type(doc).__name__}", path=path)
    out: dict[str, str] = {}
    for k, v in doc.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise MappingError(f"data mapping entry {k!r}: {v!r} must map a name to a name", path=path)
        out[k] = v
    return out
