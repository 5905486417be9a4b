"""One hardened reader per file kind: every mapping YAML through the core's YAML reader, every ``.npy``
(MindSpore tensors, kernel dumps) through the core's ``.npy`` reader, JSON documents through the core's."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

from msprobe_core.errors import InputError, MappingError, TensorReadError
from msprobe_core.files.arena import Arena, use_arena
from msprobe_core.files.validation import MAX_YAML_BYTES
from msprobe_core.host.registry import get_host

from .dumps import api, tensor, write_dump

MAPPING_OPTIONS = ("-am", "-cm", "-lm", "-dm")


def _laughs() -> str:
    """A 'billion laughs' YAML: nine levels of aliases, each nine times the one before."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for k in range(1, 9):
        prev, cur = chr(ord("a") + k - 1), chr(ord("a") + k)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def _ms_vs_pt(tmp: Path) -> list[str]:
    """A MindSpore target and a PyTorch golden statistics dump (where every mapping option applies)."""
    t = write_dump(tmp / "t", {"Mint.add.0.forward": api([tensor("Float32")], [tensor("Float32")])},
                   framework="mindspore")
    g = write_dump(tmp / "g", {"Torch.add.0.forward": api([tensor("torch.float32")], [tensor("torch.float32")])})
    return ["-tp", str(t), "-gp", str(g), "-o", str(tmp / "out")]


def _assert_one_line_input_error(proc, path: Path, needle: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and path.name in errors[0] and needle in errors[0], proc.stderr


@pytest.mark.parametrize("option", MAPPING_OPTIONS)
def test_a_yaml_alias_bomb_in_a_mapping_file_is_an_input_error(tmp_path, run_cli, option):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_laughs())
    proc = run_cli("compare", *_ms_vs_pt(tmp_path), option, bomb)
    _assert_one_line_input_error(proc, bomb, "aliases")
    assert not list(tmp_path.glob("out/*.csv"))


@pytest.mark.parametrize("option", MAPPING_OPTIONS)
def test_an_oversize_mapping_file_is_an_input_error(tmp_path, run_cli, option):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as fh:  # sparse: the size is refused before a byte is read
        fh.truncate(MAX_YAML_BYTES + 1)
    proc = run_cli("compare", *_ms_vs_pt(tmp_path), option, big)
    _assert_one_line_input_error(proc, big, f"over the {MAX_YAML_BYTES}-byte limit")


@pytest.mark.parametrize("loader", ["load_api_mapping_yaml", "load_cell_mapping_yaml", "load_data_mapping",
                                    "load_layer_mapping_yaml"])
def test_every_mindspore_mapping_loader_refuses_tags_and_aliases(tmp_path, loader):
    from msprobe_mindspore import mapping as M

    for text, needle in ((_laughs(), "aliases"), (f"!!python/object/apply:os.system ['touch {tmp_path}/x']\n",
                                                   "malformed YAML")):
        path = tmp_path / "m.yaml"
        path.write_text(text)
        with pytest.raises(MappingError, match=needle):
            getattr(M, loader)(path)
    assert not (tmp_path / "x").exists()


# --------------------------------------------------------------------------- .npy: both former readers' callers
ARRAYS = [
    np.arange(12, dtype=np.float32).reshape(3, 4),
    np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4)),
    np.arange(6, dtype=">i4").reshape(2, 3),
    np.array([True, False, True]),
    np.array([1 + 2j, 3 - 4j], dtype=np.complex64),
    np.array(2.5, dtype=np.float16),
    np.zeros((0, 3), np.float32),
]


def _mindspore_read(path: Path) -> np.ndarray:
    """How tensor mode reads a MindSpore tensor: the framework spec's reader."""
    return get_host().framework("mindspore").read_tensor(path)


def _kernel_read(path: Path) -> np.ndarray:
    """How the kernel plugin reads a dumped kernel tensor (confined to its dump root)."""
    from msprobe_kernel.engine import load_npy_within

    return load_npy_within(str(path), str(path.parent))


READERS = {"mindspore": _mindspore_read, "kernel": _kernel_read}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("array", ARRAYS, ids=lambda a: f"{a.dtype.str}-{a.shape}")
@pytest.mark.parametrize("version", [None, (3, 0)])
def test_both_callers_read_what_np_load_reads(tmp_path, reader, array, version):
    path = tmp_path / "t.npy"
    with open(path, "wb") as fh:
        np.lib.format.write_array(fh, array, version=version)
    want = np.load(path, allow_pickle=False)
    got = READERS[reader](path)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.flags.f_contiguous == want.flags.f_contiguous
    np.testing.assert_array_equal(got, want)


