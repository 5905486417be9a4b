"""Block-wise dump reading, the forked target load and its wire form, and the lean join.

Each fast path is checked against the plain one it replaces: the same table
(every column, every value, every Python type), the same error message, the
same pairs.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import random
from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msprobe_core.default_plugins.pair_loading import pairload, tablewire
from msprobe_core.errors import DumpFormatError, InputError, MsprobeError
from msprobe_core.files import jsonfile
from msprobe_core.load.dumpjson import load_dump_file, load_stack
from msprobe_core.match.matching import apply_dtype_gate, join_on_keys
from msprobe_core.match.naming import renumber_backward
from msprobe_core.model import ApiEntry, DumpTable, MatchResult

from .conftest import corpora_dir
from .dumps import api, tensor, write_dump

CORPORA = corpora_dir()
COLUMNS = tablewire.COLUMNS


def signature(table: DumpTable) -> tuple:
    """Everything a table holds, with the type of every value."""
    cols = {c: [(type(v).__name__, repr(v)) for v in getattr(table, c)] for c in COLUMNS}
    apis = [(a.key, a.prefix, a.call, a.direction, a.first_row, a.n_rows) for a in table.apis]
    meta = (table.kind, table.task, table.mode, table.framework, table.level, str(table.source), table.stack)
    return cols, apis, meta


def corpus_dumps() -> list[Path]:
    return sorted(CORPORA.rglob("dump.json")) + sorted(CORPORA.rglob("debug.json")) if CORPORA.is_dir() else []


def synthetic_data(n: int = 60) -> dict:
    rng = random.Random(5)
    data = {}
    for i in range(n):
        inputs = [tensor(mx=rng.random(), mn=-rng.random(), mean=float("nan") if i % 7 == 0 else rng.random()),
                  {"type": "int", "value": i}, None, [{"type": "bool", "value": i % 2 == 0}]]
        data[f"Functional.op{i % 5}.{i}.forward"] = api(inputs, [tensor(mx=math.inf, norm=i)], {"k": {"type": "str",
                                                                                                   "value": "ü" * i}})
        data[f"Functional.op{i % 5}.{i}.backward"] = api([tensor()], [tensor(dtype="torch.bfloat16")])
    return data


@pytest.fixture()
def small_blocks(monkeypatch):
    """Stream every file in 64-byte blocks, dropping parsed text early (every code path of the window)."""
    monkeypatch.setattr(jsonfile, "BLOCK_BYTES", 64)


# ---------------------------------------------------------------------------------------------
# block-wise reading
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", corpus_dumps(), ids=lambda p: str(p.relative_to(CORPORA)))
def test_streamed_table_equals_whole_text(path: Path, monkeypatch) -> None:
    whole = signature(load_dump_file(path))
    monkeypatch.setattr(jsonfile, "BLOCK_BYTES", 64)
    assert signature(load_dump_file(path)) == whole


def test_streamed_synthetic_with_bom_and_unicode(tmp_path: Path, monkeypatch) -> None:
    path = write_dump(tmp_path, synthetic_data())
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    whole = signature(load_dump_file(path))
    monkeypatch.setattr(jsonfile, "BLOCK_BYTES", 64)
    assert signature(load_dump_file(path)) == whole


def _error(path: Path, load=load_dump_file) -> tuple[type, str]:
    """The error type and message ``load(path)`` raises (``NoneType``, "" when it loads)."""
    try:
        load(path)
    except MsprobeError as exc:
        return type(exc), str(exc)
    return type(None), ""


def test_streamed_errors_match_whole_text(tmp_path: Path, monkeypatch) -> None:
    """Truncated and corrupted documents: the same error class, message, line and column."""
    text = (write_dump(tmp_path / "ok", synthetic_data(12))).read_text()
    text = json.dumps(json.loads(text), indent=1)  # many lines, as msprobe writes
    rng = random.Random(11)
    cases = [text[:cut] for cut in range(0, len(text), max(1, len(text) // 150))]
    for _ in range(150):
        pos = rng.randrange(len(text))
        cases.append(text[:pos] + rng.choice(["x", "}", ",", '"', "]", "\n", "1e", "-", "{}"]) + text[pos + 1 :])
    cases += [text + "  x", text.replace('"data": {', '"data": {"a.0.forward": 1, ', 1), "  \n ", "[1, 2]"]
    path = tmp_path / "dump.json"
    checked = 0
    for case in cases:
        path.write_text(case)
        monkeypatch.setattr(jsonfile, "BLOCK_BYTES", 1 << 30)
        whole = _error(path)
        monkeypatch.setattr(jsonfile, "BLOCK_BYTES", 32)
        assert _error(path) == whole, case[-80:]
        checked += whole[0] is not type(None)
    assert checked > 200


@pytest.mark.parametrize("block", [5, 7, 16, 33])
def test_numbers_cut_by_the_window_are_read_whole(tmp_path: Path, monkeypatch, block: int) -> None:
    """A number split across blocks (``1.5`` | ``e+30``) is never taken for a shorter one."""
    body = ('{"task": "statistics", "level": "L1", "x": 1.5e+30, "y": -12345.678e-9, "z": 123456789012,'
            ' "data": {"F.a.0.forward": {"input_args": [{"type": "float", "value": 2.5E-7}]}}, "w": 7}')
    cases = [body] + [body.replace('"z": 123456789012', '"z": ' + "9" * 5000),
                      body.replace('{"input_args"', '1.25e+7, "F.b.0.forward": {"input_args"')]
    path = tmp_path / "dump.json"
    for text in cases:
        for pad in range(block):
            path.write_text(" " * pad + text)
            monkeypatch.setattr(jsonfile, "BLOCK_BYTES", 1 << 30)
            whole = _error(path), _error(path)[0] is type(None) and signature(load_dump_file(path))
            monkeypatch.setattr(jsonfile, "BLOCK_BYTES", block)
            assert (_error(path), _error(path)[0] is type(None) and signature(load_dump_file(path))) == whole


def test_streamed_utf8_and_empty_errors_come_first(tmp_path: Path, small_blocks) -> None:
    path = write_dump(tmp_path, synthetic_data(20))
    raw = path.read_bytes()
    path.write_bytes(raw[:100] + b"@@" + raw[100:-50] + b"\xff" + raw[-50:])  # JSON error early, bad byte late
    kind, message = _error(path)
    assert kind is InputError and f"not UTF-8 text (byte {len(raw) - 50 + 2})" in message
    path.write_bytes(b" \n" * 500)
    kind, message = _error(path)
    assert kind is InputError and message.endswith("dump.json file is empty")


@pytest.mark.parametrize("path", sorted(CORPORA.rglob("stack.json"))[:12] if CORPORA.is_dir() else [],
                         ids=lambda p: str(p.relative_to(CORPORA)))
def test_stack_streamed_equals_json(path: Path, small_blocks) -> None:
    doc = json.loads(path.read_text())
    stack = load_stack(path)
    if doc.get("0"):
        expected = {str(a): v[1] for v in doc.values() if isinstance(v, list) and len(v) == 2 and isinstance(v[0], list)
                    for a in v[0]}
    else:
        expected = doc
    assert stack == expected


def _stack_error_before(path: Path) -> tuple[type, str]:
    """What load_stack reported when it parsed the whole file with json.loads."""
    try:
        doc = jsonfile.read_json_file(path, "stack")
    except MsprobeError as exc:
        return type(exc), str(exc)
    if not isinstance(doc, dict):
        return DumpFormatError, str(DumpFormatError("top level of stack.json must be an object", path=path))
    return type(None), ""


@pytest.mark.parametrize("block", [1 << 30, 16])
def test_stack_errors_are_worded_as_json_loads(tmp_path: Path, monkeypatch, block: int) -> None:
    monkeypatch.setattr(jsonfile, "BLOCK_BYTES", block)
    text = json.dumps({str(i): [[f"F.a.{i}.forward"], ["File x.py, line 1", "File y.py"]] for i in range(6)}, indent=1)
    rng = random.Random(3)
    cases = [text[:cut] for cut in range(1, len(text), 7)]
    for _ in range(150):
        pos = rng.randrange(len(text))
        cases.append(text[:pos] + rng.choice(["x", "}", ",", '"', ":", "]", " 1", "{"]) + text[pos + 1 :])
    cases += ["[1]", '{"a": [1], }', '{"a" [1]}', '{"a": [1]} x', "{}", '{"0": 5}']
    path = tmp_path / "stack.json"
    errors = 0
    for case in cases:
        path.write_text(case)
        before = _stack_error_before(path)
        if before[0] is not type(None):
            errors += 1
            assert _error(path, load_stack) == before, case
    assert errors > 100


def test_stack_strings_are_kept_once(tmp_path: Path) -> None:
    lines = ["File a.py, line 1, in f", "File b.py, line 2, in g"]
    path = tmp_path / "stack.json"
    path.write_text(json.dumps({str(i): [[f"Functional.x.{i}.forward"], list(lines)] for i in range(50)}))
    stack = load_stack(path)
    assert len(stack) == 50 and all(v == lines for v in stack.values())
    assert len({id(line) for v in stack.values() for line in v}) == 2


# ---------------------------------------------------------------------------------------------
# wire form and the forked load
# ---------------------------------------------------------------------------------------------


def _mixed_table() -> DumpTable:
    n = 40
    table = DumpTable(source=Path("/x/dump.json"), kind="dump", task="statistics", mode="statistics",
                      framework="pytorch", level="L1", stack={"a": ["b"]}, plugin_data={"k": 1}, dialects=["old"])
    odd = [None, 1, -0.0, math.inf, -math.inf, "Nan", True, 2**70, "s", [1, 2], 0.1, 3]
    for i in range(n):
        table.apis.append(ApiEntry(f"Functional.f.{i}.forward", "Functional.f", f"{i}.forward", "forward", i, 1))
        table.row_api.append(i)
        table.name.append(f"Functional.f.{i}.forward.input.{i}\x00" if i == 3 else f"Functional.f.{i}.forward.input.0")
        table.state.append("input")
        table.dtype.append(None if i % 9 == 0 else "torch.float32")
        table.shape.append("[2, 3]")
        table.requires_grad.append(None if i % 2 else "True")
        table.max.append(odd[i % len(odd)])
        table.min.append(float(i) / 7)
        table.mean.append(odd[(i + 3) % len(odd)])
        table.norm.append(i)
        table.md5.append(f"{i:08x}")
        table.data_name.append("-1")
    return table


def test_wire_round_trip_keeps_values_and_types() -> None:
    table = _mixed_table()
    message = pickle.dumps(tablewire.encode_table(table))
    assert signature(tablewire.decode_table(pickle.loads(message))) == signature(table)
    rebuilt = tablewire.decode_table(pickle.loads(message), like=table)
    assert signature(rebuilt) == signature(table)
    assert all(a is b for a, b in zip(rebuilt.name, table.name))  # shared with the other side
    other = _mixed_table()
    other.name[5] = "another name"
    other.apis[7].key = "another key"
    rebuilt = tablewire.decode_table(pickle.loads(message), like=other)
    assert signature(rebuilt) == signature(table)
    assert rebuilt.name[6] is other.name[6] and rebuilt.name[5] == table.name[5]
    assert rebuilt.apis[6].key is other.apis[6].key and rebuilt.apis[7].key == table.apis[7].key


def test_wire_consume_empties_the_sent_table() -> None:
    table = _mixed_table()
    expected = signature(table)
    message = pickle.dumps(tablewire.encode_table(table, consume=True))
    assert all(getattr(table, c) == [] for c in COLUMNS)
    assert signature(tablewire.decode_table(pickle.loads(message))) == expected


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_api_entry_pickles_without_a_dict(protocol: int) -> None:
    entry = ApiEntry("F.a.0.forward", "F.a", "0.forward", "forward", 3, 4)
    assert not hasattr(entry, "__dict__")
    assert pickle.loads(pickle.dumps(entry, protocol=protocol)) == entry


def test_wire_refuses_what_it_cannot_carry() -> None:
    table = _mixed_table()
    table.surprise = 1  # type: ignore[attr-defined]
    assert tablewire.encode_table(table) is None
    table = _mixed_table()
    table.max = tuple(table.max)  # type: ignore[assignment]
    assert tablewire.encode_table(table) is None


@pytest.fixture()
def fork_always(monkeypatch):
    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    monkeypatch.setattr(pairload, "MIN_FORK_BYTES", 0)
    monkeypatch.delenv(pairload.ENV_SERIAL, raising=False)
    # on one core, or after earlier tests left threads (dask, progress) running, the policy says no;
    # these tests are about the forked path itself, whose child runs no code that takes their locks
    monkeypatch.setattr(pairload, "fork_allowed", lambda: True)
    assert pairload.can_fork(Path(__file__))


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    target = write_dump(tmp_path / "t", synthetic_data(30))
    golden = write_dump(tmp_path / "g", synthetic_data(25))
    return target, golden


def test_forked_load_equals_serial(tmp_path: Path, fork_always) -> None:
    target, golden = _pair(tmp_path)
    seen = []
    t, g = pairload.load_two(load_dump_file, target, golden, meanwhile=seen.append)
    assert signature(t) == signature(load_dump_file(target))
    assert signature(g) == signature(load_dump_file(golden))
    assert seen == [g]


def test_forked_load_falls_back_when_the_child_fails(tmp_path: Path, fork_always, monkeypatch) -> None:
    target, golden = _pair(tmp_path)
    monkeypatch.setattr(pairload, "can_encode", lambda table: False)
    t, _ = pairload.load_two(load_dump_file, target, golden)
    assert signature(t) == signature(load_dump_file(target))


def _raised(fn) -> tuple[type, str]:
    with pytest.raises(MsprobeError) as info:
        fn()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("broken", ["target", "golden", "both"])
def test_forked_load_reports_errors_as_serial(tmp_path: Path, fork_always, monkeypatch, broken: str) -> None:
    target, golden = _pair(tmp_path)
    for side, path in (("target", target), ("golden", golden)):
        if broken in (side, "both"):
            path.write_text(path.read_text().replace('"Max"', '"Max": {}, "x"', 1))
    forked = _raised(lambda: pairload.load_two(load_dump_file, target, golden))
    monkeypatch.setenv(pairload.ENV_SERIAL, "1")
    assert forked == _raised(lambda: pairload.load_two(load_dump_file, target, golden))
    assert forked[0] is DumpFormatError and str(target if broken != "golden" else golden) in forked[1]


# ---------------------------------------------------------------------------------------------
# matching
# ---------------------------------------------------------------------------------------------


def _join_reference(target_keys: list[str], golden_keys: list[str]) -> tuple[list[int], list[int]]:
    index: dict[str, list[int]] = {}
    for j, key in enumerate(golden_keys):
        index.setdefault(key, []).append(j)
    t_out, g_out = [], []
    for i, key in enumerate(target_keys):
        for j in index.get(key, [-1]):
            t_out.append(i)
            g_out.append(j)
    return t_out, g_out


@pytest.mark.parametrize("seed", range(30))
def test_join_on_keys_equals_a_relational_join(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = [f"k{i}" for i in range(rng.randint(1, 40))]
    target = [rng.choice(alphabet) for _ in range(rng.randint(0, 60))]
    golden = [rng.choice(alphabet) for _ in range(rng.randint(0, 60))]
    if seed % 3 == 0:
        golden = list(dict.fromkeys(golden))  # unique golden keys: the one-pass path
    match = join_on_keys(target, golden)
    assert (match.target, match.golden) == _join_reference(target, golden)


class _Colliding(str):
    """A key whose hash is the same for every value (the aligned join must not take equal hashes for equal keys)."""

    def __hash__(self) -> int:
        return 7


@pytest.mark.parametrize("seed", range(12))
def test_join_on_keys_of_aligned_sides_equals_a_relational_join(seed: int) -> None:
    # both sides hold the same keys in the same order: the join pairs row i with row i unless a key repeats
    rng = random.Random(seed)
    keys = [f"Functional.op.{i}.forward.input.0" for i in range(rng.randint(0, 50))]
    if seed % 3 == 1 and keys:
        keys[rng.randrange(len(keys))] = keys[0]  # a repeated key: a relational join pairs every copy
    if seed % 3 == 2:
        keys = [_Colliding(k) for k in keys]  # distinct keys whose hashes all collide
    golden = [type(k)("".join(k)) if seed % 2 else k for k in keys]  # equal keys, often other objects
    match = join_on_keys(list(keys), golden)
    assert (match.target, match.golden) == _join_reference(list(keys), golden)
    assert match.golden is not match.target  # the two sides' lists are changed independently later


def test_dtype_gate_unpairs_only_incompatible_pairs() -> None:
    floats = {"f32", "bf16"}
    target = ["f32", "bf16", "i64", "f32", None, "i64"]
    golden = ["f32", "f32", "f32", "i64", None, "i" + "64"]  # an equal string that is another object
    match = MatchResult(target=[0, 1, 2, 3, 4, 5, 5], golden=[0, 1, 2, 3, 4, 5, -1])
    gated = apply_dtype_gate(match, target, golden, lambda a, b: a in floats and b in floats)
    assert gated.golden == [0, 1, -1, -1, 4, 5, -1]
    assert gated.target == match.target


def test_renumber_backward_returns_the_keys_when_nothing_changes() -> None:
    table = DumpTable(source=Path("d.json"), kind="dump", task="statistics", mode="statistics", framework="")
    table.apis = [ApiEntry("F.op.0.backward", "F.op", "0.backward", "backward", 0, 1),
                  ApiEntry("F.op.5.backward", "F.op", "5.backward", "backward", 1, 1)]
    keys = ["F.op.0.backward.input.0", "F.op.5.backward.input.0"]
    out = renumber_backward(table, keys)
    assert out == ["F.op.0.backward.input.0", "F.op.1.backward.input.0"] and keys[1].startswith("F.op.5")
    table.apis = table.apis[:1]
    same = keys[:1]
    assert renumber_backward(table, same) is same


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["F.op", "Torch.mül", "M.x.Linear", "T.３"]), st.integers(0, 12),
                          st.sampled_from(["forward", "backward"]), st.integers(1, 4),
                          st.sampled_from(["input.0", "output.0", "ｘ.1", "parameters.w"])), max_size=25))
def test_renumbered_keys_are_the_same_in_c_and_in_python(calls: list) -> None:
    """The renumbering of backward calls gives the same keys, equal and of the same kind of string, whether the C
    scanner renames the rows or Python does (names with characters past ASCII included)."""
    from msprobe_core.match import naming

    table = DumpTable(source=Path("d.json"), kind="dump", task="statistics", mode="statistics", framework="")
    keys: list[str] = []
    for prefix, number, direction, rows, leaf in calls:
        table.apis.append(ApiEntry(f"{prefix}.{number}.{direction}", prefix, f"{number}.{direction}", direction,
                                   len(keys), rows))
        keys += [f"{prefix}.{number}.{direction}.{leaf}"] * (rows - 1) + [f"other.{leaf}"]
    c_path = renumber_backward(table, list(keys))
    renamed, naming._renamed_keys = naming._renamed_keys, None
    try:
        python = renumber_backward(table, list(keys))
    finally:
        naming._renamed_keys = renamed
    assert c_path == python and [hash(k) for k in c_path] == [hash(k) for k in python]


@pytest.fixture(scope="module")
def big_pair(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A pair whose target (about 20 MB) is loaded by a forked child (above ``pairload.MIN_FORK_BYTES``)."""
    from .test_hostile_inputs import _big_stats_pair

    pair = _big_stats_pair(tmp_path_factory.mktemp("big"), 40_000)
    assert Path(pair[1]).stat().st_size > pairload.MIN_FORK_BYTES
    return pair


