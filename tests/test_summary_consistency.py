"""The summary never contradicts itself, in the console, ``--json-summary`` and the HTML report.

End to end over every compare command of the corpora (each also with ``-da``): whenever a row is an
``error``, a first divergence is named, the same one in all three; the worst rows are ordered by verdict
first; no message stutters (``error: error``, ``Result error: error: …``); md5 rows show checksums, not
``error  error``; ``-da`` reports the dump mode of the dumps it read, and the row it names is a row its
evidence is about. Synthetic dumps cover what the corpora lack (a zero golden statistic).
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import math
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msprobe_core.cli import main as cli_main
from msprobe_core.cli.main import main
from msprobe_core.default_plugins.summary import finish
from msprobe_core.default_plugins.summary.accumulate import SummaryAccumulator, note_pairing, view_partial
from msprobe_core.default_plugins.summary.divergence import first_divergence_of, plain_messages
from msprobe_core.default_plugins.summary.modes import row_names
from msprobe_core.default_plugins.summary.result_files import read_files_as_view, read_result_file
from msprobe_core.default_plugins.summary.summary import format_summary, summarize
from msprobe_core.default_plugins.summary.views import VERDICT_LEVEL, ResultView, node_of, to_number
from msprobe_core.pipeline.sink import KEEP_TABLES

from .conftest import corpora_dir
from .dumps import api, only_result, tensor, write_dump
from .test_summary_chunks import chunked_summary, finished

pytestmark = pytest.mark.usefixtures("as_in_a_run")  # the summaries made here from a run's tables, as its jobs do

#: an alphabetic word said twice in a row ("error: error", "error  error", "the the")
STUTTER = re.compile(r"\b([A-Za-z]{2,})\b[\s:]+\1\b", re.IGNORECASE)


def _commands() -> list[Any]:
    """(case folder, compare arguments) of every oracle command, and each of them with ``-da``."""
    root = corpora_dir()
    seen: set[tuple[str, tuple[str, ...]]] = set()
    params = []
    for cmd in sorted(root.glob("pytorch/*/oracle/*/cmd.txt")) + sorted(root.glob("mindspore/*/oracle/*/cmd.txt")):
        case = cmd.parents[2]
        line = next((ln for ln in cmd.read_text().splitlines() if "msprobe compare" in ln and not ln.startswith("#")),
                    None)
        if not line:
            continue
        args = shlex.split(line.split("msprobe compare", 1)[1])
        i = args.index("-o")
        del args[i : i + 2]
        for variant in (args, args if "-da" in args else [*args, "-da"]):
            key = (str(case), tuple(variant))
            if key in seen:
                continue
            seen.add(key)
            name = f"{case.parent.name}/{case.name}:{' '.join(a for a in variant if a.startswith('-'))}"
            params.append(pytest.param(case, tuple(variant), id=name))
    return params


COMMANDS = _commands()


class Run:
    """One compare: its exit status, console text, JSON summary, HTML payload and output folder; ``outcomes``
    and ``analysis``: the job outcomes and the ``-da`` answer the run summarised (``None``: no summary)."""

    def __init__(self, rc: int, console: str, summary: dict | None, payload: dict | None, out: Path) -> None:
        self.rc, self.console, self.summary, self.payload, self.out = rc, console, summary, payload, out
        self.outcomes: list[Any] | None = None
        self.analysis: Any = None


def _payload(html: Path) -> dict:
    text = html.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="report-data" data-encoding="([^"]+)">(.*?)</script>', text,
                  re.S)
    assert m, "no data in the report"
    data = m.group(2)
    if m.group(1) == "gzip+base64":
        data = gzip.decompress(base64.b64decode(data)).decode("utf-8")
    return json.loads(data)


@pytest.fixture(scope="module")
def compare(tmp_path_factory):
    """``compare(case, args)``: run once per module (a -da test reuses the plain run), in process."""
    cache: dict[tuple[str, tuple[str, ...]], Run] = {}

    def run(case: Path, args: tuple[str, ...]) -> Run:
        key = (str(case), args)
        if key not in cache:
            out = tmp_path_factory.mktemp("run")
            summary_file = out / "summary.json"
            console = io.StringIO()
            seen: dict[str, Any] = {}

            def add_outcomes(acc, outcomes, _real=finish.add_outcomes):
                seen["outcomes"], seen["analysis"] = list(outcomes), acc.analysis
                return _real(acc, outcomes)

            with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(console):
                mp.chdir(case)
                mp.delenv("MSPROBE_MAX_TENSOR_BYTES", raising=False)
                mp.setattr(finish, "add_outcomes", add_outcomes)
                # the jobs keep their tables too (msprobe compare keeps none): the reference of the tests below
                mp.setattr(cli_main, "_summary_extra",
                           lambda results, _real=cli_main._summary_extra: {**_real(results),
                                                                                   KEEP_TABLES: True})
                rc = main(["compare", *args, "-o", str(out / "out"), "--report", "html",
                           "--json-summary", str(summary_file)])
            reports = list((out / "out").glob("compare_report_*.html"))
            summary = json.loads(summary_file.read_text()) if summary_file.is_file() else None
            cache[key] = Run(rc, console.getvalue(), summary, _payload(reports[0]) if reports else None, out / "out")
            cache[key].outcomes, cache[key].analysis = seen.get("outcomes"), seen.get("analysis")
        return cache[key]

    return run


def _summary_block(console: str) -> str:
    assert "Compare summary" in console
    return console[console.index("Compare summary"):]


def _level(verdict: str) -> int:
    return VERDICT_LEVEL[verdict]


@pytest.mark.parametrize(("case", "args"), COMMANDS)
def test_summary_is_consistent(compare, case, args):
    run = compare(case, args)
    if run.rc == 2:
        pytest.skip("this compare stops on its input (exit 2), as msprobe's does")
    summary, payload = run.summary, run.payload
    assert summary is not None and payload is not None
    block = _summary_block(run.console)
    fd = summary["first_divergence"]

    # an error row always has a first divergence, named alike in the console, the JSON and the HTML data
    if summary["verdicts"]["error"]:
        assert fd is not None
        assert "none found" not in block
    if fd is not None:
        where = f" [{fd['rank']}]" if fd["rank"] else ""
        assert f"first divergence{where}: {fd['node']}\n" in block
        assert fd["reason"] in block
        chosen = [p for p in payload["parts"] if p["chosen"]]
        assert node_of(fd["row"], row_names(chosen[0]["mode"]) if chosen else None)[0] == fd["node"]
        assert len(chosen) == 1 and chosen[0]["first"]["node"] == fd["node"]
        assert chosen[0]["first"]["pos"] == fd["index"]
    else:
        assert "first divergence: none found" in block
        assert not any(p["chosen"] for p in payload["parts"])
    assert payload["summary"] == summary
    for part in summary["ranks"]:
        if part["verdicts"]["error"]:  # each result with errors names its own first divergence too
            assert any(d["rank"] == part["rank"] for d in summary["first_divergence_by_rank"])

    # the row named is the row at that position of the result as written
    results = [f for f in summary["files"] if f.endswith((".csv", ".xlsx")) and "compare_result" in f]
    if fd is not None and len(summary["ranks"]) == 1 and len(results) == 1:
        view = read_result_file(Path(results[0]))
        assert view.names[view.order()[fd["index"]]] == fd["row"]

    # worst rows: verdict first, then the metric; md5 rows show the two checksums
    worst = summary["worst_rows"]
    levels = [_level(w["result"]) for w in worst]
    assert levels == sorted(levels, reverse=True), [(w["name"], w["result"]) for w in worst]
    for w in worst:
        assert w["cell"] != w["result"] and w["reason"] and w["reason"] != w["result"], w
        assert w["value"] is None or isinstance(w["value"], float), w  # a JSON number, never "0.35%"
        if w["metric"] == "MD5":
            assert re.fullmatch(r"\S+ vs \S+", w["cell"]), w
        if w["metric"] == "NormRelativeErr":
            value = to_number(w["cell"])
            assert value is None or math.isfinite(value), w  # the corpora have no genuine overflow
    metric = summary.get("worst_rows_metric") or (worst[0]["metric"] if worst else "")
    for level in set(levels):  # within a verdict, by the metric (worst first), the no-difference value last
        numbers = [v for v in (to_number(w["cell"]) for w in worst if _level(w["result"]) == level
                               and w["metric"] == metric) if v is not None and v not in (0.0, 1.0)]
        if metric == "NormRelativeErr":
            assert [abs(v) for v in numbers] == sorted((abs(v) for v in numbers), reverse=True)
        elif metric == "Cosine":
            assert numbers == sorted(numbers)
    listed = [ln.split(". ", 1)[1] for ln in block.splitlines() if re.match(r"\s+\d+\. ", ln)]
    assert len(listed) == len(worst)
    for line, w in zip(listed, worst):
        assert f"  {w['text']}" in line and f"  {w['result']}" in line and line.rstrip().endswith(w["reason"])

    # a pair of one framework (one program) is never reported as compared too little; the console says what the
    # JSON says, first
    u = summary["unpaired"]
    if all(f["target"] == f["golden"] for f in summary["frameworks"]):
        assert u["below"] == [], (u["target"], u["golden"])
    assert (block.splitlines()[1].startswith("  NOT COMPARED: ")) == bool(u["below"])
    assert u["target"]["rows"] == summary["rows"] and u["target"]["unmatched"] == summary["unmatched"]

    # no message stutters
    texts = [block] + [d["reason"] for d in summary["first_divergence_by_rank"]]
    for text in texts:
        assert not STUTTER.search(text), STUTTER.search(text).group(0)


#: keys a summary passes through from its caller (the files it wrote besides the results, errors, loader notes)
PASSED_THROUGH = ("files", "errors", "unrecognised", "next_dump_config", "next_dump")  # the run's own files


def _answers(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in PASSED_THROUGH}


def _sizes(n: int) -> st.SearchStrategy[list[int]]:
    """Chunk sizes for a result of ``n`` rows: from single rows to the whole, so boundaries fall anywhere."""
    return st.lists(st.integers(0, max(1, n)) | st.integers(1, 3), min_size=1, max_size=12).filter(any)


@pytest.mark.parametrize(("case", "args"), COMMANDS)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_summary_fed_in_chunks_is_the_summary_of_whole_tables(compare, case, args, data):
    """Differential: every corpus compare's summary (made by its jobs' partials, a pool's workers for several
    ranks) equals the summary of its whole tables fed as one chunk each, and the one fed in chunks of random
    sizes (empty chunks too), and the one of its result files read back in chunks of random sizes."""
    from msprobe_core.default_plugins.summary.finish import outcomes_hierarchy, views_from_outcomes
    from msprobe_core.default_plugins.summary.result_files import read_result_chunks

    run = compare(case, args)
    if run.rc == 2 or run.outcomes is None:
        pytest.skip("this compare stops on its input (exit 2)")
    views = views_from_outcomes(run.outcomes)  # the tables the fixture's runs keep
    assert views
    if "-da" not in args:  # each job made its partial (-da runs its own stage 1 and keeps its tables)
        assert all(o.partial is not None for o in run.outcomes if o.table is not None)
    whole = SummaryAccumulator(run.analysis, tree=True)
    # the golden side's counts ride on each table's meta (the match stage's account), the inputs are the command's
    metas = _metas(run.outcomes, views)
    whole.inputs = _inputs(case, args)
    for view, meta in zip(views, metas):
        whole.add(view_partial(view, whole.queries, rows=max(1, len(view)), tree=True))
        note_pairing(whole.partials[-1], meta)
    # the run's summary also gives each first divergence its path, from the jobs' dumps (read once, not chunked)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(case)  # the jobs' dump paths are the command line's, relative to the case
        hierarchy = outcomes_hierarchy(run.outcomes, whole)
    expected = _answers(finished(whole.summary(), whole, hierarchy))
    assert _answers(run.summary) == expected
    cuts = [data.draw(_sizes(len(v)), label=f"sizes of {v.label or 'the result'}") for v in views]
    # each view's partial pickled and unpickled on the way, as a rank's partial comes back from a worker
    chunked = chunked_summary(views, cuts, run.analysis, hierarchy, metas, whole.inputs)
    assert _answers(chunked) == expected
    # the result files as msprobe report reads them: chunked reading changes nothing either
    groups = [[Path(f) for f in o.files if Path(f).suffix in (".csv", ".xlsx")] for o in run.outcomes]
    if all(groups) and len(groups) == len(views):
        rows = data.draw(st.integers(1, 64), label="rows per chunk read")
        back, chunked = SummaryAccumulator(run.analysis), SummaryAccumulator(run.analysis)
        back.inputs = chunked.inputs = whole.inputs
        for group, view in zip(groups, views):
            back.add(view_partial(read_files_as_view(group, view.label), back.queries, rows=1 << 30))
            part = chunked.view_accumulator()
            for chunk in read_result_chunks(group, view.label, rows):
                part.feed(chunk)
            chunked.add(part.finish())
        assert _answers(chunked.summary()) == _answers(back.summary())


def _metas(outcomes: list[Any], views: list[ResultView]) -> list[dict]:
    """The ``meta`` of each view's table (views in outcome order, one per outcome with a result)."""
    from msprobe_core.default_plugins.summary.finish import labelled

    many = labelled(outcomes)
    tables = {(o.job.label if many else ""): o.table for o in outcomes if o.table is not None}
    return [getattr(tables.get(v.label), "meta", None) or {} for v in views]


