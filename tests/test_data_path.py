"""The data path reads straight (docs/architecture.md, "The path of one compare"): on a plain compare (whole
tables, the strategy of a pair this size) the orchestration (``cli/``, ``run/``, ``pipeline/``) enters each stage's
package once, in the stages' order, and ``files/`` only to open the run before the load and to close it after the
write; no dump file (dump.json, stack.json, a tensor) is opened once the match has begun.

Observed, not asserted from the code: every Python call is traced (``sys.setprofile``) and every file opened is
seen by an audit hook while ``msprobe compare`` runs in this process on a real dump pair.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import msprobe_core
from msprobe_core.cli.main import main

from .fixtures import IN_REPO_CORPUS

ROOT = Path(msprobe_core.__file__).parent
ORCHESTRATION = {"cli", "run", "pipeline"}
STAGES = ["load", "match", "metrics", "verdicts", "write"]
CASE = IN_REPO_CORPUS / "pytorch" / "c05"  # a mix-level PyTorch statistics pair with its stack.json


def _package(filename: str) -> str | None:
    """The core package (``load``, ``files``…) a code object's file belongs to; ``None`` outside the core."""
    path = Path(filename)
    if ROOT not in path.parents:
        return None
    parts = path.relative_to(ROOT).parts
    return parts[0] if len(parts) > 1 else None


_opened: list[str] | None = None  # the paths opened while a test listens (the audit hook stays for the process)


def _audit(event: str, args: tuple) -> None:
    if _opened is not None and event == "open" and isinstance(args[0], str):
        _opened.append(args[0])


sys.addaudithook(_audit)


def _trace_compare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str, int]]:
    """``(package entered, function, caller's package, files opened so far)`` for every call the orchestration
    makes into another core package while ``msprobe compare`` runs on :data:`CASE`; fills ``_opened``."""
    global _opened
    from msprobe_core.default_plugins.chunked.streamed import ENV_WHOLE_TABLES
    from msprobe_core.default_plugins.forking import children

    monkeypatch.setattr(children, "fork_allowed", lambda: False)  # one process: every call is seen here
    # a small pair's strategy (the suite streams every compare; a streamed one goes through its stages per chunk)
    monkeypatch.setenv(ENV_WHOLE_TABLES, "1")
    entries: list[tuple[str, str, str, int]] = []

    def profile(frame, event, arg) -> None:  # noqa: ANN001
        if event != "call":
            return
        caller = frame.f_back
        into, by = _package(frame.f_code.co_filename), caller and _package(caller.f_code.co_filename)
        if into and by in ORCHESTRATION and into not in ORCHESTRATION:
            entries.append((into, frame.f_code.co_name, by, len(_opened or ())))

    _opened = []
    sys.setprofile(profile)
    try:
        rc = main(["compare", "-tp", str(CASE / "target" / "step0"), "-gp", str(CASE / "golden" / "step0"),
                   "-o", str(tmp_path / "out"), "-q"])
    finally:
        sys.setprofile(None)
    assert rc == 0
    return entries


@pytest.fixture
def traced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[tuple[str, str, str, int]], list[str]]:
    global _opened
    if not (CASE / "target").is_dir():
        pytest.skip(f"{CASE} is not in this checkout")
    try:
        entries = _trace_compare(tmp_path, monkeypatch)
        return entries, list(_opened or ())
    finally:
        _opened = None


def test_each_stage_is_entered_once_in_order(traced) -> None:
    entries, _ = traced
    stages = [into for into, *_ in entries if into in STAGES]
    assert stages == STAGES, entries


def test_files_is_entered_only_around_the_stages(traced) -> None:
    """``files/`` opens the run (output folder, stamp) before the load and closes it after the write; the stages
    between reach it themselves, where they read or write."""
    entries, _ = traced
    order = [into for into, *_ in entries]
    first, last = order.index("load"), order.index("write")
    assert "files" not in order[first:last + 1], entries
    assert "files" in order[:first] and "files" in order[last + 1:], entries


def _dump_file(path: str) -> bool:
    """A file of the dumps themselves: dump.json, its stack.json, a tensor (``construct.json``, the module tree the
    summary draws, is read by the summary when it draws it)."""
    p = Path(path).resolve()
    return p.is_relative_to(CASE.resolve()) and (p.name in ("dump.json", "stack.json") or "dump_tensor_data" in p.parts)


def test_no_dump_file_is_opened_after_the_load(traced) -> None:
    entries, opened = traced
    match_at = next(seen for into, _fn, _by, seen in entries if into == "match")
    assert {Path(p).name for p in opened[:match_at] if _dump_file(p)} == {"dump.json", "stack.json"}, \
        "the trace saw the dumps read: the audit hook listened"
    late = [p for p in opened[match_at:] if _dump_file(p)]
    assert late == [], f"read again after the load stage: {late}"
