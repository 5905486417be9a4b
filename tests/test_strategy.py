"""Whole tables or chunk by chunk: the one choice (``pipeline/strategy.py``), by the size of a side's dump file.

The session runs the corpora chunk by chunk (``tests/conftest.py`` sets ``MSPROBE_STREAM_MIN_BYTES=0``); these tests
unset it to see the default, on real dump files.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from msprobe_core.host.specs import CompareJob
from msprobe_core.pipeline.strategy import (
    ENV_SERIAL_STREAM_MIN_BYTES,
    ENV_WORKER_STREAM_MIN_BYTES,
    SERIAL_STREAM_MIN_BYTES,
    WORKER_STREAM_MIN_BYTES,
    job_bytes,
    stream_min_bytes,
    worth_streaming,
)

REPO = Path(__file__).resolve().parent.parent
PAIR = REPO / "examples" / "pytorch_stats"


def _job(tmp_path: Path) -> CompareJob:
    target = PAIR / "target" / "step0" / "rank0" / "dump.json"
    golden = PAIR / "golden" / "step0" / "rank0" / "dump.json"
    return CompareJob(target, golden, tmp_path, "compare_result")


def test_the_defaults_and_the_variables(monkeypatch):
    monkeypatch.delenv(ENV_SERIAL_STREAM_MIN_BYTES, raising=False)
    monkeypatch.delenv(ENV_WORKER_STREAM_MIN_BYTES, raising=False)
    assert stream_min_bytes() == SERIAL_STREAM_MIN_BYTES and stream_min_bytes(on_worker=True) == WORKER_STREAM_MIN_BYTES
    monkeypatch.setenv(ENV_SERIAL_STREAM_MIN_BYTES, "123")
    monkeypatch.setenv(ENV_WORKER_STREAM_MIN_BYTES, "not a number")
    assert stream_min_bytes() == 123 and stream_min_bytes(on_worker=True) == WORKER_STREAM_MIN_BYTES
    monkeypatch.setenv(ENV_SERIAL_STREAM_MIN_BYTES, "-5")
    assert stream_min_bytes() == 0


def test_a_small_pair_takes_whole_tables_a_big_one_chunks(tmp_path, monkeypatch):
    job = _job(tmp_path)
    largest = max(os.path.getsize(job.target), os.path.getsize(job.golden))
    assert job_bytes(job, largest=True) == largest
    assert job_bytes(job) == os.path.getsize(job.target) + os.path.getsize(job.golden)
    monkeypatch.delenv(ENV_SERIAL_STREAM_MIN_BYTES, raising=False)
    assert largest < SERIAL_STREAM_MIN_BYTES and not worth_streaming(job)
    monkeypatch.setenv(ENV_SERIAL_STREAM_MIN_BYTES, str(largest))
    assert worth_streaming(job)  # at the threshold: streamed
    monkeypatch.setenv(ENV_SERIAL_STREAM_MIN_BYTES, str(largest + 1))
    assert not worth_streaming(job)
    assert not worth_streaming(CompareJob(tmp_path / "absent.json", tmp_path / "absent.json", tmp_path, "x"))


@pytest.mark.parametrize("threshold", ["", "0"])
def test_the_compare_runs_the_strategy_chosen_and_both_give_the_same_files(tmp_path, monkeypatch, caplog, threshold):
    """The serial compare asks the choice: by default this small pair is on whole tables, with the threshold at 0
    chunk by chunk; the result file is the same byte for byte."""
    import msprobe_core
    from msprobe_core.pipeline.job import log as job_log

    if threshold:
        monkeypatch.setenv(ENV_SERIAL_STREAM_MIN_BYTES, threshold)
    else:
        monkeypatch.delenv(ENV_SERIAL_STREAM_MIN_BYTES, raising=False)
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    keep = Keep(logging.DEBUG)
    job = _job(tmp_path)
    out = tmp_path / f"out{threshold or 'default'}"
    level = job_log.level
    job_log.addHandler(keep)
    try:
        job_log.setLevel(logging.DEBUG)
        msprobe_core.compare(job.target, job.golden, output_dir=out, quiet=True)
    finally:
        job_log.removeHandler(keep)
        job_log.setLevel(level)
    said = [r for r in records if r.endswith(("whole tables", "chunk by chunk"))]
    assert said and said[0].endswith("chunk by chunk" if threshold == "0" else "whole tables"), records
    (result,) = out.glob("compare_result_*.csv")
    other = tmp_path / "other"
    monkeypatch.setenv(ENV_SERIAL_STREAM_MIN_BYTES, "0" if threshold != "0" else str(1 << 40))
    msprobe_core.compare(job.target, job.golden, output_dir=other, quiet=True)
    (again,) = other.glob("compare_result_*.csv")
    assert result.read_bytes() == again.read_bytes()


def _strategies_run(monkeypatch) -> list[str]:
    """The name of every strategy a job is run with: chosen by :func:`run_job`, or named to it by a front end."""
    from msprobe_core.pipeline import strategy
    from msprobe_core.run import frontend

    seen: list[str] = []
    real_choice, real_run = strategy.choose_strategy, frontend.run_job

    def choosing(*args, **kwargs):
        chosen = real_choice(*args, **kwargs)
        seen.append(chosen.name)
        return chosen

    def run_job(*args, **kwargs):
        seen.append(f"named: {kwargs['strategy'].name}")
        return real_run(*args, **kwargs)

    monkeypatch.setattr(strategy, "choose_strategy", choosing)
    monkeypatch.setattr(frontend, "run_job", run_job)
    return seen


def test_every_entry_runs_the_one_orchestration(tmp_path, monkeypatch):
    """The command's run, the Python API without an output directory and a front end's stages-only job all go
    through ``run_job``: the strategy is chosen there (or named by the front end), never by a second driver."""
    import msprobe_core
    from msprobe_core.host.registry import get_host
    from msprobe_core.model import CompareOptions
    from msprobe_core.run.frontend import run_compare

    monkeypatch.setenv(ENV_SERIAL_STREAM_MIN_BYTES, "0")
    seen = _strategies_run(monkeypatch)
    job = _job(tmp_path)
    msprobe_core.compare(job.target, job.golden, output_dir=tmp_path / "written", quiet=True)
    assert seen == ["chunk by chunk"]
    msprobe_core.compare(job.target, job.golden, quiet=True)  # a table, no file: never streamed
    assert seen == ["chunk by chunk", "whole tables"]
    out = tmp_path / "front"
    (done,) = run_compare([CompareJob(job.target, job.golden, out, "compare_result")],
                          CompareOptions(output_dir=out, output_format="csv"), get_host(), stages_only=True)
    assert done.files and seen[2:] == ["named: whole tables"]


def test_a_job_the_chunks_cannot_take_goes_on_on_whole_tables(tmp_path, monkeypatch, caplog):
    """The chunked strategy hands a job it cannot take to whole tables after its load; the result is the one
    whole tables give from the start."""
    from msprobe_core.default_plugins.chunked.streamed import Chunked, StreamPlan, WholeTablesNeeded
    from msprobe_core.host.registry import get_host
    from msprobe_core.model import CompareOptions
    from msprobe_core.pipeline import job as engine

    monkeypatch.setenv(ENV_SERIAL_STREAM_MIN_BYTES, "0")
    host, job = get_host(), _job(tmp_path)
    options = CompareOptions(output_dir=tmp_path)

    class Refusing(Chunked):
        def match(self, *args, **kwargs):
            raise WholeTablesNeeded("refused for the test")

    with caplog.at_level(logging.DEBUG, logger="msprobe"):
        handed = engine.run_job(job, options, host, strategy=Refusing(StreamPlan(False)))
    whole = engine.run_job(job, options, host)
    assert "whole tables (refused for the test)" in caplog.text
    assert handed is not None and whole is not None and handed.table is not None
    assert list(handed.table.rows()) == list(whole.table.rows())
