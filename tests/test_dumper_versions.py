"""Differential tests: dumps of every mindstudio-probe dumper version, against that version's own compare.

``tests/data/dumpers/<version>/<case>/`` holds a target and a golden dump written by that version's
dumper and, under ``oracle/<variant>/``, the result table(s) that version's own compare wrote
(``cmd.txt`` says how it was run). Every variant folder present is a test case, so a new version or
case is tested as soon as its folder lands.

What "compared the way that version's compare pairs it" means here (``docs/dump_versions.md``):

* a table of 26.x's ``msprobe compare -tp/-gp`` (our interface and header) must agree with ours cell by cell
  and row by row, 26.2.0's own tables also under ``oracle_diff``; a derived cell of an earlier 26.x release
  may differ only where its formula changed since (:data:`FORMULA_CHANGES`, with the condition under which
  it matters);
* any other table (the classic ``msprobe -f pytorch compare -i`` or the 1.0.x Python call: other columns, other
  row names, other formulas and verdicts, even where the header is ours) must give **the same pairs and the
  same values**
  in our column layout: each of its rows is one of our rows under the naming rule below (and all of
  ours are one of its), in the same API order, with the same bench partner; the dump's own values
  (dtype, shape, statistics, md5, stack: the ``NPU …``/``Bench …`` columns) are equal, an absent value
  spelled ``None``/``N/A``/``NaN`` alike; the columns derived from them (diffs, relative errors) are
  equal wherever both tables hold a number. The verdict columns are 26.2.0's own rules and are not
  compared (each version judged differently).

Naming rule of the older tables: ``<api>_input.<rest>`` / ``<api>_output.<rest>`` are our
``<api>.input.<rest>`` / ``<api>.output.<rest>``; where the dump keeps backward data under
``grad_input``/``grad_output`` (1.0.1), its compare named ``grad_input`` rows ``_input``, which are the
backward's outputs (our ``.output``), and the other way round; a keyword argument that is a single
record was given a ``.0`` of its own (``…_input.dim.0`` is our ``….input.dim``); in tensor mode 26.2.0 names a
keyword argument's tensor after its file (``….forward.kwargs.<name>``).
"""

from __future__ import annotations

import json
import re
import shlex
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from msprobe_core.cli.main import main

from .conftest import agree

DUMPERS = Path(__file__).resolve().parent / "data" / "dumpers"
#: the version whose compare ours reproduces cell by cell
REFERENCE = "26.2.0"
_STAMP = re.compile(r"_\d{14}$")
#: verdict columns: each version's own rules, not compared across versions
VERDICT_COLUMNS = frozenset({"Result", "Err_message", "Accuracy Reached or Not"})
#: spellings of "no value" in the tables of the different versions
ABSENT = frozenset({"None", "N/A", "NaN", "Nan", "nan", ""})
_OLD_IO = re.compile(r"^(?P<api>.+?\.(?:forward|backward)(?:\.\d+)?)_(?P<io>input|output)(?P<rest>(?:\..+)?)$")
_SWAP = {"input": "output", "output": "input"}
_TENSOR_DTYPE = re.compile(r"^(torch\.(u?int|float|bfloat|bool|complex)|(U?Int|Float|BFloat|Bool|Complex)\d*$)")
_KWARGS = re.compile(r"(\.forward(?:\.\d+)?)\.input\.(?=[A-Za-z_])")
_PY_CALL = re.compile(r"compare\w*\(\s*'(?P<target>[^']+)',\s*'(?P<golden>[^']+)'")
_RC = re.compile(r"^# rc=(\d+)", re.M)
_BACKWARD = re.compile(r"\.backward(?:\.\d+)?$")


def _version_key(path: Path) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"[.-]", path.name))


def oracle_variants() -> list:
    if not DUMPERS.is_dir():
        return []
    found = []
    for version in sorted((p for p in DUMPERS.iterdir() if p.is_dir()), key=_version_key):
        for case in sorted(p for p in version.iterdir() if (p / "oracle").is_dir()):
            for variant in sorted(p for p in (case / "oracle").iterdir() if (p / "cmd.txt").is_file()):
                found.append(pytest.param(version.name, case.name, variant.name,
                                          id=f"{version.name}/{case.name}/{variant.name}"))
    return found


