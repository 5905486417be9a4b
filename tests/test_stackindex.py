"""The member-by-member ``stack.json`` reader (the chunked plugin's ``stackrecords.read_stack_records``) against the
whole dict.

``stack_index_file(path, index)`` (the chunked plugin's per-entry stack of it) must be ``StackIndex(load_stack(path), index)`` in every observable way:
the stack of every entry, or the same error (type and words) for a file that ``load_stack`` refuses.
Checked on every ``stack.json`` of the corpora, on random files of both layouts, and on hostile ones
(repeated keys, a late ``"0"``, names that are not texts, lone surrogates, damaged bytes).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from msprobe_core.default_plugins.chunked import stackindex, stackrecords
from msprobe_core.default_plugins.chunked.stackindex import StackIndex, stack_index_file
from msprobe_core.default_plugins.chunked.stackrecords import read_stack_records
from msprobe_core.default_plugins.fast_scan.scan import Scanner
from msprobe_core.files import jsonfile
from msprobe_core.load.dumpindex import key_hashes
from msprobe_core.load.dumpjson import load_stack

from .conftest import corpora_dir

pytestmark = pytest.mark.skipif(Scanner is None, reason="the C scanner is not built")


def corpus_stacks() -> list[Path]:
    root = corpora_dir()
    return sorted(root.rglob("stack.json")) if root.is_dir() else []


def fake_index(names: list[str]) -> Any:
    """What a StackIndex reads of a DumpIndex: one entry per name."""
    return SimpleNamespace(key_hash=key_hashes(names), n_apis=len(names))


def outcome(make, names: list[str]) -> Any:
    """Every entry's stack (in entry order), or the error's type and words."""
    try:
        stack = make(fake_index(names))
    except Exception as exc:  # noqa: BLE001 - the error itself is compared
        return (type(exc).__name__, str(exc))
    labels = [f"#{i}" for i in range(len(names))]
    return stack.stacks(range(len(names)), labels)


def index_names(path: Path, rng: random.Random) -> list[str]:
    """The names of a target index for ``path``: most of the file's API names, some others, shuffled."""
    try:
        names = [n for n in load_stack(path) if rng.random() < 0.9]
    except Exception:  # noqa: BLE001
        names = []
    names += [f"Not.in.stack.{k}.forward" for k in range(rng.randint(0, 5))]
    rng.shuffle(names)
    return names


def assert_same(path: Path, names: list[str]) -> Any:
    old = outcome(lambda ix: StackIndex(load_stack(path), ix), names)
    new = outcome(lambda ix: stack_index_file(path, ix), names)
    assert new == old
    return old


@pytest.mark.parametrize("path", corpus_stacks(), ids=lambda p: str(p.relative_to(corpora_dir())))
def test_every_stack_of_the_corpora_is_read_member_by_member_as_the_whole_dict(path: Path) -> None:
    assert read_stack_records(path) is not None  # the member-by-member reader takes it (no fallback)
    names = index_names(path, random.Random(str(path)))
    got = assert_same(path, names)
    assert isinstance(got, dict) and any(v for v in got.values())


def lines(rng: random.Random) -> list[Any]:
    pool = [f"File /a/{k}.py, line {k * 7}, in f{k}, \n x = g({k})" for k in range(6)] + ["é ünïcode", "", "\u2028"]
    out: list[Any] = [rng.choice(pool) for _ in range(rng.randint(0, 4))]
    if rng.random() < 0.05:
        out.append(rng.choice([1, None, ["nested"], {"a": 1}, 2.5]))
    return out


def api_name(rng: random.Random) -> str:
    return f"{rng.choice(['Functional.linear', 'Tensor.add', 'Module.a.B'])}.{rng.randint(0, 30)}.{rng.choice(['forward', 'backward'])}"


def new_layout(rng: random.Random) -> list[tuple[str, Any]]:
    members = []
    for k in range(rng.randint(1, 40)):
        value: Any = [[api_name(rng) for _ in range(rng.randint(0, 3))], lines(rng)]
        roll = rng.random()
        if roll < 0.04:
            value = rng.choice(["text", 3, None, [1, 2, 3], [["x"]], {"a": [1]}, [["A.0.forward"], "lines as text"]])
        elif roll < 0.06:
            value[0].append(rng.choice([7, None, 1.5, True]))  # a name that is not a text
        members.append((str(k), value))
    return members


def old_layout(rng: random.Random) -> list[tuple[str, Any]]:
    members = [(api_name(rng), lines(rng)) for _ in range(rng.randint(0, 40))]
    if rng.random() < 0.1:
        members.insert(rng.randint(0, len(members)), (api_name(rng), rng.choice(["text", 3, None, {"a": 1}])))
    return members


