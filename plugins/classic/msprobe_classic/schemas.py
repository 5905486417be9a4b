"""The classic interface's ``compare.json``, as a pydantic model (checked with ``msprobe_core.plugin.validate``).

pydantic is imported only when a ``compare.json`` is read (:func:`msprobe_classic.run` imports this module
then), as the core imports its own models only when used.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, StrictStr


def _non_empty(value: object) -> object:
    if isinstance(value, str) and not value.strip():
        raise ValueError("must not be empty")
    return value


NonEmptyStr = Annotated[StrictStr, BeforeValidator(_non_empty)]


class CompareJson(BaseModel):
    """``compare.json`` of the classic ``msprobe -f FW compare -i compare.json`` interface.

    Unknown keys are ignored (as msprobe does). ``rank_id``/``step_id`` select the
    kernel-dump form; ``common`` the MindSpore common-dir form.
    """

    model_config = ConfigDict(extra="ignore")

    npu_path: NonEmptyStr
    bench_path: NonEmptyStr
    stack_path: NonEmptyStr | None = None
    is_print_compare_log: StrictBool = True
    rank_id: list[Annotated[StrictInt, Field(ge=0)]] | None = None
    step_id: list[Annotated[StrictInt, Field(ge=0)]] | None = None
    common: StrictBool | None = None
