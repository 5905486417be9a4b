"""The C fast path of the dump.json loader (``msprobe_core._dumpscan``) against the Python walk.

The scanner is an accelerator: for every file it either declines (``scan_dump`` returns
``None``, the Python walk reads the file) or builds exactly the table the Python walk
builds, value by value and type by type. These tests hold it to that on every dump file
of the corpora, at every block boundary, on generated documents (hypothesis) and on
broken ones, and check that what it declines still loads, or fails, as before.
"""

from __future__ import annotations

import json
import math
import os
import random
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msprobe_core.default_plugins.fast_scan import scan as dumpscan
from msprobe_core.default_plugins.pair_loading.tablewire import COLUMNS
from msprobe_core.errors import MsprobeError
from msprobe_core.load.dialects import CURRENT_MEMBERS, ENTRY_METADATA, records_of
from msprobe_core.load.document import split_api_key
from msprobe_core.load.dumpjson import load_dump_file
from msprobe_core.model import DumpTable

from .conftest import corpora_dir, no_corpora_reason
from .test_loader_properties import FLOATS, NAMES, dump_doc, other_leaf, tensor_leaf

pytestmark = pytest.mark.skipif(dumpscan.Scanner is None, reason="the C scanner is not built here")
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


def python_walk(path: Path, kind: str | None = None):
    """The table (or the error) of the Python walk alone."""
    os.environ[dumpscan.ENV_PYTHON_LOADER] = "1"
    try:
        return load_dump_file(path, kind)
    except MsprobeError as exc:
        return exc
    finally:
        del os.environ[dumpscan.ENV_PYTHON_LOADER]


def differences(fast, slow) -> list[str]:
    """Where two tables differ: any column value (or its type), an API field, a table attribute."""
    found = []
    for col in COLUMNS:
        a, b = getattr(fast, col), getattr(slow, col)
        if len(a) != len(b):
            found.append(f"{col}: {len(a)} rows vs {len(b)}")
            continue
        for i, (x, y) in enumerate(zip(a, b)):
            same_nan = isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)
            if type(x) is not type(y) or (x != y and not same_nan) or (
                    isinstance(x, float) and math.copysign(1, x) != math.copysign(1, y)):
                found.append(f"{col}[{i}]: {x!r} vs {y!r}")
                break
    api = [(a.key, a.prefix, a.call, a.direction, a.first_row, a.n_rows) for a in fast.apis]
    if api != [(a.key, a.prefix, a.call, a.direction, a.first_row, a.n_rows) for a in slow.apis]:
        found.append("apis")
    for attr in ("task", "mode", "framework", "level", "kind", "source"):
        if getattr(fast, attr) != getattr(slow, attr):
            found.append(f"{attr}: {getattr(fast, attr)!r} vs {getattr(slow, attr)!r}")
    return found


def check_same(path: Path, kind: str = "dump", must_take: bool = False) -> object:
    """Scan ``path``; a table must equal the Python walk's, a decline must leave it a loadable or failing file."""
    try:
        fast = dumpscan.scan_dump(path, kind)
    except MsprobeError as exc:  # a header problem, found once the rows are read: the same message
        slow = python_walk(path, kind)
        assert str(exc) == str(slow)
        return slow
    slow = python_walk(path, kind)
    if fast is None:
        assert not must_take, f"the scanner declined {path}"
        return slow
    assert not isinstance(slow, Exception), f"the scanner read a file the Python walk refuses: {slow}"
    assert differences(fast, slow) == []
    return fast


def corpus_dump_files() -> list[Path]:
    root = corpora_dir()
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*.json") if p.name in ("dump.json", "debug.json"))


# ============================================================================ the corpora
@pytest.mark.parametrize("path", corpus_dump_files(), ids=lambda p: str(p.relative_to(corpora_dir())))
def test_every_corpus_dump_reads_as_the_python_walk_reads_it(path: Path) -> None:
    kind = "debug" if path.name.endswith("debug.json") else "dump"
    table = check_same(path, kind, must_take=True)
    assert len(table.name) > 0


def test_the_corpora_hold_dump_files() -> None:
    if not corpora_dir().is_dir():
        pytest.skip(no_corpora_reason())
    assert len(corpus_dump_files()) >= 30


def dumper_version_files() -> list[Path]:
    root = Path(__file__).resolve().parent / "data" / "dumpers"
    return sorted(root.rglob("dump.json")) if root.is_dir() else []


