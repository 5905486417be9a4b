"""The chunked strategy as the default plugin ``chunked`` (issue 33): registered through
``msprobe_register_strategies``, open to a third party's loader through the index protocol (``DumpIndex``), and
turned off by name without changing a result file.

A third party's loader (:mod:`tests.chunky_loader`, a format of its own read through ``msprobe_core.plugin`` only)
opts in with ``index_table``; its pair compared chunk by chunk writes the CSV whole tables write, and the CSV the
built-in loader writes for the same dumps as ``dump.json``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from msprobe_core import api
from msprobe_core.default_plugins.chunked import chunking
from msprobe_core.default_plugins.fast_scan import scan as dumpscan
from msprobe_core.host.defaults import DISABLE_ENV
from msprobe_core.host.registry import PluginHost, reset_host
from msprobe_core.pipeline.sink import KEEP_TABLES, SUMMARY_SINK
from msprobe_core.pipeline.strategy import ENV_SERIAL_STREAM_MIN_BYTES

from . import chunky_loader

pytestmark = pytest.mark.skipif(dumpscan.Scanner is None, reason="the C scanner is not built here")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "pytorch_stats"


class Sink:
    """A summary sink that keeps nothing: the run then keeps no table, so a chunked job is written chunk by chunk."""

    def feed_table(self, table: Any, start: int = 0) -> None:
        return None

    def finish(self, files: Any) -> dict[str, int]:
        return {}


STREAMED = {SUMMARY_SINK: Sink, KEEP_TABLES: False}


@pytest.fixture(autouse=True)
def _fresh_host():
    reset_host(None)
    yield
    reset_host(None)


def _pair(tmp_path: Path, suffix: str) -> tuple[Path, Path]:
    """The example pair, as ``dump.json`` or written in the third party's format."""
    paths = []
    for side in ("target", "golden"):
        source = EXAMPLE / side / "step0" / "rank0" / "dump.json"
        directory = tmp_path / f"{side}_{suffix}"
        directory.mkdir()
        path = directory / suffix
        if suffix == "dump.json":
            path.write_bytes(source.read_bytes())
        else:
            chunky_loader.write_chunky(json.loads(source.read_text(encoding="utf-8")), path)
        paths.append(path)
    return paths[0], paths[1]


def _compare(target: Path, golden: Path, out: Path, monkeypatch: pytest.MonkeyPatch, caplog: Any,
             *, plugins: tuple = (), whole: bool = False) -> tuple[bytes, list[list[tuple[int, int]]], str]:
    """(the result CSV's bytes, the chunk plans written chunk by chunk, the strategy the debug log names)."""
    plans: list[list[tuple[int, int]]] = []
    real = chunking.write_chunks

    def recording(source: Any, chunks: list[tuple[int, int]], *args: Any, **kwargs: Any) -> None:
        plans.append(list(chunks))
        return real(source, chunks, *args, **kwargs)

    caplog.clear()
    with monkeypatch.context() as m, caplog.at_level(logging.DEBUG, logger="msprobe"):
        m.setattr(chunking, "write_chunks", recording)
        m.setenv(ENV_SERIAL_STREAM_MIN_BYTES, "0")  # every pair is offered to the registered strategies
        m.setenv(chunking.ENV_CHUNK_ROWS, "3")  # chunk boundaries all through the example
        if whole:
            m.setenv(DISABLE_ENV, "chunked")
        reset_host(PluginHost(extra_plugins=list(plugins)))
        api.compare(target, golden, out, extra=dict(STREAMED))
    [csv] = out.glob("*.csv")
    said = [r.getMessage().split(": ", 1)[1] for r in caplog.records if r.getMessage().startswith(f"{target.parent.name}")
            or r.getMessage().endswith(("chunk by chunk", "whole tables"))]
    return csv.read_bytes(), plans, " ".join(said)


def test_a_third_party_loader_opts_in_and_its_chunked_result_is_the_whole_tables_one(tmp_path, monkeypatch, caplog):
    target, golden = _pair(tmp_path, chunky_loader.SUFFIX)
    chunked, plans, said = _compare(target, golden, tmp_path / "chunked", monkeypatch, caplog, plugins=(chunky_loader,))
    assert plans and len(plans[0]) > 1, "the third party's pair was not written chunk by chunk"
    assert "chunk by chunk" in said
    whole, plans, said = _compare(target, golden, tmp_path / "whole", monkeypatch, caplog, plugins=(chunky_loader,),
                                  whole=True)
    assert not plans and "whole tables" in said
    assert chunked == whole
    built_in = _compare(*_pair(tmp_path, "dump.json"), tmp_path / "builtin", monkeypatch, caplog)[0]
    assert chunked == built_in  # the same dumps through the built-in loader's index


@pytest.mark.exercises_hooks("msprobe_register_strategies")
def test_with_chunked_turned_off_a_big_pair_runs_on_whole_tables_with_the_same_csv(tmp_path, monkeypatch, caplog):
    target, golden = _pair(tmp_path, "dump.json")
    on, plans, said = _compare(target, golden, tmp_path / "on", monkeypatch, caplog)
    assert plans and "chunk by chunk" in said
    off, plans, said = _compare(target, golden, tmp_path / "off", monkeypatch, caplog, whole=True)
    assert not plans and "whole tables" in said and "chunk by chunk" not in said
    assert on == off


def test_the_chunked_strategy_is_registered_through_the_hook_a_third_party_uses():
    host = PluginHost(autoload=False)
    assert [(s.name, s.plugin) for s in host.strategies] == [("chunked", "chunked")]
    reset_host(None)
    monkeypatch = pytest.MonkeyPatch()
    with monkeypatch.context() as m:
        m.setenv(DISABLE_ENV, "chunked")
        assert PluginHost(autoload=False).strategies == []
