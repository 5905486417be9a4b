"""msprobe-core hook implementations for PyTorch dumps."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from msprobe_core import hookimpl
from msprobe_core.plugin import FrameworkSpec

from .dtypes import TORCH_DTYPES, TORCH_FLOATS

if TYPE_CHECKING:
    from msprobe_core.plugin import Register


def read_tensor(path: Path | str) -> Any:
    """Read one ``.pt`` file as a numpy array (bf16/fp8 widened to float32), within the tensor byte cap.

    Inside the tensor stage the array lives in the stage's reusable arena
    (:func:`msprobe_core.plugin.current_arena`), valid until that arena is reset.
    """
    global _READ  # bound on first use: importing the reader at plugin load would slow every start-up
    if _READ is None:
        from msprobe_core.plugin import current_arena, max_tensor_bytes

        from .pt_reader import read_pt

        _READ = (read_pt, max_tensor_bytes, current_arena)
    read_pt, max_tensor_bytes, current_arena = _READ
    return read_pt(path, max_bytes=max_tensor_bytes(), arena=current_arena())


_READ: tuple[Any, Any, Any] | None = None
# the tensor stage may pass the path as a string (a Path per file costs more than the rest of a small read)
read_tensor.accepts_str = True  # type: ignore[attr-defined]


def write_tensor(path: Path, array: Any) -> None:
    """Write ``array`` as a ``.pt`` file ``torch.load`` reads (without torch): for test fixtures' dumps."""
    from .pt_writer import write_pt

    write_pt(path, array)


#: Calls whose two tensor operands give the same result in either order (``residual + h`` = ``h + residual``),
#: as msprobe's PyTorch dumper names them.
COMMUTATIVE_CALLS = frozenset(
    f"{kind}.{op}"
    for kind, ops in (
        ("Tensor", ("__add__", "__mul__", "__and__", "__or__", "__xor__", "__eq__", "__ne__", "add", "mul",
                    "maximum", "minimum", "eq", "ne", "logical_and", "logical_or", "logical_xor")),
        ("Torch", ("add", "mul", "maximum", "minimum", "eq", "ne", "logical_and", "logical_or", "logical_xor")),
    )
    for op in ops
)


@hookimpl
def msprobe_register_frameworks(register: Register[FrameworkSpec]) -> None:
    """PyTorch: the default framework of dumps that do not name one."""
    register(
        FrameworkSpec(
            name="pytorch",
            golden_frameworks=("pytorch",),
            float_dtypes=TORCH_FLOATS,
            tensor_suffix=".pt",
            read_tensor=read_tensor,
            write_tensor=write_tensor,
            dtypes=TORCH_DTYPES,
            commutative_calls=COMMUTATIVE_CALLS,
            is_default=True,
        )
    )