def _inputs(case: Path, args: tuple[str, ...]) -> tuple[str, str]:
    """The command's ``-tp``/``-gp``, as the summary names them (absolute)."""
    return tuple(str((case / args[args.index(flag) + 1]).resolve()) for flag in ("-tp", "-gp"))  # type: ignore[return-value]


DA_COMMANDS = [p for p in COMMANDS if "-da" in p.values[1]]


@pytest.mark.parametrize(("case", "args"), DA_COMMANDS)
def test_da_reports_the_dump_mode_and_the_row_of_its_evidence(compare, case, args):
    run = compare(case, args)
    plain = compare(case, tuple(a for a in args if a != "-da"))
    if run.rc == 2 or plain.rc == 2:
        pytest.skip("this compare stops on its input (exit 2)")
    # the dumps are what the plain compare read; -da may compare a tensor dump on its statistics
    assert run.summary["modes"] == plain.summary["modes"]
    assert f"dump mode: {', '.join(plain.summary['modes'])}" in run.console
    fd = run.summary["first_divergence"]
    analyses = list(run.out.glob("diff_analyze_*.json"))
    if fd is None or fd["source"] != "diff_analyze":
        return
    (path,) = analyses
    doc = json.loads(path.read_text())
    rank = fd["rank"].replace("rank", "rank_") if fd["rank"] else next(iter(doc))
    node = next(n for n in doc[rank] if n["op_name"] == fd["node"])
    assert node["row"] == fd["row"]
    assert fd["row"] in {e["row"] for e in node["evidence"]}
    assert fd["row"] in fd["reason"]  # the reason cites the evidence of that row


