"""The streamed compare, pass 2: the result read, built and written chunk by chunk is the whole table's.

A run whose summary comes from a sink and that keeps no table (:mod:`msprobe_core.pipeline.sink`) builds
a statistics or md5 result chunk by chunk from the dumps' indexes (:mod:`msprobe_core.default_plugins.chunked.streamed`).
Its files must be byte for byte (CSV) and cell for cell (xlsx) those of the whole-table path
(``MSPROBE_WHOLE_TABLES``), on every corpus case and on random pairs, with chunks so small that their
boundaries fall everywhere; the sink must be fed every row once, in order; what the streamed path does not
take must fall back to whole tables silently; an interrupted or failed run must leave no file behind.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

import msprobe_core.plugin as plugin_api
from msprobe_core import api
from msprobe_core.default_plugins.chunked import chunking
from msprobe_core.default_plugins.chunked.stackrecords import read_stack_records
from msprobe_core.default_plugins.chunked.streamed import ENV_WHOLE_TABLES
from msprobe_core.default_plugins.fast_scan import scan as dumpscan
from msprobe_core.default_plugins.xlsx import workbook as xlsx_workbook
from msprobe_core.errors import MsprobeError
from msprobe_core.pipeline.sink import KEEP_TABLES, SUMMARY_SINK
from msprobe_core.write import writers

from .conftest import corpora_dir, no_corpora_reason

pytestmark = pytest.mark.skipif(dumpscan.Scanner is None, reason="the C scanner is not built here")

CORPORA = corpora_dir()
STAT_CASES = [
    ("pytorch/c01", {}), ("pytorch/c03", {}), ("pytorch/c04a", {}), ("pytorch/c05", {}), ("pytorch/c08", {}),
    ("pytorch/c08", {"fuzzy_match": True}), ("pytorch/c09a", {}), ("mindspore/ms_l0_stat_bug_2steps", {}),
    ("mindspore/ms_l1_stat_fp16", {}), ("mindspore/ms_mix_stat_gelu", {}), ("mindspore/x_l0_stat_cm_bug", {}),
    ("mindspore/x_l1_stat_am", {}), ("mindspore/x_mix_stat_dm_bug", {}),
    ("mindspore/x_l1_stat_am", {"api_mapping": True}),  # a mapper the index does not join: whole tables
]


class RecordingSink:
    """A summary sink that keeps what it was fed: (first row, rows, NPU names) per part."""

    def __init__(self) -> None:
        self.parts: list[tuple[int, int, list[str]]] = []
        self.files: list[Path] | None = None
        SINKS.append(self)

    def feed_table(self, table: Any, start: int = 0) -> None:
        self.parts.append((start, len(table), list(table.data["NPU Name"])))

    def finish(self, files: Any) -> dict[str, int]:
        self.files = list(files)
        return {"parts": len(self.parts)}


SINKS: list[RecordingSink] = []
STREAMED = {SUMMARY_SINK: RecordingSink, KEEP_TABLES: False}


def _case(name: str) -> Path:
    case = CORPORA / name
    if not case.is_dir():
        pytest.skip(no_corpora_reason() if not CORPORA.is_dir() else f"{name} not in the corpora")
    return case


def _step(case: Path, side: str) -> Path:
    return next(p for p in sorted((case / side).iterdir()) if p.is_dir())


def _files(out: Path) -> dict[str, Path]:
    files = {re.sub(r"_\d{14}", "", str(p.relative_to(out))): p for p in out.rglob("*") if p.is_file()}
    assert not [n for n in files if n.startswith(".")], "a temporary file was left behind"
    return files


#: the chunk plans of the results built chunk by chunk since the list was cleared
CHUNKED: list[list[tuple[int, int]]] = []


def _compare(target: Path, golden: Path, out: Path, options: dict, monkeypatch: pytest.MonkeyPatch,
             streamed: bool) -> dict[str, Path]:
    opts = dict(options)
    if isinstance(opts.get("data_mapping"), str):
        opts["data_mapping"] = target.parent.parent / opts["data_mapping"]
    real = chunking.write_chunks

    def recording(source: Any, chunks: list[tuple[int, int]], *args: Any, **kwargs: Any) -> None:
        CHUNKED.append(list(chunks))
        return real(source, chunks, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(chunking, "write_chunks", recording)
        if streamed:
            opts["extra"] = dict(STREAMED)
        else:
            m.setenv(ENV_WHOLE_TABLES, "1")
        api.compare(target, golden, out, **opts)
    return _files(out)


def _same_files(whole: dict[str, Path], streamed: dict[str, Path], xlsx: bool = False) -> None:
    assert sorted(whole) == sorted(streamed)
    assert whole, "no result written"
    for name, path in whole.items():
        if xlsx:
            assert _cells(path) == _cells(streamed[name]), name
        else:
            assert path.read_bytes() == streamed[name].read_bytes(), name


def _cells(path: Path) -> dict[str, list[tuple]]:
    import openpyxl

    book = openpyxl.load_workbook(path, read_only=True)
    try:
        return {ws.title: [tuple(row) for row in ws.iter_rows(values_only=True)] for ws in book.worksheets}
    finally:
        book.close()


def _fed_rows(sinks: list[RecordingSink], files: dict[str, Path]) -> None:
    """Each sink was fed consecutive parts starting at row 0, covering the rows of its result files."""
    for sink in sinks:
        at = 0
        for start, rows, _ in sink.parts:
            assert start == at
            at += rows
        assert sink.files and all(f.is_file() for f in sink.files)
    assert sum(len(s.parts) for s in sinks) >= 1


@pytest.mark.parametrize(("case", "options"), STAT_CASES, ids=[f"{c}{'-' + '-'.join(o) if o else ''}" for c, o in STAT_CASES])
@pytest.mark.parametrize("chunk", [1, 5, 65536])
def test_every_corpus_case_streamed_is_the_whole_tables_result(case: str, options: dict, chunk: int, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path = _case(case)
    target, golden = _step(path, "target"), _step(path, "golden")
    whole = _compare(target, golden, tmp_path / "whole", options, monkeypatch, streamed=False)
    monkeypatch.setenv(chunking.ENV_CHUNK_ROWS, str(chunk))
    SINKS.clear()
    CHUNKED.clear()
    streamed = _compare(target, golden, tmp_path / "streamed", options, monkeypatch, streamed=True)
    _same_files(whole, streamed)
    if options or case == "pytorch/c09a":  # -am, -fm: mappers the index does not join; c09a: ranks side by side
        assert not CHUNKED, "whole tables"
        return
    assert CHUNKED and len(CHUNKED) == len(SINKS)
    _fed_rows(SINKS, streamed)
    if chunk == 1:
        assert all(len(s.parts) > 1 for s in SINKS), "chunk boundaries everywhere"


@pytest.mark.parametrize("case", ["pytorch/c05", "mindspore/ms_mix_stat_gelu"])
def test_xlsx_streamed_is_cell_for_cell_the_whole_tables_workbook(case: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = _case(case)
    target, golden = _step(path, "target"), _step(path, "golden")
    options = {"output_format": "xlsx"}
    monkeypatch.setattr(xlsx_workbook, "XLSX_SHEET_ROWS", 7)  # sheets switch inside chunks and between them
    whole = _compare(target, golden, tmp_path / "whole", options, monkeypatch, streamed=False)
    monkeypatch.setenv(chunking.ENV_CHUNK_ROWS, "3")
    CHUNKED.clear()
    streamed = _compare(target, golden, tmp_path / "streamed", options, monkeypatch, streamed=True)
    assert CHUNKED
    _same_files(whole, streamed, xlsx=True)


# ============================================================================ random pairs
DTYPES = ["torch.float32", "torch.bfloat16", "torch.float16", "torch.int64", "torch.bool"]
PREFIXES = ["Functional.linear", "Torch.matmul", "Tensor.add_", "Module.layers.0.Linear", "Distributed.all_reduce"]


def _stat(rng: random.Random) -> Any:
    return rng.choice([rng.uniform(-5, 5), rng.randint(-3, 3), None, float("nan"), float("inf"), 0.0, 1.5, "x"])


def _leaf(rng: random.Random, md5: bool) -> Any:
    kind = rng.random()
    if kind < 0.1:
        return None
    if kind < 0.2:
        return {"type": rng.choice(["int", "float", "bool", "str"]), "value": rng.choice([1, 2.5, True, "s"])}
    leaf = {"type": "torch.Tensor", "dtype": rng.choice(DTYPES), "shape": [rng.randint(1, 4)],
            "Max": _stat(rng), "Min": _stat(rng), "Mean": _stat(rng), "Norm": _stat(rng),
            "requires_grad": rng.random() < 0.5}
    if md5:
        leaf["md5"] = f"{rng.getrandbits(32):08x}"
    return leaf


def _entry(rng: random.Random, key: str, md5: bool) -> dict[str, Any]:
    sections = ("input", "output") if ".backward" in key else ("input_args", "output")
    entry: dict[str, Any] = {s: [_leaf(rng, md5) for _ in range(rng.randint(0, 3))] for s in sections}
    if rng.random() < 0.2:
        entry["input_kwargs"] = {"alpha": _leaf(rng, md5)}
    return entry


def _keys(rng: random.Random, n: int) -> list[str]:
    keys: list[str] = []
    for k in range(n):
        prefix = rng.choice(PREFIXES)
        direction = rng.choice(["forward", "forward", "backward"])
        keys.append(f"{prefix}.{direction}.{k}" if prefix.startswith("Module") else f"{prefix}.{k}.{direction}")
    return keys


def _golden(rng: random.Random, target: dict[str, Any], md5: bool) -> dict[str, Any]:
    """The target's entries, some dropped, moved, changed, some added: every way a pair misaligns."""
    items = list(target.items())
    golden: list[tuple[str, Any]] = []
    for key, entry in items:
        roll = rng.random()
        if roll < 0.1:
            continue
        entry = json.loads(json.dumps(entry))
        if roll < 0.3:
            entry = _entry(rng, key, md5)  # other values, dtypes, maybe other leaves
        elif roll < 0.4:
            for section in entry.values():
                for leaf in section if isinstance(section, list) else section.values():
                    if isinstance(leaf, dict) and "dtype" in leaf:
                        leaf["dtype"] = rng.choice(DTYPES)
        golden.append((key, entry))
    if golden and rng.random() < 0.5:
        a, b = rng.randrange(len(golden)), rng.randrange(len(golden))
        golden[a], golden[b] = golden[b], golden[a]
    for k in range(rng.randint(0, 3)):
        golden.insert(rng.randint(0, len(golden)), (f"Torch.extra.{k}.forward", _entry(rng, "x", md5)))
    return dict(golden)