def test_the_mindspore_reader_fills_the_tensor_stage_arena(tmp_path):
    path = tmp_path / "t.npy"
    np.save(path, np.arange(100, dtype=np.float32))
    arena = Arena()
    with use_arena(arena):
        got = _mindspore_read(path)
    assert np.shares_memory(got, arena.take(0).base)
    np.testing.assert_array_equal(got, np.arange(100, dtype=np.float32))


def _object(path: Path) -> None:
    np.save(path, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)


def _structured(path: Path) -> None:
    np.save(path, np.zeros(3, dtype=[("a", "<f4"), ("b", "<i4")]))


def _text(path: Path) -> None:
    np.save(path, np.array(["abc", "de"]))


def _truncated(path: Path) -> None:
    np.save(path, np.zeros(1000, dtype=np.float32))
    path.write_bytes(path.read_bytes()[:-10])


def _npz(path: Path) -> None:
    np.savez(path.with_suffix(".npz"), a=np.zeros(3))
    path.with_suffix(".npz").rename(path)


def _directory(path: Path) -> None:
    path.mkdir()


BAD = {"object": (_object, "object arrays"), "structured": (_structured, "not numbers"), "text": (_text, "not numbers"),
       "truncated": (_truncated, "truncated"), "npz": (_npz, "zip archive"),
       "directory": (_directory, "not a regular file")}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("case", BAD)
def test_both_callers_refuse_what_is_not_a_plain_array(tmp_path, reader, case):
    make, needle = BAD[case]
    path = tmp_path / "t.npy"
    make(path)
    with pytest.raises(TensorReadError, match=needle) as info:
        READERS[reader](path)
    assert "\n" not in str(info.value)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    from msprobe_core.files.npy_reader import read_npy

    fifo = tmp_path / "t.npy"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            read_npy(fifo)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():  # unblock the reader before failing
        with open(fifo, "wb"):
            pass
        pytest.fail("reading a FIFO blocked")
    assert isinstance(outcome[0], TensorReadError) and "not a regular file" in str(outcome[0])


def test_the_mindspore_limit_is_msprobes_10_gib_file_rule(tmp_path):
    from msprobe_mindspore.npy_reader import MAX_NPY_BYTES

    path = tmp_path / "t.npy"
    with open(path, "wb") as fh:  # a valid header, then a sparse file of exactly the limit
        np.lib.format.write_array_header_1_0(
            fh, {"descr": "<f4", "fortran_order": False, "shape": (MAX_NPY_BYTES // 4,)})
        fh.truncate(MAX_NPY_BYTES)
    with pytest.raises(TensorReadError, match=f"over the {MAX_NPY_BYTES}-byte limit"):
        _mindspore_read(path)


def test_the_kernel_reader_keeps_the_tensor_byte_cap(tmp_path, monkeypatch):
    path = tmp_path / "t.npy"
    np.save(path, np.zeros(1000, dtype=np.float64))
    monkeypatch.setenv("MSPROBE_MAX_TENSOR_BYTES", "4000")
    with pytest.raises(TensorReadError, match="over the tensor limit"):
        _kernel_read(path)


def test_a_kernel_row_of_text_data_still_reads_as_unreadable(tmp_path):
    from msprobe_kernel.columns import NPY_COLUMNS
    from msprobe_kernel.engine import MSG_READ_FAILED, RecordPair, _npy_row
    from msprobe_kernel.layout import KernelRecord

    from msprobe_core.result_columns import ERR_MESSAGE, NPU_DTYPE

    good, bad = tmp_path / "good.npy", tmp_path / "bad.npy"
    np.save(good, np.ones(4, np.float32))
    _text(bad)
    records = [KernelRecord(str(p), "Add.op.0.output.0", 100) for p in (bad, good)]
    row = dict(zip(NPY_COLUMNS, _npy_row(RecordPair(*records), str(tmp_path), str(tmp_path))))
    assert row[ERR_MESSAGE] == MSG_READ_FAILED and row[NPU_DTYPE] == ""  # the row msprobe-core wrote before


# --------------------------------------------------------------------------- JSON documents
def test_layer_mapping_reads_stack_and_construct_with_the_core_json_reader(tmp_path):
    from msprobe_mindspore import mapping as M

    (tmp_path / "stack.json").write_text('{"Cell.a": [')
    (tmp_path / "construct.json").write_text("{}")
    with pytest.raises(InputError, match="malformed JSON at line 1") as info:
        M.load_stack_construct(tmp_path)
    assert "stack.json" in str(info.value)
    (tmp_path / "stack.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="nesting is too deep"):
        M.load_stack_construct(tmp_path)


def test_an_unreadable_analysis_file_gives_no_divergence(tmp_path):
    from msprobe_core.default_plugins.summary.divergence import read_analysis

    path = tmp_path / "diff_analyze.json"
    for text in ("", "{not json", "[" * 100_000):
        path.write_text(text)
        assert read_analysis(path) is None
    path.write_text('{"rank_0": []}')
    assert read_analysis(path) == {"rank_0": []}
