"""A big statistics result built and written by two processes: the same file, byte for byte, whatever happens.

The split only starts past 100k rows; here it is forced on the real corpora (threshold 1 row,
pieces of a few rows, so that every split point and piece boundary is exercised) and the file
is compared with the one written by this process alone.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from msprobe_core import api
from msprobe_core.default_plugins.chunked import tailbuild
from msprobe_core.default_plugins.forking import children as forking
from msprobe_core.model import ApiEntry, DumpTable, MatchResult
from msprobe_core.pipeline import build as engine
from msprobe_core.result import _pick
from msprobe_core.write import writers

from .conftest import corpora_dir, no_corpora_reason

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


@pytest.fixture(autouse=True)
def whole_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tail child is part of the whole-table path (statistics compares are streamed otherwise)."""
    from msprobe_core.default_plugins.chunked.streamed import ENV_WHOLE_TABLES

    monkeypatch.setenv(ENV_WHOLE_TABLES, "1")

CORPORA = corpora_dir()

CASES = [
    ("pytorch/c01", {}),
    ("pytorch/c03", {}),  # md5
    ("pytorch/c04a", {}),  # L0 modules
    ("pytorch/c05", {}),  # mix
    ("pytorch/c08", {}),
    ("pytorch/c08", {"fuzzy_match": True}),
    ("mindspore/ms_l1_stat_fp16", {}),
    ("mindspore/ms_mix_stat_gelu", {}),
    ("mindspore/x_l1_stat_am", {"api_mapping": True}),
    ("mindspore/x_mix_stat_dm_bug", {"data_mapping": "data_mapping.yaml"}),
    ("mindspore/x_l0_stat_cm_bug", {"cell_mapping": True}),
]


def _case(name: str) -> Path:
    """A corpus case directory (the test skips where the corpora are not present)."""
    case = CORPORA / name
    if not case.is_dir():
        pytest.skip(no_corpora_reason() if not CORPORA.is_dir() else f"{name} not in the corpora")
    return case


def _step(case: Path, side: str) -> Path:
    return next(p for p in sorted((case / side).iterdir()) if p.is_dir())


def _run(case: Path, out: Path, options: dict) -> dict[str, bytes]:
    opts = dict(options)
    if isinstance(opts.get("data_mapping"), str):
        opts["data_mapping"] = case / opts["data_mapping"]
    out.mkdir()
    api.compare(_step(case, "target"), _step(case, "golden"), out, **opts)
    files = {p.name.rsplit("_", 1)[0]: p.read_bytes() for p in out.iterdir()}
    assert not [n for n in files if n.startswith(".")], "a side or temporary file was left behind"
    assert files, "no result written"
    return files


