"""Ctrl-C in the first instant of the ``msprobe`` script, with real processes and real signals.

From the first line of the project's code that runs (the top of ``msprobe_core.entry``, which the console
script and ``python -m msprobe_core`` import first; the package's ``__init__`` before it only defines names)
a Ctrl-C is exit 130 and at most one line, never a traceback. Before that line, Python (its ``site``, the
``.pth`` files of editable installs, the console script's own ``import re``) is not ours to handle: the test
waits until the interpreter reports ``msprobe_core.entry`` imported (``-X importtime``, which writes a line
to stderr as each import completes), then sends SIGINT after a delay from 0 to 150 ms.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .test_hostile_inputs import _big_stats_pair

MARKER = b"| msprobe_core.entry\n"
DELAYS = [k * 0.15 / 19 for k in range(20)]  # 0 to 150 ms: the CLI's imports, the plugins, the start of the run


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A pair big enough that the run is still reading it 150 ms after start."""
    return _big_stats_pair(tmp_path_factory.mktemp("early"), 20000)


def _command(how: str) -> list[str]:
    if how == "python -m msprobe_core":
        return [sys.executable, "-X", "importtime", "-m", "msprobe_core"]
    script = Path(sys.executable).with_name("msprobe")
    if not script.is_file():
        pytest.skip("the msprobe console script is not installed next to this python")
    return [sys.executable, "-X", "importtime", str(script)]


@pytest.mark.parametrize("how", ["msprobe", "python -m msprobe_core"])
def test_ctrl_c_in_the_first_150_ms(pair: list[str], tmp_path: Path, how: str) -> None:
    """20 trials each, SIGINT 0 to 150 ms after the project's first line: exit 130, one line, nothing written."""
    command = _command(how)
    outcomes = []
    for k, delay in enumerate(DELAYS):
        out = tmp_path / f"out{k}"
        proc = subprocess.Popen([*command, "compare", *pair, "-o", str(out)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        said = b""  # read by hand: communicate() below reads the descriptor, not a file object's buffer
        while MARKER not in said:  # until the project's first module has run
            chunk = os.read(proc.stderr.fileno(), 1 << 16)
            if not chunk:
                proc.kill()
                pytest.fail(f"msprobe_core.entry was never imported: {said.decode(errors='replace')}")
            said += chunk
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=600)
        err = [line for line in (said + rest).decode(errors="replace").splitlines()
               if not line.startswith("import time:") and line.strip()]
        outcomes.append((round(delay * 1000), proc.returncode, err))
        assert not [p for p in out.rglob("*") if p.suffix in (".csv", ".part")] if out.exists() else True
    bad = [(ms, code, err) for ms, code, err in outcomes
           if code != 130 or len(err) != 1 or "Traceback" in "\n".join(err) or "interrupted (Ctrl-C)" not in err[0]]
    assert not bad, bad


#: run in a child python: the real command line, with a Ctrl-C that lands inside a weak reference's callback
#: (where Python only reports an exception: importlib drops its module locks through such callbacks) while the
#: run imports its plugins
_CTRL_C_IN_A_CALLBACK = """
import signal, sys, weakref
from msprobe_core import entry

class Finder:  # asked first about every import; answers nothing
    struck = False

    def find_spec(self, name, path=None, target=None):
        if not Finder.struck and signal.getsignal(signal.SIGINT) is not entry._interrupted_while_starting:
            Finder.struck = True  # the CLI is loaded: the run's own imports now

            def callback(ref):
                signal.raise_signal(signal.SIGINT)  # its handler runs here, inside the callback
                return None

            class Dropped:
                pass

            dropped = Dropped()
            ref = weakref.ref(dropped, callback)
            del dropped
        return None

sys.meta_path.insert(0, Finder())
sys.argv = ["msprobe", *sys.argv[1:]]
entry.run()
"""


def test_a_ctrl_c_inside_a_callback_is_not_swallowed(pair: list[str], tmp_path: Path) -> None:
    """A Ctrl-C whose ``KeyboardInterrupt`` Python drops (raised inside a weak reference's callback while modules
    load) still stops the run: exit 130, one line, no result written."""
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", _CTRL_C_IN_A_CALLBACK, "compare", *pair, "-o", str(out)],
                          capture_output=True, text=True, timeout=600)
    err = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert len(err) == 1 and "interrupted (Ctrl-C)" in err[0], err
    assert not (list(out.rglob("*.csv")) if out.exists() else [])