# --------------------------------------------------------------------------- synthetic: what the corpora lack


def _zero_golden_pair(tmp_path: Path) -> tuple[Path, Path]:
    """Twelve outputs whose golden L2 norm is 0 (a zero-initialised bias, say), and one 25 % norm change."""
    x = tensor(norm=2.0)
    target, golden = {}, {}
    for k in range(12):
        target[f"Torch.bias_like.{k}.forward"] = api([x], [tensor(mx=1e-4, mn=0.0, mean=1e-5, norm=1e-3)])
        golden[f"Torch.bias_like.{k}.forward"] = api([x], [tensor(mx=0.0, mn=0.0, mean=0.0, norm=0.0)])
    target["Torch.real.0.forward"] = api([x], [tensor(norm=2.5)])
    golden["Torch.real.0.forward"] = api([x], [tensor(norm=2.0)])
    return write_dump(tmp_path / "t", target), write_dump(tmp_path / "g", golden)


def test_a_zero_golden_statistic_does_not_fill_the_worst_rows_with_inf(tmp_path, run_cli):
    t, g = _zero_golden_pair(tmp_path)
    summary_file = tmp_path / "s.json"
    proc = run_cli("compare", "-tp", t, "-gp", g, "-o", tmp_path / "out", "--json-summary", summary_file)
    assert proc.returncode == 0, proc.stderr
    view = read_result_file(only_result(tmp_path / "out"))
    rel = view.column("NormRelativeErr")
    assert sum(1 for c in rel if c.strip() == "inf") == 12  # the table keeps msprobe's cells
    summary = json.loads(summary_file.read_text())
    worst = summary["worst_rows"]
    assert len(worst) == 10
    assert all(w["value"] is not None and math.isfinite(w["value"]) for w in worst)
    zero = [w for w in worst if w["name"].startswith("Torch.bias_like.")]
    assert zero and all(w["metric"] == "L2norm diff" and (w["value"], w["cell"]) == (0.001, "0.001") for w in zero)
    block = _summary_block(proc.stdout)
    assert " inf " not in block and "inf%" not in block
    # the first divergence says why it has no percentage
    assert "the golden L2 norm is 0" in summary["first_divergence"]["reason"]