def hostile(rng: random.Random, members: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Repeated keys, a ``"0"`` elsewhere than first, or falsy."""
    members = list(members)
    roll = rng.random()
    if members and roll < 0.15:
        members.insert(rng.randint(0, len(members)), rng.choice(members))  # a repeated key
    elif roll < 0.25:
        members.insert(rng.randint(0, len(members)), ("0", rng.choice([[], 0, "", [["Late.0.forward"], ["l"]]])))
    return members


def write_members(path: Path, members: list[tuple[str, Any]], rng: random.Random) -> None:
    indent = rng.choice([None, 1])
    sep = ",\n" if indent else ","
    body = sep.join(f"{json.dumps(k)}: {json.dumps(v, indent=indent, ensure_ascii=rng.random() < 0.5)}" for k, v in members)
    path.write_text("{" + body + "}", encoding="utf-8")


@pytest.mark.parametrize("seed", range(300))
def test_random_and_hostile_stacks_give_the_whole_dicts_stacks_or_its_error(seed: int, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    monkeypatch.setattr(stackindex, "SEARCH_STEP", rng.choice([1, 2, 5, 1 << 20]))  # entries looked up at a time
    monkeypatch.setattr(stackrecords, "HASH_BATCH", rng.choice([1, 3, 65536]))  # names hashed at a time
    members = new_layout(rng) if rng.random() < 0.5 else old_layout(rng)
    members = hostile(rng, members)
    path = tmp_path / "stack.json"
    write_members(path, members, rng)
    assert_same(path, index_names(path, rng))


def test_plain_files_of_both_layouts_are_not_sent_back_to_the_whole_dict(tmp_path: Path) -> None:
    path = tmp_path / "stack.json"
    path.write_text(json.dumps({"0": [["A.0.forward", "B.0.forward"], ["l1", "l2"]], "1": [["C.0.forward"], ["l2"]]}))
    assert read_stack_records(path) is not None
    assert assert_same(path, ["C.0.forward", "X.0.forward", "A.0.forward"]) == {"#0": ["l2"], "#2": ["l1", "l2"]}
    path.write_text(json.dumps({"A.0.forward": ["l1"], "B.0.forward": [], "1": ["l3"]}))
    assert read_stack_records(path) is not None
    assert assert_same(path, ["B.0.forward", "A.0.forward", "1"]) == {"#0": [], "#1": ["l1"], "#2": ["l3"]}


@pytest.mark.parametrize("text", [
    '', '   ', '[]', '"text"', '{"0": [["A.0.forward"], ["l"]]', '{"A.0.forward": ["l"],}', '{"a": 1',
    '{"A.0.forward": 3}', '{"A.0.forward": ["l"], "B.0.forward": {"x": 1}}', '{"0": [["A.0.forward"], ["l"]], "0": 0}',
    '{"0": [["A.0.forward"], ["l"]], "1": [[1], ["m"]]}', '{"A.0.forward": ["l"], "0": [["B.0.forward"], ["m"]]}',
    '{"0": [["\\ud800"], ["l"]]}', '{"\\ud800": ["l"]}', '{"0": [["A.0.forward"], ["\\udc00"]]}', '{}', '{"0": []}',
    '{"0": [["A.0.forward"], ["l"]], "1": [["A.0.forward"], ["second"]]}', '\ufeff{"A.0.forward": ["l"]}',
    '{"A.0.forward": ["l"], "A.0.forward": ["m"]}', '{"A.0.forward": ["l"], "A.0.forward": 1}', 'nul\x00l',
])
def test_hostile_and_malformed_stacks_give_the_whole_dicts_result_or_error(text: str, tmp_path: Path) -> None:
    path = tmp_path / "stack.json"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    assert_same(path, ["A.0.forward", "B.0.forward", "0", "1"])


def test_damaged_bytes_give_the_whole_dicts_error(tmp_path: Path) -> None:
    rng = random.Random(7)
    path = tmp_path / "stack.json"
    write_members(path, new_layout(rng), rng)
    good = path.read_bytes()
    names = index_names(path, rng)
    for _ in range(60):
        raw = bytearray(good)
        for _ in range(rng.randint(1, 3)):
            raw[rng.randrange(len(raw))] = rng.choice(b'{}[]",:\\ x\xff0')
        path.write_bytes(bytes(raw[: rng.randint(1, len(raw))] if rng.random() < 0.3 else raw))
        assert_same(path, names)


def test_a_file_read_in_many_blocks_is_read_as_the_whole_dict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    members = [(str(k), [[api_name(rng), f"Only.{k}.forward"], lines(rng)]) for k in range(3000)]
    path = tmp_path / "stack.json"
    write_members(path, members, rng)
    monkeypatch.setattr(jsonfile, "BLOCK_BYTES", 4096)
    assert read_stack_records(path) is not None
    got = assert_same(path, index_names(path, rng))
    assert len(got) > 2000
