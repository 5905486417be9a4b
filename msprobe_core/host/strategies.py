"""How a job's stages may run besides whole tables (``msprobe_register_strategies``), and the index a loader gives
to be compared chunk by chunk (issue 33: the chunked strategy, a default plugin, open to third-party loaders).

A strategy is asked at each stage boundary of a job (:class:`Strategy`); a loader opts in to the chunked strategy
by returning a :class:`DumpIndex` from ``msprobe_load_dump`` when its ``index`` argument is not ``None``
(``docs/plugins.md``, "Being compared chunk by chunk"). Plugins import every name from ``msprobe_core.plugin``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..model import CompareOptions, DumpTable
    from .registry import PluginHost
    from .specs import CompareJob

class WholeTablesNeeded(Exception):
    """Raised by a :class:`Strategy`'s ``match`` or ``finish``, before any result file exists, when it cannot take
    the job: the core goes on from the match stage on whole tables (the reason in the message, on the debug log)."""


class Strategy(Protocol):
    """How a job's stages run, asked by the core's one orchestration of a job at each stage boundary.

    ``name`` is said on the debug log; ``index`` is what the load stage asks of the loader (``None``: tables;
    ``True``/``False``: a :class:`DumpIndex` where the loader gives one, backward calls renumbered or not).
    :meth:`match` and :meth:`finish` may raise :class:`WholeTablesNeeded` before any result file exists.
    """

    name: str

    @property
    def index(self) -> bool | None:
        """What the load stage asks of the loader (see the class)."""

    def match(self, target: Any, golden: Any, options: CompareOptions, host: PluginHost) -> Any:
        """The match stage on what the load gave (``None``: nothing matched; the run says so on the console)."""

    def finish(self, matched: Any, job: CompareJob, options: CompareOptions, timestamp: str | None,
               host: PluginHost, run: Any) -> Any:
        """Metrics, verdicts and the write (``timestamp`` ``None``: build the table, write nothing); returns the
        job's ``Written`` (its table or ``None``, its files, its summary partial)."""


@dataclass(frozen=True)
class StrategySpec:
    """A way to run a big job's stages (``msprobe_register_strategies``), besides the core's whole tables.

    ``choose(job, options, host, on_worker) -> Strategy | None`` is asked, in ascending ``order``, for every job
    that writes its result and whose larger dump file is at least the size from which the core offers it
    (``MSPROBE_STREAM_MIN_BYTES`` for a serial run's job, ``MSPROBE_RANK_STREAM_MIN_BYTES`` on a pool worker);
    the first strategy returned runs the job, none: whole tables.

    ``tail(target, golden, match, options, build, directory)``, optional, lends the whole tables a second process
    for a big statistics result whose writer takes CSV rows spelled elsewhere (``WriterSpec.accepts_csv_tail``,
    one file) and whose metric set builds a part as the whole does: it returns a tail spelling the rows from
    ``tail.start`` on (``build(target, golden, part)`` builds them) into ``tail.side`` under ``directory``, which
    the writer appends when ``tail.finish()`` is true (``close()``: stop, remove the side file); ``None``: every
    row is built here. The first spec's that has one is asked (the default plugin ``chunked``'s forks a child).
    """

    name: str
    choose: Callable[[CompareJob, CompareOptions, PluginHost, bool], Strategy | None]
    order: int = 100
    plugin: str = ""
    tail: Callable[..., Any] | None = None