def test_errors_for_a_flag_only_still_name_a_first_divergence(compare, tmp_path):
    """Same framework, requires_grad differs on one input: an error row with no numeric difference anywhere."""
    calls = {"Torch.a.0.forward": api([tensor()], [tensor()]), "Torch.b.0.forward": api([tensor()], [tensor()])}
    flagged = dict(calls, **{"Torch.b.0.forward": api([tensor(requires_grad=True)], [tensor()])})
    t, g = write_dump(tmp_path / "t", flagged), write_dump(tmp_path / "g", calls)
    run = compare(tmp_path, ("-tp", str(t), "-gp", str(g)))
    assert run.rc == 0 and run.summary["verdicts"]["error"] == 1
    fd = run.summary["first_divergence"]
    assert (fd["node"], fd["row"], fd["source"]) == ("Torch.b.0.forward", "Torch.b.0.forward.input.0", "verdict")
    assert "first error row" in fd["reason"] and "Required_Grad" in fd["reason"]
    block = _summary_block(run.console)
    assert "first divergence: Torch.b.0.forward\n" in block and "none found" not in block
    assert run.payload["summary"] == run.summary
    (part,) = run.payload["parts"]
    assert part["chosen"] and part["first"]["pos"] == fd["index"] == 2
    assert run.summary["worst_rows"][0]["name"] == "Torch.b.0.forward.input.0"  # the error row heads the list


