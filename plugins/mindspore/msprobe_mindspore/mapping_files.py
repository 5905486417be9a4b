"""What every mapping of :mod:`.mapping` shares: the row protocol, the keys that never match, the yaml readers,
and the dtype gate of cross-framework pairs (``compare-core.md`` §4.1.4)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Protocol

from msprobe_core.plugin import MappingError

from .dtypes import DTYPES, MINDSPORE_FLOATS, TORCH_FLOATS

NA_KEY = "N/A"
"""Compare key (and bench name) meaning "no counterpart"."""

ABANDONED_SUFFIX = "abandoned"
"""Appended by the user API mapping to keys of rows whose position the entry does not list."""

NpuBase = Literal["raw", "renumbered"]
Warn = Callable[[str], None]

_BUILTIN_TABLE_PATH = Path(__file__).resolve().parent / "data" / "ms_to_pt_api.yaml"


class RowLike(Protocol):
    """What the mappers read from a row (the engine's row type satisfies it)."""

    @property
    def api(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def state(self) -> str: ...

    @property
    def dtype(self) -> str: ...


# --------------------------------------------------------------------------------------------
# YAML reading
# --------------------------------------------------------------------------------------------


def _read_yaml(path: str | Path, what: str) -> Any:
    """Parse one YAML file with the core's hardened reader (no tags, no aliases, bounded size and depth);
    every failure is a :class:`MappingError` naming the file."""
    from msprobe_core.plugin import read_yaml

    return read_yaml(path, what, error=MappingError)


def _scalar_str(value: Any) -> str | None:
    """``str`` for YAML scalars usable as names (str, int); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (str, int)):
        return str(value)
    return None


def _flat_str_mapping(obj: Any, path: str | Path, what: str) -> dict[str, str]:
    """Validate a flat ``{name: name}`` mapping (integer scalars are accepted as text)."""
    if obj is None:
        raise MappingError(f"{what} file is empty; expected a mapping of 'name: name' lines", path=path)
    if not isinstance(obj, dict):
        raise MappingError(
            f"{what} file must be a YAML mapping of 'name: name' lines, got a {type(obj).__name__}",
            path=path,
        )
    out: dict[str, str] = {}
    for key, value in obj.items():
        k = _scalar_str(key)
        v = _scalar_str(value)
        if k is None or not k:
            raise MappingError(f"{what} file: key {key!r} is not a name", path=path)
        if v is None or not v:
            raise MappingError(f"{what} file: value of {k!r} must be a name, got {value!r}", path=path)
        out[k] = v
    return out


# --------------------------------------------------------------------------------------------
# dtype gate
# --------------------------------------------------------------------------------------------

_SAME_FRAMEWORK_FLOAT_GROUPS = (MINDSPORE_FLOATS, TORCH_FLOATS)


def dtype_kind(dtype: str) -> str:
    """Normalise a MindSpore or torch dtype for the cross-framework dtype gate.

    ``Int8..Int64``/``UInt8..UInt64``/``torch.int*``/``torch.uint*`` → ``int``;
    ``Float16/32/64``/``BFloat16``/``torch.float16/32/64``/``torch.bfloat16`` → ``float``;
    ``Bool``/``torch.bool`` → ``bool``; ``Complex64/128``/``torch.complex64/128`` → ``complex``.
    Anything else (``<class 'int'>``, ``torch.Size``, ``""`` of a None item, ``Float8…``) is
    returned unchanged, so it only matches an identical string.
    """
    info = DTYPES.get(dtype)
    return info.family if info is not None else dtype


def dtypes_match(npu_dtype: str, bench_dtype: str, *, cross_framework: bool) -> bool:
    """The dtype gate of compare-core §4.1.4: may these two rows be paired?

    Equal strings pass, as do two members of the same framework's float group; with
    ``cross_framework`` both are first normalised by :func:`dtype_kind` (so ``Int32`` pairs with
    ``torch.int64`` and ``Float32`` with ``torch.bfloat16``). Not applied with data mapping.
    """
    if cross_framework:
        npu_dtype, bench_dtype = dtype_kind(npu_dtype), dtype_kind(bench_dtype)
    if npu_dtype == bench_dtype:
        return True
    return any(npu_dtype in g and bench_dtype in g for g in _SAME_FRAMEWORK_FLOAT_GROUPS)


def mapping_precedence(
    *, api_mapping: bool, cell_mapping: bool, data_mapping: bool, layer_mapping: bool
) -> Literal["api", "cell", "data", "none"]:
    """Which mapper builds the NPU keys (compare-modes §1.3): ``-am`` > ``-cm`` > ``-dm``/``-lm``.

    ``-lm`` produces a data mapping, so it reports ``"data"``. Whenever ``-dm`` or ``-lm`` is given
    (even if ``-am``/``-cm`` wins the keys) the join is the data-mapping left join with no dtype
    gate; the caller decides that separately.
    """
    if api_mapping:
        return "api"
    if cell_mapping:
        return "cell"
    if data_mapping or layer_mapping:
        return "data"
    return "none"
