"""Hostile and broken inputs, end to end: one table, one row per case.

Every row names how to build the input, the exit code ``msprobe compare`` must
return and a fragment of the message it must print. For every row the runner
also asserts: no traceback, no foreign code run (the marker file a hostile
pickle or YAML would create does not exist), no half-written result (no
``*.part`` file anywhere), no file created or changed outside the output
directory, and exactly the expected number of result files (none when the run
stops). Input that stops the run prints exactly one line on stderr; a bad single
tensor fails only its own row, with a warning naming it, and the run succeeds.

Cases run in-process (fast); set ``MSPROBE_HOSTILE_SUBPROCESS=1`` to run every
row as a real ``python -m msprobe_core`` process. Signals, the file-size limit and
the stderr discipline are checked with real processes below the table.
"""

from __future__ import annotations

import csv
import errno
import json
import os
import pickle
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from msprobe_pytorch.pt_writer import tensor_pickle, write_pt, write_storage_pt

from msprobe_core.cli.main import main

from .dumps import api, only_result, read_csv, tensor, write_dump
from .pickle_bombs import BOMBS
from .waiting import wait_until

MARKER = "pwned"  # what a hostile pickle/YAML would create next to the inputs
SUBPROCESS_ALL = os.environ.get("MSPROBE_HOSTILE_SUBPROCESS", "") in ("1", "true", "yes")


# =========================================================================== builders
def pt_leaf(data_name: str, shape=(2, 3), dtype: str = "torch.float32") -> dict:
    """A tensor-mode leaf naming its .pt file."""
    return tensor(dtype=dtype, shape=shape, data_name=data_name)


def tensor_side(root: Path, files: dict[str, object], *, framework: str = "pytorch",
                suffix: str = ".pt", names: dict[str, str] | None = None) -> Path:
    """A tensor dump under ``root``: one API whose inputs are ``files`` (name -> array, bytes or builder).

    Values: a numpy array (written with ``write_pt`` or ``np.save``), ``bytes``
    (written raw), a callable ``f(path)`` that creates the file, or ``None`` (no file).
    """
    tdir = root / "dump_tensor_data"
    tdir.mkdir(parents=True, exist_ok=True)
    leaves = []
    for stem, content in files.items():
        data_name = (names or {}).get(stem, f"{stem}{suffix}")
        path = tdir / f"{stem}{suffix}"
        if isinstance(content, (np.ndarray, np.generic)):
            arr = np.asarray(content)
            if suffix == ".pt":
                write_pt(path, arr)
            else:
                np.save(path, arr)
            shape = list(arr.shape)
        else:
            if isinstance(content, bytes):
                path.write_bytes(content)
            elif callable(content):
                content(path)
            shape = [2, 3]
        leaves.append(pt_leaf(data_name, shape=shape, dtype="torch.float32" if framework == "pytorch" else "Float32"))
    return write_dump(root, {"Torch.add.0.forward": api(leaves[:-1], leaves[-1:])}, task="tensor",
                      framework=framework)


GOOD = np.arange(6, dtype=np.float32).reshape(2, 3)


def tensor_pair(tmp: Path, bad: object, *, suffix: str = ".pt", framework: str = "pytorch",
                names: dict[str, str] | None = None) -> list[str]:
    """Target and golden tensor dumps that differ only in the target's first input file.

    ``names`` overrides the ``data_name`` of files on both sides (so that the rows still pair).
    """
    t = tensor_side(tmp / "t", {"Torch.add.0.forward.input.0": bad, "Torch.add.0.forward.output.0": GOOD},
                    suffix=suffix, framework=framework, names=names)
    g = tensor_side(tmp / "g", {"Torch.add.0.forward.input.0": GOOD, "Torch.add.0.forward.output.0": GOOD},
                    suffix=suffix, framework=framework, names=names)
    return ["-tp", str(t), "-gp", str(g)]


STATS = {"Torch.a.0.forward": api([tensor()], [tensor()])}


def stats_pair(tmp: Path, target_text: str | bytes | None = None, target_data: dict | None = None,
               golden_data: dict | None = None, **kw) -> list[str]:
    """Statistics dump.json pair; the target as raw text/bytes, or as data."""
    g = write_dump(tmp / "g", golden_data or STATS)
    if target_text is not None:
        t = tmp / "t" / "dump.json"
        t.parent.mkdir(parents=True)
        t.write_bytes(target_text.encode() if isinstance(target_text, str) else target_text)
    else:
        t = write_dump(tmp / "t", target_data or STATS, **kw)
    return ["-tp", str(t), "-gp", str(g)]


def leaf_with(**fields) -> dict:
    leaf = tensor()
    leaf.update(fields)
    return leaf


def bad_leaf(tmp: Path, **fields) -> list[str]:
    return stats_pair(tmp, target_data={"Torch.a.0.forward": api([leaf_with(**fields)], [tensor()])})


class _Exploit:
    def __init__(self, func: object, arg: str) -> None:
        self.func, self.arg = func, arg

    def __reduce__(self) -> tuple:
        return self.func, (self.arg,)


def zip_pt(pkl: bytes, data: bytes = b"\0" * 24, *, compress: int = zipfile.ZIP_STORED) -> Callable[[Path], None]:
    """A builder of a torch-layout zip with the given data.pkl."""

    def build(path: Path) -> None:
        with zipfile.ZipFile(path, "w", compression=compress) as zf:
            zf.writestr("archive/data.pkl", pkl)
            zf.writestr("archive/byteorder", b"little")
            zf.writestr("archive/data/0", data)
            zf.writestr("archive/version", b"3\n")

    return build


def evil_pickle(tmp: Path, how: str) -> bytes:
    marker = tmp / MARKER
    if how == "os.system":
        return pickle.dumps(_Exploit(os.system, f"touch {marker}"), protocol=2)
    if how == "exec":
        return pickle.dumps(_Exploit(exec, f"open({str(marker)!r}, 'w').close()"), protocol=4)
    if how == "nested":  # a legitimate rebuild call whose argument is the exploit
        return (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(cposix\nsystem\nX"
                + len(f"touch {marker}").to_bytes(4, "little") + f"touch {marker}".encode() + b"\x85RK\x00tR.")
    raise ValueError(how)


def legacy_pickle_pt(tmp: Path) -> bytes:
    """A pre-1.6 (non-zip) torch file: a bare pickle that would run code."""
    return pickle.dumps(_Exploit(os.system, f"touch {tmp / MARKER}"), protocol=2)


def zip_bomb(path: Path) -> None:
    """100 MiB of zeros deflated to ~100 KiB, behind a pickle that asks for all of it."""
    pkl = tensor_pickle("float32", 25 << 20, (25 << 20,), (1,))
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("archive/data.pkl", pkl)
        zf.writestr("archive/data/0", bytes(100 << 20))


def truncated_pt(path: Path) -> None:
    write_pt(path, np.arange(5000, dtype=np.float32))
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])


def short_storage_pt(path: Path) -> None:
    """The shape claims 100 elements; the storage holds 4."""
    write_storage_pt(path, np.zeros(4, np.float32), size=(100,), stride=(1,))


def huge_shape_pt(path: Path) -> None:
    """A shape of 2**40 x 2**40 elements over a 4-element storage."""
    write_storage_pt(path, np.zeros(4, np.float32), size=(1 << 40, 1 << 40), stride=(0, 0))


def npy_object(path: Path) -> None:
    marker = path.parent.parent.parent / MARKER
    np.save(path, np.array([_Exploit(os.system, f"touch {marker}")], dtype=object), allow_pickle=True)


def npy_lying_header(path: Path, n: int = 10**12) -> None:
    """A .npy header announcing ``n`` float32 elements in front of 64 bytes of data."""
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": "<f4", "fortran_order": False, "shape": (n,)})
        fh.write(b"\0" * 64)


def npy_truncated(path: Path) -> None:
    np.save(path, np.arange(1000, dtype=np.float32))
    raw = path.read_bytes()
    path.write_bytes(raw[:-100])


def stride0_pt(path: Path) -> None:
    """600 bytes that view 4 floats as 2**28 x 6 of them (6 GiB, within the 16 GiB tensor cap)."""
    write_storage_pt(path, np.ones(4, np.float32), size=(1 << 28, 6), stride=(0, 0))


def fifo(path: Path) -> None:
    os.mkfifo(path)


def directory(path: Path) -> None:
    path.mkdir()


def symlink_out(path: Path) -> None:
    outside = path.parent.parent.parent / "outside.pt"
    write_pt(outside, GOOD)
    path.symlink_to(outside)


def step_dirs(tmp: Path, t_ranks: list[str], g_ranks: list[str], *, data: dict | None = None) -> list[str]:
    for side, ranks in (("t", t_ranks), ("g", g_ranks)):
        for r in ranks:
            write_dump(tmp / side / "step0" / r, data or STATS)
    return ["-tp", str(tmp / "t" / "step0"), "-gp", str(tmp / "g" / "step0")]


def kernel_root(root: Path, files: dict[str, object]) -> Path:
    d = root / "rank_0" / "Net" / "0" / "0"
    d.mkdir(parents=True)
    for name, content in files.items():
        path = d / name
        if isinstance(content, np.ndarray):
            np.save(path, content)
        else:
            content(path)
    return root


KERNEL_NAME = "Add.Default_add-op1.0.0.{ts}.output.0.DefaultFormat.Float32.npy"


def kernel_pair(tmp: Path, bad: object) -> list[str]:
    t = kernel_root(tmp / "t", {KERNEL_NAME.format(ts=100): bad, "Mul.Default_mul-op2.0.0.101.output.0.DefaultFormat"
                                ".Float32.npy": GOOD})
    g = kernel_root(tmp / "g", {KERNEL_NAME.format(ts=100): GOOD, "Mul.Default_mul-op2.0.0.101.output.0.DefaultFormat"
                                ".Float32.npy": GOOD})
    return ["-tp", str(t), "-gp", str(g), "--rank", "0"]


