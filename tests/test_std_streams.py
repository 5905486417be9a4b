"""Closed and broken standard streams, with real processes: the run's files and exit code do not change.

A daemon or CI runner may start ``msprobe`` with stdout or stderr closed (``>&-``); a reader may
have gone away (``| head -c1``). The descriptors are really closed in the child (``preexec_fn``)
or really a pipe whose reading end is closed before the child starts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .dumps import api, tensor, write_dump

DATA = {f"Torch.op{k}.0.forward": api([tensor(), tensor()], [tensor()]) for k in range(5)}


def _msprobe() -> list[str]:
    script = Path(sys.executable).with_name("msprobe")  # the console script, as users start it
    return [sys.executable, str(script)] if script.is_file() else [sys.executable, "-m", "msprobe_core"]


def _pair(tmp: Path) -> list[str]:
    return ["-tp", str(write_dump(tmp / "t", DATA)), "-gp", str(write_dump(tmp / "g", DATA))]


def _closer(*fds: int):
    def close() -> None:
        for fd in fds:
            os.close(fd)
    return close


def _run(args: list[str], how: str) -> tuple[int, str]:
    """Run msprobe with its streams set up as ``how`` says; returns the exit code and what the open stream got."""
    closed = {"stdout": (1,), "stderr": (2,), "both": (1, 2)}
    if how.startswith("closed "):
        fds = closed[how.split()[1]]
        proc = subprocess.run([*_msprobe(), *args], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL if 1 in fds else subprocess.PIPE,
                              stderr=subprocess.DEVNULL if 2 in fds else subprocess.PIPE,
                              preexec_fn=_closer(*fds), timeout=600)
    elif how == "head -c1":  # `msprobe ... | head -c1`: the reader takes one byte and exits
        reader = subprocess.Popen(["head", "-c1"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        try:
            proc = subprocess.run([*_msprobe(), *args], stdin=subprocess.DEVNULL, stdout=reader.stdin,
                                  stderr=subprocess.PIPE, timeout=600)
        finally:
            reader.stdin.close()
            reader.wait(60)
    else:  # "broken <stream>": a pipe whose reader exited before the first write
        read, write = os.pipe()
        os.close(read)
        which = how.split()[1]
        try:
            proc = subprocess.run([*_msprobe(), *args], stdin=subprocess.DEVNULL,
                                  stdout=write if which in ("stdout", "both") else subprocess.PIPE,
                                  stderr=write if which in ("stderr", "both") else subprocess.PIPE, timeout=600)
        finally:
            os.close(write)
    left = (proc.stdout or b"") + (proc.stderr or b"")
    return proc.returncode, left.decode("utf-8", "replace")


HOWS = ["closed stdout", "closed stderr", "closed both", "broken stdout", "broken stderr", "broken both", "head -c1"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[Path, bytes]:
    """The inputs, and the result file of a run with ordinary streams."""
    tmp = tmp_path_factory.mktemp("streams")
    proc = subprocess.run([*_msprobe(), "compare", *_pair(tmp), "-o", str(tmp / "ref")], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0 and "Compare summary" in proc.stdout, proc.stderr
    (result,) = (tmp / "ref").glob("compare_result_*.csv")
    return tmp, result.read_bytes()


@pytest.mark.parametrize("how", HOWS)
def test_compare_with_a_closed_or_broken_stream(reference, how: str) -> None:
    """The compare (its summary printed at the end) writes the same result and exits 0; nothing on the other stream."""
    tmp, expected = reference
    out = tmp / how.replace(" ", "-")
    code, left = _run(["compare", "-tp", str(tmp / "t" / "dump.json"), "-gp", str(tmp / "g" / "dump.json"),
                       "-o", str(out)], how)
    assert code == 0, left
    assert "Traceback" not in left and "Logging error" not in left and "msprobe:" not in left, left
    (result,) = out.glob("compare_result_*.csv")
    assert result.read_bytes() == expected
    assert not [p for p in out.iterdir() if p.name.endswith(".part")]
    if how.endswith("stderr"):  # stdout still works: the log and the summary are all there
        assert "Compare summary" in left and "ends successfully" in left, left


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("args", [["plugins"], ["--help"]], ids=["plugins", "help"])
def test_listing_commands_with_a_closed_or_broken_stream(how: str, args: list[str]) -> None:
    """``msprobe plugins`` and ``--help`` print to a closed or broken stdout: exit 0, no word on stderr."""
    code, left = _run(args, how)
    assert code == 0, left
    assert "Traceback" not in left and "msprobe:" not in left, left
    if how.endswith("stderr"):
        assert ("PLUGIN" if args == ["plugins"] else "Usage: msprobe") in left, left


@pytest.mark.parametrize("how", HOWS)
def test_an_input_error_keeps_its_exit_code(tmp_path: Path, how: str) -> None:
    """A missing input is still exit 2 when the stream for its message is closed or broken; one line when open."""
    code, left = _run(["compare", "-tp", str(tmp_path / "missing.json"), "-gp", str(tmp_path / "missing.json"),
                       "-o", str(tmp_path / "out")], how)
    assert code == 2, left
    if how.endswith("stdout") or how == "head -c1":  # stderr still works: the one error line
        assert [line for line in left.splitlines() if line.strip()] == [
            f"msprobe: error: {tmp_path / 'missing.json'}: -tp/--target_path path does not exist"], left
    else:
        assert "Traceback" not in left and not left.strip(), left
    assert not (tmp_path / "out").exists()