@dataclass(frozen=True)
class FileIdentity:
    """What says that a file is still the one indexed: size, modification time, inode and device."""

    size: int
    mtime_ns: int
    inode: int
    device: int

    @classmethod
    def of(cls, st: Any) -> FileIdentity:
        """The identity of a file from its ``os.stat_result``."""
        return cls(st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


class EntryReader(Protocol):
    """What :meth:`DumpIndex.open_reader` gives: a context manager reading runs of entries into tables."""

    def __enter__(self) -> EntryReader:
        """Open the file (raise :class:`~msprobe_core.plugin.InputError` when it changed since it was indexed)."""

    def __exit__(self, *exc: object) -> None:
        """Close the file."""

    def read(self, runs: Sequence[tuple[int, int]]) -> DumpTable:
        """The table of the entries of ``runs`` (``(first, stop)`` entry numbers, ascending), in that order, their
        rows numbered from 0: the rows the whole table has for those entries, ``apis`` and ``row_api`` included."""


@dataclass
class DumpIndex:
    """The index of one dump (pass 1 of a chunked compare): where each entry (API) is, what matching needs, no rows.

    A loader opts in to the chunked strategy by returning one from ``msprobe_load_dump`` when the ``index``
    argument is not ``None`` (see ``docs/plugins.md``, "Being compared chunk by chunk"); ``index`` says whether the
    compare keys are backward-renumbered. Per entry: ``offsets`` (where the loader finds it again; the built-in
    loader's file offsets, one more element), ``key_hash`` (of the entry's key), ``head`` (the hash state of the
    compare head: the key, or with ``renumbered`` the renumbered key), ``rank`` (the backward rank, -1: not
    renumbered), ``n_rows``; ``first_row`` is their running sum (one more element: the row count). Per row:
    ``suffix`` (id into ``suffixes``: the name after the key, or ``\\x01`` + the whole compare key), ``dtype`` (0:
    ``None``, else id + 1 into ``dtypes``), ``flags`` (bit k: statistic k (Max, Min, Mean, Norm) is an int or a
    float; bit k + 4: a float). ``reader(index)``: an :class:`EntryReader` of the entries (pass 2); ``whole(index)``:
    the whole table (the fallback to whole tables). Both are pickled with the index: give module-level functions
    or classes. :func:`~msprobe_core.plugin.index_table` makes one from a table a loader has read.
    """

    source: Path
    kind: str
    task: str
    mode: str
    framework: str
    level: str | None
    identity: FileIdentity
    renumbered: bool
    offsets: Any
    key_hash: Any
    head: Any
    rank: Any
    n_rows: Any
    first_row: Any
    suffix: Any
    dtype: Any
    flags: Any
    suffixes: list[bytes]
    dtypes: list[str | None]
    tensor_dir: Path | None = None
    stack: Any = None  # the target's stack once attached (records of read_stack_records, or the dict)
    #: the scanned table's :attr:`~msprobe_core.model.DumpTable.unrecognised` and ``dialects``
    unrecognised: list[dict[str, Any]] = field(default_factory=list)
    dialects: list[str] = field(default_factory=list)
    #: whether two rows have one compare-key hash, once :meth:`repeats_a_row` has looked (``None``: not yet)
    repeated_rows: bool | None = None
    reader: Callable[[DumpIndex], EntryReader] | None = None
    whole: Callable[[DumpIndex], DumpTable] | None = None
    #: the two-process load sends it pickled, whole
    pickled_whole = True

    def __len__(self) -> int:
        return len(self.suffix)

    @property
    def n_apis(self) -> int:
        """The number of entries."""
        return len(self.n_rows)

    def row_hashes(self, start: int = 0, stop: int | None = None) -> Any:
        """The compare-key hash of every row of entries ``start:stop`` (a uint64 numpy array)."""
        import numpy as np

        from .._dumpscan import row_hashes

        stop = self.n_apis if stop is None else stop
        r0, r1 = int(self.first_row[start]), int(self.first_row[stop])
        suffix = np.ascontiguousarray(self.suffix[r0:r1], dtype=np.uint32)  # the scanner's width (kept narrower)
        raw = row_hashes(np.ascontiguousarray(self.head[start:stop], dtype=np.uint64),
                         np.ascontiguousarray(self.n_rows[start:stop], dtype=np.int32), suffix, self.suffixes)
        return np.frombuffer(raw, dtype=np.uint64)

    def all_row_hashes(self) -> Any:
        """:meth:`row_hashes` of every row, computed :data:`INDEX_STEP` entries at a time into one array."""
        import numpy as np

        out = np.empty(len(self), dtype=np.uint64)
        for a0 in range(0, self.n_apis, INDEX_STEP):
            a1 = min(a0 + INDEX_STEP, self.n_apis)
            out[int(self.first_row[a0]): int(self.first_row[a1])] = self.row_hashes(a0, a1)
        return out

    def repeats_a_row(self) -> bool:
        """Whether two rows have one compare-key hash (looked at once, then kept in :attr:`repeated_rows`)."""
        if self.repeated_rows is None:
            hashes = self.all_row_hashes()
            hashes.sort()
            self.repeated_rows = any_repeat(hashes)
        return self.repeated_rows

    def api_of_rows(self, rows: Any) -> Any:
        """The entry of each row number of ``rows``."""
        import numpy as np

        return np.searchsorted(self.first_row, rows, side="right") - 1

    def same_file(self) -> bool:
        """Whether the file is still the one indexed (size, mtime, inode, device)."""
        try:
            return FileIdentity.of(self.source.stat()) == self.identity
        except OSError:
            return False

    @staticmethod
    def hashes_available() -> bool:
        """Whether row hashes can be computed here (the compiled extension ``msprobe_core._dumpscan`` is built):
        without it no index is matched and every compare runs on whole tables."""
        try:
            from .. import _dumpscan  # noqa: F401
        except ImportError:
            return False
        return True

    def open_reader(self) -> EntryReader:
        """A reader of this index's entries (pass 2), from the loader's ``reader``."""
        if self.reader is None:
            raise WholeTablesNeeded(f"{self.source}: its loader gives no reader of entries")
        return self.reader(self)

    def whole_table(self) -> DumpTable:
        """The whole table of the indexed dump, from the loader's ``whole`` (what a fallback to whole tables reads)."""
        if self.whole is None:
            raise WholeTablesNeeded(f"{self.source}: its loader gives no whole table")
        table = self.whole(self)
        table.tensor_dir = self.tensor_dir
        return table


#: entries (or elements) whose row hashes are computed or compared at a time: the temporaries stay small
INDEX_STEP = 1 << 18


def any_repeat(ordered: Any) -> bool:
    """Whether a sorted array holds a value twice (compared :data:`INDEX_STEP` elements at a time)."""
    return any(bool((ordered[i + 1: i + INDEX_STEP + 1] == ordered[i: i + INDEX_STEP][: len(ordered) - i - 1]).any())
               for i in range(0, max(len(ordered) - 1, 0), INDEX_STEP))