@pytest.mark.skipif(not Path("/proc/self/task").is_dir() or not hasattr(os, "fork"), reason="needs Linux /proc")
def test_a_stopped_pair_load_child_is_given_up_after_the_stall_limit(big_pair: list[str], tmp_path: Path) -> None:
    """The real command's child loading the target gets SIGSTOP: after the stall limit (1 s here) the run kills
    it, loads the target itself and says so in one warning line; the files are those of a serial load."""
    import re
    import signal
    import subprocess

    from .test_hostile_inputs import _spawn

    env = {**os.environ, "MSPROBE_NO_CHUNK_WORKER": "1", "MSPROBE_NO_FORK": ""}  # the first child: the load's
    serial = _spawn([*big_pair, "-o", str(tmp_path / "serial")], env={**env, pairload.ENV_SERIAL: "1"})
    assert serial.communicate(timeout=600)[0] is not None and serial.returncode == 0
    out = tmp_path / "stopped"
    proc = _spawn([*big_pair, "-o", str(out)], env={**env, "MSPROBE_CHILD_STALL_S": "1"})
    children, child = Path(f"/proc/{proc.pid}/task/{proc.pid}/children"), ""
    while not child and proc.poll() is None:  # the run forks its load's child while it is starting
        child = children.read_text().strip() if children.exists() else ""
    assert child and " " not in child, (child, proc.communicate())
    os.kill(int(child), signal.SIGSTOP)
    try:
        stdout, stderr = proc.communicate(timeout=600)  # without the watch: forever
    except subprocess.TimeoutExpired:
        proc.kill()
        os.kill(int(child), signal.SIGKILL)
        proc.communicate()
        pytest.fail("the run waited for its stopped pair-load child")
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr and not stderr.strip(), stderr
    said = [line for line in stdout.splitlines() if "made no progress" in line]
    assert len(said) == 1 and "[WARNING]" in said[0], said
    assert f"child loading the target dump (pid {child}) made no progress for 1 s" in said[0], said
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(int(child), 0)

    def files(root: Path) -> dict[str, bytes]:
        return {re.sub(r"_\d{14}", "", p.name): p.read_bytes() for p in root.iterdir()}

    assert files(out) == files(tmp_path / "serial")



