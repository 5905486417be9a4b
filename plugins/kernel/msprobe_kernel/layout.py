"""Find the kernel dump files of a MindSpore static-graph (GRAPH_MODE) dump.

Two producers write the same layout, and both are handled here:

* msprobe's level-L2 kernel dump (``kernel_kbyk_dump.json`` at the root), and
* MindSpore's own e2e dump (``rank_N/.dump_metadata/`` present).

Both look like::

    <root>/rank_<r>/<net_name>/<graph_id>/<iteration>/<file>.npy      (tensor dumps)
    <root>/rank_<r>/<net_name>/<graph_id>/<iteration>/statistic.csv  (statistics dumps)
    <root>/rank_<r>/{execution_order,graphs,.dump_metadata}/...     (ignored)

and a tensor file is named::

    <OpType>.<op_name>.<task_id>.<stream_id>.<timestamp>.<input|output>[.<k>...].<slot>.<format>[.<dtype>].npy

msprobe 26.2.0 finds the rank and the iteration from the *absolute* directory
path and parses file names with a regex applied to the absolute file path, so
a ``.`` anywhere in a directory name (or in an op name) silently drops files.
Here directory names never reach the file-name parser, op names may contain
dots, and names that cannot be parsed are skipped with a warning.
"""

from __future__ import annotations

import csv
import logging
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from msprobe_core.plugin import InputError, UsageError

from .roots import _RANK_DIR, KBYK_CONFIG, is_kernel_dump_root  # noqa: F401 - the layout's names, as before

logger = logging.getLogger("msprobe_kernel")

NPY_SUFFIX = ".npy"
STATISTIC_CSV = "statistic.csv"
MAPPING_CSV = "mapping.csv"

MODE_NPY = "NPY_MODE"
MODE_STATISTIC = "STATISTIC_MODE"

_IO_TOKENS = ("input", "output")
_INT = re.compile(r"^\d+$")


@dataclass(frozen=True)
class KernelFileName:
    """The parts of one kernel tensor file name.

    ``io`` is ``input`` or ``output``, followed by ``.k`` for every extra index
    level MindSpore adds for nested outputs (msprobe keeps those in the same
    field). ``dtype`` is ``None`` for MindSpore versions that do not write it.
    """

    op_type: str
    op_name: str
    task_id: str
    stream_id: str
    timestamp: int
    io: str
    slot: str
    format: str
    dtype: str | None = None

    @property
    def compare_key(self) -> str:
        """The match key: ``op_name.task_id.io.slot`` (op type, stream and time are ignored)."""
        return f"{self.op_name}.{self.task_id}.{self.io}.{self.slot}"


def parse_kernel_file_name(name: str) -> KernelFileName | None:
    """Parse a kernel dump file name (a base name, not a path); ``None`` if it is not one.

    The op name is everything between the op type and the three integer fields
    (task id, stream id, timestamp) that precede the ``input``/``output`` token,
    so op names with dots parse correctly. When ``input``/``output`` occurs more
    than once, the right-most position that yields a complete name wins.
    """
    if not name.endswith(NPY_SUFFIX) or "/" in name or os.sep in name:
        return None
    tokens = name[: -len(NPY_SUFFIX)].split(".")
    if any(t == "" for t in tokens):
        return None
    for i in range(len(tokens) - 2, 4, -1):
        if tokens[i] not in _IO_TOKENS:
            continue
        parsed = _parse_at(tokens, i)
        if parsed is not None:
            return parsed
    return None


def _parse_at(tokens: list[str], i: int) -> KernelFileName | None:
    """Try to read ``tokens`` with the io token at position ``i``."""
    head, tail = tokens[:i], tokens[i + 1 :]
    # head: op_type, op_name (>= 1 token), task_id, stream_id, timestamp
    if len(head) < 5 or not all(_INT.match(t) for t in head[-3:]):
        return None
    # tail: k... , slot (integers), format, [dtype]
    n_int = 0
    while n_int < len(tail) and _INT.match(tail[n_int]):
        n_int += 1
    rest = tail[n_int:]
    if n_int < 1 or len(rest) not in (1, 2) or any(_INT.match(t) for t in rest):
        return None
    io = ".".join([tokens[i], *tail[: n_int - 1]])
    return KernelFileName(
        op_type=head[0],
        op_name=".".join(head[1:-3]),
        task_id=head[-3],
        stream_id=head[-2],
        timestamp=int(head[-1]),
        io=io,
        slot=tail[n_int - 1],
        format=rest[0],
        dtype=rest[1] if len(rest) == 2 else None,
    )


