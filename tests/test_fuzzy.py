"""``-fm/--fuzzy_match``: differential tests against msprobe and the c08 known answer.

msprobe's only ``-fm`` oracle (``pytorch/c08/oracle/compare_fm``) records a crash.
Where both runs make the same calls msprobe's queue algorithm pairs every row
with its namesake, so there its ``-fm`` output equals its plain compare: our
``-fm`` result must agree cell for cell with ``oracle/compare``. The pairs are
also checked against a port of msprobe's queue algorithm (compare-core §4.2)
and against msprobe 8.3.3's fuzzy results in the legacy oracles.
"""

from __future__ import annotations

import random
import re
from functools import lru_cache
from pathlib import Path

import pytest

from msprobe_core.cli.main import main
from msprobe_core.default_plugins.fuzzy.seqalign import align
from msprobe_core.host.registry import get_host
from msprobe_core.host.specs import CompareJob
from msprobe_core.load.document import strip_call_number
from msprobe_core.load.stage import load_pair
from msprobe_core.match.stage import match_tables
from msprobe_core.model import CompareOptions

from .conftest import agree, corpora_dir, corpus_mark
from .dumps import api, only_result, read_csv, tensor, write_dump

TIMESTAMP = re.compile(r"_\d{14}")
SAME_STRUCTURE = ["c01", "c02", "c03", "c04a", "c05", "c06b", "c09a"]
DIFF_COLUMNS = ("Max diff", "Min diff", "Mean diff", "L2norm diff")


@pytest.fixture(autouse=True)
def _no_leaked_tensor_cap(monkeypatch):
    """An earlier in-process run may leave a tensor size cap in the environment; these tests need none."""
    monkeypatch.delenv("MSPROBE_MAX_TENSOR_BYTES", raising=False)


def _pairs(target: Path, golden: Path, **options) -> list[tuple[str, str]]:
    host = get_host()
    opts = host.compare_options(**options)
    t, g = load_pair(CompareJob(target, golden, Path("."), "x"), opts, host)
    m = match_tables(t, g, opts, host)
    return [(t.name[i], g.name[j] if j >= 0 else "N/A") for i, j in zip(m.target, m.golden)]


# --------------------------------------------------------------------------- msprobe's queue algorithm
def msprobe_rename_api(name: str) -> str:
    """msprobe 26.2.0 ``Match.rename_api``: drop the two dot parts before the first forward/backward."""
    process = "forward" if "forward" in name else "backward"
    if process not in name:
        return name
    head, tail = name.split(process, 1)
    return head.rsplit(".", 2)[0] + "." + process + tail


def msprobe_queue_pairs(npu: list[str], bench: list[str]) -> list[tuple[str, str]] | None:
    """msprobe's two-queue fuzzy walk (compare-core §4.2); ``None`` where msprobe crashes (an unmatched row)."""
    nq: list[int] = []
    bq: list[int] = []
    out: list[tuple[str, str]] = []

    def same(i: int, j: int) -> bool:
        return msprobe_rename_api(npu[i]) == msprobe_rename_api(bench[j])

    for i in range(max(len(npu), len(bench))):
        if i < len(npu):
            nq.append(i)
        if i < len(bench):
            bq.append(i)
        if bool(nq) ^ bool(bq):
            break
        hit = None
        for bi, b in enumerate(bq[:-1]):
            if same(nq[-1], b):
                hit = (len(nq) - 1, bi)
                break
        if hit is None and same(nq[-1], bq[-1]):
            hit = (len(nq) - 1, len(bq) - 1)
        if hit is None:
            for ni, n in enumerate(nq[:-1]):
                if same(n, bq[-1]):
                    hit = (ni, len(bq) - 1)
                    break
        if hit is None:
            continue
        if hit[0] > 0:
            return None  # put_unmatched_in_table crashes in statistics/md5 mode
        out.append((npu[nq[hit[0]]], bench[bq[hit[1]]]))
        del nq[: hit[0] + 1]
        del bq[: hit[1] + 1]
    if nq:
        return None
    return out


