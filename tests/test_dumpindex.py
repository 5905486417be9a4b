"""The index mode of the C scanner (pass 1 of a streamed compare) and matching on the index.

The index must describe exactly the table the table mode builds (same rows, names, dtypes, the kinds of
the statistics, the row counts and file offsets of the entries, the compare keys' hashes after backward
renumbering) and must decline exactly what the table mode declines; the join on its hashes must pair the
rows ``join_on_keys`` pairs, and the dtype gate on its ids must unpair what ``apply_dtype_gate`` unpairs.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from msprobe_core.default_plugins.chunked.index_match import IndexMatch, _sort_merge, gate_dtypes
from msprobe_core.default_plugins.fast_scan import scan as dumpscan
from msprobe_core.default_plugins.fast_scan.index import index_dump_file
from msprobe_core.errors import MsprobeError
from msprobe_core.load.dumpindex import key_hashes
from msprobe_core.match.matching import apply_dtype_gate, join_on_keys
from msprobe_core.match.naming import renumber_backward
from msprobe_core.text.statcells import FLOAT, INT

from .test_dumpscan import SETTINGS, corpus_dump_files, dumper_version_files, mixed_dump, mutate  # noqa: F401
from .test_loader_properties import dump_doc

pytestmark = pytest.mark.skipif(dumpscan.Scanner is None, reason="the C scanner is not built here")


def names_of(index, table) -> list[str]:
    """The row names the index stands for: key + suffix, or the whole name it keeps."""
    names = []
    for a in table.apis:
        for r in range(a.first_row, a.first_row + a.n_rows):
            s = index.suffixes[index.suffix[r]]
            names.append(s[1:].decode() if s[:1] == b"\x01" else a.key + s.decode())
    return names


def check_index(path: Path, kind: str = "dump") -> str:
    """The index of ``path`` against the table mode's table, with and without renumbering."""
    try:
        table = dumpscan.scan_dump(path, kind)
    except MsprobeError:  # the table mode refuses the header (the load names what is wrong): not indexed either
        table = None
    outcome = ""
    for renumber in (False, True):
        index = index_dump_file(path, kind, renumber)
        if table is None or table.mode == "tensor":
            assert index is None
            outcome = "declined" if table is None else "tensor"
            continue
        raw = path.read_bytes()
        assert index is not None, path
        assert (len(index), index.n_apis) == (len(table), len(table.apis))
        assert index.n_rows.tolist() == [a.n_rows for a in table.apis]
        assert index.first_row.tolist() == [a.first_row for a in table.apis] + [len(table)]
        for api, at in zip(table.apis, index.offsets[:-1].tolist()):
            assert raw[at: at + len(api.key) + 2] == f'"{api.key}"'.encode()
        assert raw[int(index.offsets[-1]):].lstrip()[:1] == b"}"
        assert index.key_hash.tolist() == key_hashes([a.key for a in table.apis]).tolist()
        assert names_of(index, table) == table.name
        assert [index.dtypes[d] for d in index.dtype.tolist()] == table.dtype
        for k, column in enumerate((table.max, table.min, table.mean, table.norm)):
            kinds = np.asarray(column.kinds)
            assert (((index.flags >> k) & 1) == ((kinds == FLOAT) | (kinds == INT))).all()
            assert (((index.flags >> (k + 4)) & 1) == (kinds == FLOAT)).all()
        keys = renumber_backward(table, list(table.name)) if renumber else list(table.name)
        assert index.row_hashes().tolist() == key_hashes(keys).tolist()
        assert (index.mode, index.task, index.framework, index.level) == (
            table.mode, table.task, table.framework, table.level)
        outcome = "indexed"
    return outcome


@pytest.mark.parametrize("path", corpus_dump_files() + dumper_version_files(), ids=str)
def test_every_dump_of_the_corpora_is_indexed_as_the_table_mode_reads_it(path: Path) -> None:
    check_index(path, "debug" if path.name.endswith("debug.json") else "dump")


def test_every_leaf_kind_is_indexed(mixed_dump: Path) -> None:  # noqa: F811
    assert check_index(mixed_dump) == "indexed"


@pytest.mark.parametrize("block", [1, 3, 64])
def test_any_block_boundary_gives_the_same_index(block: int, mixed_dump: Path,  # noqa: F811
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dumpscan, "BLOCK_BYTES", block)
    assert check_index(mixed_dump) == "indexed"