def parse_id_list(value: str | Iterable[int] | None, what: str = "rank") -> list[int]:
    """Parse a ``--rank``/``--step`` value into a list of ids; an empty list means "all".

    ``None`` (option absent), ``""`` (option given without a value) and
    whitespace-only values all mean every id. Items are comma separated and
    whitespace stripped; empty items are ignored. Non-integer or negative items
    raise :class:`UsageError` (msprobe turns them into ``-1`` and silently
    compares nothing).
    """
    if value is None:
        return []
    if not isinstance(value, str):
        ids = [int(v) for v in value]
        if any(v < 0 for v in ids):
            raise UsageError(f"--{what} ids must be non-negative integers, got {ids}")
        return sorted(set(ids))
    ids: set[int] = set()
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        if not _INT.match(item):
            raise UsageError(f"--{what} expects comma-separated non-negative integers, got {item!r} in {value!r}")
        ids.add(int(item))
    return sorted(ids)


@dataclass
class KernelRecord:
    """One dumped tensor (npy mode) or one statistic.csv row (statistics mode)."""

    name: str  # absolute .npy path (npy mode) or the compare key (statistics mode)
    compare_key: str
    timestamp: int
    stats: dict[str, object] = field(default_factory=dict)
    csv_file: str = ""


@dataclass
class DumpDir:
    """A directory that directly holds kernel data of one (rank, step)."""

    path: Path  # absolute, not resolved (names are shown as msprobe shows them)
    rank: int
    step: int
    graph: str | None = None