def _case_files(case: str) -> list[tuple[Path, Path]]:
    root = corpora_dir() / "pytorch" / case
    return [(t, root / "golden" / t.relative_to(root / "target")) for t in sorted((root / "target").rglob("dump.json"))]


@pytest.mark.parametrize("case", SAME_STRUCTURE)
def test_fm_agrees_with_msprobe_compare_where_calls_are_the_same(corpora, oracle_diff, tmp_path, case):
    """Same calls on both sides: msprobe's -fm pairs = its plain pairs, so its compare oracle is the -fm oracle."""
    root = corpora / "pytorch" / case
    rc = main(["compare", "-tp", str(root / "target/step0"), "-gp", str(root / "golden/step0"), "-o", str(tmp_path), "-fm"])
    assert rc == 0
    ours = {TIMESTAMP.sub("", p.name): p for p in tmp_path.glob("*.csv")}
    refs = {p.name: p for p in (root / "oracle" / "compare").glob("*.csv")}
    assert sorted(ours) == sorted(refs)
    for name, ref in refs.items():
        code, report = agree(oracle_diff, ours[name], ref)
        assert code == 0, f"{case}/{name}:\n{report}"


#: cases where msprobe's queue walk meets an unmatched row (and so crashes in statistics/md5 mode):
#: a module's ``parameters_grad`` dict lists weight/bias in a different order in the two dumps.
QUEUE_CRASHES = {"c04a", "c05"}


@pytest.mark.parametrize("case", SAME_STRUCTURE)
def test_fm_pairs_equal_msprobe_queue_algorithm(corpora, case):
    for target, golden in _case_files(case):
        ours = _pairs(target, golden, fuzzy_match=True)
        host = get_host()
        opts = CompareOptions()
        t, g = load_pair(CompareJob(target, golden, Path("."), "x"), opts, host)
        ref = msprobe_queue_pairs(list(t.name), list(g.name))
        if case in QUEUE_CRASHES:
            assert ref is None
            assert ours == _pairs(target, golden)  # we pair every row with its namesake instead
        else:
            assert [p for p in ours if p[1] != "N/A"] == ref


@pytest.mark.parametrize("case", [pytest.param(c, marks=corpus_mark(f"legacy/{c}/f_hl")) for c in ("c02", "c03")])
def test_fm_pairs_equal_msprobe_833_fuzzy_results(corpora, case):
    """msprobe 8.3.3 ``-f`` (legacy oracles ``f_hl``) worked on these cases: same NPU/Bench name pairs.

    (``c01/f_hl`` is left out: 8.3.3 wrote that table with its columns shifted by its unmatched-row bug.)
    """
    openpyxl = pytest.importorskip("openpyxl")
    oracle = corpora / "legacy" / case / "f_hl"
    xlsx = next(oracle.glob("compare_result*.xlsx"))
    sheet = openpyxl.load_workbook(xlsx, read_only=True).worksheets[0]
    rows = list(sheet.iter_rows(values_only=True))
    header = list(rows[0])
    n, b = header.index("NPU Name"), header.index("Bench Name")
    ref = [(r[n], r[b]) for r in rows[1:] if r[n] is not None]
    (target, golden), = _case_files(case)
    assert _pairs(target, golden, fuzzy_match=True) == ref