@pytest.mark.parametrize("path", dumper_version_files(), ids=lambda p: "/".join(p.parts[-6:-3] + p.parts[-2:-1]))
def test_every_dumper_versions_dump_reads_as_the_python_walk_reads_it(path: Path) -> None:
    """The dumps of every mindstudio-probe release: the scanner takes each one whose shapes are current
    (is_recompute, Min_except_inf_nan… included) and leaves only the older shapes to the Python walk."""
    table = check_same(path)
    declined = dumpscan.scan_dump(path, "dump") is None
    assert declined == bool(table.dialects), table.dialects
    assert not records_of(table)


@pytest.fixture(scope="module")
def mixed_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dump with every kind of leaf the walk knows (tensor, scalars, sizes, slices, p2p, rank parts...)."""
    data = {
        "Functional.linear.0.forward": {
            "input_args": [
                {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 3], "Max": 1.5, "Min": -2,
                 "Mean": float("nan"), "Norm": float("inf"), "requires_grad": True, "md5": "abcd1234"},
                None, {"type": "float", "value": -0.0}, {"type": "int", "value": 7}, {"type": "bool", "value": True},
                {"type": "str", "value": "mean"}, {"type": "NoneType"}, {"type": "float", "value": None},
                {"type": "float", "value": float("nan")}, {"type": "torch.Size", "value": [1, 2]},
                {"type": "slice", "value": [0, None, 2]}, {"type": "ellipsis", "value": "..."},
                {"type": "tuple", "value": [1, 2]},
                [{"type": "torch.Tensor", "dtype": None, "shape": None, "requires_grad": "True"}, [None, []]],
            ],
            "input_kwargs": {"dst": {"type": "int", "value": 1}, "group": {"type": "torch.ProcessGroup",
                                                                          "group_ranks": [0, 1]},
                             "p2p": {"class_type": "torch.distributed.P2POp",
                                     "tensor": {"type": "torch.Tensor", "dtype": "torch.bfloat16", "shape": [4],
                                                "Max": True, "Min": False, "Mean": "x", "Norm": None}},
                             "p2p_empty": {"class_type": "torch.distributed.P2POp", "tensor": 3},
                             "nested": {"a": {"b": [{"type": "int", "value": 1}]}}},
            "output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [], "Max": 1e308,
                        "Min": -1e-320, "Mean": 0, "Norm": 12345678901234567890, "data_name": "out.0.pt"}],
            "parameters": {"weight": {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [3],
                                      "data_name": "w"}},
        },
        "Module.layer.Linear.backward.0": {"input": [{"type": "torch.Tensor", "dtype": "torch.float32",
                                                       "shape": [1], "data_name": ""}]},
        "Module.layer.Linear.parameters_grad": {"weight": [{"type": "torch.Tensor", "dtype": "torch.float32",
                                                            "shape": [1]}]},
        "Module.x.parameters_grad.y.forward": {"output": [[{"type": "int", "value": 1}]]},
        "Functional.relu.1.forward.debug": [{"type": "int", "value": 3}],
        "parameters_grad": {"x": None},
        "a.forward": {"output": [None]},
        "Module.x.Y.forward.0": {"is_recompute": False, "output": [None]},
        "Torch.layout.0.forward": {"output": [{"type": "mindspore.Tensor", "dtype": "Float32", "shape": [2],
                                               "Max": 1.0, "layout": {"Partial": []}, "hsdp_shard_size": 2,
                                               "Max_except_inf_nan": 1.0, "device_mesh": [0, 1]}]},
    }
    doc = {"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": None, "data": data,
           "extra": {"nested": [1, 2.5, "é\\\"x", None, True]}}
    path = tmp_path_factory.mktemp("scan") / "dump.json"
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False), encoding="utf-8")
    return path


def test_every_leaf_kind_reads_as_the_python_walk_reads_it(mixed_dump: Path) -> None:
    table = check_same(mixed_dump, must_take=True)
    assert "Module.layer.Linear.parameters_grad" in [a.key for a in table.apis]
    assert len(table.apis) == 9


@pytest.mark.parametrize("data", [
    {"Torch.a.0.forward": {"output": [None]}, "no_direction_here": {"output": [None]}},  # not compared by msprobe
    {"forward": {"output": [None]}},
    {"Torch.a.0.backward": {"grad_input": [None], "grad_output": [None]}},  # mindstudio-probe 1.0.1
    {"Torch.a.0.forward": {"output": [None], "mystery": [None]}},  # an entry member nobody knows
    {"Torch.a.0.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [],
                                       "Std": 1.0}]}},  # a leaf field nobody knows
    {"Torch.a.0.forward": {"output": [{"class_type": "torch.distributed.P2POp", "tensor": None, "x": 1}]}},
    {"Torch.a.0.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [],
                                       "md5": ""}]}},  # an empty md5
])
def test_what_the_walk_counts_or_maps_is_left_to_it(data: dict, tmp_path: Path) -> None:
    """Shapes the Python walk counts as not understood, or maps from an older dumper: the scanner declines them."""
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"task": "statistics", "data": data}), encoding="utf-8")
    assert dumpscan.scan_dump(path, "dump") is None
    assert isinstance(check_same(path), DumpTable)


def test_a_debug_file_reads_as_the_python_walk_reads_it(mixed_dump: Path, tmp_path: Path) -> None:
    path = tmp_path / "debug.json"
    doc = json.loads(mixed_dump.read_text(encoding="utf-8"))
    doc["task"] = "tensor"
    del doc["data"]["Module.x.Y.forward.0"]  # is_recompute belongs to API entries, not to debug values
    path.write_text(json.dumps(doc), encoding="utf-8")
    table = check_same(path, "debug", must_take=True)
    assert {a.direction for a in table.apis} == {"debug"}


@pytest.mark.parametrize("block", [1, 2, 3, 5, 17, 64, 1000])
def test_any_block_boundary_gives_the_same_table(block: int, mixed_dump: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The file read a few bytes at a time: every value, key and number is cut somewhere."""
    monkeypatch.setattr(dumpscan, "BLOCK_BYTES", block)
    check_same(mixed_dump, must_take=True)