# =========================================================================== the table
@dataclass
class Case:
    """One hostile input: how to build it and what ``msprobe compare`` must do with it."""

    id: str
    build: Callable[[Path], list[str]]
    code: int
    fragment: str
    results: int = 0  # result files expected (csv/xlsx); 0 when the run stops
    unsupported: str | None = None  # a row (NPU Name) that must be marked unsupported
    check: Callable[[list[dict[str, str]]], None] | None = None
    env: dict[str, str] = field(default_factory=dict)
    root_only: bool = False  # needs to drop privileges (setuid), i.e. the tests run as root
    args: tuple[str, ...] = ()
    command: tuple[str, ...] = ("compare",)  # the classic interface: ("-f", "pytorch", "compare")
    subprocess: bool = False  # always a real process, with a time limit: where the bug is back, it never ends


def _row(name: str) -> Callable[[list[dict[str, str]]], None]:
    def check(rows: list[dict[str, str]]) -> None:
        assert any(r["NPU Name"] == name for r in rows), [r["NPU Name"] for r in rows]

    return check


_CR_APIS = ['\r=HYPERLINK("http://x","y")', "\n@SUM(1)", "\t=1+1", " -cmd", "\x00+x", "\u200b=x",
            'Torch.a\r=cmd|" /C calc"!A0']
_CR_NAMES = ["'" + a + f".0.forward.{io}.0" if a[:1] in "\r\n\t \x00\u200b" else a + f".0.forward.{io}.0"
             for a in _CR_APIS for io in ("input", "output")]


def _cr_formula() -> dict:
    """API names that start a CSV row (a bare CR) or a formula after a prefix a spreadsheet skips."""
    return {f"{a}.0.forward": api([tensor()], [tensor()]) for a in _CR_APIS}


def _rows_exactly(names: list[str]) -> Callable[[list[dict[str, str]]], None]:
    def check(rows: list[dict[str, str]]) -> None:
        assert [r["NPU Name"] for r in rows] == names
        assert all(None not in r and len(r) == len(rows[0]) for r in rows)  # no field spilled into a new row

    return check


def _row_where(rows: list[dict[str, str]], fragment: str) -> None:
    assert any(fragment in r["NPU Name"] for r in rows), [r["NPU Name"] for r in rows]


#: a dump.json whose API name holds a lone surrogate: valid JSON, not encodable as UTF-8
_SURROGATE_DUMP = ('{"task": "statistics", "level": "L1", "framework": "pytorch", "data": {"Torch.a\\ud800b.0.forward": '
                   + json.dumps(api([tensor()], [tensor()])) + "}}")


#: a lone surrogate in string *values* (valid JSON once json.dumps writes it as the escape ``\udcff``)
SURR = "\udcff"


def _surrogate_values(md5: bool = False) -> dict:
    """One API whose leaves hold the surrogate in their dtype, type, data_name, md5 and a str argument's value."""
    extra = {"md5": f"1234abc{SURR}"} if md5 else {}
    return {"Torch.a.0.forward": api(
        [tensor(dtype=f"torch.float{SURR}32", data_name=f"in{SURR}.pt", **extra),
         {"type": f"str{SURR}", "value": f"a{SURR}b"}, {"type": "str", "value": f"x{SURR}"}],
        [tensor(type=f"torch.Tensor{SURR}", **extra)])}


def _escaped_values(md5: bool = False) -> Callable[[list[dict[str, str]]], None]:
    def check(rows: list[dict[str, str]]) -> None:
        by_name = {r["NPU Name"]: r for r in rows}
        first = by_name["in\\udcff"]  # a leaf with a data_name is named by it (msprobe's rule)
        assert first["NPU Dtype"] == "torch.float\\udcff32" and first["Bench Name"] == "in\\udcff", rows
        if md5:
            assert first["NPU MD5"] == "1234abc\\udcff"
        else:
            assert by_name["Torch.a.0.forward.input.2"]["NPU max"] == "x\\udcff"
        assert all(r["Result"] == "pass" for r in rows), rows  # same values on both sides: nothing differs

    return check


def _surrogate_tensor(d: Path) -> list[str]:
    """Tensor mode: a data_name holding the surrogate names a real file (its name's byte 0xff)."""
    sides = []
    for side in ("t", "g"):
        tdir = d / side / "dump_tensor_data"
        tdir.mkdir(parents=True)
        write_pt(tdir / f"in{SURR}0.pt", GOOD)  # the OS spells the surrogate as the byte it escapes
        write_pt(tdir / "out.pt", GOOD)
        sides.append(write_dump(d / side, {"Torch.add.0.forward": api(
            [pt_leaf(f"in{SURR}0.pt", dtype=f"torch.float32{SURR}")], [pt_leaf("out.pt")])}, task="tensor"))
    return ["-tp", str(sides[0]), "-gp", str(sides[1])]


def _no_stack_column(rows: list[dict[str, str]]) -> None:
    assert rows and all("NPU_Stack_Info" not in r for r in rows), list(rows[0])


def _all_computed(rows: list[dict[str, str]]) -> None:
    assert rows and all(r["Cosine"] != "unsupported" for r in rows if r["NPU Name"].endswith("output.0")), rows


IN0 = "Torch.add.0.forward.input.0"
CLASSIC = ("-f", "pytorch", "compare")
NEST = '{"task": "statistics", "data": {"Torch.a.0.forward": {"input_args": ' + "[" * 100_000 + "]" * 100_000 + "}}}"