def test_c08_every_shifted_add_meets_its_true_partner(corpora, tmp_path):
    """c08: the target makes one extra ``x + 0.0``; with -fm every other call pairs with its twin (all diffs 0)."""
    root = corpora / "pytorch" / "c08"
    rc = main(["compare", "-tp", str(root / "target/step0"), "-gp", str(root / "golden/step0"), "-o", str(tmp_path), "-fm"])
    assert rc == 0, "msprobe crashes here; we must not"
    rows = read_csv(only_result(tmp_path))
    matched = [r for r in rows if r["Bench Name"] != "N/A"]
    unmatched = [r["NPU Name"] for r in rows if r["Bench Name"] == "N/A"]
    assert unmatched and all(name.startswith("Tensor.__add__.1.") for name in unmatched)
    for r in matched:
        for col in DIFF_COLUMNS:
            assert r[col] in ("0", "0.0"), (r["NPU Name"], r["Bench Name"], col, r[col])
    adds = {r["NPU Name"]: r["Bench Name"] for r in matched if r["NPU Name"].startswith("Tensor.__add__.")}
    for npu, bench in adds.items():
        k = int(npu.split(".")[2])
        expected = k if k == 0 else k - 1
        assert bench == npu.replace(f"__add__.{k}.", f"__add__.{expected}.", 1), (npu, bench)
    assert len(adds) == 30  # 5 forward + 5 backward calls paired, 3 rows each


def test_c08_msprobe_queue_algorithm_crashes(corpora):
    """The reference port reproduces msprobe's failure on c08 (an unmatched row), which is why we align calls."""
    (target, golden), = _case_files("c08")
    host = get_host()
    t, g = load_pair(CompareJob(target, golden, Path("."), "x"), CompareOptions(), host)
    assert msprobe_queue_pairs(list(t.name), list(g.name)) is None


def _extra_call_dumps(tmp_path: Path, task: str, md5: bool) -> tuple[Path, Path]:
    def leaf(mx: float, shape=(2, 3)) -> dict:
        extra = {"md5": f"{int(mx * 1000):08x}"} if md5 else {}
        return tensor(shape=shape, mx=mx, mn=-mx, mean=mx / 10, norm=mx * 2, **extra)

    def add(v: float, other) -> dict:
        return api([leaf(v), other], [leaf(v + 1)])

    golden = {
        "Functional.linear.0.forward": api([leaf(1.0)], [leaf(2.0)]),
        "Tensor.__add__.0.forward": add(2.0, leaf(0.5)),
        "Tensor.__add__.1.forward": add(3.0, leaf(0.25)),
        "Functional.relu.0.forward": api([leaf(4.0)], [leaf(4.0)]),
    }
    target = {
        "Functional.linear.0.forward": api([leaf(1.0)], [leaf(2.0)]),
        "Tensor.__add__.0.forward": api([leaf(2.0), {"type": "float", "value": 0.0}], [leaf(2.0)]),
        "Tensor.__add__.1.forward": add(2.0, leaf(0.5)),
        "Tensor.__add__.2.forward": add(3.0, leaf(0.25)),
        "Functional.relu.0.forward": api([leaf(4.0)], [leaf(4.0)]),
    }
    return (write_dump(tmp_path / "t", target, task=task), write_dump(tmp_path / "g", golden, task=task))


@pytest.mark.parametrize("md5", [False, True], ids=["statistics", "md5"])
def test_extra_leading_call_in_every_mode(tmp_path, md5):
    target, golden = _extra_call_dumps(tmp_path, "statistics", md5)
    rc = main(["compare", "-tp", str(target), "-gp", str(golden), "-o", str(tmp_path / "out"), "-fm"])
    assert rc == 0
    rows = read_csv(only_result(tmp_path / "out"))
    pairs = {r["NPU Name"]: r["Bench Name"] for r in rows}
    assert pairs["Tensor.__add__.0.forward.input.0"] == "N/A"
    assert pairs["Tensor.__add__.1.forward.output.0"] == "Tensor.__add__.0.forward.output.0"
    assert pairs["Tensor.__add__.2.forward.input.1"] == "Tensor.__add__.1.forward.input.1"
    assert pairs["Functional.relu.0.forward.output.0"] == "Functional.relu.0.forward.output.0"
    if md5:
        assert {r["Result"] for r in rows if r["Bench Name"] != "N/A"} == {"pass"}