def test_a_corpus_dump_read_in_small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    files = [p for p in corpus_dump_files() if p.stat().st_size < 400_000]
    if not files:
        pytest.skip(no_corpora_reason())
    monkeypatch.setattr(dumpscan, "BLOCK_BYTES", 997)
    for path in files[:4]:
        check_same(path, "debug" if path.name.endswith("debug.json") else "dump", must_take=True)


def test_load_dump_file_takes_the_fast_path(mixed_dump: Path) -> None:
    """Without MSPROBE_PY_LOADER the loader returns the scanner's table (same rows, a new table each time)."""
    assert dumpscan.available()
    assert differences(load_dump_file(mixed_dump), python_walk(mixed_dump)) == []


# ============================================================================ generated documents
@SETTINGS
@given(doc=dump_doc(), ascii_only=st.booleans(), indent=st.sampled_from([None, 0, 1, 4]))
def test_generated_dumps_read_as_the_python_walk_reads_them(doc: dict, ascii_only: bool, indent: int | None,
                                                            tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.mktemp("gen") / "dump.json"
    path.write_text(json.dumps(doc, indent=indent, ensure_ascii=ascii_only), encoding="utf-8")
    check_same(path)


KEY_PARTS = st.sampled_from(["forward", "backward", "parameters_grad", "debug", "Torch", "x", "0", "12", ""])


@SETTINGS
@given(keys=st.lists(st.lists(KEY_PARTS, min_size=1, max_size=5).map(".".join), max_size=8, unique=True),
       debug=st.booleans())
def test_any_key_splits_as_the_python_walk_splits_it(keys: list[str], debug: bool,
                                                     tmp_path_factory: pytest.TempPathFactory) -> None:
    """``split_api_key`` in C: which keys are APIs, their prefix, call and direction, and how each is walked."""
    leaf = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [1], "Max": 1.0}
    data = {k: {"input_args": [leaf, None], "output": [leaf], "parameters": {"weight": leaf}} for k in keys}
    path = tmp_path_factory.mktemp("keys") / ("debug.json" if debug else "dump.json")
    path.write_text(json.dumps({"task": "statistics", "level": "L1", "data": data}), encoding="utf-8")
    # a key msprobe does not compare is counted by the Python walk: the scanner leaves such a file to it
    compared = debug or all(split_api_key(k, False) is not None for k in keys)
    table = check_same(path, "debug" if debug else "dump", must_take=compared)
    assert bool(records_of(table)) != compared


SCALARS = FLOATS | st.booleans() | st.none() | NAMES | st.integers(-(10**30), 10**30)