@pytest.mark.exercises_hooks("msprobe_load_pair")
def test_pair_loading_turned_off_the_core_loads_the_pair_serially_with_the_same_files(
        big_pair: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``pair_loading`` turned off: no plugin implements ``msprobe_load_pair`` and the core loads the target, then the
    golden, in its own process; the files are byte for byte those of the default run (the target in a child)."""
    import re

    from msprobe_core.host.registry import PluginHost

    from .test_hostile_inputs import _spawn

    env = {**os.environ, "MSPROBE_NO_CHUNK_WORKER": "1", "MSPROBE_NO_FORK": ""}
    env.pop(pairload.ENV_SERIAL, None)
    forked = _spawn([*big_pair, "-o", str(tmp_path / "forked")], env=env)
    serial = _spawn([*big_pair, "-o", str(tmp_path / "serial")], env={**env, "MSPROBE_DISABLE_PLUGINS": "pair_loading"})
    for proc in (forked, serial):
        _, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0 and not stderr.strip(), stderr

    def files(root: Path) -> dict[str, bytes]:
        return {re.sub(r"_\d{14}", "", p.name): p.read_bytes() for p in root.iterdir()}

    assert files(tmp_path / "serial") == files(tmp_path / "forked") and files(tmp_path / "serial")
    assert [i.plugin_name for i in PluginHost().pm.hook.msprobe_load_pair.get_hookimpls()] == ["pair_loading"]
    monkeypatch.setenv("MSPROBE_DISABLE_PLUGINS", "pair_loading")
    assert PluginHost().pm.hook.msprobe_load_pair.get_hookimpls() == []


@pytest.mark.exercises_hooks("msprobe_load_pair")
def test_a_plugins_msprobe_load_pair_is_used_and_its_junk_named(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A third party's ``msprobe_load_pair`` comes before the default plugin's: what it gives is the pair; a
    result that is no pair of tables is named as that plugin's, not a crash deep in the stage."""
    from msprobe_core import hookimpl
    from msprobe_core.errors import PluginFailed
    from msprobe_core.host.registry import PluginHost

    target = tmp_path / "t.json"
    golden = tmp_path / "g.json"
    for path in (target, golden):
        path.write_text("{}")
    seen: list[str] = []

    class Reversed:
        """Loads the golden first (an order of its own), then the target."""

        @hookimpl(tryfirst=True)
        def msprobe_load_pair(self, load, target, golden, meanwhile):
            g = load(golden)
            meanwhile(g)
            return load(target), g

    class Junk:
        @hookimpl(tryfirst=True)
        def msprobe_load_pair(self, load, target, golden, meanwhile):
            return "both"

    def load(path: Path):
        seen.append(path.name)
        return DumpTable(source=path, kind="dump", task="statistics", mode="statistics", framework="pytorch")

    t, g = PluginHost(extra_plugins=[Reversed()]).load_pair(load, target, golden, lambda table: seen.append("x"))
    assert (t.source, g.source) == (target, golden) and seen == ["g.json", "x", "t.json"]
    with pytest.raises(PluginFailed, match="msprobe_load_pair"):
        PluginHost(extra_plugins=[Junk()]).load_pair(load, target, golden, lambda table: None)


@pytest.mark.parametrize("distinct", [3, 300, 70_000])
def test_wire_categories_decode_to_the_same_objects(distinct: int) -> None:
    """A category column of any width (one, two or four bytes a code) decodes to its values, each the one object of
    the category list; a code out of range is a damaged message, as with any other decode."""
    values = [None if k % 11 == 0 else f"v{k % distinct}" for k in range(distinct * 5 + 5)]
    wire = tablewire._encode_strings(values, {str, type(None)})
    if wire[0] != "cat":  # too many categories for the encoder: the widest codes by hand
        code_of = {v: i for i, v in enumerate(dict.fromkeys(values))}
        wire = ("cat", list(code_of), array("I", map(code_of.__getitem__, values)))
    decoded = tablewire.decode_column(wire)
    assert decoded == values
    by_value = {v: v for v in wire[1]}  # the category list's own objects
    assert all(d is by_value[v] for d, v in zip(decoded, values))
    ints = list(range(50))
    assert tablewire.decode_column(("int", array("q", [3, 0, 49, 3])), ints) == [3, 0, 49, 3]
    with pytest.raises(IndexError):
        tablewire.decode_column(("cat", ["a"], bytes([0, 1])))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["torch.float32", "torch.bfloat16", "[2, 3]", None, "", "é", "a" * 40]) | st.text(),
                min_size=1, max_size=300), st.booleans())
def test_the_c_coding_of_a_column_equals_the_python_coding(values: list, many: bool) -> None:
    """A column of str and None coded by the C scanner (its values in order, its codes and their width) is the one
    the Python coding makes, and decodes to the same objects; a column the C scanner declines goes the Python way."""
    if many:
        values = values + [str(i) for i in range(300)]  # more distinct values than a byte holds, or than the share
    coded = tablewire.encode_column(list(values))
    c_coding, tablewire._category_codes = tablewire._category_codes, None
    try:
        python = tablewire.encode_column(list(values))
    finally:
        tablewire._category_codes = c_coding
    assert coded == python and [type(x) for x in coded] == [type(x) for x in python]
    assert tablewire.decode_column(coded) == values