def test_fuzzy_mapper_sits_between_exact_and_data_mapping_in_the_chain():
    host = get_host()
    assert host.mapper_for(host.compare_options(fuzzy_match=True)).name == "fuzzy"
    assert host.mapper_for(CompareOptions()).name == "exact"
    assert host.mapper_for(host.compare_options(fuzzy_match=True, data_mapping="x.yaml")).name == "data-mapping"
    names = [m.name for m in host.mappers]
    assert names.index("data-mapping") < names.index("fuzzy") < names.index("exact") == len(names) - 1


@pytest.mark.parametrize(
    "key,op",
    [
        ("Functional.linear.3.forward", "Functional.linear.forward"),
        ("Module.blocks.0.attn.Attention.forward.2", "Module.blocks.0.attn.Attention.forward"),
        ("Tensor.__add__.12.backward", "Tensor.__add__.backward"),
        ("not_a_call", "not_a_call"),
    ],
)
def test_strip_call_number(key, op):
    assert strip_call_number(key) == op


# --------------------------------------------------------------------------- the aligner
def _lcs(a, b) -> int:
    @lru_cache(None)
    def go(i: int, j: int) -> int:
        if i == len(a) or j == len(b):
            return 0
        if a[i] == b[j]:
            return 1 + go(i + 1, j + 1)
        return max(go(i + 1, j), go(i, j + 1))

    return go(0, 0)


def test_align_is_a_longest_common_subsequence():
    rng = random.Random(7)
    for _ in range(300):
        a = [rng.choice("abcde") for _ in range(rng.randint(0, 30))]
        b = list(a)
        for _ in range(rng.randint(0, 6)):
            r = rng.random()
            if r < 0.4 and b:
                del b[rng.randrange(len(b))]
            elif r < 0.8:
                b.insert(rng.randint(0, len(b)), rng.choice("abcdef"))
            elif b:
                b[rng.randrange(len(b))] = "z"
        pairs = align(a, b)
        assert all(a[i] == b[j] for i, j in pairs)
        assert all(p[0] < q[0] and p[1] < q[1] for p, q in zip(pairs, pairs[1:]))
        assert len(pairs) == _lcs(tuple(a), tuple(b))


def test_align_scales_to_long_sequences():
    """200,000 calls align (a quadratic alignment would take hours: the alarm fails it instead of hanging the
    suite; the bound is only that, not a speed target, which benchmarks/ measure)."""
    import signal

    from .waiting import BOUND

    rng = random.Random(3)
    a = [rng.randrange(40) for _ in range(200_000)]
    b = list(a)
    for _ in range(50):
        b.insert(rng.randrange(len(b)), 99)

    def hung(signum, frame):
        pytest.fail(f"aligning 200,000 calls did not end in {BOUND:.0f} s: it no longer scales")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(int(BOUND))
    try:
        pairs = align(a, b)
        assert len(pairs) == len(a)
        unrelated = [rng.randrange(40) for _ in range(50_000)]
        assert align(a[:50_000], unrelated)  # no minimal script within budget: anchors / occurrence fallback
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


MS_SAME_STRUCTURE = ["ms_l1_stat_fp16", "ms_l1_tensor_bug", "ms_mix_stat_gelu"]


@pytest.mark.parametrize("case", MS_SAME_STRUCTURE)
def test_fm_agrees_with_msprobe_compare_on_mindspore(corpora, oracle_diff, tmp_path, case):
    """MindSpore pairs with the same calls: ``-fm`` gives msprobe's plain compare (``oracle/default``)."""
    pytest.importorskip("msprobe_mindspore", reason="the msprobe-mindspore plugin is not installed")
    root = corpora / "mindspore" / case
    oracle = root / "oracle" / "default"
    cmd = (oracle / "cmd.txt").read_text().split()
    tp, gp = cmd[cmd.index("-tp") + 1], cmd[cmd.index("-gp") + 1]
    rc = main(["compare", "-tp", str(root / tp), "-gp", str(root / gp), "-o", str(tmp_path), "-fm"])
    assert rc == 0
    code, report = agree(oracle_diff, only_result(tmp_path), oracle / "compare_result.csv")
    assert code == 0, report
