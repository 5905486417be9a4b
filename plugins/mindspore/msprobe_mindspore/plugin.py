"""msprobe-core hook implementations for MindSpore dumps (entry point ``mindspore``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msprobe_core import hookimpl
from msprobe_core.plugin import FrameworkSpec, default_canonical

from .dtypes import DTYPES, MINDSPORE_FLOATS
from .mappers import FRAMEWORK, OPTIONS, mapper_specs
from .mixed_dumps import mixed_folders  # asked by every directory compare: lists two directories, imports nothing

if TYPE_CHECKING:
    from msprobe_core.plugin import CompareJob, CompareOptions, MapperSpec, OptionSpec, Register


def canonical_dtype(dtype: str) -> str:
    """Framework-neutral name of a MindSpore dtype (``Float32`` → ``float32``), for cross-framework dtype checks.

    Names outside the table (``mindspore.float32``, ``<class 'int'>``…) keep their
    last dotted component, lower-cased, like the core's default.
    """
    info = DTYPES.get(dtype)
    return info.canonical if info is not None else default_canonical(dtype)


def read_tensor(path: Path) -> Any:
    """Read one ``.npy`` tensor (see :func:`msprobe_mindspore.npy_reader.read_npy`; numpy loads with the first)."""
    from .npy_reader import read_npy

    return read_npy(path)


def write_tensor(path: Path, array: Any) -> None:
    """Write ``array`` as a ``.npy`` file, as the MindSpore dumper does: for test fixtures' dumps."""
    import numpy as np

    np.save(path, np.asarray(array), allow_pickle=False)


#: the statistic parser, once a MindSpore run first asks for it (:mod:`msprobe_mindspore.numparse`)
_PARSER: list[Callable[[str], float | None]] = []


def parse_statistic(text: str) -> float | None:
    """A statistic cell's number as msprobe's MindSpore comparator reads it
    (:func:`msprobe_mindspore.numparse.pandas_precise_xstrtod`, imported by the first MindSpore run that asks)."""
    if not _PARSER:
        from .numparse import pandas_precise_xstrtod

        _PARSER.append(pandas_precise_xstrtod)
    return _PARSER[0](text)


#: Calls whose two tensor operands give the same result in either order, as msprobe's MindSpore dumper
#: names them: ``Tensor``/``Mint``/``Functional`` (mindspore.ops) APIs and the primitives model libraries call
#: (``Primitive.<name>.<Class>``).
COMMUTATIVE_CALLS = frozenset(
    [f"{kind}.{op}" for kind, ops in (
        ("Tensor", ("__add__", "__mul__", "__and__", "__or__", "__xor__", "__eq__", "__ne__", "add", "mul",
                    "maximum", "minimum", "eq", "ne", "equal", "logical_and", "logical_or", "logical_xor")),
        ("Mint", ("add", "mul", "maximum", "minimum", "eq", "ne", "logical_and", "logical_or", "logical_xor")),
        ("Functional", ("add", "mul", "maximum", "minimum", "equal", "ne", "logical_and", "logical_or",
                        "logical_xor")),
    ) for op in ops]
    + [f"Primitive.{name}.{cls}" for name, cls in (
        ("add", "Add"), ("mul", "Mul"), ("maximum", "Maximum"), ("minimum", "Minimum"), ("equal", "Equal"),
        ("not_equal", "NotEqual"), ("logical_and", "LogicalAnd"), ("logical_or", "LogicalOr"),
    )]
)


@hookimpl
def msprobe_register_frameworks(register: Register[FrameworkSpec]) -> None:
    """MindSpore (and MindTorch) dumps; the golden side may be MindSpore or PyTorch."""
    register(
        FrameworkSpec(
            name=FRAMEWORK,
            aliases=("mindtorch",),
            golden_frameworks=("pytorch", "mindspore"),
            float_dtypes=MINDSPORE_FLOATS,
            tensor_suffix=".npy",
            read_tensor=read_tensor,
            write_tensor=write_tensor,
            dtypes=DTYPES,
            commutative_calls=COMMUTATIVE_CALLS,
            parse_statistic=parse_statistic,
        )
    )


@hookimpl(optionalhook=True)  # the default plugin summary's hook: absent with that plugin off
def msprobe_mapping_options(framework: str) -> tuple[tuple[str, str], ...] | None:
    """``-am`` pairs API names and ``-cm`` cell (module) names of a MindSpore or MindTorch dump with PyTorch's (what
    the summary suggests when a cross-framework run paired few rows)."""
    return (("-am", "api"), ("-cm", "module")) if framework in (FRAMEWORK, "mindtorch") else None


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``-am``, ``-cm`` and ``-lm`` (``api_mapping``, ``cell_mapping``, ``layer_mapping`` in Python)."""
    for spec in OPTIONS:
        register(spec)


@hookimpl
def msprobe_register_mappers(register: Register[MapperSpec]) -> None:
    """``-am``, ``-cm`` and ``-lm`` (``-dm`` is the core's ``data-mapping`` mapper)."""
    for spec in mapper_specs():
        register(spec)


@hookimpl
def msprobe_discover_jobs(target: Path, golden: Path, options: CompareOptions) -> list[CompareJob] | None:
    """Two graph/pynative mixed dump roots: one compare per ``<graph|pynative>/<step>`` both have
    (:mod:`msprobe_mindspore.mixed_dumps`); else not ours. Before the default plugins' discoveries and the core's."""
    folders = mixed_folders(target, golden)
    if not folders:
        return None
    from msprobe_core.plugin import option_label, warn_if_symlink

    from .mixed_dumps import mixed_jobs

    for path, side in ((target, "target"), (golden, "golden")):
        warn_if_symlink(path, option_label(side, short=True))
    return mixed_jobs(target, golden, options, folders)
