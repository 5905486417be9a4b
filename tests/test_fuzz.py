"""Fuzzing every loader: at least 10,000 generated inputs each, in bounded time, no crash.

A *crash* is any exception other than the loader's documented one
(:class:`~msprobe_core.errors.MsprobeError` for dump/mapping files,
:class:`~msprobe_core.errors.TensorReadError` for tensor files), a hang, or
foreign code running (the corpus holds pickles that would create a marker
file). Inputs come from a small mutation engine driven by hypothesis: each
hypothesis example draws a seed and a batch size, and the engine derives that
many mutants from a seed corpus of valid files (byte flips, interesting bytes,
truncation, splicing, duplicated/deleted slices, and structure-aware mutations
of the JSON tree, of ``data.pkl`` inside the zip and of the ``.npy`` header).
Hypothesis shrinks a failing seed like any other example.

``MSPROBE_FUZZ_EXAMPLES`` (default 10000) is the number of inputs per loader;
the count is printed at the end of each test. The whole module stays under
about a minute on two cores at the default.
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import string
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msprobe_classic.schemas import CompareJson
from msprobe_pytorch.pt_reader import read_pt
from msprobe_pytorch.pt_writer import write_pt, write_storage_pt

from msprobe_core.builtin import msprobe_load_dump
from msprobe_core.default_plugins.fast_scan import msprobe_load_dump as scan_dump
from msprobe_core.errors import MsprobeError, TensorReadError
from msprobe_core.files.npy_reader import read_npy
from msprobe_core.files.schemas import NameMapping, validate
from msprobe_core.files.validation import read_yaml, resolve_within
from msprobe_core.load.document import flatten_dump
from msprobe_core.load.dumpjson import load_stack
from msprobe_core.model import CompareOptions


def load_file(path: Path):
    """The dump.json loaders as the engine calls them: the core's pure-Python one, then the default plugin
    ``fast_scan``'s C scanner (which hands a file it does not fully understand on: ``None``); each may refuse the
    file with an ``MsprobeError``, nothing else."""
    table = msprobe_load_dump(path, CompareOptions())
    scanned = scan_dump(path, CompareOptions(), None)
    return table if scanned is None else scanned


EXAMPLES = int(os.environ.get("MSPROBE_FUZZ_EXAMPLES", "10000"))
BATCH = 25  # inputs derived from one hypothesis example
MARKER_NAME = "fuzz-pwned"


def _settings(n_inputs: int = EXAMPLES) -> settings:
    return settings(
        max_examples=max(1, -(-n_inputs // BATCH)),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


class Tally:
    """How many inputs a loader saw, accepted and rejected cleanly."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.inputs = self.accepted = self.rejected = 0
        self.started = time.perf_counter()

    def report(self, capsys: pytest.CaptureFixture) -> None:
        with capsys.disabled():
            print(
                f"\nfuzz {self.name}: {self.inputs} generated inputs, 0 crashes "
                f"({self.accepted} accepted, {self.rejected} rejected with a clean error) "
                f"in {time.perf_counter() - self.started:.1f}s"
            )
        assert self.inputs >= EXAMPLES, f"only {self.inputs} inputs were generated"


# =========================================================================== mutation engine
INTERESTING = [b"\x00", b"\xff", b"\x7f", b"\x80", b"\x01", b"0", b"9", b"-", b'"', b"'", b"\\", b"[", b"]", b"{",
               b"}", b",", b":", b".", b"/", b"..", b"e", b"NaN", b"Infinity", b"null", b"true", b"\n", b"\xc3\xa9",
               b"\xf0\x9f\x98\x80", b"PK", b"\x93NUMPY", b"c", b"R", b"."]