def _write_pair(root: Path, seed: int) -> tuple[Path, Path]:
    rng = random.Random(seed)
    md5 = rng.random() < 0.3
    keys = _keys(rng, rng.randint(1, 40))
    target = {k: _entry(rng, k, md5) for k in keys}
    golden = _golden(rng, target, md5)
    level = rng.choice(["L1", "mix"])
    for side, data in (("target", target), ("golden", golden)):
        rank = root / side / "step0" / "rank0"
        rank.mkdir(parents=True)
        doc = {"task": "statistics", "level": level, "framework": "pytorch", "dump_data_dir": None, "data": data}
        (rank / "dump.json").write_text(json.dumps(doc, indent=rng.choice([None, 1])), encoding="utf-8")
        if side == "target" and rng.random() < 0.7:
            stack = {str(k): [keys[k:k + 2], [f"File a.py, line {k}, in f, \n x = {k}"]]
                     for k in range(0, len(keys), 2) if rng.random() < 0.8}
            (rank / "stack.json").write_text(json.dumps(stack), encoding="utf-8")
    return root / "target" / "step0", root / "golden" / "step0"


@pytest.mark.parametrize("seed", range(24))
def test_random_pairs_streamed_in_tiny_chunks_are_the_whole_tables_result(seed: int, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    target, golden = _write_pair(tmp_path / "dumps", seed)
    monkeypatch.setattr(plugin_api, "CSV_MAX_ROWS", 1 + seed % 9)  # first: the plugin API caches the value it finds
    monkeypatch.setattr(writers, "CSV_MAX_ROWS", 1 + seed % 9)  # part files switch inside and between chunks
    whole = _compare(target, golden, tmp_path / "whole", {}, monkeypatch, streamed=False)
    for chunk in (1, 4):
        monkeypatch.setenv(chunking.ENV_CHUNK_ROWS, str(chunk))
        SINKS.clear()
        CHUNKED.clear()
        streamed = _compare(target, golden, tmp_path / f"streamed{chunk}", {}, monkeypatch, streamed=True)
        assert CHUNKED and SINKS, "the pair was streamed"
        _fed_rows(SINKS, streamed)
        _same_files(whole, streamed)



@pytest.mark.exercises_hooks("msprobe_read_index_stack")
def test_a_stack_json_only_the_whole_dict_tells_is_streamed_as_whole_tables(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A repeated call name (the last one counts, as in a dict): the member-by-member reader declines the file, the
    load leaves ``load_stack``'s dict on the target's index (the chunked plugin's ``msprobe_read_index_stack`` said
    ``None``), and the chunked plugin makes it per entry."""
    target, golden = _write_pair(tmp_path / "dumps", 5)
    dump = target / "rank0"
    keys = list(json.loads((dump / "dump.json").read_text(encoding="utf-8"))["data"])
    members = [f'{json.dumps(k)}: ["File a.py, line 1, in first"]' for k in keys]
    members += [f'{json.dumps(keys[0])}: ["File b.py, line 2, in last"]']
    (dump / "stack.json").write_text("{" + ", ".join(members) + "}", encoding="utf-8")
    assert read_stack_records(dump / "stack.json") is None  # declined: the whole dict's meaning
    whole = _compare(target, golden, tmp_path / "whole", {}, monkeypatch, streamed=False)
    monkeypatch.setenv(chunking.ENV_CHUNK_ROWS, "1")
    CHUNKED.clear()
    streamed = _compare(target, golden, tmp_path / "streamed", {}, monkeypatch, streamed=True)
    assert CHUNKED, "the pair was streamed"
    _same_files(whole, streamed)
    text = "".join(p.read_text(encoding="utf-8") for p in streamed.values())
    assert "in last" in text and "in first" in text  # the later of the repeated name's stacks, the others'


# ============================================================================ failures
def _pair(tmp_path: Path) -> tuple[Path, Path]:
    return _write_pair(tmp_path / "dumps", 3)


class _Stop(KeyboardInterrupt):
    pass


class InterruptingSink(RecordingSink):
    """Ctrl-C while the third chunk is fed (the sink runs in the compare, between two writes)."""

    def feed_table(self, table: Any, start: int = 0) -> None:
        super().feed_table(table, start)
        if len(self.parts) == 3:
            raise _Stop


def test_ctrl_c_between_chunks_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target, golden = _pair(tmp_path)
    monkeypatch.setenv(chunking.ENV_CHUNK_ROWS, "1")
    monkeypatch.setattr(plugin_api, "CSV_MAX_ROWS", 2)  # first: the plugin API caches the value it finds
    monkeypatch.setattr(writers, "CSV_MAX_ROWS", 2)  # some part files are complete when it stops
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        api.compare(target, golden, out, extra={SUMMARY_SINK: InterruptingSink, KEEP_TABLES: False})
    assert not [p for p in out.rglob("*") if p.is_file()]


def test_a_full_disk_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    target, golden = _pair(tmp_path)
    monkeypatch.setenv(chunking.ENV_CHUNK_ROWS, "1")
    monkeypatch.setattr(plugin_api, "CSV_MAX_ROWS", 2)  # first: the plugin API caches the value it finds
    monkeypatch.setattr(writers, "CSV_MAX_ROWS", 2)
    real = writers.write_csv_rows
    calls = []

    def filling(fh, *args, **kwargs):  # the disk is full at the fourth write
        calls.append(1)
        if len(calls) == 4:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fh, *args, **kwargs)

    from msprobe_core.default_plugins.chunked import csvparts

    monkeypatch.setattr(csvparts, "write_csv_rows", filling)
    out = tmp_path / "out"
    with pytest.raises(MsprobeError, match="No space left|space"):
        api.compare(target, golden, out, extra=dict(STREAMED))
    assert not [p for p in out.rglob("*") if p.is_file()]


def test_a_dump_changed_between_the_passes_stops_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target, golden = _pair(tmp_path)
    from msprobe_core.default_plugins.fast_scan import chunks

    real = chunks.ChunkReader.__enter__

    def touch_then_open(self):  # the golden file is rewritten after it was indexed
        if self.index.source.parent.parent.parent.name == "golden":
            text = self.index.source.read_text()
            self.index.source.write_text(text + " ")
        return real(self)

    monkeypatch.setattr(chunks.ChunkReader, "__enter__", touch_then_open)
    out = tmp_path / "out"
    with pytest.raises(MsprobeError, match="changed while it was being compared"):
        api.compare(target, golden, out, extra=dict(STREAMED))
    assert not [p for p in out.rglob("*") if p.is_file()]


def test_entries_that_differ_from_the_index_in_an_unchanged_looking_file_fall_back(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytes rewritten in place with the size and times kept: whole tables read the file as it is now."""
    import os

    target, golden = _pair(tmp_path)
    from msprobe_core.default_plugins.fast_scan import chunks

    real = chunks.ChunkReader.__enter__

    def rewrite_then_open(self):
        path = self.index.source
        if path.parent.parent.parent.name == "golden" and not getattr(path, "_rewritten", False):
            st = path.stat()
            with open(path, "r+b") as fh:  # same inode, same size: a key's digit changes
                raw = fh.read()
                at = raw.index(b'.0.forward"') if b'.0.forward"' in raw else raw.index(b'.0.backward"')
                fh.seek(at + 1)
                fh.write(b"9")
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        return real(self)

    monkeypatch.setattr(chunks.ChunkReader, "__enter__", rewrite_then_open)
    monkeypatch.setenv(chunking.ENV_CHUNK_ROWS, "2")
    SINKS.clear()
    CHUNKED.clear()
    streamed = _compare(target, golden, tmp_path / "streamed", {}, monkeypatch, streamed=True)
    assert CHUNKED and SINKS[0].files is None, "the chunked result was abandoned"
    monkeypatch.undo()
    whole = _compare(target, golden, tmp_path / "whole", {}, monkeypatch, streamed=False)
    _same_files(whole, streamed)
