"""The load stage for one job: both dumps read into tables, checked as a pair, with what goes with them.

The two sides load through the plugins' loaders (``msprobe_load_dump``), at once where a plugin
loads the pair its way (``msprobe_load_pair``: the default plugin ``pair_loading``), else one after the other; the target's ``stack.json`` is attached, tensor directories are checked,
and what either file held that the loader did not understand is accounted for.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..host.specs import CompareJob
from ..host.strategies import DumpIndex
from ..model import MODE_TENSOR, CompareOptions, DumpTable
from .dumpjson import load_stack

if TYPE_CHECKING:
    from ..host.registry import PluginHost

log = logging.getLogger("msprobe")

def check_pair(target: DumpTable, golden: DumpTable) -> None:
    """Refuse pairs that cannot be compared (different file kinds, tasks or dump modes)."""
    if target.kind != golden.kind:
        raise InputError(f"both files must be dump.json or both debug.json: {target.source} vs {golden.source}")
    if target.task != golden.task:
        raise InputError(
            f"dump tasks differ: '{target.task}' in {target.source}, '{golden.task}' in {golden.source}"
        )
    if target.mode != golden.mode:
        raise InputError(
            f"dump modes differ: {target.mode} in {target.source}, {golden.mode} in {golden.source} "
            "(both must be statistics or both md5)"
        )


def load_pair(job: CompareJob, options: CompareOptions, host: PluginHost,
              index: bool | None = None) -> tuple[DumpTable, DumpTable]:
    """Load both dumps of a job and attach what the compare needs (stack, tensor dirs); what the files held that
    the loader did not understand is said and kept on the job (:func:`account_unrecognised`).

    ``index``: not ``None`` for a streamed compare's load, which asks the loader for each dump's
    :class:`~msprobe_core.load.dumpindex.DumpIndex` (the value: whether backward calls are renumbered).
    """
    guess = job.target.parent / "stack.json"
    early: dict[str, Any] = {}
    indexing = index is not None  # the target is indexed: its stack is kept as records, not a dict

    def preload_stack(golden: DumpTable) -> None:
        # while the target loads elsewhere (msprobe_load_pair): read stack.json now; an error is not reported
        # here but where it is read below, in its usual order
        from ..files.validation import is_within

        try:
            if indexing and hasattr(golden, "repeats_a_row"):
                golden.repeats_a_row()  # the join's look at the golden's hashes, while only the golden is held
            if guess.is_file() and not (guess.is_symlink() and not is_within(guess.parent, guess)):
                early["stack"] = read_stack(guess, host) if indexing else load_stack(guess)
        except Exception:  # noqa: BLE001
            early.clear()

    from ..files.validation import dump_file_beside

    target, golden = host.load_pair(lambda path: host.load_dump(path, options, job, index), job.target, job.golden,
                                    preload_stack)
    check_pair(target, golden)
    if target.mode == MODE_TENSOR:
        for table in (target, golden):
            if table.tensor_dir is None or not table.tensor_dir.is_dir():
                raise InputError("tensor dump has no dump_tensor_data directory next to it", path=table.source)
            check_tensor_dir(table)
    stack_file = dump_file_beside(target.source, "stack.json") if target.stack is None else None
    if stack_file is not None:
        target.stack = attach_stack(stack_file, target, early.pop("stack", None) if stack_file == guess else None,
                                    host)
        if isinstance(target.stack, dict) and not isinstance(target, DumpIndex):  # a hierarchy source may keep it
            host.notify("msprobe_stack_read", path=stack_file, stack=target.stack, key_hash=None)
    account_unrecognised(job, target, golden)
    return target, golden


def attach_stack(path: Path, target: Any, early: Any, host: PluginHost) -> Any:
    """The ``stack`` of ``target`` from ``path``: a dict for a table; for an index, what :func:`read_stack` reads.

    ``early``: what :func:`load_pair` read of ``path`` while the target loaded (``None``: nothing).
    """
    if not isinstance(target, DumpIndex):
        return early if isinstance(early, dict) else load_stack(path)
    return read_stack(path, host) if early is None else early


def read_stack(path: Path, host: PluginHost) -> Any:
    """The ``stack.json`` at ``path`` of a target asked for as an index: what a plugin reads of it for the strategy
    that asked (``msprobe_read_index_stack``: the default plugin ``chunked``'s records, without the API names, made
    per entry once matching is done), else ``load_stack``'s dict."""
    stack = host.pm.hook.msprobe_read_index_stack(path=path)
    return load_stack(path) if stack is None else stack


def check_tensor_dir(table: DumpTable) -> None:
    """Refuse a ``dump_tensor_data`` that is a symlink pointing outside its dump directory.

    The dump directory itself may be reached through symlinks (the user named it);
    what lies below it must stay below it (see ``docs/differences.md``).
    """
    from ..files.validation import is_within
    from ..options import dump_paths_label

    if table.tensor_dir is not None and not is_within(table.source.parent, table.tensor_dir):
        raise InputError(
            f"{table.tensor_dir.name} resolves to {table.tensor_dir.resolve()}, outside the dump directory "
            f"{table.source.parent}; refusing to read tensors there (point {dump_paths_label()} at the real location)",
            path=table.tensor_dir,
        )


def account_unrecognised(job: CompareJob, target: DumpTable, golden: DumpTable) -> None:
    """Name what the two tables' files held that the loader did not understand, and keep it on the job."""
    from .dialects import merge_records, records_of, warn_unrecognised

    for table in (target, golden):
        features = table.dialects
        if features:
            log.info("%s: %s.", table.source, "; ".join(features))
    records = merge_records([records_of(target), records_of(golden)])
    if records:
        warn_unrecognised(records)
        job.unrecognised = merge_records([job.unrecognised, records])