def test_relative_errors_and_absolute_fallbacks_rank_together():
    """Within a verdict a real 25 % change outranks a 0.001 difference from a zero golden norm; an overflow
    (the absolute difference is infinite too) has no finite measure: it follows them, shown as ``inf``."""
    names = ["Z.0.forward.output.0", "R.0.forward.output.0", "O.0.forward.output.0"]
    cells = {"NPU Name": names, "Bench Name": names, "NormRelativeErr": ["inf", "25.0%", "inf"],
             "L2norm diff": ["0.001", "0.5", "inf"], "Result": ["pass", "pass", "pass"]}
    view = ResultView("", "statistics", list(cells), cells)
    worst = summarize([view])["worst_rows"]
    assert [(w["name"][0], w["metric"], w["cell"], w["value"]) for w in worst] == [
        ("R", "NormRelativeErr", "25.0%", 25.0), ("Z", "L2norm diff", "0.001", 0.001), ("O", "NormRelativeErr", "inf", None)]


def test_worst_rows_put_errors_first_even_without_a_number():
    names = [f"Op{i}.0.forward.output.0" for i in range(4)]
    cells = {"NPU Name": names, "Bench Name": names, "Cosine": ["0.5", "0.999", "unsupported", "0.1"],
             "Result": ["pass", "error", "error", "warning"]}
    worst = summarize([ResultView("", "tensor", list(cells), cells)])["worst_rows"]
    assert [(w["name"][:3], w["cell"], w["result"]) for w in worst] == [
        ("Op1", "0.999", "error"), ("Op2", "unsupported", "error"), ("Op3", "0.1", "warning"), ("Op0", "0.5", "pass")]


