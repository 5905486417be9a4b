"""The pydantic models of document headers and small config files, and :func:`validate` that runs them.

Kept apart from :mod:`msprobe_core.files.validation` so that pydantic (~0.15 s to import) is
loaded only when a model is used: a compare of well-formed dumps checks their headers
with :func:`msprobe_core.files.validation.header_fields` and never needs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    RootModel,
    StrictStr,
    ValidationError,
    field_validator,
)

from ..errors import InputError, MsprobeError
from .validation import describe, json_path

__all__ = [
    "DumpHeader",
    "NameMapping",
    "pydantic_message",
    "validate",
]

M = TypeVar("M", bound=BaseModel)


# --------------------------------------------------------------------------- pydantic plumbing
#: problems a message lists before it only counts the rest (a document can be wrong everywhere)
LISTED_PROBLEMS = 8


def _where(loc: Sequence[object]) -> str:
    return "at the top level" if not loc else f"in {json_path(loc)}"


def pydantic_message(exc: ValidationError, prefix: Sequence[object] = ()) -> str:
    """One line for a pydantic error: every problem in plain words with its JSON path (``the top-level keys
    'task' and 'data' are missing``), past :data:`LISTED_PROBLEMS` only counted."""
    errors = exc.errors(include_url=False)
    if not errors:
        return "invalid content"
    problems: list[str] = []
    missing: dict[tuple[object, ...], list[str]] = {}  # the keys missing in one object, in one phrase
    for error in errors:
        loc = [*prefix, *error.get("loc", ())]
        kind = error.get("type", "")
        if kind == "missing":
            where = tuple(loc[:-1])
            if where not in missing:
                missing[where] = []
                problems.append("")  # its place: filled in once every key missing there is known
            missing[where].append(str(loc[-1]) if loc else "value")
            continue
        msg = error.get("msg", "invalid value").removeprefix("Value error, ")
        given = error.get("input")
        got = "" if kind.startswith("value_error") or kind == "assertion_error" else f" (got {describe(given)})"
        problems.append(f"{json_path(loc)}: {msg[:1].lower()}{msg[1:]}{got}")
    phrases = iter(
        f"key '{names[0]}' is missing {_where(where)}" if len(names) == 1 else
        f"keys {', '.join(repr(n) for n in names[:-1])} and '{names[-1]}' are missing {_where(where)}"
        for where, names in missing.items()
    )
    problems = [p or next(phrases) for p in problems]
    text = "; ".join(problems[:LISTED_PROBLEMS])
    if len(problems) > LISTED_PROBLEMS:
        rest = len(problems) - LISTED_PROBLEMS
        text += f" (and {rest} more problem{'s' if rest > 1 else ''})"
    return text.replace("\n", " ")


def validate(
    model: type[M],
    obj: Any,
    *,
    path: object | None,
    error: type[MsprobeError] = InputError,
    prefix: Sequence[object] = (),
) -> M:
    """``model.model_validate(obj)``, or ``error`` naming the file, the JSON path and the problem."""
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise error(pydantic_message(exc, prefix), path=path) from None


# --------------------------------------------------------------------------- dump.json / debug.json header


class DumpHeader(BaseModel):
    """Top level of a ``dump.json``/``debug.json`` (everything except the entries of ``data``).

    ``data`` is only checked to be an object here: its entries (possibly hundreds
    of thousands) are checked by the flattener (``load/flatten.py``).
    """

    model_config = ConfigDict(extra="allow", strict=True)

    task: StrictStr = Field(min_length=1)
    level: StrictStr | None = None
    framework: StrictStr | None = None
    dump_data_dir: StrictStr | None = None
    data: Any

    @field_validator("data", mode="plain")
    @classmethod
    def _data_is_object(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError(f"'data' must be a JSON object, got {describe(value)}")
        return value


# --------------------------------------------------------------------------- the data mapping YAML
def _name_scalar(value: Any) -> Any:
    """YAML scalars usable as names: strings, and integers written without quotes (``5: 0``)."""
    if isinstance(value, bool):
        return value  # rejected by StrictStr below: 'yes'/'no' are not names
    if isinstance(value, int):
        return str(value)
    return value


Name = Annotated[StrictStr, BeforeValidator(_name_scalar), Field(min_length=1)]


class NameMapping(RootModel[dict[Name, Name]]):
    """A flat ``{name: name}`` mapping: ``data_mapping.yaml`` (``-dm``)."""
