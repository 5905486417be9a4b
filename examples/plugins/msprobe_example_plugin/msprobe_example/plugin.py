"""The example plugin's hook implementations, one per kind of extension:

* ``msprobe_register_options``: two options of ``msprobe compare`` (and keywords of
  ``msprobe_core.compare``) that switch on the metric and the mapper below:
  ``--mean_abs_err`` and ``--rename_target PATTERN=REPLACEMENT``.
* ``msprobe_register_metrics``: an extra tensor-mode column, ``MeanAbsErr`` (the mean
  absolute difference of the two tensors), added to the runs given ``--mean_abs_err``.
* ``msprobe_register_writers``: an output format ``json`` (``--output_format json``):
  the result table as one JSON document, written atomically.
* ``msprobe_load_dump``: a loader for ``dump.json`` files stored gzip-compressed (it
  claims only files that start with the gzip magic bytes; every other file goes on to
  the built-in loader).
* ``msprobe_register_mappers``: a mapper that renames target rows with regular
  expressions before pairing them by name, for the runs given ``--rename_target``.
* ``msprobe_register_commands``: a sub-command, ``msprobe gzip-dump SRC DST``, that
  writes the gzip-compressed copy of a dump file the loader above reads.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from msprobe_core import hookimpl
from msprobe_core.plugin import (
    DUMP_KINDS,
    CompareOptions,
    DumpTable,
    InputError,
    MapperSpec,
    MatchContext,
    MatchResult,
    OptionSpec,
    TensorMetricSpec,
    WriterSpec,
    atomic_path,
    detect_kind,
    flatten_dump,
    join_on_keys,
)

if TYPE_CHECKING:
    import numpy as np

    from msprobe_core.plugin import MetricSpec, Register


def rename_rules(value: object) -> dict[str, str]:
    """``PATTERN=REPLACEMENT`` items (or, from Python, a ``{pattern: replacement}`` dict) as a checked dict.

    Raising ``ValueError`` gives the user one line naming the option (``--rename_target`` or
    ``rename_target``) and the reason.
    """
    if isinstance(value, dict):
        items = list(value.items())
    else:
        items = []
        for item in value:  # type: ignore[attr-defined]
            pattern, sep, replacement = str(item).partition("=")
            if not sep or not pattern:
                raise ValueError(f"{item!r} is not PATTERN=REPLACEMENT")
            items.append((pattern, replacement))
    for pattern, _ in items:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{pattern!r} is not a regular expression ({exc})") from None
    return {str(p): str(r) for p, r in items}


MEAN_ABS_ERR = OptionSpec("mean_abs_err", ("--mean_abs_err",), "Add a MeanAbsErr column (mean |target - golden|) "
                          "to tensor-mode results.", kind="flag", default=False, kinds=DUMP_KINDS)
RENAME_TARGET = OptionSpec("rename_target", ("--rename_target",), "Rename target rows before pairing them by name: "
                           "a regular expression and its replacement (repeatable).", multiple=True,
                           metavar="PATTERN=REPLACEMENT", validate=rename_rules, kinds=DUMP_KINDS)


@hookimpl
def msprobe_register_options(register: Register[OptionSpec]) -> None:
    """``--mean_abs_err`` and ``--rename_target`` (``mean_abs_err=True``, ``rename_target={...}`` in Python)."""
    register(MEAN_ABS_ERR)
    register(RENAME_TARGET)


def mean_abs_err(npu: np.ndarray, bench: np.ndarray) -> float | str:
    """Mean of ``|npu - bench|`` over all elements (``unsupported`` when it cannot be computed).

    msprobe-core calls a tensor metric with both tensors already read and squeezed;
    the built-in checks (empty tensor, shape mismatch, …) have not necessarily run,
    so check what you rely on. Returning a string writes that string into the cell;
    raising makes the cell ``unsupported`` without stopping the run.
    """
    import numpy as np  # here, not at the top: `msprobe --help` loads every plugin and should stay light

    a = np.asarray(npu, dtype=np.float64).reshape(-1)
    b = np.asarray(bench, dtype=np.float64).reshape(-1)
    if a.size == 0 or a.shape != b.shape:
        return "unsupported"
    # inf - inf (two masked -inf scores) is NaN: said in the cell, not as a numpy warning on the user's console
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        value = float(np.mean(np.abs(a - b)))
    return value if math.isfinite(value) else "Nan"


def _metric_asked(options: CompareOptions) -> bool:
    return bool(options.mean_abs_err)


@hookimpl
def msprobe_register_metrics(register: Register[MetricSpec | TensorMetricSpec]) -> None:
    """Add ``MeanAbsErr`` after the six built-in tensor metrics, for the runs given ``--mean_abs_err``
    (a larger value is worse: the summary and the report read the column that way)."""
    register(TensorMetricSpec("MeanAbsErr", mean_abs_err, applies=_metric_asked, worse="higher"))


def _json_value(value: Any) -> Any:
    """A cell as JSON: finite numbers and booleans stay typed, everything else becomes text."""
    import numpy as np

    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if math.isfinite(f) else ("Nan" if f != f else ("inf" if f > 0 else "-inf"))
    if value is None:
        return None
    return str(value)


def write_json(table: Any, path: Path) -> list[Path]:
    """Write ``table`` (a :class:`msprobe_core.plugin.ResultTable`) as JSON; returns the files written.

    ``{"mode": ..., "columns": [...], "rows": [[...], ...]}``. Writers must be
    atomic: write to the temporary path ``atomic_path`` yields, which is renamed to
    ``path`` only when the block completes.
    """
    doc = {
        "mode": table.mode,
        "columns": list(table.columns),
        "rows": [[_json_value(v) for v in row] for row in table.rows()],
    }
    with atomic_path(Path(path)) as tmp:
        tmp.write_text(json.dumps(doc, ensure_ascii=False) + "\n", encoding="utf-8")
    return [Path(path)]


@hookimpl
def msprobe_register_writers(register: Register[WriterSpec]) -> None:
    """Output format ``json`` (file suffix ``.json``)."""
    register(WriterSpec("json", ".json", write_json))


GZIP_MAGIC = b"\x1f\x8b"


@hookimpl
def msprobe_load_dump(path: Path, options: CompareOptions) -> DumpTable | None:
    """Load a gzip-compressed ``dump.json``/``debug.json``; return ``None`` for anything else.

    Loaders are asked in turn (plugins before the built-in one) and the first that
    returns a table wins, so returning ``None`` hands the file on. A file you claim
    but cannot read is an :class:`~msprobe_core.plugin.InputError` (one line for the user).
    """
    if path.is_dir():
        return None
    with open(path, "rb") as fh:
        if fh.read(2) != GZIP_MAGIC:
            return None
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, EOFError, ValueError) as exc:
        raise InputError(f"cannot read gzip-compressed dump: {exc}", path=path) from None
    framework = doc.get("framework") if isinstance(doc, dict) else None
    table = flatten_dump(doc, path, detect_kind(path), framework if isinstance(framework, str) else "")
    table.tensor_dir = path.parent / "dump_tensor_data"  # where tensor-mode files are read from
    return table


def _rename_then_join(ctx: MatchContext) -> MatchResult:
    """Rewrite the target's compare keys with the configured regexes, then pair equal keys."""
    rules = [(re.compile(p), r) for p, r in ctx.options.rename_target.items()]
    keys = []
    for key in ctx.target_keys:
        for pattern, replacement in rules:
            key = pattern.sub(replacement, key)
        keys.append(key)
    return join_on_keys(keys, ctx.golden_keys)


