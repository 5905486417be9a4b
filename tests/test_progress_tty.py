"""Progress as a user sees it: real commands on a real pseudo-terminal, and the same commands piped.

Every stage of a statistics compare (load, match, metrics, write, summary) and of ``msprobe report``
(read, summary, HTML report) shows on a terminal; nothing shows when stderr is not a terminal, under
``-q``, or in CI (``CI`` set), and the line is erased before the summary is printed.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from msprobe_core.default_plugins.progress.display import RunStatus, run_status, stage, wanted

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
ERASE = "\r\x1b[K"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "MSPROBE_NO_PROGRESS", "TERM")}
    env.update({"TERM": "xterm", "COLUMNS": "200"}, **extra)
    return env


def run_on_terminal(*args: object, env: dict[str, str] | None = None, cwd: Path | None = None,
                    cols: int | None = None) -> tuple[int, str]:
    """``python -m msprobe_core ARGS`` with stdout and stderr on one pseudo-terminal; (exit code, what it showed).

    ``cols``: the terminal's width, as its window size (the run is then given no ``COLUMNS``)."""
    master, slave = pty.openpty()
    if cols is not None:
        _winsize(slave, 24, cols)
    proc = subprocess.Popen([sys.executable, "-m", "msprobe_core", *map(str, args)], stdin=subprocess.DEVNULL,
                            stdout=slave, stderr=slave, env=env or _env(), cwd=cwd)
    os.close(slave)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 120)
            if not ready:
                proc.kill()
                raise AssertionError("no output for 120 s")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    return proc.wait(timeout=600), b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def _status_lines(shown: str, label: str) -> list[str]:
    """The stage lines drawn, in order (each starts with the erase sequence)."""
    return [part.split("\n")[0] for part in shown.split(ERASE) if part.startswith(label)]


def screen(shown: str) -> list[str]:
    """The lines left on the terminal once everything was drawn (``\\r``, erase-to-end-of-line, newlines)."""
    lines, line, col = [], [], 0
    i = 0
    while i < len(shown):
        if shown.startswith("\x1b[K", i):
            del line[col:]
            i += 3
            continue
        ch = shown[i]
        if ch == "\r":
            col = 0
        elif ch == "\n":
            lines.append("".join(line))
            line, col = [], 0
        else:
            if col < len(line):
                line[col] = ch
            else:
                line.append(ch)
            col += 1
        i += 1
    lines.append("".join(line))
    return lines


def _stats_pair() -> list[str]:
    return ["-tp", str(EXAMPLES / "pytorch_stats/target/step0"), "-gp", str(EXAMPLES / "pytorch_stats/golden/step0")]


def test_statistics_compare_shows_every_stage_on_a_terminal(tmp_path):
    rc, shown = run_on_terminal("compare", *_stats_pair(), "-o", tmp_path / "out", "--report", "html")
    assert rc == 0, shown
    lines = _status_lines(shown, "msprobe compare: ")
    stages = [line.split("  ")[0] for line in lines]
    assert any(s == "msprobe compare: [1/4] load" for s in stages), lines
    assert any("  rank0: both dump.json, " in line for line in lines), lines
    for expected in ("[2/4] match", "[3/4] metrics and verdicts", "[4/4] write", "summary", "HTML report"):
        assert any(expected in s for s in stages), (expected, lines)
    order = [next(i for i, s in enumerate(stages) if key in s) for key in ("load", "match", "metrics", "write", "summary")]
    assert order == sorted(order)
    # what stays on the terminal: the log and the summary, whole, and no trace of the stage line
    left = screen(shown)
    assert not any("msprobe compare: " in line for line in left), left
    assert "Compare summary" in left
    # every line is a whole log line (it starts with its date), a summary line, or empty: nothing glued
    assert all(not line or line.startswith(("20", " ", "Compare summary")) for line in left), left
    assert any(line.startswith("20") and "[INFO] The result file path is: " in line for line in left), left