def _alone(case: Path, out: Path, options: dict, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """The files of a run in this process alone (no fork of any kind)."""
    with monkeypatch.context() as m:
        m.setattr(forking, "fork_allowed", lambda: False)
        return _run(case, out, options)


@pytest.fixture
def split_always(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Split every result; returns the list of rows each started child begins at."""
    monkeypatch.setattr(forking, "MIN_SPLIT_ROWS", 1)
    # threads earlier tests left running (dask, progress) hold no lock the child's code takes
    monkeypatch.setattr(forking, "fork_allowed", lambda: True)
    monkeypatch.setattr(writers, "CSV_CHUNK_ROWS", 5)
    starts: list[int] = []
    real = tailbuild.start_tail

    def recording(*args, **kwargs):
        tail = real(*args, **kwargs)
        if tail is not None:
            starts.append(tail.start)
        return tail

    monkeypatch.setattr(tailbuild, "start_tail", recording)
    return starts


@pytest.mark.parametrize(("case", "options"), CASES, ids=[f"{c}{'-' + '-'.join(o) if o else ''}" for c, o in CASES])
@pytest.mark.parametrize("piece", [3, 1 << 20])
def test_split_result_is_the_same_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split_always: list[int],
                                       case: str, options: dict, piece: int) -> None:
    path = _case(case)
    alone = _alone(path, tmp_path / "alone", options, monkeypatch)
    assert not split_always
    monkeypatch.setattr(tailbuild, "PIECE_ROWS", piece)
    split = _run(path, tmp_path / "split", options)
    assert [s for s in split_always if s > 0], "no child was started: the split path was not exercised"
    assert split == alone


def test_a_failing_child_leaves_its_rows_to_this_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         split_always: list[int]) -> None:
    case = _case("pytorch/c01")
    alone = _alone(case, tmp_path / "alone", {}, monkeypatch)
    assert not split_always
    real_spawn = forking.spawn

    def failing_spawn(work, *args):
        def fail() -> None:  # as a child killed or out of memory before it wrote anything useful
            raise MemoryError

        return real_spawn(fail, *args)

    monkeypatch.setattr(forking, "spawn", failing_spawn)
    assert _run(case, tmp_path / "split", {}) == alone
    assert split_always, "the child was not started"


def test_a_failing_build_stops_the_child_and_leaves_no_side_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 split_always: list[int]) -> None:
    case = _case("pytorch/c01")
    pids: list[int] = []
    real_spawn = forking.spawn

    def slow_spawn(work, *args):
        def slow() -> None:
            import time

            time.sleep(60)

        child = real_spawn(slow, *args)
        pids.append(child.pid)
        return child

    def broken_build(*args, **kwargs):
        raise RuntimeError("build failed")

    monkeypatch.setattr(forking, "spawn", slow_spawn)
    monkeypatch.setattr(engine, "build_result", broken_build)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(RuntimeError, match="build failed"):
        api.compare(_step(case, "target"), _step(case, "golden"), out)
    assert pids and pids[0] is not None
    with pytest.raises(ChildProcessError):  # killed and reaped, not left running
        os.waitpid(pids[0], os.WNOHANG)
    assert list(out.iterdir()) == []


def _table_with_apis(sizes: list[int]) -> DumpTable:
    table = DumpTable(source=Path("dump.json"), kind="dump", task="statistics", mode="statistics", framework="")
    for k, size in enumerate(sizes):
        table.apis.append(ApiEntry(key=f"A.{k}.forward", prefix="A", call=str(k), direction="forward",
                                   first_row=len(table.row_api)))
        table.row_api.extend([k] * size)
    return table


@pytest.mark.parametrize("seed", range(20))
def test_split_points_are_api_starts(seed: int) -> None:
    rng = random.Random(seed)
    table = _table_with_apis([rng.randint(1, 6) for _ in range(rng.randint(1, 40))])
    rows = list(range(len(table.row_api)))
    match = MatchResult(rows, [rng.choice([-1, r]) for r in rows])
    starts = {0} | {i for i in range(1, len(rows)) if table.row_api[i] != table.row_api[i - 1]}
    for at in range(-2, len(rows) + 3):
        b = tailbuild.api_boundary(table, match, at)
        assert b == len(rows) or b in starts
        assert b >= min(max(at, 1), len(rows))
        assert not [s for s in starts if max(at, 1) <= s < b], "an API start was skipped"
    share_start = tailbuild.tail_start(table, match)
    assert share_start == len(rows) or share_start in starts


@pytest.mark.parametrize("seed", range(30))
def test_picking_rows_equals_the_plain_expression(seed: int) -> None:
    rng = random.Random(seed)
    values = [rng.choice([None, 1.5, "x", 0, float("nan")]) for _ in range(rng.randint(8, 60))]
    for count in (max(1, len(values) // 5), len(values)):  # a few rows of a big table, and the whole of it
        idx = [rng.choice([-1, rng.randrange(len(values))]) for _ in range(count)]
        for kwargs in ({}, {"none": None}, {"missing": None, "none": "N/A"}, {"missing": "gone"}):
            none, missing = kwargs.get("none", "N/A"), kwargs.get("missing", "N/A")
            expected = [missing if j < 0 else none if values[j] is None and none is not None else values[j]
                        for j in idx]
            assert [repr(v) for v in _pick(values, idx, **kwargs)] == [repr(v) for v in expected]


def test_split_when_the_output_directory_does_not_exist_yet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            split_always: list[int]) -> None:
    case = _case("pytorch/c05")
    alone = _alone(case, tmp_path / "alone", {}, monkeypatch)
    parent = tmp_path / "later"
    parent.mkdir()
    out = parent / "a" / "b"  # made by the writer, as without the split
    api.compare(_step(case, "target"), _step(case, "golden"), out)
    assert split_always, "the child was not started"
    assert {p.name.rsplit("_", 1)[0]: p.read_bytes() for p in out.iterdir()} == alone
    assert [p.name for p in parent.iterdir()] == ["a"], "the side file was left behind"


def test_no_split_with_a_plugin_metric_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          split_always: list[int]) -> None:
    """A third-party statistics metric set may read the whole table: its results are never split."""
    from msprobe_core.host.registry import get_host

    case = _case("pytorch/c01")
    host = get_host()
    spec = host.metrics["statistics"]
    monkeypatch.setitem(host.metrics, "statistics", type(spec)(spec.mode, spec.compute, plugin="someone.else"))
    _run(case, tmp_path / "out", {})
    assert split_always == []


def test_a_full_disk_while_appending_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    split_always: list[int]) -> None:
    import errno

    from msprobe_core.errors import OutputError

    case = _case("pytorch/c01")

    def full(src, dst) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writers, "append_file", full)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(OutputError, match="No space left|disk") as err:
        api.compare(_step(case, "target"), _step(case, "golden"), out)
    assert "\n" not in str(err.value)
    assert split_always, "the child was not started"
    assert list(out.iterdir()) == [], "a half-written result or a side file was left behind"


def test_chunked_turned_off_no_tail_starts_and_the_file_is_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     split_always: list[int]) -> None:
    """The tail is lent by the default plugin ``chunked`` (``StrategySpec.tail``): turned off, none is lent and this
    process builds and writes every row, the file byte for byte the same."""
    from msprobe_core.host.defaults import DISABLE_ENV
    from msprobe_core.plugin import reset_host

    path = _case("pytorch/c05")
    split = _run(path, tmp_path / "split", {})
    assert [s for s in split_always if s > 0], "the plugin started no tail"
    split_always.clear()
    monkeypatch.setenv(DISABLE_ENV, "chunked")
    reset_host(None)  # the next compare's host is made with the plugin off
    try:
        off = _run(path, tmp_path / "off", {})
    finally:
        monkeypatch.delenv(DISABLE_ENV)
        reset_host(None)
    assert not split_always, "a tail was started with the plugin off"
    assert off == split


def _cli_run(case: Path, out: Path, options: dict) -> tuple[dict[str, bytes], dict]:
    """``msprobe compare`` in this process (it keeps no table: the child also summarises its rows): the result
    files and the ``--json-summary`` without its times and paths."""
    import json

    from msprobe_core.cli.main import main

    flags = {"fuzzy_match": ["-fm"], "api_mapping": ["-am"], "cell_mapping": ["-cm"]}
    args = [a for k in options for a in flags.get(k, ["-dm", str(case / str(options[k]))])]
    out.mkdir()
    summary = out.parent / f"{out.name}.json"
    assert main(["compare", "-tp", str(_step(case, "target")), "-gp", str(_step(case, "golden")), "-o", str(out),
                 "--json-summary", str(summary), *args]) == 0
    files = {p.name.rsplit("_", 1)[0]: p.read_bytes() for p in out.iterdir() if p.suffix == ".csv"}
    assert not [p for p in out.iterdir() if p.name.startswith(".")], "a side or temporary file was left behind"
    def plain(x: object) -> object:  # without the run's times and paths
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items() if k not in ("elapsed_s", "started", "finished")}
        if isinstance(x, list):
            return [plain(v) for v in x]
        if isinstance(x, str):
            return re.sub(r"_\d{14}", "_STAMP", x.replace(str(summary), "SUMMARY").replace(str(out), "OUT"))
        return x

    doc = plain(json.loads(summary.read_text(encoding="utf-8")))
    return files, doc


def _record_summarising(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """From now on, for each tail started, whether its child summarises its rows."""
    summarised: list[bool] = []
    real = tailbuild.start_tail

    def recording(*args, **kwargs):
        tail = real(*args, **kwargs)
        summarised.append(tail is not None and tail.summarises)
        return tail

    monkeypatch.setattr(tailbuild, "start_tail", recording)
    return summarised


@pytest.mark.parametrize(("case", "options"), CASES, ids=[f"{c}{'-' + '-'.join(o) if o else ''}" for c, o in CASES])
def test_a_child_that_summarises_its_rows_gives_the_same_files_and_summary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split_always: list[int], case: str, options: dict) -> None:
    """``msprobe compare`` keeps no table: the child builds, writes and summarises the rows from the split on,
    this process only the rows before; files, JSON summary and report are those of one process alone."""
    path = _case(case)
    with monkeypatch.context() as m:
        m.setattr(forking, "fork_allowed", lambda: False)
        alone = _cli_run(path, tmp_path / "alone", options)
    summarised = _record_summarising(monkeypatch)
    monkeypatch.setattr(tailbuild, "PIECE_ROWS", 3)
    assert _cli_run(path, tmp_path / "split", options) == alone
    assert any(summarised), "no child summarised its rows: the path was not exercised"


@pytest.mark.parametrize("when", ["before its summary", "while sending it"])
def test_a_child_lost_after_its_rows_leaves_them_and_their_summary_to_this_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split_always: list[int], when: str) -> None:
    """The child wrote every row but died before (or while) handing back their summary: this process builds,
    writes and summarises every row itself, with the files and summary of a run alone."""
    import pickle

    case = _case("pytorch/c05")
    with monkeypatch.context() as m:
        m.setattr(forking, "fork_allowed", lambda: False)
        alone = _cli_run(case, tmp_path / "alone", {})
    def dying(obj, out, *args, **kwargs):  # in the child only: the module's pickle is replaced for this test
        if when == "while sending it":
            out.write(pickle.dumps(obj)[:20])
            out.flush()
        os._exit(1)

    summarised = _record_summarising(monkeypatch)
    monkeypatch.setattr(tailbuild, "pickle", SimpleNamespace(dump=dying, HIGHEST_PROTOCOL=pickle.HIGHEST_PROTOCOL))
    assert _cli_run(case, tmp_path / "split", {}) == alone
    assert summarised == [True], "no child was asked to summarise its rows"


@pytest.mark.parametrize("at", ["whole_numbers", "pipe", "spawn"])
def test_a_ctrl_c_while_the_tail_starts_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              split_always: list[int], at: str) -> None:
    """A Ctrl-C that strikes while the tail child is being set up (its column facts found, its pipe opened, its
    fork): the compare stops with exit 130 and no side file or result is left in the output directory."""
    from msprobe_core.cli.main import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    if at == "whole_numbers":
        monkeypatch.setattr(tailbuild, "whole_numbers", interrupted)
    elif at == "pipe":
        monkeypatch.setattr(tailbuild.os, "pipe", interrupted)
    else:
        monkeypatch.setattr(forking, "spawn", interrupted)
    case = _case("pytorch/c01")
    out = tmp_path / "out"
    out.mkdir()
    assert main(["compare", "-tp", str(_step(case, "target")), "-gp", str(_step(case, "golden")), "-o", str(out)]) == 130
    assert list(out.iterdir()) == []