def rank_step_of(dir_path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """Rank and step of a data directory from its path, as msprobe reads them; ``None`` if absent.

    Layout ``.../rank_<r>/<net>/<graph>/<step>``: the step is the directory's
    own name, the rank comes from the component four from the end. Without a
    ``rank_<r>`` component there, msprobe's fallback is kept: a bare integer
    four (else three) components from the end. Only these components are
    inspected, so dots or a ``rank_`` elsewhere in the path do not matter
    (msprobe takes the KBK branch when ``rank_`` occurs *anywhere* in the path).
    """
    parts = Path(os.path.abspath(dir_path)).parts
    if not parts or not _INT.match(parts[-1]):
        return None
    step = int(parts[-1])
    if len(parts) >= 4:
        m = _RANK_DIR.match(parts[-4])
        if m:
            return int(m.group(1)), step
    for depth in (4, 3):
        if len(parts) >= depth and _INT.match(parts[-depth]):
            return int(parts[-depth]), step
    return None


def find_dump_dirs(root: str | os.PathLike[str]) -> list[DumpDir]:
    """All directories below ``root`` that directly hold ``*.npy`` files or a ``statistic.csv``.

    Hidden directories (``.dump_metadata``) are skipped; directories whose rank
    or step cannot be read from the path are skipped with a warning.
    Symbolic links to directories are not followed.
    """
    base = Path(os.path.abspath(root))
    if not base.is_dir():
        raise InputError("kernel dump root is not a directory", path=base)
    found: list[DumpDir] = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        if not any(f.endswith(NPY_SUFFIX) for f in filenames) and STATISTIC_CSV not in filenames:
            continue
        path = Path(dirpath)
        rank_step = rank_step_of(path)
        if rank_step is None:
            logger.warning("Skipped %s: no rank_<r>/<net>/<graph>/<step> in its path.", path)
            continue
        graph = path.parts[-2] if len(path.parts) >= 2 else None
        found.append(DumpDir(path=path, rank=rank_step[0], step=rank_step[1], graph=graph))
    return found


def group_dump_dirs(
    root: str | os.PathLike[str], ranks: Sequence[int] = (), steps: Sequence[int] = ()
) -> dict[tuple[int, int], list[DumpDir]]:
    """Data directories of ``root`` keyed by (rank, step), filtered by ``ranks``/``steps`` (empty = all)."""
    groups: dict[tuple[int, int], list[DumpDir]] = {}
    for d in find_dump_dirs(root):
        if ranks and d.rank not in ranks:
            continue
        if steps and d.step not in steps:
            continue
        groups.setdefault((d.rank, d.step), []).append(d)
    return dict(sorted(groups.items()))


def _read_mapping(path: Path) -> dict[str, str]:
    """``mapping.csv`` (short file name -> original name) of a dump directory, if any."""
    mapping: dict[str, str] = {}
    mfile = path / MAPPING_CSV
    if not mfile.is_file():
        return mapping
    with mfile.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    for row in rows[1:]:
        if len(row) >= 2 and row[0] and row[1]:
            mapping[os.path.basename(row[0])] = os.path.basename(row[1])
    return mapping


def dir_mode(path: Path) -> str | None:
    """``NPY_MODE`` if the directory holds ``.npy`` files, else ``STATISTIC_MODE`` if it has a statistic.csv."""
    try:
        names = os.listdir(path)
    except OSError:
        return None
    if any(n.endswith(NPY_SUFFIX) for n in names):
        return MODE_NPY
    if STATISTIC_CSV in names:
        return MODE_STATISTIC
    return None


def read_npy_records(path: Path) -> list[KernelRecord]:
    """One record per parsable ``.npy`` file of a data directory (malformed names warned about and skipped).

    A ``mapping.csv`` in the directory (MindSpore writes it when names are too
    long for the file system) maps a file's short name to the name that is parsed;
    msprobe reads it too but never applies it (it looks up absolute paths).
    """
    mapping = _read_mapping(path)
    records: list[KernelRecord] = []
    for fname in sorted(os.listdir(path)):
        if not fname.endswith(NPY_SUFFIX):
            continue
        parsed = parse_kernel_file_name(mapping.get(fname, fname))
        if parsed is None:
            logger.warning("Skipped %s: not a kernel dump file name.", path / fname)
            continue
        records.append(KernelRecord(name=str(path / fname), compare_key=parsed.compare_key, timestamp=parsed.timestamp))
    return records


STAT_HEADERS = ("Data Type", "Shape", "Max Value", "Min Value", "Avg Value", "L2Norm Value")
_STAT_MIN_COLUMNS = 13


def read_statistic_records(path: Path) -> list[KernelRecord]:
    """One record per row of the directory's ``statistic.csv``.

    Key = ``Op Name.Task ID.IO.Slot`` (columns 1, 2, 5, 6), timestamp = column 4,
    the value fields are looked up by header name (missing header -> warning,
    value ``None``). Rows with fewer than 13 columns raise :class:`InputError`.
    """
    sfile = path / STATISTIC_CSV
    with sfile.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        raise InputError("empty statistic.csv", path=sfile)
    header = rows[0]
    index = {h: (header.index(h) if h in header else None) for h in STAT_HEADERS}
    for h, i in index.items():
        if i is None:
            logger.warning("%s has no column %s.", sfile, h)
    records: list[KernelRecord] = []
    for lineno, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) < _STAT_MIN_COLUMNS:
            raise InputError(f"line {lineno} has {len(row)} columns, expected at least {_STAT_MIN_COLUMNS}", path=sfile)
        key = f"{row[1]}.{row[2]}.{row[5]}.{row[6]}"
        try:
            timestamp = int(row[4])
        except ValueError as exc:
            raise InputError(f"line {lineno}: timestamp {row[4]!r} is not an integer", path=sfile) from exc
        stats = {h: (row[i] if i is not None and i < len(row) else None) for h, i in index.items()}
        records.append(KernelRecord(name=key, compare_key=key, timestamp=timestamp, stats=stats, csv_file=str(sfile)))
    return records