def test_md5_worst_rows_show_the_checksums(tmp_path, run_cli):
    def md5_pair(value: str) -> dict:
        return api([tensor(md5="aaaa0000")], [tensor(md5=value)])

    t = write_dump(tmp_path / "t", {"Torch.a.0.forward": md5_pair("bbbb1111"), "Torch.b.0.forward": md5_pair("c")})
    g = write_dump(tmp_path / "g", {"Torch.a.0.forward": md5_pair("bbbb0000")})
    summary_file = tmp_path / "s.json"
    proc = run_cli("compare", "-tp", t, "-gp", g, "-o", tmp_path / "out", "--json-summary", summary_file)
    assert proc.returncode == 0, proc.stderr
    worst = json.loads(summary_file.read_text())["worst_rows"]
    assert [(w["name"], w["metric"], w["cell"], w["result"]) for w in worst] == [
        ("Torch.a.0.forward.output.0", "MD5", "bbbb1111 vs bbbb0000", "error"),
        ("Torch.b.0.forward.input.0", "MD5", "aaaa0000 vs N/A", "warning"),
        ("Torch.b.0.forward.output.0", "MD5", "c vs N/A", "warning"),
    ]
    assert "worst rows by MD5 (target vs golden):" in proc.stdout
    assert not STUTTER.search(_summary_block(proc.stdout))


def _row(name: str, result: str, message: str, **extra: str) -> dict[str, str]:
    row = {"NPU Name": name, "Bench Name": name, "NPU Dtype": "torch.float32", "Bench Dtype": "torch.float32",
           "NPU Tensor Shape": "[2]", "Bench Tensor Shape": "[2]", "NormRelativeErr": "0", "Result": result,
           "Err_message": message}
    row.update(extra)
    return row


def _stats_view(rows: list[dict[str, str]], label: str = "") -> ResultView:
    cols = list(rows[0])
    return ResultView(label, "statistics", cols, {c: [r[c] for r in rows] for c in cols})


def test_an_error_row_is_named_when_no_rule_finds_a_divergence():
    """Rows that are errors for a requires_grad flag only: no numeric divergence, so the first error row is named."""
    rg = json.dumps(["error: The Required_Grad of NPU and Bench are inconsistent."])
    view = _stats_view([_row("A.0.forward.input.0", "pass", "[]"), _row("B.0.forward.input.0", "error", rg),
                        _row("C.0.forward.output.0", "error", rg)])
    d = first_divergence_of(view)
    assert (d.node, d.index, d.source) == ("B.0.forward", 1, "verdict")
    assert d.reason.startswith("Result error: The Required_Grad of NPU and Bench are inconsistent (the first error row")
    s = summarize([view])
    assert s["first_divergence"]["row"] == "B.0.forward.input.0"
    assert "first divergence: B.0.forward" in format_summary(s)