@SETTINGS
@given(values=st.lists(SCALARS, min_size=1, max_size=12), kinds=st.lists(st.sampled_from(
    ["int", "float", "bool", "str", "torch.dtype", "NoneType"]), min_size=1, max_size=12),
    md5=st.booleans(), leaves=st.lists(tensor_leaf() | other_leaf(), max_size=4))
def test_scalar_leaves_get_the_python_walks_dtype_and_md5(values: list, kinds: list[str], md5: bool, leaves: list,
                                                           tmp_path_factory: pytest.TempPathFactory) -> None:
    """The C crc32 and type names of plain scalars, against ``non_tensor`` (zlib and ``str(type(v))``)."""
    args = [{"type": k, "value": v} for k, v in zip(kinds * len(values), values)] + leaves
    if md5:
        args = [dict(a, md5=zlib.crc32(repr(a).encode()).to_bytes(4, "big").hex()) for a in args]
    data = {"Torch.f.0.forward": {"input_args": args}}
    path = tmp_path_factory.mktemp("scalars") / "dump.json"
    path.write_text(json.dumps({"task": "statistics", "level": "L1", "data": data}), encoding="utf-8")
    check_same(path)


# ============================================================================ broken and unusual files
def mutate(raw: bytes, rng: random.Random) -> bytes:
    """One random byte-level damage: a cut, a deleted, doubled or replaced byte, an inserted token."""
    i = rng.randrange(len(raw))
    choice = rng.randrange(5)
    if choice == 0:
        return raw[:i]
    if choice == 1:
        return raw[:i] + raw[i + 1:]
    if choice == 2:
        return raw[:i] + raw[i:i + 1] * 2 + raw[i + 1:]
    if choice == 3:
        return raw[:i] + bytes([rng.choice(b'{}[]",:0-.eE \\\x00\xff\xc3tfnNI')]) + raw[i + 1:]
    return raw[:i] + rng.choice([b"NaN", b"-Infinity", b"1e400", b'"k":', b",", b"null", b"\xef\xbb\xbf"]) + raw[i:]


@SETTINGS
@given(seed=st.integers(0, 2**32))
def test_damaged_files_are_declined_or_read_exactly(seed: int, mixed_dump: Path,
                                                    tmp_path_factory: pytest.TempPathFactory) -> None:
    """A damaged file either loads the same both ways, or the scanner declines and the Python walk decides."""
    rng = random.Random(seed)
    raw = mixed_dump.read_bytes()
    for _ in range(rng.randrange(1, 4)):
        raw = mutate(raw, rng) or b" "
    path = tmp_path_factory.mktemp("bad") / "dump.json"
    path.write_bytes(raw)
    check_same(path)


@pytest.mark.parametrize("text, fails", [
    ("\ufeff" + '{"task": "statistics", "data": {}}', False),  # a byte-order mark, as utf-8-sig reads it
    ('{"task": "statistics", "data": {}}\n\n  \t', False),
    ('{"task": "statistics", "data": {}} x', True),  # extra data
    ('{"task": "statistics", "data": {"Torch.a.0.forward": {}, "Torch.a.0.forward": {}}}', True),  # repeated key
    ('{"task": "statistics", "task": "tensor", "data": {}}', False),
    ('{"task": "statistics", "data": {"Torch.a.0.forward": {"output": [{"type": "int", "value": 1, "value": 2}]}}}',
     False),
    ('{"task": "statistics", "data": {"Torch.\\u00e9.0.forward": {"output": [null]}}}', False),  # an escape
    ('{"task": "statistics", "data": {"Torch.é.0.forward": {"output": [null]}}}', False),  # non-ASCII
    ('{"task": "statistics", "data": []}', True),
    ('{"task": "statistics", "data": {"Torch.a.0.forward": {"output": [1]}}}', True),  # a bare value
    ('{"task": "statistics", "data": {"Torch.a.0.forward": {"output": [{"type": "torch.Tensor", "dtype": 1}]}}}',
     True),
    ('{"task": "statistics", "data": {"Torch.a.0.forward": {"output": [{"type": "int", "value": 1, "md5": 5}]}}}',
     False),  # an md5 number: the Python walk takes it
    ('{"task": "statistics", "data": {"Torch.a.0.forward": {"output": [' + "[" * 150 + "null" + "]" * 150 + "]}}}",
     False),  # deeper than the scanner goes
    ('{"task": "statistics", "data": {"Torch.a.0.forward": {"output": [{"type": "int", "value": '
     + "1" * 100 + "}]}}}", False),  # a long number
    ("", True),
    ("[]", True),
    ('{"data": {}}', True),  # no task: the header check of the Python walk names it
    ('{"task": "statistics", "framework": 3, "data": {}}', True),
])
def test_unusual_files_load_or_fail_as_before(text: str, fails: bool, tmp_path: Path) -> None:
    path = tmp_path / "dump.json"
    path.write_bytes(text.encode("utf-8"))
    outcome = check_same(path)
    assert isinstance(outcome, Exception) == fails
    if fails:
        with pytest.raises(MsprobeError) as info:
            load_dump_file(path)
        assert str(info.value) == str(outcome)