@SETTINGS
@given(doc=dump_doc(), ascii_only=st.booleans(), indent=st.sampled_from([None, 1]))
def test_generated_dumps_are_indexed_as_the_table_mode_reads_them(doc: dict, ascii_only: bool, indent: int | None,
                                                                  tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.mktemp("gen") / "dump.json"
    path.write_text(json.dumps(doc, indent=indent, ensure_ascii=ascii_only), encoding="utf-8")
    check_index(path)


@SETTINGS
@given(seed=st.integers(0, 2**32))
def test_damaged_files_are_declined_or_indexed_exactly(seed: int, mixed_dump: Path,  # noqa: F811
                                                        tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.mktemp("bad") / "dump.json"
    path.write_bytes(mutate(mixed_dump.read_bytes(), random.Random(seed)))
    check_index(path)


def test_a_repeated_key_or_a_tensor_dump_is_not_indexed(tmp_path: Path) -> None:
    path = tmp_path / "dump.json"
    entry = '"A.0.forward": {"output": [null]}'
    path.write_text('{"task": "statistics", "data": {' + entry + ", " + entry + "}}")
    assert index_dump_file(path, "dump", True) is None
    path.write_text(json.dumps({"task": "tensor", "data": {"A.0.forward": {"output": [None]}}}))
    assert index_dump_file(path, "dump", True) is None


def test_backward_calls_are_renumbered_per_prefix(tmp_path: Path) -> None:
    data = {key: {"output": [None]} for key in (
        "Functional.linear.7.backward", "Module.m.Linear.backward.3", "Functional.linear.2.backward",
        "Functional.linear.5.forward", "0.backward", "Functional.linear.x9.12.backward")}
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"task": "statistics", "data": data}))
    assert check_index(path) == "indexed"
    index = index_dump_file(path, "dump", True)
    assert index.rank.tolist() == [0, 0, 1, -1, 0, 0]


# ============================================================================ matching on hashes
KEYS = st.lists(st.sampled_from(["a.0.forward.input.0", "a.0.forward.output.0", "b.1.backward.input.0", "c", "d.x"]),
                max_size=12)


@SETTINGS
@given(target=KEYS, golden=KEYS)
def test_the_hash_join_pairs_as_join_on_keys(target: list[str], golden: list[str]) -> None:
    expected = join_on_keys(target, golden)
    got = _sort_merge(key_hashes(target), key_hashes(golden))
    rows_t = list(range(len(target))) if got.target is None else got.target.tolist()
    assert (rows_t, got.golden.tolist()) == (expected.target, expected.golden)


class _Index:
    """The two fields of an index the dtype gate reads."""

    def __init__(self, dtypes: list[str | None]) -> None:
        self.dtypes = [None, *sorted({d for d in dtypes if d is not None})]
        self.dtype = np.asarray([self.dtypes.index(d) for d in dtypes], dtype=np.uint16)


DTYPES = st.sampled_from(["torch.float32", "torch.bfloat16", "torch.int64", None])


@SETTINGS
@given(pairs=st.lists(st.tuples(DTYPES, DTYPES, st.booleans()), min_size=1, max_size=10))
def test_the_dtype_gate_on_ids_unpairs_as_apply_dtype_gate(pairs: list) -> None:
    t_dtypes = [a for a, _, _ in pairs]
    g_dtypes = [b for _, b, _ in pairs]
    golden = [k if paired else -1 for k, (_, _, paired) in enumerate(pairs)]

    def floats(a, b):
        return a in ("torch.float32", "torch.bfloat16") and b in ("torch.float32", "torch.bfloat16")

    from msprobe_core.model import MatchResult

    expected = apply_dtype_gate(MatchResult(list(range(len(pairs))), golden), t_dtypes, g_dtypes, floats)
    got = gate_dtypes(IndexMatch(None, np.asarray(golden, dtype=np.int64), len(pairs)),
                      _Index(t_dtypes), _Index(g_dtypes), floats)
    assert got.golden_rows(0, len(pairs)).tolist() == expected.golden


# ============================================================================ matching a step at a time
def _stat(dtype: str) -> dict:
    return {"type": "torch.Tensor", "dtype": dtype, "shape": [1], "Max": 1.5, "Min": 1, "Mean": 1, "Norm": 1}