#: as above, but the ``KeyboardInterrupt`` is caught and dropped by code the run calls (a plugin's ``except
#: BaseException: pass``): nothing can raise it again there
_CTRL_C_CAUGHT_BY_A_PLUGIN = _CTRL_C_IN_A_CALLBACK.replace('''            def callback(ref):
                signal.raise_signal(signal.SIGINT)  # its handler runs here, inside the callback
                return None

            class Dropped:
                pass

            dropped = Dropped()
            ref = weakref.ref(dropped, callback)
            del dropped
''', '''            try:
                signal.raise_signal(signal.SIGINT)
                print("never here")
            except BaseException:
                pass
''')


def test_a_ctrl_c_that_code_drops_still_ends_the_run_with_130(pair: list[str], tmp_path: Path) -> None:
    """A Ctrl-C that code the run calls catches and drops: the run ends as it would have, but exits 130 and says
    it was interrupted, never 0 as if the user had not asked it to stop."""
    assert "except BaseException" in _CTRL_C_CAUGHT_BY_A_PLUGIN
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", _CTRL_C_CAUGHT_BY_A_PLUGIN, "compare", *pair, "-o", str(out)],
                          capture_output=True, text=True, timeout=600)
    err = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert err and "interrupted (Ctrl-C)" in err[-1] and "Traceback" not in proc.stderr, err


#: a SIGTERM that lands while a class is being made (numpy's ``finfo`` on import): Python wraps the interrupt in
#: ``RuntimeError("Error calling __set_name__ …")``, which is the interrupt still, not an internal error
_SIGTERM_IN_SET_NAME = """
import signal, sys
from msprobe_core import entry
from msprobe_core.cli import guard

class Finder:  # asked first about every import once the run's signal handling is in place
    struck = False

    def find_spec(self, name, path=None, target=None):
        if not Finder.struck and signal.getsignal(signal.SIGTERM) == guard._Signals.on_term:
            Finder.struck = True

            class Descriptor:
                def __set_name__(self, owner, name):
                    signal.raise_signal(signal.SIGTERM)  # its handler raises KeyboardInterrupt here

            class Made:  # noqa: F841
                attribute = Descriptor()
        return None

sys.meta_path.insert(0, Finder())
sys.argv = ["msprobe", *sys.argv[1:]]
entry.run()
"""


def test_a_sigterm_inside_a_class_being_made_is_the_sigterm_not_an_internal_error(pair: list[str],
                                                                                    tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", _SIGTERM_IN_SET_NAME, "compare", *pair, "-o", str(out)],
                          capture_output=True, text=True, timeout=600)
    err = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 143, (proc.returncode, proc.stderr)
    assert len(err) == 1 and "terminated (SIGTERM)" in err[0] and "internal error" not in err[0], err
    assert not (list(out.rglob("*.csv")) if out.exists() else [])


#: a Ctrl-C that strikes inside a class body's ``__set_name__`` while a module loads before the guard: Python 3.11
#: hands it on wrapped in a ``RuntimeError`` (raised here where the signal's handler would raise it)
_CTRL_C_IN_SET_NAME = """
import sys
from msprobe_core import entry
from msprobe_core.cli import main as cli_main

def struck(argv=None):
    class Field:
        def __set_name__(self, owner, name):
            raise KeyboardInterrupt

    class Job:
        plugin_data = Field()

    return 0

cli_main.main = struck
sys.argv = ["msprobe", "--version"]
entry.run()
"""


def test_a_ctrl_c_python_wraps_outside_the_guard_still_exits_130() -> None:
    """The interrupt reaches the entry as the exception Python wrapped it in: exit 130, one line, no traceback."""
    proc = subprocess.run([sys.executable, "-c", _CTRL_C_IN_SET_NAME], capture_output=True, text=True, timeout=600)
    err = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert err == ["msprobe: interrupted (Ctrl-C)"], err