def compare_args(case: Path, variant: Path) -> list[str]:
    """``-tp``/``-gp`` (absolute) of the pair the version's compare was run on, from its ``cmd.txt``.

    The command is ``msprobe compare -tp T -gp G …`` (26.x), ``msprobe -f pytorch compare -i FILE …``
    (the classic interface), or a Python call (1.0.x) given the two paths or a JSON file of paths.
    """
    line = (variant / "cmd.txt").read_text(encoding="utf-8").splitlines()[0]
    tokens = shlex.split(line)
    call = _PY_CALL.search(line)
    if "-tp" in tokens and "-gp" in tokens:
        target, golden = tokens[tokens.index("-tp") + 1], tokens[tokens.index("-gp") + 1]
    elif call:
        target, golden = call["target"], call["golden"]
    else:
        spec = next((case / t for t in tokens if t.endswith(".json") and (case / t).is_file()), None)
        assert spec is not None, f"no -tp/-gp and no paths file in {variant / 'cmd.txt'}"
        paths = json.loads(spec.read_text(encoding="utf-8"))
        target = paths.get("npu_path") or paths["npu_json_path"]
        golden = paths.get("bench_path") or paths["bench_json_path"]
    tail = tokens[tokens.index("compare") + 1:] if "compare" in tokens else []
    extra = ["-fm"] if {"-fm", "--fuzzy_match"} & set(tail) or ("-f" in tail) else []
    if {"-dm", "-cm", "-am", "-lm", "--data_mapping"} & set(tail):
        pytest.skip(f"{variant}: a mapping option; these cases compare plain pairs")
    return ["-tp", str(case / target), "-gp", str(case / golden), *extra]


def is_current_interface(variant: Path) -> bool:
    """Whether the table was written by ``msprobe compare -tp … -gp …`` (26.x), whose rules are ours."""
    tokens = shlex.split((variant / "cmd.txt").read_text(encoding="utf-8").splitlines()[0])
    return tokens[:2] == ["msprobe", "compare"] and "-tp" in tokens


def result_files(folder: Path) -> dict[str, Path]:
    """Result tables in ``folder`` by stem without the timestamp (``compare_result_proc0``)."""
    return {_STAMP.sub("", p.stem): p for p in sorted(folder.iterdir())
            if p.suffix in (".csv", ".xlsx") and p.stem.startswith(("compare_result", "debug_compare_result"))}


def read_table(oracle_diff, path: Path) -> tuple[list[str], list[list[str]]]:
    header, rows, _ = oracle_diff.read_table(path)
    return header, [[c.strip() for c in r] for r in rows]


def keeps_grad_members(dump: Path) -> bool:
    """Whether the dump keeps backward data under grad_input/grad_output (mindstudio-probe 1.0.1)."""
    data = json.loads(dump.read_text(encoding="utf-8"))["data"]
    return any(isinstance(e, dict) and ("grad_input" in e or "grad_output" in e) for e in data.values())


def our_names(old: str, swap_backward: bool) -> list[str]:
    """The names an older table's row may have in ours, most likely first (the naming rule above)."""
    m = _OLD_IO.match(old)
    name = old
    if m:
        io = _SWAP[m["io"]] if swap_backward and _BACKWARD.search(m["api"]) else m["io"]
        name = f"{m['api']}.{io}{m['rest']}"
    names = [name, name[:-2]] if name.endswith(".0") else [name]
    # a keyword argument's tensor is named after its file in tensor mode: ….kwargs.<name>
    return names + [_KWARGS.sub(r"\1.kwargs.", n, count=1) for n in names if _KWARGS.search(n)]


_UNREAD = (("parameters", re.compile(r"\.parameters\.")), ("parameters_grad", re.compile(r"\.parameters_grad(\.|$)")))


def _unread_kind(name: str) -> str | None:
    """``parameters``/``parameters_grad`` for the rows of members an old compare did not read at all (1.2.0)."""
    return next((kind for kind, pattern in _UNREAD if pattern.search(name)), None)


def api_of(name: str) -> str:
    return re.split(r"\.(?:input|output|parameters)(?:\.|$)", name, maxsplit=1)[0]