def test_no_progress_when_stderr_is_piped(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "msprobe_core", "compare", *_stats_pair(), "-o", str(tmp_path / "o")],
                          capture_output=True, text=True, env=_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[K" not in proc.stderr + proc.stdout and "msprobe compare: " not in proc.stderr + proc.stdout


@pytest.mark.parametrize("how", ["-q", "CI", "MSPROBE_NO_PROGRESS", "TERM=dumb"])
def test_no_progress_under_quiet_or_in_ci(tmp_path, how):
    flags = ["-q"] if how == "-q" else []
    env = {"-q": _env(), "CI": _env(CI="true"), "MSPROBE_NO_PROGRESS": _env(MSPROBE_NO_PROGRESS="1"),
           "TERM=dumb": _env(TERM="dumb")}[how]
    rc, shown = run_on_terminal("compare", *_stats_pair(), "-o", tmp_path / "o", *flags, env=env)
    assert rc == 0, shown
    assert "\x1b[K" not in shown and "msprobe compare: " not in shown
    if how == "-q":
        assert shown == ""


def test_report_command_shows_its_stages(tmp_path):
    out = tmp_path / "out"
    assert run_on_terminal("compare", *_stats_pair(), "-o", out, "-q")[0] == 0
    rc, shown = run_on_terminal("report", out, "-o", out / "r.html")
    assert rc == 0, shown
    stages = [line.split("  ")[0] for line in _status_lines(shown, "msprobe report: ")]
    lines = _status_lines(shown, "msprobe report: ")
    assert "msprobe report: read" in stages and any("compare_result_rank0_" in line for line in lines), lines
    assert "msprobe report: summary" in stages, stages
    assert "msprobe report: HTML report" in stages and any("  r.html" in line for line in lines), lines
    rc, shown = run_on_terminal("report", out, "-o", out / "r2.html", "-q")
    assert rc == 0 and shown == ""


def test_kernel_and_multi_rank_runs_name_the_pair(tmp_path):
    rc, shown = run_on_terminal("compare", "-tp", EXAMPLES / "mindspore_kernel/target",
                                "-gp", EXAMPLES / "mindspore_kernel/golden", "-o", tmp_path / "k")
    assert rc == 0, shown
    lines = _status_lines(shown, "msprobe compare: ")
    assert any(line.startswith("msprobe compare: [1/4] load  ") and "  rank 0 step 0: " in line for line in lines)
    assert any(line.startswith("msprobe compare: [4/4] write  ") and "  rank 0 step 0: " in line for line in lines)
    rc, shown = run_on_terminal("compare", "-tp", EXAMPLES / "pytorch_multirank/target/step0",
                                "-gp", EXAMPLES / "pytorch_multirank/golden/step0", "-o", tmp_path / "m",
                                "--workers", "1")
    assert rc == 0, shown
    lines = _status_lines(shown, "msprobe compare: ")
    assert any(" (2 of " in line and line.startswith("msprobe compare: [4/4] write") for line in lines), lines


# --------------------------------------------------------------------------- the status line itself
def _terminal_stream():
    master, slave = pty.openpty()
    return master, os.fdopen(slave, "w", encoding="utf-8")


def _drain(master: int) -> str:
    out = b""
    while select.select([master], [], [], 0.2)[0]:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
    return out.decode("utf-8", "replace")


def test_status_is_drawn_only_by_the_process_that_opened_it(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("MSPROBE_NO_PROGRESS", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    master, stream = _terminal_stream()
    try:
        assert wanted(stream)
        with run_status("run", stream=stream):
            pid = os.fork()
            if pid == 0:  # a forked child running the same code (tailbuild, the two-sided load)
                stage("child stage")
                stream.flush()
                os._exit(0)
            os.waitpid(pid, 0)
            stage("parent stage", "x", 1, 2)
        shown = _drain(master)
    finally:
        stream.close()
        os.close(master)
    assert "child stage" not in shown
    assert "run: [1/2] parent stage  0:00  x" in shown and shown.endswith(ERASE)


def test_status_line_never_wraps(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    status = RunStatus("msprobe compare", enabled=False)
    status.stage("load", "a" * 200)
    assert len(status.line()) <= 39 and status.line().endswith("…")


def _winsize(fd: int, rows: int, cols: int) -> None:
    import fcntl
    import struct
    import termios

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def test_on_80_columns_what_moves_comes_first_and_the_words_are_cut(tmp_path):
    """A streamed compare of many chunks on an 80-column pseudo-terminal: every stage line fits in 79 columns,
    and each starts with the stage, its chunk counter (metrics) and the clock; the words come last."""
    import re

    env = {k: v for k, v in _env().items() if k != "COLUMNS"}
    env["MSPROBE_CHUNK_ROWS"] = "8"  # many chunks of a small pair: the metrics stage moves chunk by chunk
    rc, shown = run_on_terminal("compare", *_stats_pair(), "-o", tmp_path / "out", cols=80, env=env)
    assert rc == 0, shown
    lines = _status_lines(shown, "msprobe compare: ")
    assert lines and all(len(line) <= 79 for line in lines), [line for line in lines if len(line) > 79]
    clock = r"\d+:\d\d(:\d\d)?"
    metrics = [line for line in lines if line.startswith("msprobe compare: [3/4] metrics and verdicts  ")]
    # a chunk's counter is drawn when the stage lasts long enough (the layout itself: the test below)
    for line in metrics:
        assert re.match(rf"msprobe compare: \[3/4\] metrics and verdicts  (chunk \d+/\d+ \(\d+%\)  )?{clock}", line)
    cut = [line for line in metrics if line.endswith("…")]
    assert cut and all(re.search(rf"  {clock}  rank0: ", line) for line in cut), cut
    for line in lines:  # the clock is always there, before any words
        assert re.match(rf"msprobe compare: [^:]*?  (\S.*?  )?{clock}(  |$)", line), line


def test_the_clock_moves_during_a_long_stage_without_output(monkeypatch):
    """Nothing happens inside a stage for a while: the line is redrawn every second, its clock moving (the test
    waits for the clock to show two seconds, however long that takes on this machine)."""
    from .waiting import wait_until

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("MSPROBE_NO_PROGRESS", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    master, stream = _terminal_stream()
    shown = ""

    def drawn_clocks() -> list[str]:
        return [part.split("  ")[1] for part in shown.split(ERASE) if part.startswith("run: [1/4] load")]

    def two_seconds_shown() -> bool:
        nonlocal shown
        shown += _drain(master)
        return "0:02" in drawn_clocks()

    try:
        with run_status("run", stream=stream):
            stage("load", "a big dump.json", 1, 4)
            assert wait_until(two_seconds_shown, poll=0.05), shown
        shown += _drain(master)
    finally:
        stream.close()
        os.close(master)
    clocks = drawn_clocks()
    assert {"0:00", "0:01", "0:02"} <= set(clocks), clocks
    import signal

    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # the timer ends with the run


def test_the_summary_is_not_overdrawn_by_the_timer(monkeypatch):
    """After the line is cleared for the summary, the timer draws nothing until the next stage."""
    import time

    from msprobe_core.default_plugins.progress.display import clear_status

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("MSPROBE_NO_PROGRESS", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    master, stream = _terminal_stream()
    try:
        with run_status("run", stream=stream):
            stage("summary", "", 0, 0)
            clear_status()
            _drain(master)
            deadline = time.monotonic() + 1.6
            while time.monotonic() < deadline:
                time.sleep(0.05)
            held = _drain(master)
    finally:
        stream.close()
        os.close(master)
    assert "run: summary" not in held, held


def test_the_head_is_kept_when_even_it_is_too_wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "30")
    status = RunStatus("msprobe compare", enabled=False)
    status.stage("metrics and verdicts", "words", 3, 4)
    status.tick("chunk 12/23 (52%)")
    line = status.line()
    assert len(line) <= 29 and "chunk 12/23 (52%)" in line and line.rstrip().endswith(":00"), line


def test_on_80_columns_the_chunk_counter_and_clock_come_before_the_words(monkeypatch):
    """The layout of a moving stage at 80 columns: stage, chunk counter, clock, then the words, cut."""
    monkeypatch.setenv("COLUMNS", "80")
    status = RunStatus("msprobe compare", enabled=False)
    status.set_job("rank0")
    status.stage("metrics and verdicts", "1,450,001 rows in 23 chunks, each written as it is built", 3, 4)
    status.tick("chunk 3/23 (13%)")
    line = status.line(now=status.start + 75)
    assert line.startswith("msprobe compare: [3/4] metrics and verdicts  chunk 3/23 (13%)  1:15  rank0: 1,"), line
    assert len(line) == 79 and line.endswith("…")
