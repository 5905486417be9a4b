"""The MindSpore dtypes, as msprobe-core asks about them (``FrameworkSpec.dtypes``), and the PyTorch
spellings a MindTorch dump gives the same dtypes.

The one table of this plugin's dtype knowledge: the spec, the cross-framework dtype gate of the
mapping options (:func:`msprobe_mindspore.mapping.dtype_kind`) and the canonical names
(:func:`msprobe_mindspore.plugin.canonical_dtype`) read it.
"""

from __future__ import annotations

from msprobe_core.plugin import DtypeInfo

#: unit roundoff of the float dtypes, by canonical name
_EPS = {"float16": 2.0**-10, "float32": 2.0**-23, "float64": 2.0**-52, "bfloat16": 2.0**-7}
_BITS = (8, 16, 32, 64)


def _info(canonical: str, family: str) -> DtypeInfo:
    # the bfloat16 .npy files msprobe writes hold float32
    return DtypeInfo(canonical, family, "float32" if canonical == "bfloat16" else None, _EPS.get(canonical, 0.0))


#: MindSpore's names (``str(mindspore.float32)`` is ``Float32``)
MINDSPORE_DTYPES: dict[str, DtypeInfo] = {
    **{f"Int{b}": _info(f"int{b}", "int") for b in _BITS},
    **{f"UInt{b}": _info(f"uint{b}", "int") for b in _BITS},
    "Float16": _info("float16", "float"),
    "Float32": _info("float32", "float"),
    "Float64": _info("float64", "float"),
    "BFloat16": _info("bfloat16", "float"),
    "Bool": _info("bool", "bool"),
    "Complex64": _info("complex64", "complex"),
    "Complex128": _info("complex128", "complex"),
}
#: the PyTorch names of the same dtypes (MindTorch dumps, and the golden side of a cross-framework gate)
TORCH_SPELLED: dict[str, DtypeInfo] = {
    **{f"torch.{s}int{b}": _info(f"{s}int{b}", "int") for s in ("", "u") for b in _BITS},
    **{f"torch.{name}": _info(name, "float") for name in ("float16", "float32", "float64", "bfloat16")},
    "torch.bool": _info("bool", "bool"),
    "torch.complex64": _info("complex64", "complex"),
    "torch.complex128": _info("complex128", "complex"),
}
#: every dtype name a MindSpore or MindTorch dump may give a tensor
DTYPES: dict[str, DtypeInfo] = {**MINDSPORE_DTYPES, **TORCH_SPELLED}

#: The float dtypes msprobe's same-framework dtype gate lets pair with each other.
MINDSPORE_FLOATS = frozenset(n for n, i in MINDSPORE_DTYPES.items() if i.family == "float")
#: The same group of a PyTorch-spelled dump.
TORCH_FLOATS = frozenset(n for n, i in TORCH_SPELLED.items() if i.family == "float")
