"""Small synthetic msprobe dumps for unit tests (real files on disk, written like the dumper writes them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def tensor(dtype: str = "torch.float32", shape=(2, 3), mx=1.0, mn=-1.0, mean=0.1, norm=2.0, **extra: Any) -> dict:
    """A statistics-mode tensor leaf."""
    leaf = {"type": "torch.Tensor", "dtype": dtype, "shape": list(shape), "Max": mx, "Min": mn, "Mean": mean, "Norm": norm,
            "requires_grad": False}
    leaf.update(extra)
    return leaf


def api(inputs: list | None = None, outputs: list | None = None, kwargs: dict | None = None, **extra: Any) -> dict:
    entry: dict[str, Any] = {"input_args": inputs or [], "input_kwargs": kwargs or {}, "output": outputs or []}
    entry.update(extra)
    return entry


def write_dump(directory: Path, data: dict, *, task: str = "statistics", framework: str | None = "pytorch",
               level: str = "L1", stack: dict | None = None, name: str = "dump.json") -> Path:
    """Write ``dump.json`` (and ``stack.json``) into ``directory``; returns the dump.json path."""
    directory.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {"task": task, "level": level, "dump_data_dir": None, "data": data}
    if framework is not None:
        doc["framework"] = framework
    path = directory / name
    path.write_text(json.dumps(doc, allow_nan=True))
    if stack is not None:
        (directory / "stack.json").write_text(json.dumps(stack))
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    import csv

    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def only_result(out_dir: Path, suffix: str = ".csv") -> Path:
    """The one result file of ``suffix`` in ``out_dir`` (the next dump's config beside it is not a result)."""
    files = [p for p in out_dir.rglob(f"*{suffix}") if not p.name.startswith("next_dump_config_")]
    assert len(files) == 1, files
    return files[0]


#: Cells msprobe computes with a BLAS sum (OpenBLAS ``dot``/``nrm2``): its kernels add in another order on another
#: CPU (AVX2 against AVX-512), so msprobe's own text of these cells differs in the last digits between machines.
BLAS_SUMMED = ("Cosine", "EucDist", "NPU l2norm", "Bench l2norm", "L2norm diff")
#: how far two such texts may lie apart: a few float32 units in the last place (norms of float32 data are summed
#: in float32); float64 sums differ by far less
BLAS_REL = 4 * 2.0**-24


def same_text_or_blas_rounding(column: str, ours: str, theirs: str) -> bool:
    """Whether our cell spells msprobe's exactly, or, for a BLAS-summed column, is the same number up to the
    order in which this machine's BLAS adds (both texts numbers within :data:`BLAS_REL`)."""
    if ours == theirs:
        return True
    if column not in BLAS_SUMMED:
        return False
    try:
        a, b = float(ours), float(theirs)
    except ValueError:
        return False
    return abs(a - b) <= BLAS_REL * max(abs(a), abs(b))