def _number(text: str) -> float | None:
    """A derived cell as a number; ``None`` for text and for NaN (what inf - inf gave in old formulas)."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        return None
    return None if value != value else value


def _is_value_crc(row: list[str], col: dict[str, int], md5_col: str, cell: str) -> bool:
    """Whether ``cell`` is 26.2.0's md5 of a non-tensor argument (older compares left it empty):
    the crc32 of the value's text (in the max column of that side), or of nothing when it has none."""
    if "MD5" not in md5_col.upper():
        return False
    side = "NPU" if md5_col.startswith("NPU") else "Bench"
    if f"{side} max" not in col:  # an md5 table shows no value: the row must be a non-tensor argument's
        return not _TENSOR_DTYPE.match(row[col[f"{side} Dtype"]]) and re.fullmatch(r"[0-9a-f]{8}", cell) is not None
    value = row[col[f"{side} max"]]
    return cell in (format(zlib.crc32(value.encode()), "08x"), format(zlib.crc32(b""), "08x"))


def _bench_may_hold_zero(row: list[str], col: dict[str, int]) -> bool:
    low, high = _number(row[col["Bench min"]]), _number(row[col["Bench max"]])
    return low is None or high is None or low <= 0 <= high


@dataclass(frozen=True)
class FormulaChange:
    """A cell the compare derives whose rule changed: before ``since`` that version's cell may differ from
    ours (26.2.0's), on the rows where ``applies`` holds (checked on our row). The dtype of a non-tensor
    argument is such a cell: the compare makes it from the argument's type and value."""

    columns: frozenset[str]
    since: tuple[int, ...]
    applies: Callable[[list[str], dict[str, int]], bool]
    why: str


def _is_ellipsis(row: list[str], col: dict[str, int]) -> bool:
    return row[col["NPU Dtype"]] == "ellipsis"


FORMULA_CHANGES = (
    FormulaChange(frozenset({"MaxRelativeErr", "One Thousandth Err Ratio", "Five Thousandths Err Ratio"}), (26, 1, 0),
                  _bench_may_hold_zero,
                  "a zero bench element is moved by float64's epsilon before 26.1.0, by its own dtype's since"),
    FormulaChange(frozenset({"NPU Dtype", "Bench Dtype"}), (1, 2, 2), _is_ellipsis,
                  "an Ellipsis argument's dtype is the type of its value, <class 'str'>, before 1.2.2"),
)


def _changed_formula(version: str, col: str, row: list[str], o_col: dict[str, int]) -> bool:
    key = tuple(int(p) for p in re.findall(r"\d+", version)[:3])
    return any(col in c.columns and key < c.since and c.applies(row, o_col) for c in FORMULA_CHANGES)


def table_problems(oracle_diff, ours: Path, ref: Path, version: str, swap_backward: bool,
                   same_rules: bool) -> list[str]:
    """Where that version's table and ours disagree on pairs or values (empty: they agree).

    ``same_rules``: the table was written by 26.x's ``msprobe compare -tp/-gp``; with our header, every cell
    must agree and the rows come in the same order. Otherwise (the classic interface, older headers) the
    rules of the module docstring apply. A derived cell may differ only as :data:`FORMULA_CHANGES` allows.
    """
    oh, orows = read_table(oracle_diff, ours)
    rh, rrows = read_table(oracle_diff, ref)
    same_layout = same_rules and oh == rh
    where = {r[0]: i for i, r in enumerate(orows)}
    assert len(where) == len(orows), "our NPU names repeat"
    o_col, r_col = {c: i for i, c in enumerate(oh)}, {c: i for i, c in enumerate(rh)}
    problems: list[str] = []
    mapped: list[int] = []
    for r in rrows:
        name = r[0] if same_layout else next((n for n in our_names(r[0], swap_backward) if n in where), None)
        if name not in where:
            problems.append(f"{r[0]}: no such row of ours")
            continue
        mapped.append(where[name])
        o = orows[where[name]]
        bench = r[r_col["Bench Name"]]
        ours_bench = o[o_col["Bench Name"]]
        if same_layout:
            if bench != ours_bench:
                problems.append(f"{name}: paired with {bench} in theirs, {ours_bench} in ours")
        elif bench in ABSENT:
            if ours_bench not in ABSENT:
                problems.append(f"{name}: unmatched in theirs, paired with {ours_bench} in ours")
        elif ours_bench not in our_names(bench, swap_backward):
            problems.append(f"{name}: paired with {bench} in theirs, {ours_bench} in ours")
        for col in rh:
            if col in ("NPU Name", "Bench Name") or col not in o_col or (not same_layout and col in VERDICT_COLUMNS):
                continue
            a, b = o[o_col[col]], r[r_col[col]]
            if oracle_diff.same(a, b, 1e-5, 1e-8) or _changed_formula(version, col, o, o_col):
                continue
            if same_layout:
                ok = False
            elif col.startswith(("NPU", "Bench", "BENCH")):  # the dump's own values
                ok = (a in ABSENT and b in ABSENT) or (b in ABSENT and _is_value_crc(o, o_col, col, a))
            else:  # derived by each version's formulas: where both are numbers
                x, y = _number(a), _number(b)
                ok = x is None or y is None or oracle_diff.same(str(x), str(y), 1e-5, 1e-8)
            if not ok:
                problems.append(f"{name}: {col} is {a!r} in ours, {b!r} in theirs")
    if len(set(mapped)) != len(mapped):
        problems.append("two of their rows are one of ours")
    for i in sorted(set(range(len(orows))) - set(mapped)):
        kind = _unread_kind(orows[i][0])
        if same_layout or kind is None or any(_unread_kind(r[0]) == kind for r in rrows):
            problems.append(f"{orows[i][0]}: a row of ours only")
    kept = set(mapped)
    if same_layout and mapped != sorted(mapped):
        problems.append("the rows come in another order")
    if [api_of(orows[i][0]) for i in mapped] != [api_of(r[0]) for i, r in enumerate(orows) if i in kept]:
        problems.append("the APIs come in another order")
    return problems