def test_a_numeric_divergence_in_any_rank_beats_an_earlier_error_row_elsewhere():
    rg = json.dumps(["error: The Required_Grad of NPU and Bench are inconsistent."])
    flagged = _stats_view([_row("A.0.forward.input.0", "error", rg)], "rank0")
    numeric = _stats_view([_row("A.0.forward.input.0", "pass", "[]"),
                           _row("B.0.forward.output.0", "pass", "[]", NormRelativeErr="5%")], "rank1")
    s = summarize([flagged, numeric])
    assert (s["first_divergence"]["rank"], s["first_divergence"]["source"]) == ("rank1", "threshold")
    assert {d["rank"]: d["source"] for d in s["first_divergence_by_rank"]} == {"rank0": "verdict", "rank1": "threshold"}


@pytest.mark.parametrize(
    ("messages", "verdict", "expected"),
    [
        (["error: The shape of NPU and Bench are inconsistent."], "error", ["The shape of NPU and Bench are inconsistent"]),
        (["error: a.", "warning: b.", "error: a."], "error", ["a", "warning: b"]),
        (["Warning: x"], "warning", ["x"]),
        (["plain text"], "error", ["plain text"]),
    ],
)
def test_plain_messages(messages, verdict, expected):
    assert plain_messages(messages, verdict) == expected


def test_reasons_do_not_stutter():
    msg = json.dumps(["error: The scalar parameters of NPU and Bench are inconsistent."])
    d = first_divergence_of(_stats_view([_row("M.1.forward.input.1", "error", msg)]))
    assert d.reason == "Result error: The scalar parameters of NPU and Bench are inconsistent"
    both = json.dumps(["error: The Required_Grad of NPU and Bench are inconsistent.",
                       "error: The shape of NPU and Bench are inconsistent."])
    d = first_divergence_of(_stats_view([_row("M.1.forward.input.0", "error", both, **{"NPU Tensor Shape": "[3]"})]))
    assert d.reason == ("shape drift: NPU [3] vs Bench [2] (Result error: The Required_Grad of NPU and Bench are "
                        "inconsistent; The shape of NPU and Bench are inconsistent)")


# --------------------------------------------------------------------------- result files msprobe wrote


def _msprobe_results() -> list[Any]:
    root = corpora_dir()
    folders = sorted({p.parent for pattern in ("*compare_result*.csv", "*compare_result*.xlsx") for p in root.rglob(pattern)})
    return [pytest.param(f, id=str(f.relative_to(root))) for f in folders]


@pytest.mark.parametrize("folder", _msprobe_results())
def test_summary_of_msprobe_result_files_is_consistent(corpora, folder):
    """msprobe's own tables (26.x and the classic 8.3.3 ones), read back as ``msprobe report`` reads them."""
    from msprobe_core.default_plugins.report.command import collect_result_files
    from msprobe_core.default_plugins.summary.finish import read_files_as_view

    groups, _ = collect_result_files((folder,), "all")
    views = [read_files_as_view(g, str(k) if len(groups) > 1 else "") for k, g in enumerate(groups)]
    summary = summarize(views)
    if summary["verdicts"]["error"]:
        assert summary["first_divergence"] is not None
    levels = [_level(w["result"]) for w in summary["worst_rows"]]
    assert levels == sorted(levels, reverse=True)
    assert all(w["cell"] != w["result"] and w["reason"] for w in summary["worst_rows"])
    block = format_summary(summary)
    assert not STUTTER.search(block), STUTTER.search(block).group(0)
    for view in views:  # a classic tensor table is no kernel table, whatever its Accuracy Reached or Not column
        if view.names and not view.names[0].endswith(".npy"):
            assert view.mode != "kernel", view.names[0]
            assert summary["frameworks"] != [{"target": "mindspore", "golden": "mindspore"}] or not any(
                d.startswith("torch.") for d in view.column("NPU Dtype") or ())
