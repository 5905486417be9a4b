"""``-tensor_log``: the per-row ``start compare`` / ``Compare result`` lines (compare-core §9.3).

msprobe 26.2.0 names the metrics by their column names (``Cosine 1.0, EucDist 0.0, …``); the
legacy oracles (msprobe 8.3.3, ``is_print_compare_log: true``) log the same rows with the same
values and messages under older labels, which is what the differential tests compare.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from msprobe_core.default_plugins.tensor_log import (
    COSINE_NPU_ZERO,
    DTYPE,
    FUZZY,
    INF_NAN,
    NO_BENCH_FILE,
    NO_NPU_FILE,
    SHAPE,
    UNMATCHED,
    ZERO_D,
    format_line,
    log_tensor_rows,
    row_message,
)
from msprobe_core.model import MatchResult

from .conftest import corpus_mark
from .dumps import api, same_text_or_blas_rounding, tensor, write_dump

METRICS = ("Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr", "One Thousandth Err Ratio", "Five Thousandths Err Ratio")
OLD_LABELS = ("cosine", "euc_dist", "max_abs_err", "max_relative_err", "one_thousand_err_ratio", "five_thousand_err_ratio")
LINE = re.compile(r"\[INFO\] (.*)$")
METRIC_LINE = re.compile(
    r"^\[(?P<name>[^\]]+)\] Compare result: "
    + ", ".join(rf"{re.escape(m)} (?P<m{k}>[^,]*)" for k, m in enumerate(METRICS))
    + r", (?P<msg>.*)$"
)
PLAIN_LINE = re.compile(r"^\[(?P<name>[^\]]+)\] Compare result: (?P<msg>.*)$")
OLD_METRIC_LINE = re.compile(
    r"^\[(?P<name>[^\]]+)\] Compare result: "
    + ", ".join(rf"{m} (?P<m{k}>[^,]*)" for k, m in enumerate(OLD_LABELS))
    + r", (?P<msg>.*)$"
)
ZERO_D_REPEATED = re.compile(r"(?:" + re.escape(ZERO_D) + r" ?)+")


@pytest.fixture(autouse=True)
def _no_leaked_tensor_cap(monkeypatch):
    """An earlier in-process run may leave a tensor size cap in the environment; these tests need none."""
    monkeypatch.delenv("MSPROBE_MAX_TENSOR_BYTES", raising=False)


def _messages(lines: list[str], metric_re: re.Pattern) -> list[tuple[str, tuple[str, ...], str]]:
    """(name, metric values, message) per ``Compare result`` line; 8.3.3's repeated 0-d sentence counted once."""
    out = []
    for line in lines:
        m = metric_re.match(line)
        if m:
            msg = ZERO_D_REPEATED.sub(ZERO_D + " ", m["msg"]).strip()
            out.append((m["name"], tuple(m[f"m{k}"] for k in range(6)), msg))
        else:
            m = PLAIN_LINE.match(line)
            if m and "Compare result: " in line:
                out.append((m["name"], (), m["msg"].strip()))
    return out


def _log_lines(text: str) -> list[str]:
    return [m.group(1) for m in map(LINE.search, text.splitlines()) if m]


CASES = [
    ("pytorch/c02", "target/step0/rank0/dump.json", "golden/step0/rank0/dump.json", "c02/plain", (), True),
    ("pytorch/c06b", "target/step0/rank0/dump.json", "golden/step0/rank0/dump.json", "c06b/plain", (), True),
    ("mindspore/ms_l1_tensor_bug", "target/step0/rank0/dump.json", "golden/step0/rank0/dump.json",
     "ms_l1_tensor_bug/plain", (), False),
    ("mindspore/x_l0_tensor_lm", "target/step0/proc20192/dump.json", "golden/step0/proc20221/dump.json",
     "x_l0_tensor_lm/lm_yaml_hl", ("-lm", "layer_mapping.yaml"), True),
]


@pytest.mark.parametrize("case,tp,gp,legacy,extra,values",
                         [pytest.param(*c, id=c[3], marks=corpus_mark(c[0], f"legacy/{c[3]}")) for c in CASES])
def test_rows_and_messages_agree_with_msprobe_log(corpora, run_cli, tmp_path, case, tp, gp, legacy, extra, values):
    """Same rows, same metric values, same messages as msprobe's own ``is_print_compare_log`` output."""
    if case.startswith("mindspore"):
        pytest.importorskip("msprobe_mindspore", reason="the msprobe-mindspore plugin is not installed")
    root = corpora / case
    args = [a if not a.endswith(".yaml") else str(root / a) for a in extra]
    proc = run_cli("compare", "-tp", root / tp, "-gp", root / gp, "-o", tmp_path, "-tensor_log", *args)
    assert proc.returncode == 0, proc.stderr
    lines = _log_lines(proc.stdout)
    ours = _messages([x for x in lines if "Compare result: " in x], METRIC_LINE)
    starts = [x[len("start compare: "):] for x in lines if x.startswith("start compare: ")]
    assert starts == [name for name, _, _ in ours]
    console = (corpora / "legacy" / legacy / "console.txt").read_text()
    theirs = _messages([x for x in _log_lines(console) if "Compare result: " in x], OLD_METRIC_LINE)
    assert theirs
    mine = {name: (vals, msg) for name, vals, msg in ours}
    for name, vals, msg in theirs:
        assert name in mine, name
        assert mine[name][1] == msg, (name, mine[name][1], msg)
        if values:  # BLAS-summed metrics: msprobe's last digits depend on its machine's CPU (tests/dumps.py)
            assert all(same_text_or_blas_rounding(col, x, y) for col, x, y in zip(METRICS, mine[name][0], vals)), (
                name, mine[name][0], vals)