def test_a_failing_python_helper_only_declines(mixed_dump: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception in the Python callback for unusual leaves makes the scanner decline, nothing more."""
    def broken(*args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(dumpscan, "non_tensor", broken)
    assert dumpscan.scan_dump(mixed_dump, "dump") is None
    monkeypatch.undo()
    assert dumpscan.scan_dump(mixed_dump, "dump") is not None


def test_the_switch_turns_the_scanner_off(mixed_dump: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(dumpscan.ENV_PYTHON_LOADER, "1")
    assert not dumpscan.available()
    assert dumpscan.scan_dump(mixed_dump, "dump") is None


def test_thousands_of_distinct_dtypes_shapes_and_names(tmp_path: Path) -> None:
    """The scanner's string caches grow past their first sizes and still give the walk's values."""
    args = [{"type": "torch.Tensor", "dtype": f"torch.t{i}", "shape": [i, i + 1], "Max": i * 0.5, "Min": -i,
             "Mean": None, "Norm": str(i)} for i in range(3000)]
    data = {f"Functional.op{i}.{i}.forward": {"input_args": args[i:i + 3], "output": [{"type": "str", "value": str(i)}]}
            for i in range(1000)}
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"task": "statistics", "level": "L1", "data": data}), encoding="utf-8")
    table = check_same(path, must_take=True)
    assert len(set(table.dtype)) == 1003 and len(table.apis) == 1000  # t0..t1001 and the str leaves


# ============================================================================ the whole compare, both loaders
END_TO_END = [
    ("pytorch/c01", []), ("pytorch/c03", []), ("pytorch/c02", []), ("pytorch/c05", []),
    ("mindspore/ms_l1_stat_fp16", []), ("mindspore/ms_mix_stat_gelu", []), ("mindspore/ms_l1_tensor_bug", []),
    ("mindspore/x_l1_stat_am", ["-am"]),
]


@pytest.mark.parametrize("case, extra", END_TO_END, ids=[c for c, _ in END_TO_END])
@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_both_loaders_write_the_same_result(case: str, extra: list[str], fmt: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The statistics held as arrays (C loader) and as lists (Python walk) give the same result bytes."""
    from msprobe_core.cli.main import main

    root = corpora_dir() / case
    if not root.is_dir():
        pytest.skip(no_corpora_reason())
    step = lambda side: root / side / "step0"  # noqa: E731
    args = ["compare", "-tp", str(step("target")), "-gp", str(step("golden")), *extra]
    if fmt == "xlsx":
        args.append("--xlsx")
    outputs = {}
    for loader in ("c", "python"):
        if loader == "python":
            monkeypatch.setenv(dumpscan.ENV_PYTHON_LOADER, "1")
        out = tmp_path / loader
        assert main([*args, "-o", str(out), "-q"]) == 0
        files = sorted(p for p in out.rglob(f"*.{fmt}"))
        assert files
        outputs[loader] = files
    assert [p.name.rsplit("_", 1)[0] for p in outputs["c"]] == [p.name.rsplit("_", 1)[0] for p in outputs["python"]]
    for a, b in zip(outputs["c"], outputs["python"]):
        if fmt == "csv":
            assert a.read_bytes() == b.read_bytes(), a.name
        else:
            from openpyxl import load_workbook

            sheets = [[list(r) for r in load_workbook(p, read_only=True).active.iter_rows(values_only=True)]
                      for p in (a, b)]
            assert sheets[0] == sheets[1], a.name


def test_an_interrupt_inside_the_scanner_is_not_swallowed(mixed_dump: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the Python callback runs reaches the caller (a decline would lose it)."""
    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(dumpscan, "non_tensor", interrupted)
    with pytest.raises(KeyboardInterrupt):
        dumpscan.scan_dump(mixed_dump, "dump")


@pytest.mark.parametrize("member", CURRENT_MEMBERS + tuple(sorted(ENTRY_METADATA)))
def test_the_scanner_reads_every_member_it_accepts(member: str, tmp_path: Path) -> None:
    """dialects.CURRENT_MEMBERS (what the scanner accepts) and the members its walk reads are the same."""
    leaf = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [1], "Max": 1.0}
    value = {"w": leaf} if member == "parameters" else False if member in ENTRY_METADATA else [leaf]
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"task": "statistics", "data": {"Torch.a.0.forward": {member: value}}}),
                    encoding="utf-8")
    table = check_same(path, must_take=True)
    assert len(table) == (0 if member in ENTRY_METADATA else 1)


NUMBER_TEXTS = st.builds(
    lambda sign, whole, frac, exp: f"{sign}{whole}{'.' + frac if frac is not None else ''}{exp}",
    st.sampled_from(["", "-"]),
    st.one_of(st.just("0"), st.from_regex(r"[1-9][0-9]{0,22}", fullmatch=True)),
    st.one_of(st.none(), st.from_regex(r"[0-9]{1,24}", fullmatch=True)),
    st.one_of(st.just(""), st.builds(lambda e, s, n: f"{e}{s}{n}", st.sampled_from("eE"),
                                     st.sampled_from(["", "+", "-"]), st.integers(0, 400))),
)


@SETTINGS
@given(texts=st.lists(st.one_of(NUMBER_TEXTS, st.floats(allow_nan=False, allow_infinity=False).map(repr),
                                st.sampled_from(["9007199254740993", "9007199254740992.0", "1e22", "1e23",
                                                 "0.1e-22", "123456789012345678e-22", "-0.0", "4.9e-324",
                                                 # ties and 17 to 19 digits: the exact 128-bit path
                                                 "18014398509481990", "9007199254740995", "0.30000000000000004441",
                                                 "1.8446744073709551615e19", "9.065504620148754e-23",
                                                 "936160873948.1163978e-31", "0.09915977996665028"])),
                      min_size=4, max_size=4))
def test_every_number_text_reads_as_python_reads_it(texts: list[str],
                                                    tmp_path_factory: pytest.TempPathFactory) -> None:
    """A statistic's number, whatever its digits and exponent (the scanner converts most in one IEEE operation and
    the others as Python does), is the double ``float(text)`` gives, bit for bit."""
    stats = dict(zip(("Max", "Min", "Mean", "Norm"), texts))
    leaf = ('{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], '
            + "".join(f'"{k}": {v}, ' for k, v in stats.items()) + '"requires_grad": false}')
    path = tmp_path_factory.mktemp("num") / "dump.json"
    path.write_text('{"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": null, "data": '
                    '{"Functional.relu.0.forward": {"input_args": [' + leaf + '], "input_kwargs": {}, "output": []}}}')
    table = check_same(path, must_take=True)
    got = [table.max[0], table.min[0], table.mean[0], table.norm[0]]
    assert [struct.pack("<d", float(g)) for g in got] == [struct.pack("<d", float(json.loads(t))) for t in texts]


def test_api_entries_made_in_c_are_the_dataclass_objects() -> None:
    """The scanner's ApiEntry objects (their slots filled in C) are the ones ApiEntry(...) makes: equal, mutable,
    picklable, tracked by the garbage collector; a class whose fields are not plain slots is declined."""
    import gc
    import pickle

    from msprobe_core.load.dumpindex import Scanner, api_entries
    from msprobe_core.model import ApiEntry

    columns = (["F.a.0.forward", "F.b.1.backward"], ["F.a", "F.b"], ["0.forward", "1.backward"],
               ["forward", "backward"], [0, 3], [3, 2])
    made = api_entries(columns)
    assert made == list(map(ApiEntry, *columns)) and all(type(a) is ApiEntry for a in made)
    assert pickle.loads(pickle.dumps(made)) == made and gc.is_tracked(made[0])
    made[1].key = "changed"
    assert made[1] == ApiEntry("changed", "F.b", "1.backward", "backward", 3, 2)
    if Scanner is not None:
        class Plain:
            pass

        assert Scanner.slot_objects(Plain, ("key",), (["x"],)) is None
        assert Scanner.slot_objects(ApiEntry, tuple(ApiEntry.__dataclass_fields__), (["x"],) * 5 + ([1, 2],)) is None