def _rename_asked(options: CompareOptions) -> bool:
    return bool(options.rename_target)


@hookimpl
def msprobe_register_mappers(register: Register[MapperSpec]) -> None:
    """Regex renaming of target rows, when the options ask for it: in the chain after an explicit
    data mapping (``-dm`` wins) and before ``-fm``'s aligner and the exact matcher."""
    register(MapperSpec("example-regex-rename", _rename_then_join, applies=_rename_asked,
                        after=("data-mapping",), before=("fuzzy",)))


@click.command("gzip-dump")
@click.argument("src", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("dst", type=click.Path(dir_okay=False, path_type=Path))
def gzip_dump(src: Path, dst: Path) -> None:
    """Write a gzip-compressed copy of a dump.json (or debug.json) that compare reads as it is.

    DST keeps the dump's file name rule (it must end with dump.json or debug.json) and
    must not exist yet; it is written atomically.
    """
    if dst.exists():
        raise click.UsageError(f"{dst} exists already")
    if detect_kind(dst) != detect_kind(src):
        raise click.UsageError(f"{dst.name} must end with the same dump file name as {src.name}")
    with atomic_path(dst) as tmp, open(src, "rb") as fin, gzip.open(tmp, "wb") as fout:
        while block := fin.read(1 << 20):
            fout.write(block)
    click.echo(f"{dst}: {src.stat().st_size:,} -> {dst.stat().st_size:,} bytes")


@hookimpl
def msprobe_register_commands(register: Register[click.Command]) -> None:
    """``msprobe gzip-dump SRC DST``: a compressed copy of a dump for the loader above."""
    register(gzip_dump)