def test_line_format_is_spec_exact(corpora, run_cli, tmp_path):
    root = corpora / "pytorch" / "c06b"
    proc = run_cli("compare", "-tp", root / "target/step0/rank0/dump.json", "-gp", root / "golden/step0/rank0/dump.json",
                   "-o", tmp_path, "-tensor_log")
    lines = _log_lines(proc.stdout)
    assert lines[0] == "start compare: Functional.embedding.0.forward.input.0"
    assert lines[1] == (
        "[Functional.embedding.0.forward.input.0] Compare result: Cosine 1.0, EucDist 0.0, MaxAbsErr 0.0, "
        "MaxRelativeErr 0.0, One Thousandth Err Ratio 1.0, Five Thousandths Err Ratio 1.0, "
    )
    assert "[Functional.embedding.0.forward.input.2] Compare result: NPU does not have data file." in lines
    zero_d = [x for x in lines if x.endswith(ZERO_D)]
    assert zero_d and all(METRIC_LINE.match(x)["m0"] == "unsupported" for x in zero_d)


def test_no_lines_outside_tensor_mode(corpora, run_cli, tmp_path):
    root = corpora / "pytorch" / "c01"
    proc = run_cli("compare", "-tp", root / "target/step0/rank0/dump.json", "-gp", root / "golden/step0/rank0/dump.json",
                   "-o", tmp_path, "-tensor_log")
    assert proc.returncode == 0
    assert "start compare:" not in proc.stdout and "Compare result:" not in proc.stdout


# --------------------------------------------------------------------------- unit level
def _tables(tmp_path: Path, t_rows: dict, g_rows: dict, framework: str = "pytorch"):
    from msprobe_core.host.registry import get_host
    from msprobe_core.host.specs import CompareJob
    from msprobe_core.load.stage import load_pair
    from msprobe_core.model import CompareOptions

    t = write_dump(tmp_path / "t", t_rows, task="tensor", framework=framework)
    g = write_dump(tmp_path / "g", g_rows, task="tensor", framework=framework)
    for p in (t, g):
        (p.parent / "dump_tensor_data").mkdir(exist_ok=True)
    return load_pair(CompareJob(t, g, tmp_path, "x"), CompareOptions(), get_host())


def _leaf(name: str, **kw) -> dict:
    return tensor(data_name=f"{name}.pt", **kw)


def test_row_messages(tmp_path):
    t, g = _tables(
        tmp_path,
        {"Functional.a.0.forward": api([_leaf("Functional.a.0.forward.input.0", dtype="torch.float16"),
                                        {"type": "int", "value": 1}],
                                       [_leaf("Functional.a.0.forward.output.0", norm=0.0)])},
        {"Functional.a.0.forward": api([_leaf("Functional.a.0.forward.input.0"), {"type": "int", "value": 1}],
                                       [_leaf("Functional.a.0.forward.output.0")])},
    )
    six = (0.9, 1.0, 0.1, 0.2, 0.5, 0.6)
    assert row_message(t, g, 0, 0, six) == DTYPE
    assert row_message(t, g, 1, 1, ("unsupported",) * 6) == NO_NPU_FILE
    assert row_message(t, g, 0, -1, ("unsupported",) * 6) == UNMATCHED
    assert row_message(t, g, 2, 2, ("shape unmatched",) * 6) == SHAPE
    assert row_message(t, g, 2, 2, ("N/A",) * 6) == INF_NAN
    assert row_message(t, g, 2, 2, ("Nan", 1.0, 0.5, 0.5, 0.0, 0.0)) == COSINE_NPU_ZERO
    assert row_message(t, g, 2, 2, ("unsupported", "unsupported", 0.5, 0.5, "unsupported", "unsupported")) == ZERO_D
    assert row_message(t, g, 2, 2, ("unsupported",) * 6).startswith("Dump file: ")
    g.data_name[1] = "-1"
    t.data_name[1] = "x.pt"
    assert row_message(t, g, 1, 1, ("unsupported",) * 6) == NO_BENCH_FILE
    g.name[2] = "Functional.a.7.forward.output.0"
    assert row_message(t, g, 2, 2, six, fuzzy=True) == FUZZY
    assert row_message(t, g, 2, 2, six, fuzzy=False) == ""


def test_log_lines_replace_newlines_and_tabs(tmp_path):
    assert format_line("a\nb", "x\ty", None) == "[a_b] Compare result: x_y"
    assert format_line("n", "", [("Cosine", 1.0), ("EucDist", 0.0)]) == "[n] Compare result: Cosine 1.0, EucDist 0.0, "


def test_log_tensor_rows_orders_start_then_result(tmp_path):
    t, g = _tables(
        tmp_path,
        {"Functional.a.0.forward": api([_leaf("Functional.a.0.forward.input.0")], [_leaf("Functional.a.0.forward.output.0")])},
        {"Functional.a.0.forward": api([_leaf("Functional.a.0.forward.input.0")], [])},
    )
    records: list[str] = []

    class Grab(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    logger = logging.getLogger("test_tensor_log")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(Grab())
    columns = {m: [1.0, "unsupported"] for m in METRICS}
    log_tensor_rows(t, g, MatchResult([0, 1], [0, -1]), columns, list(METRICS), logger=logger)
    assert records == [
        "start compare: Functional.a.0.forward.input.0",
        "[Functional.a.0.forward.input.0] Compare result: " + ", ".join(f"{m} 1.0" for m in METRICS) + ", ",
        "start compare: Functional.a.0.forward.output.0",
        "[Functional.a.0.forward.output.0] Compare result: Bench api/module unmatched.",
    ]