def _random_pair(rng: random.Random, tmp: Path) -> tuple:
    """Two indexed dumps whose rows mostly line up, their entries split differently (entries without rows)."""
    keys = [f"Functional.f{k}.{rng.randint(0, 3)}.{rng.choice(['forward', 'backward'])}" for k in range(rng.randint(1, 14))]
    rows = [rng.randint(0, 3) for _ in keys]
    docs = []
    for side in range(2):
        data = {}
        for k, key in enumerate(keys):
            if rng.random() < 0.3:
                data[f"Empty.{side}.{k}.forward"] = {}  # an entry with no row
            n = rows[k] if rng.random() < 0.97 else rng.randint(0, 3)
            data[key] = {"input_args": [_stat(rng.choice(["torch.float32", "torch.int64", "torch.bfloat16"])) for _ in range(n)]}
        if rng.random() < 0.1:
            data["Functional.extra.0.forward"] = {"output": [_stat("torch.float32")]}
        docs.append({"task": "statistics", "data": data})
    paths = []
    for name, doc in zip(("target", "golden"), docs):
        path = tmp / name / "dump.json"
        path.parent.mkdir()
        path.write_text(json.dumps(doc))
        paths.append(path)
    return tuple(index_dump_file(p, "dump", True) for p in paths)


def _fields(match: IndexMatch) -> tuple:
    return (match.rows, None if match.target is None else match.target.tolist(),
            None if match.golden is None else match.golden.tolist())


@pytest.mark.parametrize("seed", range(40))
def test_the_join_and_the_gate_a_few_entries_at_a_time_give_the_whole_arrays_result(
        seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from msprobe_core.default_plugins.chunked import index_match

    target, golden = _random_pair(random.Random(seed), tmp_path)
    assert target is not None and golden is not None

    def floats(a, b):
        return a != "torch.int64" and b != "torch.int64"

    from msprobe_core.host import strategies as specs

    whole = index_match.join_indexes(target, golden)
    gated = _fields(gate_dtypes(whole, target, golden, floats))
    for step in (1, 2, 3, 7):
        monkeypatch.setattr(index_match, "STEP", step)
        monkeypatch.setattr(specs, "INDEX_STEP", step)
        golden.repeated_rows = None  # looked at again, a step at a time
        match = index_match.join_indexes(target, golden)
        assert _fields(match) == _fields(whole)
        assert _fields(gate_dtypes(match, target, golden, floats)) == gated


@pytest.mark.parametrize("values", [[], [5], [1, 1], [1, 2, 3, 4], [1, 2, 3, 3], [0, 1, 2, 3, 4, 5, 6, 6], [2, 2, 3]])
def test_a_repeat_is_found_across_steps(values: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    from msprobe_core.host import strategies as specs

    for step in (1, 2, 3, 1 << 20):
        monkeypatch.setattr(specs, "INDEX_STEP", step)
        assert specs.any_repeat(np.asarray(values, dtype=np.uint64)) == (len(set(values)) < len(values))


@pytest.mark.parametrize(("n_dtypes", "n_suffixes"), [(3, 10), (300, 10), (3, 70000)])
def test_ids_are_kept_narrow_when_they_fit_and_read_the_same_when_they_do_not(
        n_dtypes: int, n_suffixes: int, tmp_path: Path) -> None:
    args = [_stat(f"torch.kind{k % n_dtypes}") for k in range(max(n_dtypes, n_suffixes))]
    data = {"Functional.many.0.forward": {"input_args": args}, "Functional.one.0.forward": {"output": [_stat("torch.kind1")]}}
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"task": "statistics", "data": data}))
    assert check_index(path) == "indexed"
    index = index_dump_file(path, "dump", True)
    assert index.dtype.dtype == (np.uint8 if n_dtypes < 255 else np.uint16)
    assert index.suffix.dtype == (np.uint16 if n_suffixes <= 1 << 16 else np.uint32)


@pytest.mark.parametrize("seed", range(20))
def test_the_chunk_starts_of_an_aligned_match_are_the_sorted_distinct_entry_starts(seed: int) -> None:
    from types import SimpleNamespace

    from msprobe_core.default_plugins.chunked.chunking import api_starts

    rng = np.random.default_rng(seed)
    for _ in range(100):
        n = int(rng.integers(0, 12))
        first_row = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(rng.integers(0, 3, n), out=first_row[1:])  # entries of 0-2 rows
        rows = int(first_row[-1])
        inner = first_row[1:-1]
        got = api_starts(IndexMatch(None, None, rows), SimpleNamespace(first_row=first_row))
        assert got.tolist() == np.unique(inner[(inner > 0) & (inner < rows)]).tolist()