@pytest.mark.parametrize("version,case,variant", oracle_variants())
def test_agrees_with_that_versions_compare(oracle_diff, tmp_path: Path, version: str, case: str,
                                           variant: str) -> None:
    case_dir = DUMPERS / version / case
    folder = case_dir / "oracle" / variant
    args = compare_args(case_dir, folder)
    assert main(["compare", *args, "-o", str(tmp_path), "-q"]) == 0
    ours, refs = result_files(tmp_path), result_files(folder)
    if not refs:
        # that release failed on this pair (its console is the oracle); ours compares it, and the table must
        # be the one that release made of the same files in another form (a sibling variant)
        rc = _RC.search((folder / "cmd.txt").read_text(encoding="utf-8"))
        assert rc and rc[1] != "0", f"{folder} holds no result table, yet its compare succeeded"
        sibling = next((v for v in sorted((case_dir / "oracle").iterdir()) if v != folder and v.is_dir()
                        and result_files(v) and (v / "cmd.txt").is_file()), None)
        if sibling is None:
            pytest.skip(f"{version} failed on {case}/{variant} and left no other table of the pair")
        folder, refs = sibling, result_files(sibling)
    # the file names are 26.2.0's (compare_result_<rank folder>); one result per rank pair, in rank order
    assert len(ours) == len(refs), (sorted(ours), sorted(refs))
    target = Path(args[1])
    dump = target if target.is_file() else next(target.rglob("dump.json"))
    for mine, (stem, ref) in zip(sorted(ours.values()), sorted(refs.items())):
        if version == REFERENCE:  # the reference itself: every cell, as the oracle tests of the corpora
            assert mine.name.startswith(stem)
            code, report = agree(oracle_diff, mine, ref)
            assert code == 0, f"{version}/{case}/{variant}/{stem} disagrees:\n{report}"
        problems = table_problems(oracle_diff, mine, ref, version, keeps_grad_members(dump),
                                  same_rules=is_current_interface(folder))
        assert not problems, f"{version}/{case}/{variant}/{stem}: {len(problems)} problems, first: " + \
            "; ".join(problems[:8])


#: the dumper families of issue 13 (release prefixes), each of which must have at least one case with an oracle
FAMILIES = ("1.0.", "1.1.", "1.2.", "1.3.", "8.", "26.0.", "26.1.", "26.2.")


def test_the_corpus_covers_every_dumper_family() -> None:
    if not DUMPERS.is_dir():
        pytest.skip("no dumper corpus in this checkout")
    tested = {p.values[0] for p in oracle_variants()}
    missing = [f for f in FAMILIES if not any(v.startswith(f) for v in tested)]
    assert not missing, f"no case of the dumper families {missing}"