CASES: list[Case] = [
    # ---- dump.json: truncated, malformed, empty ------------------------------------------------
    Case("json-truncated", lambda d: stats_pair(d, json.dumps({"task": "statistics", "data": STATS})[:70]),
         2, "malformed JSON at line 1"),
    Case("json-empty", lambda d: stats_pair(d, ""), 2, "empty"),
    Case("json-whitespace", lambda d: stats_pair(d, "  \n\t "), 2, "empty"),
    Case("json-not-utf8", lambda d: stats_pair(d, b'{"task": "statistics", "data": {"\xff\xfe": 1}}'), 2, "not UTF-8"),
    Case("json-binary-garbage", lambda d: stats_pair(d, os.urandom(256).replace(b"\x00", b"\x01")), 2, "dump.json"),
    Case("json-top-level-array", lambda d: stats_pair(d, "[1, 2, 3]"), 2, "top level must be a JSON object"),
    Case("json-trailing-data", lambda d: stats_pair(d, '{"task": "statistics", "data": {}} {}'), 2, "malformed JSON"),
    Case("json-deep-nesting", lambda d: stats_pair(d, NEST), 2, "nest"),
    Case("json-huge-integer", lambda d: stats_pair(d, '{"task": "statistics", "data": {}, "x": ' + "9" * 5000 + "}"),
         2, "malformed JSON"),
    # ---- missing / wrong header fields ---------------------------------------------------------
    Case("missing-data", lambda d: stats_pair(d, '{"task": "statistics"}'), 2, "'data' is missing"),
    Case("missing-task", lambda d: stats_pair(d, '{"data": {}}'), 2, "'task' is missing"),
    Case("task-wrong-type", lambda d: stats_pair(d, '{"task": 7, "data": {}}'), 2, "$.task: input should be a valid string"),
    Case("task-empty", lambda d: stats_pair(d, '{"task": "", "data": {}}'), 2, "$.task"),
    Case("task-not-comparable", lambda d: stats_pair(d, '{"task": "overflow_check", "data": {}}'), 2,
         "task 'overflow_check' cannot be compared"),
    Case("data-is-array", lambda d: stats_pair(d, '{"task": "statistics", "data": []}'), 2,
         "'data' must be a JSON object"),
    Case("level-wrong-type", lambda d: stats_pair(d, '{"task": "statistics", "level": [1], "data": {}}'), 2,
         "$.level"),
    Case("framework-wrong-type", lambda d: stats_pair(d, '{"task": "statistics", "framework": 3, "data": {}}'), 2,
         "framework"),
    Case("tasks-mismatch", lambda d: stats_pair(d, target_data=STATS, task="tensor"), 2, "dump tasks differ"),
    Case("md5-vs-statistics", lambda d: stats_pair(d, target_data={"Torch.a.0.forward": api([tensor(md5="12345678")])}),
         2, "both must be statistics or both md5"),
    Case("unknown-framework", lambda d: stats_pair(d, target_data=STATS, framework="jax"), 2,
         "framework 'jax' is not handled"),
    # ---- wrong types in entry fields (JSON path in the message) -------------------------------
    Case("entry-not-object", lambda d: stats_pair(d, target_data={"Torch.a.0.forward": [1, 2]}), 2,
         '$.data["Torch.a.0.forward"]: must be a JSON object'),
    Case("dtype-list", lambda d: bad_leaf(d, dtype=["torch.float32"]), 2,
         '$.data["Torch.a.0.forward"].input_args[0].dtype'),
    Case("shape-string", lambda d: bad_leaf(d, shape="2x3"), 2, "'shape' of Torch.a.0.forward.input.0 must be a list"),
    Case("shape-negative", lambda d: bad_leaf(d, shape=[2, -3]), 2, "non-negative integers"),
    Case("shape-nested", lambda d: bad_leaf(d, shape=[[2], 3]), 2, ".input_args[0].shape"),
    Case("max-object", lambda d: bad_leaf(d, Max={"v": 1}), 2, ".input_args[0].Max: 'Max'"),
    Case("norm-list", lambda d: bad_leaf(d, Norm=[1.0]), 2, ".input_args[0].Norm"),
    Case("requires-grad-list", lambda d: bad_leaf(d, requires_grad=[True]), 2, ".requires_grad"),
    Case("data-name-number", lambda d: bad_leaf(d, data_name=12), 2, ".data_name: 'data_name'"),
    Case("md5-object", lambda d: bad_leaf(d, md5={"x": 1}), 2, ".md5"),
    Case("bare-argument", lambda d: stats_pair(d, target_data={"Torch.a.0.forward": api([tensor(), 5])}), 2,
         ".input_args[1]: entry Torch.a.0.forward.input.1 holds a bare number 5"),
    # ---- NaN / Inf everywhere, odd but valid ----------------------------------------------------
    Case("nan-inf-statistics", lambda d: stats_pair(
        d, target_data={"Torch.a.0.forward": api([tensor(mx=float("nan"), mn=float("-inf"), mean=float("inf"),
                                                         norm=float("nan"))] * 3, [tensor(mx=float("inf"))])},
        golden_data={"Torch.a.0.forward": api([tensor(mx=float("inf"), mn=float("nan"), mean=float("nan"),
                                                      norm=float("-inf"))] * 3, [tensor(mx=float("nan"))])}),
         0, "result file path", results=1),
    Case("nan-inf-tensors", lambda d: tensor_pair(d, np.array([[np.nan, np.inf, -np.inf]] * 2, np.float32)),
         0, "result file path", results=1, check=_all_computed),
    Case("zero-dim-tensor", lambda d: tensor_pair(d, np.float32(3.5)), 0, "result file path", results=1,
         check=_all_computed),
    Case("empty-tensor", lambda d: tensor_pair(d, np.zeros((0, 3), np.float32)), 0, "result file path", results=1,
         unsupported=IN0),
    Case("huge-shape-in-json", lambda d: bad_leaf(d, shape=[2**62, 2**62, 2**62]), 0, "result file path", results=1),
    # ---- hostile / broken tensor files: only their own row fails -------------------------------
    Case("pickle-os-system", lambda d: tensor_pair(d, zip_pt(evil_pickle(d, "os.system"))), 0, "not on the allow-list",
         results=1, unsupported=IN0, check=_all_computed),
    Case("pickle-exec", lambda d: tensor_pair(d, zip_pt(evil_pickle(d, "exec"))), 0, "builtins.exec", results=1,
         unsupported=IN0),
    Case("pickle-nested-in-rebuild", lambda d: tensor_pair(d, zip_pt(evil_pickle(d, "nested"))), 0, "posix.system",
         results=1, unsupported=IN0),
    Case("pickle-legacy-format", lambda d: tensor_pair(d, legacy_pickle_pt(d)), 0, "legacy non-zip", results=1,
         unsupported=IN0),
    Case("zip-bomb", lambda d: tensor_pair(d, zip_bomb), 0, "zip bomb", results=1, unsupported=IN0),
    Case("pickle-memo-bomb", lambda d: tensor_pair(d, zip_pt(b"\x80\x02]r\xff\xff\xff\xff.")), 0, "memo slot",
         results=1, unsupported=IN0),
    Case("pt-truncated", lambda d: tensor_pair(d, truncated_pt), 0, "truncated", results=1, unsupported=IN0),
    Case("pt-storage-smaller-than-shape", lambda d: tensor_pair(d, short_storage_pt), 0, "of a storage of 4 elements",
         results=1, unsupported=IN0),
    Case("pt-huge-shape", lambda d: tensor_pair(d, huge_shape_pt), 0, IN0, results=1, unsupported=IN0),
    *[Case(f"pickle-bomb-{name}", lambda d, name=name: tensor_pair(d, zip_pt(BOMBS[name])), 0, "expands to more than",
           results=1, unsupported=IN0, subprocess=True)
      for name in ("persistent-id", "storage-offset", "size-entry", "dict-key", "location")],
    Case("pt-stride0-within-the-cap", lambda d: tensor_pair(d, stride0_pt), 0, "expands far beyond its storage",
         results=1, unsupported=IN0),
    Case("pt-shape-contradicts-dump", lambda d: _both_sides(d, lambda p: write_pt(p, np.arange(6, dtype=np.float32))),
         0, "dump.json says [2, 3]", results=1, unsupported=IN0),
    Case("ms-npy-complex-in-float32-row", lambda d: _both_sides(
        d, lambda p: np.save(p, (GOOD + 1j * GOOD).astype(np.complex64)), suffix=".npy", framework="mindspore"),
         0, "complex values", results=1, unsupported=IN0),
    Case("kernel-npy-complex-in-float32-name", lambda d: _kernel_both(d, (GOOD + 1j * GOOD).astype(np.complex64)),
         0, "complex values", results=1, check=lambda rows: _not_compared(rows, "Add.Default_add-op1")),
    Case("pt-not-a-zip", lambda d: tensor_pair(d, b"hello, not a tensor" * 10), 0, "not a torch zip file", results=1,
         unsupported=IN0),
    Case("pt-dict-not-tensor", lambda d: tensor_pair(d, zip_pt(pickle.dumps({"a": 1}, protocol=2))), 0,
         "not a single tensor", results=1, unsupported=IN0),
    Case("pt-missing", lambda d: tensor_pair(d, None), 0, "does not exist", results=1, unsupported=IN0),
    Case("pt-is-directory", lambda d: tensor_pair(d, directory), 0, "not a regular file", results=1, unsupported=IN0),
    Case("pt-is-fifo", lambda d: tensor_pair(d, fifo), 0, "not a regular file", results=1, unsupported=IN0),
    Case("pt-over-byte-cap", lambda d: tensor_pair(d, np.zeros((64, 64), np.float32)), 0, "over the tensor limit",
         results=1, unsupported=IN0, args=("--max_tensor_bytes", "4K")),
    Case("pt-over-byte-cap-env", lambda d: tensor_pair(d, np.zeros((64, 64), np.float32)), 0, "over the tensor limit",
         results=1, unsupported=IN0, env={"MSPROBE_MAX_TENSOR_BYTES": "4096"}),
    Case("bad-byte-cap", lambda d: tensor_pair(d, GOOD), 2, "--max_tensor_bytes", args=("--max_tensor_bytes", "lots")),
    # ---- names escaping the dump directory -----------------------------------------------------
    Case("data-name-dotdot", lambda d: tensor_pair(d, GOOD, names={IN0: "../../../../etc/passwd.pt"}), 0,
         "resolves to", results=1, unsupported="../../../../etc/passwd"),
    Case("data-name-absolute", lambda d: tensor_pair(d, GOOD, names={IN0: "/etc/passwd.pt"}), 0, "absolute path",
         results=1, unsupported="/etc/passwd"),
    Case("data-name-nul", lambda d: tensor_pair(d, GOOD, names={IN0: "a\x00b.pt"}), 0, "not a file name", results=1),
    Case("data-name-symlink-out", lambda d: tensor_pair(d, symlink_out), 0, "outside the dump root", results=1,
         unsupported=IN0),
    Case("tensor-dir-symlink-out", lambda d: _tensor_dir_symlink_out(d), 2, "outside the dump directory"),
    Case("dump-dir-symlink", lambda d: _dump_dir_symlink(d), 0, "is a symbolic link; following it", results=1),
    Case("rank-dir-symlink-out", lambda d: _rank_dir_symlink_out(d), 2, "refusing to follow a symlink out"),
    # ---- unreadable inputs ---------------------------------------------------------------------
    Case("dump-json-dangling-symlink", lambda d: _dangling(d), 2, "does not exist"),
    Case("dump-json-is-fifo", lambda d: _fifo_dump(d), 2, "both be files or both be directories"),
    Case("rank-dump-json-is-directory", lambda d: _rank_json_dir(d), 2, "neither dump.json nor debug.json"),
    Case("dump-json-unreadable", lambda d: _unreadable(d), 2, "permission denied", root_only=True),
    Case("tensor-unreadable", lambda d: _unreadable_tensor(d), 0, "Permission denied", results=1, root_only=True,
         unsupported=IN0),
    Case("wrong-file-name", lambda d: _renamed(d), 2, "must end with dump.json"),
    # ---- ranks --------------------------------------------------------------------------------
    Case("rank-count-differs", lambda d: step_dirs(d, ["rank0", "rank1"], ["rank0"]), 2, "different numbers of ranks"),
    Case("rank-file-missing-one-side", lambda d: _rank_missing_file(d), 1, "1 of 2 compares failed", results=1),
    Case("no-rank-dirs", lambda d: _no_ranks(d), 2, "point -tp/-gp at a step directory"),
    # ---- names ---------------------------------------------------------------------------------
    Case("unicode-names", lambda d: stats_pair(d, target_data=_unicode(), golden_data=_unicode()), 0,
         "result file path", results=1, check=_row("Torch.加法_😀.0.forward.input.0")),
    Case("very-long-api-name", lambda d: stats_pair(d, target_data=_long(), golden_data=_long()), 0,
         "result file path", results=1),
    Case("very-long-data-name", lambda d: tensor_pair(d, GOOD, names={IN0: "x" * 400 + ".pt"}), 0,
         "File name too long", results=1),
    Case("formula-names-neutralised", lambda d: stats_pair(d, target_data=_formula(), golden_data=_formula()), 0,
         "result file path", results=1, check=_row("'=HYPERLINK(\"http://x\").0.forward.input.0")),
    Case("surrogate-in-api-name", lambda d: stats_pair(d, _SURROGATE_DUMP), 0, "result file path", results=1,
         check=_row("Torch.a\\ud800b.0.forward.input.0"), args=("--report", "html")),
    Case("surrogate-in-string-values", lambda d: stats_pair(d, target_data=_surrogate_values(),
                                                            golden_data=_surrogate_values()),
         0, "result file path", results=1, check=_escaped_values(), args=("--report", "html")),
    Case("surrogate-in-md5-values", lambda d: stats_pair(d, target_data=_surrogate_values(md5=True),
                                                         golden_data=_surrogate_values(md5=True)),
         0, "result file path", results=1, check=_escaped_values(md5=True)),
    Case("surrogate-in-tensor-data-name", _surrogate_tensor, 0, "result file path", results=1,
         check=lambda rows: _all_computed(rows) or _row_where(rows, "\\udcff")),
    Case("kernel-file-name-not-utf8", lambda d: _kernel_bytes_name(d), 0, "result file path", results=1,
         check=lambda rows: _row_where(rows, "\\udcff")),
    Case("cr-formula-names", lambda d: stats_pair(d, target_data=_cr_formula(), golden_data=_cr_formula()), 0,
         "result file path", results=1, check=_rows_exactly(_CR_NAMES)),
    # ---- MindSpore .npy tensors and kernel dumps ------------------------------------------------
    Case("ms-npy-object-pickle", lambda d: tensor_pair(d, npy_object, suffix=".npy", framework="mindspore"), 0,
         "object", results=1, unsupported=IN0),
    Case("ms-npy-lying-header", lambda d: tensor_pair(d, npy_lying_header, suffix=".npy", framework="mindspore"), 0,
         "truncated", results=1, unsupported=IN0),
    Case("ms-npy-truncated", lambda d: tensor_pair(d, npy_truncated, suffix=".npy", framework="mindspore"), 0,
         "truncated", results=1, unsupported=IN0),
    Case("kernel-npy-object-pickle", lambda d: kernel_pair(d, npy_object), 0, "object arrays", results=1),
    Case("kernel-npy-lying-header", lambda d: kernel_pair(d, lambda p: npy_lying_header(p, 10**6)), 0,
         "truncated or lying header", results=1),
    Case("kernel-npy-huge-header", lambda d: kernel_pair(d, npy_lying_header), 0, "over the tensor limit", results=1),
    Case("kernel-npy-symlink-out", lambda d: kernel_pair(d, _npy_symlink_out), 0, "outside the dump root", results=1),
    Case("kernel-statistic-csv-symlink-out", lambda d: _kernel_stat_symlink(d), 2, "outside the dump root"),
    # ---- mapping files -------------------------------------------------------------------------
    Case("yaml-python-tag", lambda d: _dm(d, f"!!python/object/apply:os.system ['touch {d / MARKER}']\n"), 2,
         "malformed YAML"),
    Case("yaml-alias-bomb", lambda d: _dm(d, _laughs()), 2, "aliases"),
    Case("yaml-not-mapping", lambda d: _dm(d, "- a\n- b\n"), 2, "data mapping must be a mapping"),
    Case("yaml-wrong-value", lambda d: _dm(d, "Torch.a.0.forward.input.0: [1, 2]\n"), 2,
         '$["Torch.a.0.forward.input.0"]'),
    Case("stack-json-malformed", lambda d: _bad_stack(d), 2, "stack.json"),
    Case("construct-json-cycle", lambda d: _construct(d, {"Torch.add.0.forward": "Module.m.M.forward.0",
                                                          "Module.m.M.forward.0": "Torch.add.0.forward"}),
         2, "the enclosing calls form a cycle", args=("-da",), subprocess=True),
    Case("construct-json-deep", lambda d: _construct(d, "[" * 100_000 + "]" * 100_000), 2, "nesting is too deep",
         args=("-da",)),
    Case("construct-json-symlink-out", lambda d: _construct(d, {}, outside=True), 2, "construct.json resolves to",
         args=("-da",)),
    Case("huge-integer-statistic", lambda d: bad_leaf(d, Max=10**400), 2,
         "'Max' of Torch.a.0.forward.input.0 must be a number within the range of a float"),
    Case("huge-integer-argument", lambda d: stats_pair(d, target_data={"Torch.a.0.forward": api(
        [tensor(), {"type": "int", "value": -(10**400)}])}), 2, ".input_args[1].value"),
    *[Case(f"yaml-deep{opt}", lambda d, opt=opt: _ms_pair(d) + [opt, str(_deep_yaml(d))], 2, "nesting is too deep")
      for opt in ("-am", "-cm", "-lm")],
    Case("stack-json-symlink-out", lambda d: _stack_symlink_out(d), 2, "stack.json resolves to"),
    *[Case(f"{name.split('.')[0]}-json-is-{how}", lambda d, name=name, how=how: _not_a_file(d, name, how), 0,
           f"{name}{' (a symbolic link to /dev/zero)' if how == 'device' else ''} is {what}, not a regular file; "
           "ignored, the compare goes on without it", results=1 if name == "stack.json" else -1,  # -da: json only
           subprocess=how == "fifo",
           args=("-da",) if name == "construct.json" else (), check=_no_stack_column if name == "stack.json" else None)
      for name in ("stack.json", "construct.json")
      for how, what in (("device", "a character device"), ("fifo", "a FIFO"), ("directory", "a directory"))],
    # ---- classic compare.json and merge_result config ------------------------------------------------------
    Case("classic-json-wrong-type", lambda d: _compare_json(d, '{"npu_path": 5, "bench_path": "x"}'), 2,
         "$.npu_path: input should be a valid string", command=CLASSIC),
    Case("classic-json-not-object", lambda d: _compare_json(d, "[1, 2]"), 2, "input_param should be dict",
         command=CLASSIC),
    Case("classic-json-malformed", lambda d: _compare_json(d, '{"npu_path": '), 2, "malformed JSON", command=CLASSIC),
    Case("classic-json-bad-ids", lambda d: _compare_json(d, '{"npu_path": "a", "bench_path": "b", "rank_id": "0"}'),
         2, "$.rank_id", command=CLASSIC),
    Case("merge-config-python-tag", lambda d: _merge(d, f"!!python/object/apply:os.system ['touch {d / MARKER}']\n"),
         2, "malformed YAML", command=("merge_result",)),
    Case("merge-config-not-list", lambda d: _merge(d, "api: Distributed.all_reduce\n"), 2,
         "The config format of 'api' is incorrect", command=("merge_result",)),
    Case("merge-xlsx-without-worksheet", lambda d: _merge_broken(d, "no-sheet"), 2, "holds no worksheet",
         command=("merge_result",)),
    Case("merge-xlsx-entity-bomb", lambda d: _merge_broken(d, "laughs"), 2, "cannot read the xlsx result",
         command=("merge_result",)),
    # ---- output directory ----------------------------------------------------------------------
    Case("output-is-a-file", lambda d: _out_is_file(d), 2, "output path exists and is not a directory"),
    Case("output-under-a-file", lambda d: _out_under_file(d), 2, "not a directory"),
    Case("output-read-only", lambda d: _out_read_only(d), 2, "permission denied", root_only=True),
    Case("output-exists-from-earlier-run", lambda d: _out_exists(d), 0, "files of an earlier run carry the timestamp",
         results=1),
    Case("output-exists-force", lambda d: _out_exists(d) + ["--force"], 0, "will be replaced (--force)", results=-1),
]