def mutate_bytes(data: bytes, rng: random.Random, corpus: list[bytes]) -> bytes:
    """One to four random byte-level mutations of ``data``."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(8)
        n = len(buf)
        if op == 0 and n:  # flip bits
            i = rng.randrange(n)
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1 and n:  # interesting bytes
            i = rng.randrange(n)
            tok = rng.choice(INTERESTING)
            buf[i : i + rng.randint(0, len(tok))] = tok
        elif op == 2:  # truncate
            del buf[rng.randint(0, n) :]
        elif op == 3 and n:  # delete a slice
            i = rng.randrange(n)
            del buf[i : i + rng.randint(1, 64)]
        elif op == 4 and n:  # duplicate a slice
            i = rng.randrange(n)
            j = min(n, i + rng.randint(1, 64))
            buf[j:j] = buf[i:j]
        elif op == 5:  # splice with another corpus item
            other = rng.choice(corpus)
            cut_a, cut_b = rng.randint(0, n), rng.randint(0, len(other))
            buf = buf[:cut_a] + bytearray(other[cut_b:])
        elif op == 6 and n >= 4:  # overwrite a little-endian integer with an extreme value
            i = rng.randrange(n - 3)
            buf[i : i + 4] = rng.choice([b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"\xff\xff\xff\x7f",
                                         b"\x00\x00\x00\x80", b"\x10\x00\x00\x00"])
        else:  # random bytes
            i = rng.randint(0, n)
            buf[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    return bytes(buf)


def random_json(rng: random.Random, depth: int = 0) -> object:
    """A random JSON value (small), biased towards what dumps contain."""
    kinds = ["null", "bool", "int", "float", "str", "list", "dict"] if depth < 4 else ["null", "bool", "int", "str"]
    kind = rng.choice(kinds)
    if kind == "null":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "int":
        return rng.choice([0, 1, -1, 2**31, -(2**63), 10**30, rng.randint(-1000, 1000)])
    if kind == "float":
        return rng.choice([0.0, -0.0, 1.5, float("nan"), float("inf"), float("-inf"), 1e308, 5e-324, rng.random()])
    if kind == "str":
        return rng.choice(["", "torch.float32", "Float32", "../x.pt", "/etc/passwd", "a\x00b", "=1+1", "é😀",
                           "x" * rng.randint(0, 300), "torch.Tensor", "slice", "torch.Size", "ellipsis"])
    if kind == "list":
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(["type", "dtype", "shape", "Max", "Min", "Mean", "Norm", "requires_grad", "data_name", "md5",
                        "value", "input_args", "output", "class_type", "tensor", "x"]): random_json(rng, depth + 1)
            for _ in range(rng.randint(0, 5))}


def mutate_tree(doc: object, rng: random.Random) -> object:
    """Replace, delete or add one random node of a JSON tree (structure-aware mutation)."""
    doc = json.loads(json.dumps(doc, allow_nan=True))
    nodes: list[tuple[object, object]] = []  # (container, key)

    def collect(node: object) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                nodes.append((node, k))
                collect(v)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                nodes.append((node, i))
                collect(v)

    collect(doc)
    if not nodes:
        return random_json(rng)
    for _ in range(rng.randint(1, 3)):
        container, key = rng.choice(nodes)
        op = rng.randrange(3)
        try:
            if op == 0:
                container[key] = random_json(rng)  # type: ignore[index]
            elif op == 1:
                del container[key]  # type: ignore[arg-type]
            elif isinstance(container, dict):
                container[rng.choice(["type", "data_name", "shape", "dtype", "Max", "zz"])] = random_json(rng)
            else:
                container.append(random_json(rng))  # type: ignore[union-attr]
        except (KeyError, IndexError, TypeError):
            pass
    return doc


# =========================================================================== seed corpora
def _leaf(**kw: object) -> dict:
    leaf = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 3], "Max": 1.0, "Min": -1.0, "Mean": 0.1,
            "Norm": 2.0, "requires_grad": False}
    leaf.update(kw)
    return leaf


def json_seeds() -> list[dict]:
    """Valid dump documents covering every leaf kind the flattener knows."""
    data = {
        "Functional.linear.0.forward": {
            "input_args": [_leaf(), {"type": "int", "value": 3}, None, {"type": "slice", "value": [1, None, 2]}],
            "input_kwargs": {"bias": _leaf(shape=[3]), "dim": {"type": "torch.Size", "value": [2, 3]}},
            "output": [_leaf(Max=float("nan"), Min=float("-inf"))],
        },
        "Module.layer.Linear.backward.0": {"input": [_leaf()], "output": [[_leaf(), _leaf()]]},
        "Module.layer.Linear.parameters_grad": {"weight": [_leaf()]},
        "Distributed.send.0.forward": {
            "input_kwargs": {"dst": {"type": "int", "value": 1},
                             "group": {"type": "torch.ProcessGroup", "group_ranks": [0, 1]}},
            "input_args": [{"class_type": "torch.distributed.P2POp", "tensor": _leaf()}],
        },
        "Tensor.__getitem__.0.forward": {"input_args": [_leaf(), {"type": "ellipsis", "value": "..."}],
                                         "output": [_leaf(dtype="torch.bfloat16", requires_grad=True)]},
    }
    md5 = {"Torch.a.0.forward": {"input_args": [_leaf(md5="0123abcd")], "output": [_leaf(md5="ffffffff")]}}
    tensor = {"Torch.a.0.forward": {"input_args": [_leaf(data_name="Torch.a.0.forward.input.0.pt")],
                                    "output": [_leaf(data_name="Torch.a.0.forward.output.0.pt")]}}
    return [
        {"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": None, "data": data},
        {"task": "statistics", "level": "mix", "framework": "mindspore", "data": md5},
        {"task": "tensor", "level": "L0", "framework": "pytorch", "dump_data_dir": "/x", "data": tensor},
        {"task": "statistics", "data": {}},
    ]


def pt_seeds(tmp: Path) -> list[bytes]:
    """Valid .pt files of many dtypes, shapes and views, plus hostile ones."""
    out = []
    arrays = [
        (np.arange(12, dtype=np.float32).reshape(3, 4), None),
        (np.float32(2.5), None),
        (np.zeros((0, 3), np.float32), None),
        (np.array([1.5, -2.25, np.nan, np.inf], np.float32), "bfloat16"),
        (np.array([0.5, -1.0, 448.0], np.float32), "float8_e4m3fn"),
        (np.arange(6, dtype=np.int64), None),
        (np.array([True, False, True]), None),
        (np.array([1 + 2j, 3 - 1j], np.complex64), None),
        (np.arange(8, dtype=np.float16).reshape(2, 2, 2), None),
    ]
    for k, (arr, dtype) in enumerate(arrays):
        p = tmp / f"seed{k}.pt"
        write_pt(p, arr, dtype=dtype)
        out.append(p.read_bytes())
    p = tmp / "view.pt"
    write_storage_pt(p, np.arange(20, dtype=np.float32), size=(3, 2), stride=(1, 3), offset=2)
    out.append(p.read_bytes())
    marker = tmp / MARKER_NAME
    for pkl in (
        b"cposix\nsystem\n(X" + len(f"touch {marker}").to_bytes(4, "little") + f"touch {marker}".encode() + b"tR.",
        b"\x80\x02cbuiltins\nexec\nX\x05\x00\x00\x001+1\n\x85R.",
    ):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("archive/data.pkl", pkl)
            zf.writestr("archive/data/0", b"\0" * 16)
        out.append(buf.getvalue())
    return out


def npy_seeds() -> list[bytes]:
    out = []
    for arr in (np.arange(12, dtype=np.float32).reshape(3, 4), np.float64(1.5), np.zeros((0, 2), np.int8),
                np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)), np.array([1 + 1j]), np.array(["ab"]),
                np.zeros(3, dtype=[("a", "<f4"), ("b", "<i2")]), np.array([True, False])):
        buf = io.BytesIO()
        np.save(buf, arr)
        out.append(buf.getvalue())
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.arange(4, dtype=">f8"), version=(2, 0))
    out.append(buf.getvalue())
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    out.append(buf.getvalue())
    return out


YAML_SEEDS = [
    b"Torch.a.0.forward.input.0: Torch.b.0.forward.input.0\nx: y\n",
    b"Cell.net.Dense: Module.net.Linear\n5: 0\n",
    b"TopLayer:\n  layers: model.layers\n  5: 0\nEmbedding:\n  weight: w\n",
    b"- ms_api: Mint.div\n  pt_api: Torch.div\n  ms_args: [0, 1]\n  pt_args: [0, 1]\n  ms_outputs: [0]\n"
    b"  pt_outputs: [0]\n",
    b"api:\n- Distributed.all_reduce\ncompare_index:\n- Max diff\n",
    b"npu_path: ./npu/dump.json\nbench_path: ./bench/dump.json\nstack_path: ./stack.json\n"
    b"is_print_compare_log: true\nrank_id: [0, 1]\n",
]
#: the pydantic models of YAML-like documents: the core's -dm mapping and the classic plugin's compare.json
YAML_MODELS = (NameMapping, CompareJson)


def yaml_file_loaders() -> list[Callable[[Path], object]]:
    """The loaders that read the other files of the seeds from their path: the MindSpore plugin's -am/-cm/-lm
    parsers (they check their documents by hand) and merge_result's config.yaml."""
    from msprobe_mindspore.layer_mapping import load_layer_mapping_yaml
    from msprobe_mindspore.mapping import load_api_mapping_yaml, load_cell_mapping_yaml

    from msprobe_core.default_plugins.merge_result import load_config

    return [load_api_mapping_yaml, load_cell_mapping_yaml, load_layer_mapping_yaml, load_config]


