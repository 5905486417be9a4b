"""msprobe-core hook implementations for MindSpore dumps (entry point ``mindspore``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from msprobe_core import hookimpl
from msprobe_core.registry import FrameworkSpec

from .mappers import FRAMEWORK, OPTIONS, mapper_specs
from .mapping import dtype_kind
from .npy_reader import read_npy
from .numparse import pandas_precise_xstrtod

#: The float dtypes msprobe's same-framework dtype gate lets pair with each other.
MINDSPORE_FLOATS = frozenset({"Float16", "Float32", "Float64", "BFloat16"})

_CANONICAL = {
    **{f"Int{b}": f"int{b}" for b in (8, 16, 32, 64)},
    **{f"UInt{b}": f"uint{b}" for b in (8, 16, 32, 64)},
    "Float16": "float16",
    "Float32": "float32",
    "Float64": "float64",
    "BFloat16": "bfloat16",
    "Bool": "bool",
    "Complex64": "complex64",
    "Complex128": "complex128",
}


def canonical_dtype(dtype: str) -> str:
    """Framework-neutral name of a MindSpore dtype (``Float32`` → ``float32``), for cross-framework dtype checks.

    Names outside the table (``mindspore.float32``, ``<class 'int'>``…) keep their
    last dotted component, lower-cased, like the core's default.
    """
    return _CANONICAL.get(dtype) or dtype.rsplit(".", 1)[-1].lower()


def read_tensor(path: Path) -> Any:
    """Read one ``.npy`` tensor (see :func:`msprobe_mindspore.npy_reader.read_npy`)."""
    array: np.ndarray = read_npy(path)
    return array


@hookimpl
def msprobe_register_frameworks(register: Any) -> None:
    """MindSpore (and MindTorch) dumps; the golden side may be MindSpore or PyTorch."""
    register(
        FrameworkSpec(
            name=FRAMEWORK,
            aliases=("mindtorch",),
            golden_frameworks=("pytorch", "mindspore"),
            float_dtypes=MINDSPORE_FLOATS,
            tensor_suffix=".npy",
            read_tensor=read_tensor,
            dtype_kind=dtype_kind,
            canonical_dtype=canonical_dtype,
            parse_statistic=pandas_precise_xstrtod,
        )
    )


@hookimpl
def msprobe_register_options(register: Any) -> None:
    """``-am``, ``-cm`` and ``-lm`` (``api_mapping``, ``cell_mapping``, ``layer_mapping`` in Python)."""
    for spec in OPTIONS:
        register(spec)


@hookimpl
def msprobe_register_mappers(register: Any) -> None:
    """``-am``, ``-cm`` and ``-lm`` (``-dm`` is the core's ``data-mapping`` mapper)."""
    for spec in mapper_specs():
        register(spec)