# ---- builders used by the table ---------------------------------------------------------------
def _both_sides(d: Path, bad: Callable[[Path], None], *, suffix: str = ".pt", framework: str = "pytorch") -> list[str]:
    """Target and golden both hold the same file for input 0, which contradicts their dump.json (shape [2, 3])."""
    sides = [tensor_side(d / side, {IN0: bad, "Torch.add.0.forward.output.0": GOOD}, suffix=suffix, framework=framework)
             for side in ("t", "g")]
    return ["-tp", str(sides[0]), "-gp", str(sides[1])]


def _kernel_both(d: Path, bad: np.ndarray) -> list[str]:
    mul = "Mul.Default_mul-op2.0.0.101.output.0.DefaultFormat.Float32.npy"
    for side in ("t", "g"):
        kernel_root(d / side, {KERNEL_NAME.format(ts=100): bad, mul: GOOD})
    return ["-tp", str(d / "t"), "-gp", str(d / "g"), "--rank", "0"]


def _not_compared(rows: list[dict[str, str]], op: str) -> None:
    row = next(r for r in rows if op in r["NPU Name"])
    assert row["Cosine"] in ("", "N/A", "unsupported", "None"), row


def _construct(d: Path, doc: object, *, outside: bool = False) -> list[str]:
    """-da inputs: the target's first divergence has a differing input, so its enclosing calls are looked up."""
    data_t = {"Module.m.M.forward.0": api([tensor()], [tensor(mx=7.0)]),
              "Torch.add.0.forward": api([tensor(mx=7.0)], [tensor(mx=7.0)])}
    data_g = {"Module.m.M.forward.0": api([tensor()], [tensor(mx=7.0)]),
              "Torch.add.0.forward": api([tensor()], [tensor()])}
    t, g = write_dump(d / "t", data_t), write_dump(d / "g", data_g)
    text = doc if isinstance(doc, str) else json.dumps(doc)
    if outside:
        (d / "elsewhere.json").write_text(text)
        (t.parent / "construct.json").symlink_to(d / "elsewhere.json")
    else:
        (t.parent / "construct.json").write_text(text)
    return ["-tp", str(t), "-gp", str(g)]


