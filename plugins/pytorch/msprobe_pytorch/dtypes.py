"""The PyTorch dtypes, as msprobe-core asks about them (``FrameworkSpec.dtypes``).

Names are those ``str(tensor.dtype)`` gives and the dumps record (``torch.float32``), and the
aliases torch accepts for them (``torch.float``, ``torch.long``…). The reader widens bfloat16
and the 8-bit floats to float32 (msprobe casts them before ``.numpy()``).
"""

from __future__ import annotations

from msprobe_core.plugin import DtypeInfo

#: unit roundoff of the float dtypes
_EPS = {
    "float64": 2.0**-52,
    "float32": 2.0**-23,
    "float16": 2.0**-10,
    "bfloat16": 2.0**-7,
    "float8_e4m3fn": 2.0**-3,
    "float8_e4m3fnuz": 2.0**-3,
    "float8_e5m2": 2.0**-2,
    "float8_e5m2fnuz": 2.0**-2,
}
#: floats the reader hands over as float32
_WIDENED = frozenset({"bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu"})
_FAMILIES = {
    **dict.fromkeys((*_EPS, "float8_e8m0fnu"), "float"),
    **dict.fromkeys((f"{s}int{b}" for s in ("", "u") for b in (8, 16, 32, 64)), "int"),
    "bool": "bool",
    **dict.fromkeys(("complex32", "complex64", "complex128"), "complex"),
}
#: other names torch gives some dtypes
_ALIASES = {
    "float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32",
    "short": "int16", "cfloat": "complex64", "cdouble": "complex128", "chalf": "complex32",
}


def _info(name: str) -> DtypeInfo:
    return DtypeInfo(name, _FAMILIES[name], "float32" if name in _WIDENED else None, _EPS.get(name, 0.0))


#: every torch tensor dtype by its dumped name
TORCH_DTYPES: dict[str, DtypeInfo] = {
    **{f"torch.{name}": _info(name) for name in _FAMILIES},
    **{f"torch.{alias}": _info(name) for alias, name in _ALIASES.items()},
}
#: the float dtypes msprobe's same-framework dtype gate lets pair with each other
TORCH_FLOATS = frozenset(f"torch.{name}" for name in ("float16", "float32", "float64", "bfloat16"))
