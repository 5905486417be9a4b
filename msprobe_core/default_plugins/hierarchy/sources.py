"""What a ``dump.json`` dump keeps of the model's hierarchy: ``construct.json`` and ``stack.json``.

Both are registered by the default plugin ``hierarchy`` as :class:`~msprobe_core.plugin.HierarchySpec`\\ s
(``msprobe_register_hierarchies``), the same way any plugin registers its own:

* ``construct.json`` (L0 and mix dumps) maps each call to the module/cell call enclosing it; the
  ancestors of a node are its chain of parents, outermost first;
* ``stack.json`` (every L1 dump) holds the Python frames of each call. A dump without a module
  hierarchy still says which code called each API: the frames of the user's code (not of installed
  libraries), outermost first, each spelled ``function (file:line)``.

Each file is read once per dump (the lookups are made once per side of a result) and only the
``node -> parent`` map or the frames of each call are kept; ``stack.json`` is read only when a node is first
asked for, member by member, its call names kept as hashes (a run with no divergence and no report reads none),
and not at all when the compare read it already (``msprobe_stack_read``: :func:`remember_stack`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from msprobe_core.plugin import AncestorLookup, HierarchySpec, MsprobeError, dump_file_beside

log = logging.getLogger("msprobe")

#: ``HierarchySpec.source`` of the two built-in sources
CONSTRUCT_SOURCE = "construct.json"
STACK_SOURCE = "stack.json"
#: a frame of ``stack.json``: ``File /path/x.py, line 12, in forward, \n code``
_FRAME = re.compile(r"^File (?P<file>.+?), line (?P<line>\d+), in (?P<func>[^,]+)")
#: frames of installed libraries (the framework, its wrappers): not the user's model code
_LIBRARY = re.compile(r"[/\\](?:site|dist)-packages[/\\]|[/\\]lib[/\\]python\d[^/\\]*[/\\](?!site-packages)")


def _read_json(dump: Path | None, name: str) -> object:
    """The parsed file ``name`` next to ``dump`` (``None`` when absent or unreadable: a path is a help, never
    a reason to stop a compare that already ran)."""
    if dump is None:
        return None
    try:
        path = dump_file_beside(dump if dump.is_file() else dump / "dump.json", name)
    except MsprobeError as exc:  # a link out of the dump: no hierarchy, said once
        log.warning("%s next to %s is not read (%s); the first divergence's path is the node alone.", name, dump, exc)
        return None
    if path is None:
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        log.warning("%s cannot be read; the first divergence's path is the node alone.", path)
        return None


def construct_lookup(dump: Path | None, mode: str = "", framework: str = "") -> AncestorLookup | None:
    """Ancestors from ``construct.json`` next to ``dump`` (``None``: no such file, or it says nothing)."""
    doc = _read_json(dump, "construct.json")
    if not isinstance(doc, dict) or not doc:
        return None
    parents = {str(k): (str(v) if isinstance(v, str) and v else None) for k, v in doc.items()}

    def ancestors(node: str) -> list[str] | None:
        key = node if node in parents else _forward_twin(node)
        if key not in parents:
            return None
        chain: list[str] = []
        seen = {key}
        parent = parents[key]
        while parent is not None and parent not in seen:  # a cycle ends the chain (the file is damaged)
            seen.add(parent)
            chain.append(parent)
            parent = parents.get(parent)
        chain.reverse()
        return chain

    return ancestors


def _forward_twin(node: str) -> str:
    """The forward call a backward node belongs to (``construct.json`` may list only forward calls)."""
    return node.replace(".backward", ".forward") if ".backward" in node else node


def frame_text(frame: str) -> str | None:
    """``forward (model.py:42)`` for a ``stack.json`` frame of the user's code, ``None`` for a library's."""
    m = _FRAME.match(frame.strip())
    if m is None or _LIBRARY.search(m.group("file")):
        return None
    return f"{m.group('func').strip()} ({Path(m.group('file')).name}:{m.group('line')})"


def _frames_of(entry: object) -> tuple[list[str], list[str]] | None:
    """(calls, frames) of one ``stack.json`` entry: ``[[calls…], [frames…]]`` or ``{call: [frames…]}``."""
    if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list) and isinstance(entry[1], list):
        return [str(c) for c in entry[0]], [str(f) for f in entry[1]]
    return None


#: a ``stack.json`` the member-by-member reader declines is parsed whole only up to this size (larger: no path)
WHOLE_STACK_BYTES = 64 << 20


#: what the compare already read of each target's ``stack.json`` (by its resolved path): the load stage hands it
#: here (``msprobe_stack_read``) so that the first divergence's path reads no file twice (:func:`remember_stack`,
#: :func:`forget_stacks`)
_READ_STACKS: dict[str, Any] = {}


def remember_stack(path: Path, stack: Any, key_hash: Any = None) -> None:
    """Keep what the compare read of ``path``: a ``{call: frames}`` dict, or a streamed compare's per-entry stack
    (``stacks(entries, keys)``, as the default plugin ``chunked`` makes it) with its index's key hashes (one per
    entry); anything else (records not made per entry yet) is not kept."""
    if isinstance(stack, dict) or (key_hash is not None and callable(getattr(stack, "stacks", None))):
        _READ_STACKS[str(Path(path).resolve())] = stack if isinstance(stack, dict) else (key_hash, stack)


def forget_stacks() -> None:
    """Drop what :func:`remember_stack` kept (the run's paths are made)."""
    _READ_STACKS.clear()


class _StackFrames:
    """The calling code of each call in ``stack.json``, read when first asked (a run with no divergence and
    no report reads nothing) and held without its call names: per name a 64-bit hash and a record, each
    distinct frame once (the default plugin ``chunked``'s reader, :mod:`..chunked.stackrecords`), so that a
    10-million-entry dump's stacks cost a few bytes per call, not its parsed dict."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._read = False
        self._order: Any = None  # positions of the name hashes, sorted
        self._records: Any = None
        self._whole: dict[str, tuple[str, ...]] | None = None
        self._known: dict[str, Any] | None = None  # the compare's {call: frames}, and the chains made of its frames
        self._by_frames: dict[int, tuple[str, ...]] = {}
        self._indexed: tuple[Any, Any] | None = None  # (key hashes, StackIndex) of the compare's own read
        self._sorted: Any = None
        self._chains: dict[int, tuple[str, ...]] = {}
        self._texts: dict[str, str | None] = {}

    def _load(self) -> None:
        self._read = True
        from msprobe_core.plugin import dump_json

        known = _READ_STACKS.get(str(self.path.resolve()))
        if isinstance(known, dict):  # the whole table's {call: frames}, as the compare read it: a chain when asked
            self._known = known
            return
        if known is not None:
            self._indexed = known
            return

        try:
            if dump_json.dump_scanner() is not None:  # the C extension that hashes the names (the index's key hashes)
                # the reader of the chunked strategy's stacks (its module, whether or not that plugin is on)
                from msprobe_core.default_plugins.chunked.stackrecords import read_stack_records

                records = read_stack_records(self.path)
                if records is not None:
                    import numpy as np

                    self._records = records
                    self._order = np.argsort(records.name_hash, kind="stable")
                    return
            if self.path.stat().st_size > WHOLE_STACK_BYTES:
                log.warning("%s is too large to read whole (%d bytes); the first divergence's path is the node "
                            "alone.", self.path, self.path.stat().st_size)
                return
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except (MsprobeError, OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:
            log.warning("%s cannot be read (%s); the first divergence's path is the node alone.", self.path, exc)
            return
        self._whole = _whole_stack(doc, self._chain_of)

    def _chain_of(self, frames: Sequence[str]) -> tuple[str, ...]:
        chain = []
        for frame in reversed(frames):  # stack.json lists the innermost frame first
            if frame not in self._texts:
                self._texts[frame] = frame_text(frame) if isinstance(frame, str) else None
            text = self._texts[frame]
            if text is not None:
                chain.append(text)
        return tuple(chain)

    def _known_chain(self, node: str) -> tuple[str, ...] | None:
        frames = None if self._known is None else self._known.get(node)
        if not isinstance(frames, list):
            return None
        chain = self._by_frames.get(id(frames))  # calls of one stack entry share its list of frames (load_stack)
        if chain is None:
            chain = self._by_frames[id(frames)] = self._chain_of(frames)
        return chain

    def _record_chain(self, node: str) -> tuple[str, ...] | None:
        import numpy as np

        from msprobe_core.plugin import key_hashes

        rec = self._records
        wanted = key_hashes([node])[0]
        at = int(np.searchsorted(rec.name_hash, wanted, sorter=self._order, side="right")) - 1
        if at < 0 or rec.name_hash[self._order[at]] != wanted:
            return None
        record = int(rec.name_record[self._order[at]])  # the last of a repeated name, as a dict keeps it
        if record not in self._chains:
            if record in rec.objects:
                self._chains[record] = ()
            else:
                ids = rec.ids[rec.starts[record]:rec.starts[record + 1]]
                self._chains[record] = self._chain_of([rec.lines[i] for i in ids])
        return self._chains[record]

    def _indexed_chain(self, node: str) -> tuple[str, ...] | None:
        import numpy as np

        from msprobe_core.plugin import key_hashes

        key_hash, stack = self._indexed  # type: ignore[misc]
        if self._sorted is None:
            self._sorted = np.argsort(key_hash, kind="stable")
        wanted = key_hashes([node])[0]
        at = int(np.searchsorted(key_hash, wanted, sorter=self._sorted))
        if at >= len(key_hash) or key_hash[self._sorted[at]] != wanted:
            return None
        api = int(self._sorted[at])
        lines = stack.stacks([api], [node]).get(node)
        if not isinstance(lines, list):
            return None
        return self._chain_of(lines)

    def __call__(self, node: str) -> Sequence[str] | None:
        if not self._read:
            self._load()
        for name in (node, _forward_twin(node)):
            if self._indexed is not None:
                found = self._indexed_chain(name)
            elif self._records is not None:
                found = self._record_chain(name)
            else:
                found = self._whole.get(name) if self._whole is not None else self._known_chain(name)
            if found:
                return found
        return None


def _whole_stack(doc: object, chain_of: Any) -> dict[str, tuple[str, ...]] | None:
    """``call -> calling code`` of a parsed ``stack.json`` (either layout), for files the streamed reader declines."""
    if not isinstance(doc, dict):
        return None
    by_call: dict[str, tuple[str, ...]] = {}
    for key, entry in doc.items():
        parsed = _frames_of(entry)
        if parsed is None:
            if isinstance(entry, list) and all(isinstance(f, str) for f in entry):
                parsed = [str(key)], [str(f) for f in entry]  # the older {call: [frames]} form
            else:
                continue
        calls, frames = parsed
        chain = chain_of(frames)
        for call in calls:
            by_call[call] = chain
    return by_call


def stack_lookup(dump: Path | None, mode: str = "", framework: str = "") -> AncestorLookup | None:
    """Calling code from ``stack.json`` next to ``dump``: the user's frames, outermost first (read when asked)."""
    if dump is None:
        return None
    try:
        path = dump_file_beside(dump if dump.is_file() else dump / "dump.json", "stack.json")
    except MsprobeError as exc:  # a link out of the dump: no hierarchy, said once
        log.warning("stack.json next to %s is not read (%s); the first divergence's path is the node alone.",
                    dump, exc)
        return None
    if path is None:
        return None
    return _StackFrames(path.absolute())  # read later, maybe from another working directory


#: the default plugin's hierarchy sources, asked after every installed plugin's
HIERARCHIES = (
    HierarchySpec("construct.json", construct_lookup, source=CONSTRUCT_SOURCE, modules=True),
    HierarchySpec("stack.json", stack_lookup, source=STACK_SOURCE, modules=False),
)