def _ms_pair(d: Path) -> list[str]:
    """A MindSpore target and a PyTorch golden dump, with stack.json and construct.json (what -lm reads)."""
    ms = {"Functional.add.0.forward": api([tensor(dtype="Float32")], [tensor(dtype="Float32")])}
    pt = {"Torch.add.0.forward": api([tensor()], [tensor()])}
    paths = []
    for side, data, fw in (("t", ms, "mindspore"), ("g", pt, "pytorch")):
        p = write_dump(d / side, data, framework=fw, stack={"0": [list(data), ["File a.py, line 1, in f, \n x"]]})
        (p.parent / "construct.json").write_text(json.dumps(dict.fromkeys(data)))
        paths.append(p)
    return ["-tp", str(paths[0]), "-gp", str(paths[1])]


def _deep_yaml(d: Path) -> Path:
    (d / "deep.yaml").write_text("a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    return d / "deep.yaml"


def _merge_broken(d: Path, how: str) -> list[str]:
    """Two real per-rank xlsx results; rank1's workbook then lists no sheet, or its sheet is an XML entity bomb."""
    import re as _re

    args = _merge(d, "api:\n- Torch.a\n")
    [victim] = (d / "results").glob("*rank1_*.xlsx")
    with zipfile.ZipFile(victim) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    if how == "no-sheet":
        members["xl/workbook.xml"] = _re.sub(rb"<sheets>.*</sheets>", b"<sheets/>", members["xl/workbook.xml"],
                                             flags=_re.S)
    else:
        lol = b'<!DOCTYPE l [<!ENTITY l0 "lol">' + b"".join(
            b"<!ENTITY l%d \"" % i + b"&l%d;" % (i - 1) * 10 + b'">' for i in range(1, 10)) + b"]>"
        sheet = next(n for n in members if n.startswith("xl/worksheets/") and n.endswith(".xml"))
        body = members[sheet]
        head, sep, rest = body.partition(b"?>")
        members[sheet] = head + sep + lol + rest.replace(b"<v>", b"<v>&l9;", 1) if sep else lol + body
    with zipfile.ZipFile(victim, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return args


def _compare_json(d: Path, text: str) -> list[str]:
    (d / "compare.json").write_text(text)
    return ["-i", str(d / "compare.json")]


def _merge(d: Path, config: str) -> list[str]:
    """Two real per-rank xlsx results (so that the config is read) and a hostile config."""
    args = step_dirs(d, ["rank0", "rank1"], ["rank0", "rank1"])
    assert main(["compare", *args, "--xlsx", "-o", str(d / "results"), "-q"]) == 0
    (d / "config.yaml").write_text(config)
    return ["-i", str(d / "results"), "-config", str(d / "config.yaml")]


def _tensor_dir_symlink_out(d: Path) -> list[str]:
    args = tensor_pair(d, GOOD)
    elsewhere = d / "elsewhere"
    shutil.move(str(d / "t" / "dump_tensor_data"), elsewhere)
    (d / "t" / "dump_tensor_data").symlink_to(elsewhere)
    return args


def _dump_dir_symlink(d: Path) -> list[str]:
    args = step_dirs(d, ["rank0"], ["rank0"])
    (d / "link").symlink_to(d / "t" / "step0")
    return ["-tp", str(d / "link"), "-gp", args[3]]


def _rank_dir_symlink_out(d: Path) -> list[str]:
    args = step_dirs(d, ["rank0"], ["rank0"])
    write_dump(d / "stolen" / "rank1", STATS)
    write_dump(d / "g" / "step0" / "rank1", STATS)
    (d / "t" / "step0" / "rank1").symlink_to(d / "stolen" / "rank1")
    return args


def _dangling(d: Path) -> list[str]:
    args = stats_pair(d)
    t = Path(args[1])
    t.unlink()
    t.symlink_to(d / "nowhere" / "dump.json")
    return args


def _fifo_dump(d: Path) -> list[str]:
    args = stats_pair(d)
    t = Path(args[1])
    t.unlink()
    os.mkfifo(t)
    return args


def _rank_json_dir(d: Path) -> list[str]:
    for side in ("t", "g"):
        (d / side / "step0" / "rank0" / "dump.json").mkdir(parents=True)
    return ["-tp", str(d / "t" / "step0"), "-gp", str(d / "g" / "step0")]


def _unreadable(d: Path) -> list[str]:
    args = stats_pair(d)
    os.chmod(args[1], 0)
    return args


def _unreadable_tensor(d: Path) -> list[str]:
    args = tensor_pair(d, GOOD)
    os.chmod(d / "t" / "dump_tensor_data" / f"{IN0}.pt", 0)
    return args


def _renamed(d: Path) -> list[str]:
    args = stats_pair(d)
    t = Path(args[1])
    t.rename(t.with_name("data.json"))
    return ["-tp", str(t.with_name("data.json")), "-gp", args[3]]


def _rank_missing_file(d: Path) -> list[str]:
    args = step_dirs(d, ["rank0", "rank1"], ["rank0", "rank1"])
    (d / "g" / "step0" / "rank1" / "dump.json").unlink()
    return args


def _no_ranks(d: Path) -> list[str]:
    # directories holding neither rank/proc directories nor step<N> ones (dump roots are compared step by step)
    for side in ("t", "g"):
        (d / side / "logs").mkdir(parents=True)
    return ["-tp", str(d / "t"), "-gp", str(d / "g")]


def _unicode() -> dict:
    return {"Torch.加法_😀.0.forward": api([tensor(dtype="torch.float32")], [tensor()]),
            "Torch.ünïcödé\u202e.0.forward": api([tensor()], [tensor()])}


def _long() -> dict:
    return {"Torch." + "a" * 10_000 + ".0.forward": api([tensor()], [tensor()])}


def _formula() -> dict:
    return {'=HYPERLINK("http://x").0.forward': api([tensor()], [tensor()]),
            "Torch.@SUM(A1).0.forward": api([tensor(dtype="=1+1")], [tensor()])}


def _npy_symlink_out(path: Path) -> None:
    outside = path.parents[5] / "outside.npy"
    np.save(outside, GOOD)
    path.symlink_to(outside)


KERNEL_STAT = ("Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,Min Value,"
               'Avg Value,L2Norm Value\nMatMul,Default/MatMul-op1,5,2,17000,input,0,24,float32,"(2,3)",5,0,1,2\n')


def _kernel_bytes_name(d: Path) -> list[str]:
    """A kernel dump whose tensor file name holds a byte that is not UTF-8 (both sides)."""
    name = KERNEL_NAME.format(ts=100).replace("Add.Default_add", "Add.Default_a\udcffdd")
    for side in ("t", "g"):
        kernel_root(d / side, {name: GOOD})
    return ["-tp", str(d / "t"), "-gp", str(d / "g"), "--rank", "0"]


def _kernel_stat_symlink(d: Path) -> list[str]:
    """statistic.csv on the target side is a symlink to a file outside the dump."""
    (d / "secret.csv").write_text(KERNEL_STAT)
    for side in ("t", "g"):
        (d / side / "rank_0" / "Net" / "0" / "0").mkdir(parents=True)
    (d / "g" / "rank_0" / "Net" / "0" / "0" / "statistic.csv").write_text(KERNEL_STAT)
    (d / "t" / "rank_0" / "Net" / "0" / "0" / "statistic.csv").symlink_to(d / "secret.csv")
    return ["-tp", str(d / "t"), "-gp", str(d / "g"), "--rank", "0"]


def _dm(d: Path, text: str) -> list[str]:
    (d / "dm.yaml").write_text(text)
    return stats_pair(d) + ["-dm", str(d / "dm.yaml")]


def _laughs() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for k in range(1, 9):
        prev, cur = chr(ord("a") + k - 1), chr(ord("a") + k)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def _bad_stack(d: Path) -> list[str]:
    args = stats_pair(d)
    (Path(args[1]).parent / "stack.json").write_text('{"Torch.a.0.forward": [')
    return args


def _stack_symlink_out(d: Path) -> list[str]:
    args = stats_pair(d)
    (d / "secret.json").write_text(json.dumps({"Torch.a.0.forward": ["the secret"]}))
    (Path(args[1]).parent / "stack.json").symlink_to(d / "secret.json")
    return args


def _not_a_file(d: Path, name: str, how: str) -> list[str]:
    """``name`` (stack.json or construct.json) next to the target dump.json as a link to a device, a FIFO or a
    directory; construct.json with the -da inputs of :func:`_construct` (it is read only there)."""
    args = _construct(d, {}) if name == "construct.json" else stats_pair(d)
    path = Path(args[1]).parent / name
    path.unlink(missing_ok=True)
    if how == "device":
        path.symlink_to("/dev/zero")
    elif how == "fifo":
        os.mkfifo(path)  # opened for reading, it blocks until a writer comes: never
    else:
        path.mkdir()
    return args


def _out_is_file(d: Path) -> list[str]:
    (d / "out").write_text("I am a file")
    return stats_pair(d)


def _out_under_file(d: Path) -> list[str]:
    (d / "blocker").write_text("I am a file")
    return stats_pair(d) + ["-o", str(d / "blocker" / "out")]


def _out_read_only(d: Path) -> list[str]:
    (d / "out").mkdir()
    os.chmod(d / "out", 0o555)
    return stats_pair(d)


def _out_exists(d: Path) -> list[str]:
    """Result files 'from an earlier run' under every name this run could pick in the next ten minutes (however
    long it takes to start on a busy machine)."""
    out = d / "out"
    out.mkdir()
    now = time.time()
    for k in range(600):
        stamp = time.strftime("%Y%m%d%H%M%S", time.localtime(now + k))
        (out / f"compare_result_{stamp}.csv").write_text("earlier run\n")
    old = now - 3600
    for p in out.iterdir():
        os.utime(p, (old, old))
    return stats_pair(d)


# =========================================================================== the runner
@dataclass
class Outcome:
    code: int
    out: str
    err: str


def _snapshot(root: Path, skip: Path) -> dict[str, tuple]:
    """Every entry under ``root`` except ``skip``: kind, size and mtime (to see side effects)."""
    found: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == skip or skip in Path(dirpath).parents:
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if p == skip:
                continue
            st_ = os.lstat(p)
            found[str(p.relative_to(root))] = (stat.S_IFMT(st_.st_mode), st_.st_size if not stat.S_ISDIR(st_.st_mode)
                                               else 0, st_.st_mtime_ns if stat.S_ISREG(st_.st_mode) else 0)
    return found


@contextmanager
def _unprivileged() -> Iterator[None]:
    """Run as ``nobody`` (effective ids only) so that permission bits apply even though tests run as root."""
    if os.geteuid() != 0:
        yield
        return
    try:
        os.setegid(65534)
        os.seteuid(65534)
    except PermissionError:
        pytest.skip("cannot drop privileges to test permission errors as root")
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


def _world_dir() -> Path:
    """A temp dir that 'nobody' can traverse (pytest's tmp dirs are private to root)."""
    d = Path(tempfile.mkdtemp(prefix="msprobe-hostile-"))
    os.chmod(d, 0o777)
    return d


def _run_in_process(args: list[str], capsys: pytest.CaptureFixture, case: Case, monkeypatch) -> Outcome:
    monkeypatch.setenv("MSPROBE_MAX_TENSOR_BYTES", "")  # restored after the test, whatever main() does
    monkeypatch.delenv("MSPROBE_MAX_TENSOR_BYTES")
    for k, v in case.env.items():
        monkeypatch.setenv(k, v)
    if case.root_only:
        with _unprivileged():
            code = main(args)
    else:
        code = main(args)
    captured = capsys.readouterr()
    return Outcome(code, captured.out, captured.err)


def _run_subprocess(args: list[str], case: Case) -> Outcome:
    env = dict(os.environ, **case.env)
    env.pop("MSPROBE_MAX_TENSOR_BYTES", None) if "MSPROBE_MAX_TENSOR_BYTES" not in case.env else None
    try:
        proc = subprocess.run([sys.executable, "-m", "msprobe_core", *args], capture_output=True, text=True,
                              env=env, timeout=600)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case.id}: msprobe did not finish in time (a hang)")
    return Outcome(proc.returncode, proc.stdout, proc.stderr)


def _left_in(out: Path) -> list[Path]:
    """What a stopped run left in its output directory (none: the directory it made is gone too)."""
    return sorted(out.iterdir()) if out.is_dir() else []


def _results(out: Path) -> list[Path]:
    if not out.is_dir():
        return []
    return sorted(p for p in out.rglob("*") if p.suffix in (".csv", ".xlsx") and p.read_text(errors="replace")
                  != "earlier run\n")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(case: Case, tmp_path: Path, capsys, monkeypatch) -> None:
    if case.root_only and os.geteuid() == 0 and SUBPROCESS_ALL:
        pytest.skip("dropping privileges is done in-process only")
    base = _world_dir() if case.root_only else tmp_path
    try:
        _check_case(case, base, capsys, monkeypatch)
    finally:
        if case.root_only:
            for p in [base, *base.rglob("*")]:
                if not p.is_symlink():
                    os.chmod(p, 0o755)
            shutil.rmtree(base, ignore_errors=True)


def _check_case(case: Case, base: Path, capsys, monkeypatch) -> None:
    if case.root_only:  # lazy imports done as root: 'nobody' cannot read the interpreter's library
        main(["compare", *stats_pair(base / "warm"), "-o", str(base / "warm" / "o")])
        main(["compare", *tensor_pair(base / "warm2", GOOD), "-o", str(base / "warm2" / "o")])
        shutil.rmtree(base / "warm")
        shutil.rmtree(base / "warm2")
        capsys.readouterr()
    args = case.build(base)
    out = base / "out"
    if "-o" not in args:
        args = [*args, "-o", str(out)]
    else:
        out = Path(args[args.index("-o") + 1])
    args = [*case.command, *args, *case.args]
    before = _snapshot(base, out)
    earlier = sorted(out.rglob("*")) if out.is_dir() else []
    in_child = SUBPROCESS_ALL or case.subprocess
    result = _run_subprocess(args, case) if in_child else _run_in_process(args, capsys, case, monkeypatch)

    # the exit code and the message
    assert result.code == case.code, (result.code, result.err[-2000:], result.out[-2000:])
    assert "Traceback" not in result.err and "Traceback" not in result.out
    err_lines = [line for line in result.err.splitlines() if line.strip()]
    if case.code != 0:
        assert len(err_lines) == 1, result.err
        assert case.fragment in err_lines[0], err_lines[0]
        assert err_lines[0].startswith("msprobe: error: ")
    else:
        assert not err_lines, result.err
        assert case.fragment in result.out, result.out[-3000:]
    # no foreign code ran, nothing appeared or changed outside the output dir
    assert not (base / MARKER).exists()
    assert _snapshot(base, out) == before
    # no half-written file, the expected result files only
    assert not [p for p in base.rglob("*.part")], "temporary file left behind"
    results = _results(out)
    if case.results >= 0:
        assert len(results) == case.results, results
    if case.results == 0 and out.is_dir():
        assert sorted(out.rglob("*")) == earlier, "the failed run left files in the output dir"
    if results and (case.unsupported or case.check):
        with open(results[0], newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        if case.unsupported:
            row = next(r for r in rows if r["NPU Name"] == case.unsupported)
            assert row.get("Cosine", row.get("Max diff")) == "unsupported", row
        if case.check:
            case.check(rows)


def test_duplicate_api_keys_are_refused(tmp_path: Path, capsys) -> None:
    """Two entries under one key: JSON keeps the last silently; the streaming loader refuses the file."""
    from msprobe_core.load import dumpjson

    if not hasattr(dumpjson, "load_dump_file"):
        pytest.skip("the dump.json loader in this tree parses with json.loads (last key wins)")
    args = stats_pair(tmp_path, '{"task": "statistics", "data": {"Torch.a.0.forward": {}, "Torch.a.0.forward": {}}}')
    assert main(["compare", *args, "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "twice" in err


def test_tensor_cap_option_does_not_outlive_the_command(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("MSPROBE_MAX_TENSOR_BYTES", "")
    monkeypatch.delenv("MSPROBE_MAX_TENSOR_BYTES")
    args = tensor_pair(tmp_path, GOOD)
    assert main(["compare", *args, "-o", str(tmp_path / "o1"), "--max_tensor_bytes", "8"]) == 0
    assert "MSPROBE_MAX_TENSOR_BYTES" not in os.environ
    capsys.readouterr()


def test_table_is_big_enough() -> None:
    assert len(CASES) >= 40
    assert len({c.id for c in CASES}) == len(CASES)


def test_earlier_result_is_untouched_without_force(tmp_path: Path, capsys) -> None:
    """Without --force a free timestamp is picked (the earlier files stay); with it, this second's file is replaced."""
    args = _out_exists(tmp_path)
    earlier = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert main(["compare", *args, "-o", str(tmp_path / "out")]) == 0
    assert all((tmp_path / "out" / name).read_text() == "earlier run\n" for name in earlier)
    new = [p for p in (tmp_path / "out").iterdir() if p.name not in earlier]
    assert len(new) == 1 and new[0].name > earlier[-1], new  # the first second no earlier file carries
    assert main(["compare", *args, "-o", str(tmp_path / "out"), "--force"]) == 0
    assert sum(p.read_text() != "earlier run\n" for p in (tmp_path / "out").iterdir()) == 2
    assert len(list((tmp_path / "out").iterdir())) == len(earlier) + 1  # one earlier file replaced
    capsys.readouterr()


def test_disk_full_during_write(tmp_path: Path, capsys, monkeypatch) -> None:
    """ENOSPC while the result is being written: one-line error, exit 2, no result and no temp file."""
    import msprobe_core.default_plugins.chunked.csvparts as chunked
    import msprobe_core.write.writers as writers

    real_open = open

    class FullFile:  # the result file as a full disk has it: opening works, writing fails
        def __init__(self, *args, **kw) -> None:
            self.fh = real_open(*args, **kw)

        def write(self, text: str) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __enter__(self) -> FullFile:
            return self

        def __exit__(self, *exc) -> None:
            self.fh.close()

    monkeypatch.setattr(writers, "open", FullFile, raising=False)
    monkeypatch.setattr(chunked, "open", FullFile, raising=False)  # a result written chunk by chunk (streamed)
    args = stats_pair(tmp_path)
    code = main(["compare", *args, "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "no space left on device" in err, err
    assert not _left_in(tmp_path / "out")


# =========================================================================== real processes
def _big_stats_pair(tmp: Path, entries: int) -> list[str]:
    data = {f"Torch.op{k}.0.forward": api([tensor(), tensor()], [tensor()]) for k in range(entries)}
    g = write_dump(tmp / "g", data)
    t = write_dump(tmp / "t", data)
    return ["-tp", str(t), "-gp", str(g)]


def _spawn(args: list[str], **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "msprobe_core", "compare", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


@pytest.mark.parametrize("sig,code,word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_signal_while_writing_leaves_no_result(tmp_path: Path, sig: int, code: int, word: str) -> None:
    """A signal while the (slow) xlsx result is being written: exit 130/143, one line, no file left."""
    args = _big_stats_pair(tmp_path, 3000) + ["-o", str(tmp_path / "out"), "--xlsx"]
    proc = _spawn(args)
    if not wait_until(lambda: proc.poll() is not None or list((tmp_path / "out").glob(".*.part"))) \
            or proc.poll() is not None:
        proc.kill()
        pytest.fail(f"the result was never being written: {proc.communicate()}")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == code, (proc.returncode, err)
    assert "Traceback" not in err and "Traceback" not in out
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and word in lines[0], err
    assert not _left_in(tmp_path / "out")


def _wait_for_handlers(proc: subprocess.Popen) -> None:
    """Until the CLI has installed its signal handling (its SIGTERM handler shows in /proc/PID/status)."""
    status = Path(f"/proc/{proc.pid}/status")
    if not status.exists():
        time.sleep(3)
        return

    def handled() -> bool:
        try:
            caught = next(line for line in status.read_text().splitlines() if line.startswith("SigCgt:"))
        except (OSError, StopIteration):
            return True
        return proc.poll() is not None or bool(int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)))

    wait_until(handled)


@pytest.mark.parametrize("delay", [0.0, 0.3])
def test_sigint_early_in_the_run(tmp_path: Path, delay: float) -> None:
    """Ctrl-C while plugins load and the dumps are read: exit 130, no traceback, nothing written."""
    args = _big_stats_pair(tmp_path, 20000) + ["-o", str(tmp_path / "out")]
    proc = _spawn(args)
    _wait_for_handlers(proc)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=600)
    if proc.returncode == 0:
        pytest.skip("the run finished before the signal arrived")
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "Traceback" not in out
    assert len([line for line in err.splitlines() if line.strip()]) == 1, err
    assert not [p for p in tmp_path.rglob("*") if p.suffix in (".csv", ".part")]


def test_file_size_limit_reached(tmp_path: Path) -> None:
    """The disk 'fills up' (RLIMIT_FSIZE works as root too): one line, exit 2, no file."""
    import resource

    args = _big_stats_pair(tmp_path, 2000) + ["-o", str(tmp_path / "out")]

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    proc = _spawn(args, preexec_fn=limit)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "file too large" in lines[0], err
    assert not _left_in(tmp_path / "out")


def test_internal_errors_are_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    """A bug (any unexpected exception) is still one stderr line and exit 1; --debug shows the traceback."""
    import msprobe_core.pipeline.build as engine

    def boom(*a, **k):
        raise ZeroDivisionError("simulated bug")

    import msprobe_core.plugin as public

    monkeypatch.setattr(engine, "build_result", boom)
    # the public name too: a strategy (a plugin's, the default plugin chunked's) builds through it, and the plugin
    # module keeps a name once it was first asked for
    monkeypatch.setattr(public, "build_result", boom)
    args = ["compare", *stats_pair(tmp_path), "-o", str(tmp_path / "out")]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: ZeroDivisionError: simulated bug" in err
    assert main([*args, "--debug"]) == 1  # the same exit code, with the traceback first
    err = capsys.readouterr().err
    assert "Traceback" in err and "ZeroDivisionError: simulated bug" in err
    assert err.strip().splitlines()[-1].startswith("msprobe: internal error: ZeroDivisionError")


def test_interrupt_keeps_finaliser_noise_off_stderr(capsys, monkeypatch) -> None:
    """Ctrl-C while an object is half built (e.g. a zip being opened): its finaliser must not print a traceback."""
    from msprobe_core.cli.guard import guarded

    class HalfBuilt:
        def __del__(self) -> None:
            raise AttributeError("_writing")

    def run() -> None:
        half = HalfBuilt()  # noqa: F841 - released with the traceback
        raise KeyboardInterrupt

    seen: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)  # what would print "Exception ignored in …"
    assert guarded(run, debug=False) == 130
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.strip()] == [
        "msprobe: interrupted (Ctrl-C); unfinished result files were removed"], err
    assert seen == [] and sys.unraisablehook == seen.append


# =========================================================================== outputs that are not regular files
def _special_output(kind: str, where: Path, earlier: str = "old") -> Path:
    """An existing output path that is not a regular file: a FIFO, a device node, links to them, a directory.

    ``earlier``: what the file a link points to holds (an earlier output of the command: another file is
    not replaced, see tests/test_outputs_over_inputs.py)."""
    if kind in ("device", "link-to-device"):
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(where / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a /dev/null of our own
    if kind == "fifo":
        os.mkfifo(where / "fifo")
        return where / "fifo"
    if kind == "device":
        return where / "null"
    if kind == "link-to-device":
        (where / "link").symlink_to(where / "null")
        return where / "link"
    if kind == "link-to-file":
        (where / "real.txt").write_text(earlier)
        (where / "link").symlink_to(where / "real.txt")
        return where / "link"
    if kind == "directory":
        (where / "dir").mkdir()
        return where / "dir"
    raise ValueError(kind)


def _kinds(where: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (stat.S_IFMT(os.lstat(p).st_mode), os.lstat(p).st_rdev) for p in where.iterdir()}


@pytest.mark.parametrize("command", ["json-summary", "report"])
@pytest.mark.parametrize("kind", ["fifo", "device", "link-to-device", "link-to-file", "directory"])
def test_output_path_that_is_not_a_regular_file(tmp_path: Path, capsys, kind: str, command: str) -> None:
    """--json-summary PATH and report -o PATH: a device, FIFO or link is written as it is, never renamed over."""
    import threading

    args = stats_pair(tmp_path)
    where = tmp_path / "special"
    where.mkdir()
    target = _special_output(kind, where, '{"rows": 0}' if command == "json-summary" else "<!DOCTYPE html>old")
    before = _kinds(where)
    received: list[bytes] = []
    reader = None
    if kind == "fifo":  # a reader at the other end, as `cat fifo` would be
        def read() -> None:
            with open(target, "rb") as fh:
                received.append(fh.read())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
    if command == "json-summary":
        code = main(["compare", *args, "-o", str(tmp_path / "out"), "-q", "--json-summary", str(target)])
    else:
        assert main(["compare", *args, "-o", str(tmp_path / "out"), "-q"]) == 0
        code = main(["report", str(tmp_path / "out"), "-q", "-o", str(target)])
    err = capsys.readouterr().err
    if reader is not None:
        reader.join(30)
    assert _kinds(where) == before, "an output path that is not a regular file was replaced"
    assert not list(tmp_path.rglob("*.part"))
    if kind == "directory":
        assert code == 2 and err.count("\n") == 1 and "a directory is in the way" in err, err
        return
    assert code == 0, err
    written = None
    if kind == "fifo":
        written = received[0] if received else b""
    elif kind == "link-to-file":
        written = (where / "real.txt").read_bytes()
    if written is not None:
        if command == "json-summary":
            assert json.loads(written)["rows"] == 2
        else:
            assert written.startswith(b"<!DOCTYPE html>") or b"<html" in written[:200]


@pytest.mark.parametrize("via", ["file", "pipe"])
def test_json_summary_to_dev_stdout(tmp_path: Path, via: str) -> None:
    """--json-summary /dev/stdout: the JSON goes into the process's own stdout, after what was printed before.

    The link is a private twin of /dev/stdout: a tree where the bug is back must not replace the system's.
    """
    (tmp_path / "stdout").symlink_to("/proc/self/fd/1")
    args = stats_pair(tmp_path) + ["-o", str(tmp_path / "out"), "--json-summary", str(tmp_path / "stdout")]
    cmd = [sys.executable, "-m", "msprobe_core", "compare", *args]
    if via == "file":
        with open(tmp_path / "stdout.txt", "w") as fh:
            proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.PIPE, text=True, timeout=600)
        text = (tmp_path / "stdout.txt").read_text()
    else:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        text = proc.stdout
    assert proc.returncode == 0, proc.stderr
    start = text.index("{\n")
    assert "The result file path is" in text[:start]  # the earlier output is kept, the JSON follows it
    summary, _ = json.JSONDecoder().raw_decode(text[start:])
    assert summary["rows"] == 2
    assert os.readlink(tmp_path / "stdout") == "/proc/self/fd/1"


# =========================================================================== runs into one output folder
def test_concurrent_runs_into_one_folder_lose_nothing(tmp_path: Path) -> None:
    """Runs started together into one folder: each exits 0 and writes its own file, named as msprobe names them."""
    runs = 4
    dumps = [stats_pair(tmp_path / f"in{k}", golden_data={f"Torch.r{k}.0.forward": api([tensor()], [tensor()])},
                        target_data={f"Torch.r{k}.0.forward": api([tensor()], [tensor()])}) for k in range(runs)]
    procs = [_spawn([*args, "-o", str(tmp_path / "out")]) for args in dumps]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0] * runs, outs
    printed = [line.rsplit(" ", 1)[-1].rstrip(".") for out, _ in outs for line in out.splitlines()
               if "The result file path is" in line]
    assert len(set(printed)) == runs, printed
    files = sorted((tmp_path / "out").iterdir())
    assert [p.name for p in files] == sorted(Path(p).name for p in printed)  # no lock or temporary file left
    assert all(re.fullmatch(r"compare_result_\d{14}\.csv", p.name) for p in files)
    seen = {row["NPU Name"].split(".")[1] for p in files for row in csv.DictReader(p.open())}
    assert seen == {f"r{k}" for k in range(runs)}  # every run's own rows, none overwritten


def test_run_stamp_skips_a_held_second(tmp_path: Path) -> None:
    from msprobe_core.files.outputs import run_stamp

    now = time.time()
    with run_stamp(tmp_path, now=now) as first, run_stamp(tmp_path, now=now) as second:
        assert second == time.strftime("%Y%m%d%H%M%S", time.localtime(int(now) + 1)) and first < second
        assert len(list(tmp_path.glob(".msprobe-run-*.lock"))) == 2
    assert not list(tmp_path.iterdir())


def test_sighup_while_writing_leaves_no_result(tmp_path: Path) -> None:
    """A closed terminal (SIGHUP) while the result is written: exit 129, no hidden temporary file left."""
    args = _big_stats_pair(tmp_path, 3000) + ["-o", str(tmp_path / "out"), "--xlsx"]
    proc = _spawn(args)
    wait_until(lambda: proc.poll() is not None or list((tmp_path / "out").glob(".*.part")), poll=0.002)
    proc.send_signal(signal.SIGHUP)
    out, err = proc.communicate(timeout=600)
    if proc.returncode == 0:
        pytest.skip("the run finished before the signal arrived")
    assert proc.returncode == 128 + signal.SIGHUP, (proc.returncode, err)
    assert "Traceback" not in err and "SIGHUP" in err
    assert not _left_in(tmp_path / "out")


def test_leftovers_of_killed_runs_are_swept(tmp_path: Path, capsys) -> None:
    """Hidden .part files and run locks a killed run left are removed by the next run; live ones are not."""
    import fcntl

    out = tmp_path / "out"
    out.mkdir()
    old = time.time() - 3600
    stale = [out / ".compare_result_20200101000000.csv.msprobe-0123456789ab.part", out / ".msprobe-run-20200101000000.lock"]
    fresh = out / ".compare_result_20200101000001.csv.msprobe-0123456789ab.part"
    held = out / ".compare_result_20200101000002.csv.msprobe-0123456789ab.part"
    for p in [*stale, fresh, held]:
        p.write_text("" if p.suffix == ".lock" else "half")  # a run lock is left empty
    for p in [*stale, held]:
        os.utime(p, (old, old))
    with open(held) as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # a live writer (suspended for an hour) holds it
        assert main(["compare", *stats_pair(tmp_path), "-o", str(out), "-q"]) == 0
    assert not any(p.exists() for p in stale)
    assert fresh.exists() and held.exists()
    capsys.readouterr()


def test_report_refuses_a_table_whose_rows_do_not_match_its_header(tmp_path: Path, capsys) -> None:
    """A CSV where a bare CR split a row (as an older writer left it): `msprobe report` refuses it in one line."""
    assert main(["compare", *stats_pair(tmp_path), "-o", str(tmp_path / "out"), "-q"]) == 0
    [result] = list((tmp_path / "out").glob("*.csv"))
    lines = result.read_text().splitlines()
    forged = lines[1].split(",", 1)
    result.write_text("\n".join([lines[0], forged[0] + ",\r=HYPERLINK(1)," + forged[1], *lines[2:]]) + "\n")
    assert main(["report", str(result), "-o", str(tmp_path / "r.html"), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fields where the header has" in err, err
    assert not (tmp_path / "r.html").exists()


# =========================================================================== names no encoding can write
@pytest.mark.parametrize("extra", [("--xlsx",), ("-da",), ("--json-summary", "{tmp}/s.json", "--report", "html")])
def test_surrogate_name_reaches_every_output_escaped(tmp_path: Path, capsys, extra: tuple[str, ...]) -> None:
    """A lone surrogate in a name (valid JSON) is written as its escape in every output; the run succeeds."""
    t = tmp_path / "t" / "dump.json"
    t.parent.mkdir()
    t.write_text(_SURROGATE_DUMP.replace('"Max": 1.0', '"Max": 7.0', 1))  # a divergence for -da to report
    g = tmp_path / "g" / "dump.json"
    g.parent.mkdir()
    g.write_text(_SURROGATE_DUMP)
    args = ["compare", "-tp", str(t), "-gp", str(g), "-o", str(tmp_path / "out"),
            *(a.format(tmp=tmp_path) for a in extra)]
    code = main(args)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert not captured.err
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.parent.name in ("out", tmp_path.name)]
    assert written
    for p in written:
        if p.suffix in (".json", ".csv"):
            text = p.read_text(encoding="utf-8")  # valid UTF-8 throughout
            assert "\\ud800" in text, p
        if p.suffix == ".json":  # the next dump's config names the call up to its number (its list entry)
            name = "Torch.a\ud800b.0." if p.name.startswith("next_dump_config_") else "Torch.a\ud800b.0.forward"
            assert name in json.dumps(json.loads(p.read_text(encoding="utf-8")), ensure_ascii=False)


@pytest.mark.parametrize("env", [{}, {"MSPROBE_PY_LOADER": "1"}, {"MSPROBE_WHOLE_TABLES": "1"}],
                         ids=["c-scanner-and-index", "python-walk", "whole-tables"])
def test_surrogate_values_load_alike_on_every_path(tmp_path: Path, capsys, monkeypatch, env: dict) -> None:
    """Surrogates in string values after 2,000 plain entries (the C scanner and the index decline half way):
    every load path gives the table the Python walk gives, values escaped."""
    plain = {f"Torch.a{k}.0.forward": api([tensor(), {"type": "str", "value": "v"}], [tensor()]) for k in range(2000)}
    data = {**plain, **_surrogate_values()}
    args = stats_pair(tmp_path, target_data=data, golden_data=data)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert main(["compare", *args, "-o", str(tmp_path / "out"), "-q"]) == 0, capsys.readouterr().err
    rows = read_csv(only_result(tmp_path / "out"))
    assert len(rows) == 3 * len(plain) + 4
    _escaped_values()(rows[-4:])
    monkeypatch.setenv("MSPROBE_PY_LOADER", "1")  # the reference: the Python walk on whole tables
    monkeypatch.setenv("MSPROBE_WHOLE_TABLES", "1")
    assert main(["compare", *args, "-o", str(tmp_path / "ref"), "-q"]) == 0
    assert rows == read_csv(only_result(tmp_path / "ref"))


# =========================================================================== the console and the first instant
def test_stdout_full_or_closed_does_not_change_the_outcome(tmp_path: Path) -> None:
    """stdout on /dev/full or a pipe closed early: the result is written, the exit code is the run's (0)."""
    args = stats_pair(tmp_path)
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "msprobe_core", "compare", *args, "-o", str(tmp_path / "a")],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "Logging error" not in proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.strip()] == [
        "msprobe: warning: standard output stopped taking output (no space left on device); what was printed "
        "after that is lost"]
    assert len(list((tmp_path / "a").glob("*.csv"))) == 1
    reader = subprocess.Popen(["head", "-c", "10"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    proc = subprocess.run([sys.executable, "-m", "msprobe_core", "compare", *args, "-o", str(tmp_path / "b")],
                          stdout=reader.stdin, stderr=subprocess.PIPE, text=True, timeout=600)
    reader.stdin.close()
    reader.wait(30)
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr  # a closed pipe is no news
    assert len(list((tmp_path / "b").glob("*.csv"))) == 1


def test_banner_only_after_every_output_is_written(tmp_path: Path, capsys) -> None:
    """'msprobe compare ends successfully' is not printed when the JSON summary (or report) then fails."""
    (tmp_path / "in-the-way").mkdir()
    code = main(["compare", *stats_pair(tmp_path), "-o", str(tmp_path / "out"), "--json-summary",
                 str(tmp_path / "in-the-way")])
    captured = capsys.readouterr()
    assert code == 2 and "a directory is in the way" in captured.err
    assert "The result file path is" in captured.out and "ends successfully" not in captured.out
    assert main(["compare", *stats_pair(tmp_path / "2"), "-o", str(tmp_path / "out2"), "--report", "html"]) == 0
    out = capsys.readouterr().out
    assert out.index("The report file path is") < out.index("ends successfully") < out.index("Compare summary")


@pytest.mark.parametrize("module", ["typing", "click", "logging", "logging in exec", "run.jobs in exec"])
@pytest.mark.parametrize("how", ["python -m msprobe_core", "msprobe"])
def test_ctrl_c_while_the_cli_loads(tmp_path: Path, module: str, how: str) -> None:
    """A Ctrl-C while msprobe's modules load (the first ~100 ms): exit 130 and one line, no traceback.

    The interrupt is raised where a real Ctrl-C would raise it: at the first import of ``module``
    (each one msprobe imports as it starts), for both ways of starting it; "in exec": inside
    ``exec()`` of source text, as when it strikes while ``dataclasses`` builds a class (CPython
    3.11 then marks it unhandled, and ``python -m`` ended by SIGINT, -2, after msprobe had caught it).
    """
    raise_it = "exec('raise KeyboardInterrupt')" if module.endswith(" in exec") else "raise KeyboardInterrupt"
    module = module.split()[0]
    (tmp_path / "sitecustomize.py").write_text(f"""
import builtins, sys
real = builtins.__import__
def interrupted(name, *args, **kw):
    if name == {module!r} and name not in sys.modules and "msprobe_core" in sys.modules:
        builtins.__import__ = real
        {raise_it}
    return real(name, *args, **kw)
builtins.__import__ = interrupted
""")
    script = Path(sys.executable).with_name("msprobe")
    if how == "msprobe" and not script.is_file():
        pytest.skip("the msprobe console script is not installed next to this python")
    cmd = [sys.executable, "-m", "msprobe_core"] if how != "msprobe" else [sys.executable, str(script)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    # the engine loads while the compare runs (msprobe's own handling is in place by then)
    args = ["compare", *stats_pair(tmp_path), "-o", str(tmp_path / "out")] if module == "run.jobs" else [
        "--version"]
    proc = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.strip()] == [
        "msprobe: interrupted (Ctrl-C)" + ("; unfinished result files were removed" if args[0] == "compare" else "")]


def test_a_run_that_stops_creates_no_output_directory(tmp_path: Path, capsys) -> None:
    """The run's timestamp is held in the output directory; a run stopped by its input leaves no directory behind."""
    args = stats_pair(tmp_path, '{"task": "statistics", "data": {"Torch.a.0.forward": 5}}')
    assert main(["compare", *args, "-o", str(tmp_path / "new" / "out")]) == 2
    assert not (tmp_path / "new").exists()
    capsys.readouterr()