# =========================================================================== fuzz targets
@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where the inputs are written: a RAM disk when there is one (file creation dominates otherwise)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        d = Path(tempfile.mkdtemp(prefix="msprobe-fuzz-", dir=shm))
        try:
            yield d
        finally:
            shutil.rmtree(d, ignore_errors=True)
    else:
        yield tmp_path_factory.mktemp("fuzz")


def _flatten_or_clean_error(doc: object, path: Path, tally: Tally) -> None:
    try:
        table = flatten_dump(doc, path, "dump", "pytorch")  # type: ignore[arg-type]
    except MsprobeError as exc:
        assert "\n" not in str(exc)
        tally.rejected += 1
        return
    n = len(table.name)
    assert all(len(col) == n for col in (table.dtype, table.shape, table.max, table.md5, table.data_name, table.row_api))
    tally.accepted += 1


def test_fuzz_dump_json_loader(workdir: Path, capsys: pytest.CaptureFixture) -> None:
    """dump.json: byte-level mutants through the streaming file loader, tree mutants through the flattener."""
    seeds = json_seeds()
    texts = [json.dumps(d, allow_nan=True).encode() for d in seeds]
    tally = Tally("dump.json loader")
    path = workdir / "dump.json"

    @_settings()
    @given(seed=st.integers(0, 2**64 - 1))
    def run(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(BATCH):
            tally.inputs += 1
            if rng.random() < 0.5:
                path.write_bytes(mutate_bytes(rng.choice(texts), rng, texts))
                try:
                    table = load_file(path)
                except MsprobeError as exc:
                    assert "\n" not in str(exc) and str(path) in str(exc)
                    tally.rejected += 1
                else:
                    assert len(table.name) == len(table.dtype)
                    tally.accepted += 1
            else:
                _flatten_or_clean_error(mutate_tree(rng.choice(seeds), rng), path, tally)

    run()
    tally.report(capsys)


def test_fuzz_stack_json_loader(workdir: Path, capsys: pytest.CaptureFixture) -> None:
    """stack.json in both layouts."""
    seeds = [json.dumps({"0": [["Torch.a.0.forward"], ["File a.py, line 1"]]}).encode(),
             json.dumps({"Torch.a.0.forward": ["File a.py, line 1", "File b.py, line 2"]}).encode()]
    tally = Tally("stack.json loader")
    path = workdir / "stack.json"

    @_settings(EXAMPLES // 4)
    @given(seed=st.integers(0, 2**64 - 1))
    def run(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(BATCH):
            tally.inputs += 1
            raw = mutate_bytes(rng.choice(seeds), rng, seeds) if rng.random() < 0.6 else json.dumps(
                mutate_tree(json.loads(rng.choice(seeds)), rng), allow_nan=True).encode()
            path.write_bytes(raw)
            try:
                load_stack(path)
                tally.accepted += 1
            except MsprobeError:
                tally.rejected += 1

    run()
    with capsys.disabled():
        print(f"\nfuzz stack.json loader: {tally.inputs} generated inputs, 0 crashes")


def test_fuzz_construct_json_loader(workdir: Path, capsys: pytest.CaptureFixture) -> None:
    """construct.json (read by -da): byte and tree mutants, cycles among them; an input error or a mapping."""
    from msprobe_core.default_plugins.diff_analyze.construct import load_construct

    seeds = [json.dumps({"Torch.a.0.forward": "Module.m.M.forward.0", "Module.m.M.forward.0": None}).encode(),
             json.dumps({"Torch.a.0.forward": ["Module.m.M.forward.0", 1], "Module.m.M.forward.0": "Module.n"}).encode(),
             json.dumps({"a": "b", "b": "a"}).encode()]
    tally = Tally("construct.json loader")
    (workdir / "c").mkdir(exist_ok=True)
    path = workdir / "c" / "construct.json"

    @_settings()
    @given(seed=st.integers(0, 2**64 - 1))
    def run(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(BATCH):
            tally.inputs += 1
            raw = mutate_bytes(rng.choice(seeds), rng, seeds) if rng.random() < 0.6 else json.dumps(
                mutate_tree(json.loads(rng.choice(seeds)), rng), allow_nan=True).encode()
            path.write_bytes(raw)
            try:
                parents = load_construct(path.parent / "dump.json")
            except MsprobeError as exc:
                assert "\n" not in str(exc)
                tally.rejected += 1
            else:
                assert all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in parents.items())
                tally.accepted += 1

    run()
    tally.report(capsys)


def test_fuzz_pt_reader(workdir: Path, capsys: pytest.CaptureFixture) -> None:
    """.pt: byte mutants of valid and hostile files, and valid zips around mutated data.pkl."""
    seeds = pt_seeds(workdir)
    pickles = []
    for raw in seeds[:10]:
        with zipfile.ZipFile(io.BytesIO(raw)) as zf:
            name = next(n for n in zf.namelist() if n.endswith("data.pkl"))
            pickles.append((zf.read(name), {n: zf.read(n) for n in zf.namelist()}, name))
    tally = Tally(".pt reader")
    path = workdir / "fuzz.pt"
    modules_before = set(sys.modules)

    @_settings()
    @given(seed=st.integers(0, 2**64 - 1))
    def run(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(BATCH):
            tally.inputs += 1
            if rng.random() < 0.5:
                path.write_bytes(mutate_bytes(rng.choice(seeds), rng, seeds))
            else:  # keep the zip valid, mutate the pickle program
                pkl, members, name = rng.choice(pickles)
                bad = mutate_bytes(pkl, rng, [p for p, _, _ in pickles])
                with zipfile.ZipFile(path, "w") as zf:
                    for n, content in members.items():
                        zf.writestr(n, bad if n == name else content)
            try:
                arr = read_pt(path, max_bytes=1 << 20)
            except TensorReadError as exc:
                assert "\n" not in str(exc)
                tally.rejected += 1
            else:
                assert isinstance(arr, np.ndarray)
                tally.accepted += 1

    run()
    assert not (workdir / MARKER_NAME).exists(), "a pickle ran code"
    assert set(sys.modules) - modules_before <= {m for m in sys.modules if m.startswith(("hypothesis", "_hypothesis"))}
    tally.report(capsys)


def test_fuzz_npy_reader(workdir: Path, capsys: pytest.CaptureFixture) -> None:
    """.npy (MindSpore tensors, kernel dumps): byte mutants, with a focus on the header."""
    seeds = npy_seeds()
    tally = Tally(".npy reader")
    path = workdir / "fuzz.npy"

    @_settings()
    @given(seed=st.integers(0, 2**64 - 1))
    def run(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(BATCH):
            tally.inputs += 1
            raw = rng.choice(seeds)
            if rng.random() < 0.5:  # mutate inside the header text only
                end = min(len(raw), 10 + int.from_bytes(raw[8:10], "little")) if len(raw) > 10 else len(raw)
                head = mutate_bytes(raw[:end], rng, seeds)
                raw = head + raw[end:]
            else:
                raw = mutate_bytes(raw, rng, seeds)
            path.write_bytes(raw)
            try:
                arr = read_npy(path, max_bytes=1 << 20)
            except TensorReadError as exc:
                assert "\n" not in str(exc)
                tally.rejected += 1
            else:
                assert isinstance(arr, np.ndarray) and not arr.dtype.hasobject
                tally.accepted += 1

    run()
    tally.report(capsys)


def test_fuzz_yaml_config_loaders(workdir: Path, capsys: pytest.CaptureFixture) -> None:
    """Mapping YAMLs, merge config and compare.json: mutated YAML through read_yaml and every model, and through
    the loaders that read each kind of file."""
    tally = Tally("mapping/config YAML loaders")
    path = workdir / "fuzz.yaml"
    marker = workdir / MARKER_NAME
    seeds = [*YAML_SEEDS, f"!!python/object/apply:os.system ['touch {marker}']\n".encode(), b"a: &x [1]\nb: *x\n"]
    loaders = yaml_file_loaders()

    @_settings()
    @given(seed=st.integers(0, 2**64 - 1))
    def run(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(BATCH):
            tally.inputs += 1
            path.write_bytes(mutate_bytes(rng.choice(seeds), rng, seeds))
            try:
                doc = read_yaml(path, "mapping")
            except MsprobeError as exc:
                assert "\n" not in str(exc)
                tally.rejected += 1
                continue
            ok = False
            for model in YAML_MODELS:
                try:
                    validate(model, doc, path=path)
                    ok = True
                except MsprobeError as exc:
                    # one line that says where: a JSON path, or (for a missing key) "at the top level"
                    assert "\n" not in str(exc) and ("$" in str(exc) or "at the top level" in str(exc))
            for load in loaders:
                try:
                    load(path)
                    ok = True
                except MsprobeError as exc:
                    assert "\n" not in str(exc), (load.__name__, str(exc))
            tally.accepted += ok
            tally.rejected += not ok

    run()
    assert not marker.exists()
    tally.report(capsys)


_NAME_CHARS = string.ascii_letters + string.digits + "./\\_-~ \x00é😀"


def test_fuzz_tensor_paths(workdir: Path, capsys: pytest.CaptureFixture) -> None:
    """data_name → path: whatever the name, the result is inside the dump dir or the name is refused."""
    root = workdir / "tensors"
    (root / "sub").mkdir(parents=True, exist_ok=True)
    (workdir / "outside.pt").write_bytes(b"x")
    if not (root / "link_out").exists():
        (root / "link_out").symlink_to(workdir)
        (root / "sub" / "up").symlink_to("..")
    real_root = os.path.realpath(root)
    tally = Tally("data_name resolver")
    parts = ["..", ".", "", "sub", "up", "link_out", "outside.pt", "x.pt", "/", "//", "\x00", "é😀", "a" * 300]

    @_settings()
    @given(seed=st.integers(0, 2**64 - 1))
    def run(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(BATCH):
            tally.inputs += 1
            if rng.random() < 0.5:
                name = "/".join(rng.choice(parts) for _ in range(rng.randint(1, 5)))
            else:
                name = "".join(rng.choice(_NAME_CHARS) for _ in range(rng.randint(0, 20)))
            try:
                full = resolve_within(root, name)
            except TensorReadError:
                tally.rejected += 1
                continue
            assert os.path.commonpath([real_root, str(full)]) == real_root and str(full) != real_root
            tally.accepted += 1

    run()
    tally.report(capsys)
