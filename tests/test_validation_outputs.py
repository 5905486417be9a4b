"""Unit tests of the trust layer: validation models and helpers, atomic outputs and their policy."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from msprobe_classic.schemas import CompareJson  # the classic plugin's compare.json, checked by the core's validate

from msprobe_core.errors import InputError, MappingError, OutputError, TensorReadError, UnsafePathError, one_line
from msprobe_core.files.outputs import (
    atomic_path,
    open_atomic,
    output_policy,
    prepare_output_dir,
    write_text_atomic,
)
from msprobe_core.files.schemas import DumpHeader, NameMapping, validate
from msprobe_core.files.validation import (
    check_tensor_file,
    json_path,
    max_tensor_bytes,
    parse_byte_size,
    read_yaml,
    resolve_within,
)


# --------------------------------------------------------------------------- JSON paths and messages
def test_json_path_spelling() -> None:
    assert json_path(()) == "$"
    assert json_path(("data", "Torch.add.0.forward", "input_args", 0, "dtype")) == \
        '$.data["Torch.add.0.forward"].input_args[0].dtype'
    assert json_path(("a b", 'q"uote')) == '$["a b"]["q\\"uote"]'


def test_one_line_escapes_control_characters() -> None:
    assert one_line("a\nb\r\x00c\td") == "a\\nb\\r\\x00c d"
    assert str(InputError("bad\nthing", path="x\ny")) == "x\\ny: bad\\nthing"
    assert str(TensorReadError("t\n")) == "t\\n"


@pytest.mark.parametrize(
    "model,doc,fragment",
    [
        (DumpHeader, {"data": {}}, "key 'task' is missing at the top level"),
        (DumpHeader, {"task": "statistics"}, "key 'data' is missing at the top level"),
        (DumpHeader, {"task": "statistics", "data": [1]}, "$.data: 'data' must be a JSON object, got array"),
        (DumpHeader, {"task": "tensor", "level": 1, "data": {}}, "$.level: input should be a valid string (got number 1)"),
        (CompareJson, {"bench_path": "b"}, "key 'npu_path' is missing at the top level"),
        (CompareJson, {"npu_path": "", "bench_path": "b"}, "$.npu_path: must not be empty"),
        (CompareJson, {"npu_path": "a", "bench_path": "b", "rank_id": [0, -1]}, "$.rank_id[1]"),
        (CompareJson, {"npu_path": "a", "bench_path": "b", "is_print_compare_log": "yes"}, "$.is_print_compare_log"),
        (NameMapping, {"a": ["b"]}, '$.a: input should be a valid string (got array)'),
        (NameMapping, {"a": True}, "$.a"),
    ],
)
def test_models_name_the_json_path(model, doc, fragment) -> None:
    with pytest.raises(InputError) as info:
        validate(model, doc, path="f.json")
    message = str(info.value)
    assert message.startswith("f.json: ") and fragment in message and "\n" not in message, message


def test_models_accept_what_msprobe_writes() -> None:
    header = validate(DumpHeader, {"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": None,
                                   "data": {}, "common_dump_settings": {"x": 1}}, path="d")
    assert header.task == "statistics"
    cj = validate(CompareJson, {"npu_path": "a/dump.json", "bench_path": "b/dump.json", "stack_path": "s.json",
                                "is_print_compare_log": False, "rank_id": [0, 1], "step_id": [0], "extra": 1}, path="c")
    assert cj.rank_id == [0, 1] and not cj.is_print_compare_log
    assert validate(NameMapping, {"a": "b", 5: 0}, path="m").root == {"a": "b", "5": "0"}


def test_read_yaml_is_safe(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    (tmp_path / "tag.yaml").write_text(f"!!python/object/apply:os.system ['touch {marker}']\n")
    with pytest.raises(MappingError, match="malformed YAML"):
        read_yaml(tmp_path / "tag.yaml", "mapping")
    assert not marker.exists()
    (tmp_path / "alias.yaml").write_text("a: &x [1, 2]\nb: *x\n")
    with pytest.raises(MappingError, match="aliases"):
        read_yaml(tmp_path / "alias.yaml", "mapping")
    (tmp_path / "bin.yaml").write_bytes(b"a: \xff\xfe\n")
    with pytest.raises(MappingError, match="not UTF-8"):
        read_yaml(tmp_path / "bin.yaml", "mapping")
    with pytest.raises(MappingError, match="does not exist"):
        read_yaml(tmp_path / "nope.yaml", "mapping")
    with pytest.raises(MappingError, match="not a regular file"):
        read_yaml(tmp_path, "mapping")


# --------------------------------------------------------------------------- sizes and paths
@pytest.mark.parametrize("text,value", [("0", 0), ("1000", 1000), ("4K", 4096), ("512MiB", 512 << 20), ("16G", 16 << 30),
                                        ("1.5k", 1536), (" 2 gb ", 2 << 30)])
def test_parse_byte_size(text: str, value: int) -> None:
    assert parse_byte_size(text) == value


@pytest.mark.parametrize("text", ["", "lots", "-1", "1Q", "G"])
def test_parse_byte_size_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_byte_size(text)


def test_max_tensor_bytes_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MSPROBE_MAX_TENSOR_BYTES", raising=False)
    assert max_tensor_bytes() == 16 << 30
    monkeypatch.setenv("MSPROBE_MAX_TENSOR_BYTES", "0")
    assert max_tensor_bytes() is None
    monkeypatch.setenv("MSPROBE_MAX_TENSOR_BYTES", "nonsense")
    with pytest.raises(InputError, match="MSPROBE_MAX_TENSOR_BYTES"):
        max_tensor_bytes()


def test_resolve_within(tmp_path: Path) -> None:
    root = tmp_path / "dump_tensor_data"
    (root / "sub").mkdir(parents=True)
    (root / "a.pt").write_bytes(b"x")
    (tmp_path / "secret.pt").write_bytes(b"s")
    (root / "out.pt").symlink_to(tmp_path / "secret.pt")
    (root / "in.pt").symlink_to(root / "a.pt")
    assert resolve_within(root, "a.pt") == (root / "a.pt").resolve()
    assert resolve_within(root, "sub/../a.pt") == (root / "a.pt").resolve()
    assert resolve_within(root, "in.pt") == (root / "a.pt").resolve()
    for bad in ("../secret.pt", "/etc/passwd", "out.pt", "", "a\x00.pt", ".", "sub/.."):
        with pytest.raises(UnsafePathError):
            resolve_within(root, bad)
    with pytest.raises(TensorReadError):
        resolve_within(None, "a.pt")


def test_check_tensor_file(tmp_path: Path) -> None:
    f = tmp_path / "t.pt"
    f.write_bytes(b"x" * 100)
    assert check_tensor_file(f, 100) == 100
    with pytest.raises(TensorReadError, match="over the tensor limit"):
        check_tensor_file(f, 99)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(TensorReadError, match="not a regular file"):
        check_tensor_file(tmp_path / "fifo", None)
    with pytest.raises(TensorReadError, match="does not exist"):
        check_tensor_file(tmp_path / "missing", None)


# --------------------------------------------------------------------------- atomic outputs
def test_atomic_path_failure_leaves_nothing(tmp_path: Path) -> None:
    final = tmp_path / "out" / "r.csv"
    with pytest.raises(RuntimeError), atomic_path(final) as tmp:
        tmp.write_text("half")
        assert tmp.name.startswith(".r.csv.") and tmp.name.endswith(".part")
        raise RuntimeError("boom")
    assert list((tmp_path / "out").iterdir()) == []
    with pytest.raises(KeyboardInterrupt), open_atomic(final) as fh:
        fh.write("half")
        raise KeyboardInterrupt
    assert list((tmp_path / "out").iterdir()) == []
    assert write_text_atomic(final, "done\n").read_text() == "done\n"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["r.csv"]


def test_output_policy_keeps_earlier_runs(tmp_path: Path) -> None:
    old = tmp_path / "r.csv"
    old.write_text("earlier")
    past = time.time() - 60
    os.utime(old, (past, past))
    write_text_atomic(old, "replaced outside a run")  # plain library use: replaces
    assert old.read_text() == "replaced outside a run"
    os.utime(old, (past, past))
    with output_policy(force=False):
        with pytest.raises(OutputError, match="already exists"):
            write_text_atomic(old, "new")
        assert old.read_text() == "replaced outside a run"
        write_text_atomic(tmp_path / "shared.yaml", "rank0")
        write_text_atomic(tmp_path / "shared.yaml", "rank1")  # written earlier in this run: replaced
        assert (tmp_path / "shared.yaml").read_text() == "rank1"
    with output_policy(force=True):
        write_text_atomic(old, "forced")
    assert old.read_text() == "forced"
    assert not list(tmp_path.glob(".*.part"))


def test_output_policy_sees_other_workers_files(tmp_path: Path) -> None:
    """A file another process of the same run wrote (newer than the run's start) may be replaced."""
    started = time.time() - 5
    (tmp_path / "m.yaml").write_text("from another worker")
    with output_policy(force=False, started=started):
        write_text_atomic(tmp_path / "m.yaml", "mine")
    assert (tmp_path / "m.yaml").read_text() == "mine"


def test_prepare_output_dir(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b"
    assert prepare_output_dir(target) == target.absolute()
    assert not (tmp_path / "a").exists(), "checking must not create anything"
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="not a directory"):
        prepare_output_dir(tmp_path / "file")
    with pytest.raises(OutputError, match="is not a directory"):
        prepare_output_dir(tmp_path / "file" / "sub")
    target.mkdir(parents=True)
    prepare_output_dir(target)
    assert list(target.iterdir()) == [], "the probe file is removed"
