"""The ``msprobe`` console script and ``python -m msprobe_core``: the CLI, with Ctrl-C handled from the first instant.

Both import this module first (the package's ``__init__`` before it only defines names), and its first
statements replace Python's SIGINT handler by one that ends the process at once, exit 130 and one line:
nothing has been written yet, and a ``KeyboardInterrupt`` raised while modules load, or in the console
script's own lines around :func:`run`, would end in a traceback. :func:`run` puts Python's handler back
once the CLI is loaded, where every interrupt unwinds (removing unfinished files) to exit 130. (Before this
module runs, a Ctrl-C is Python's: killed by SIGINT, or a traceback from ``site``.)

An interrupt is never swallowed: Python's handler raises ``KeyboardInterrupt`` wherever the main thread is,
and where that is a weak reference's callback or a finaliser (importlib drops its module locks through one,
so every import may run it) the exception is only reported and the code goes on. The run notes every SIGINT
(:func:`_noted_interrupt`), raises such a lost one again at once (:func:`_lost_exception`), and a run that
still ends as if none came exits 130 all the same.
"""

from __future__ import annotations

import _signal  # built in: importing it costs nothing (``signal`` would import ``enum``)
import os  # loaded by the interpreter's own start-up already

_INTERRUPTED = "msprobe: interrupted (Ctrl-C)\n"


def _interrupted_while_starting(signum: int, frame: object) -> None:
    """SIGINT before the CLI is loaded: one line, exit 130 (nothing to clean up yet)."""
    try:
        os.write(2, _INTERRUPTED.encode())
    finally:
        os._exit(130)


# only where Ctrl-C would raise KeyboardInterrupt: a SIGINT ignored at start (``nohup``, ``cmd &``) stays ignored
_PYTHONS_SIGINT = _signal.getsignal(_signal.SIGINT)
if _PYTHONS_SIGINT is _signal.default_int_handler:
    _signal.signal(_signal.SIGINT, _interrupted_while_starting)

#: the exit code of an interrupted run (Ctrl-C, SIGTERM, SIGHUP), once the CLI has reported it
_INTERRUPTED_CODE: list[int] = []
#: SIGINTs received once the CLI is loaded (:func:`_noted_interrupt`)
_SIGINTS: list[int] = []


def _noted_interrupt(signum: int, frame: object) -> None:
    """SIGINT once the CLI is loaded: noted, then Python's own handling (``KeyboardInterrupt`` here)."""
    _SIGINTS.append(signum)
    _PYTHONS_SIGINT(signum, frame)  # type: ignore[operator]


def _lost_exception(unraisable: object) -> None:
    """``sys.unraisablehook`` of the run: a ``KeyboardInterrupt`` of the main thread that struck where exceptions
    are only reported (a weak reference's callback, a finaliser) is raised again by the next call or return of
    the code that goes on (:func:`_raise_lost`); anything else is reported as before.

    Not from here: this hook's own exception would be reported and dropped in turn.
    """
    import sys
    import threading

    if (isinstance(getattr(unraisable, "exc_value", None), KeyboardInterrupt)
            and threading.current_thread() is threading.main_thread() and sys.getprofile() is None):
        sys.setprofile(_raise_lost)
        return
    _lost_exception.previous(unraisable)  # type: ignore[attr-defined]


def _raise_lost(frame: object, event: str, arg: object) -> None:
    """A one-shot profile function (:func:`_lost_exception`): raise the lost ``KeyboardInterrupt`` at the first
    event that is not the hook returning."""
    import sys

    if getattr(frame, "f_code", None) is _lost_exception.__code__:
        return
    sys.setprofile(None)
    raise KeyboardInterrupt


_lost_exception.previous = None  # type: ignore[attr-defined]


def run() -> None:
    """Run the command line in ``sys.argv`` and exit with its code."""
    try:
        import atexit
        import signal
        import sys

        atexit.register(_leave_with_the_code)  # registered first, so it runs last
        from .console.streams import fill_closed_standard_fds, tolerate_broken_stderr

        # before anything opens a file (which would take a closed descriptor's number) or prints
        fill_closed_standard_fds()
        tolerate_broken_stderr()
        from .cli.main import main

        if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:  # from now on, Ctrl-C unwinds
            _lost_exception.previous = sys.unraisablehook  # type: ignore[attr-defined]
            sys.unraisablehook = _lost_exception
            signal.signal(signal.SIGINT, _noted_interrupt)
    except KeyboardInterrupt:  # raised while still importing (not by SIGINT): the same clean exit as later on
        interrupted()
    try:
        code = main()
    except KeyboardInterrupt:  # Ctrl-C in the instant between the end of the run and the exit
        sys.stderr.write(_INTERRUPTED)
        code = 130
    except Exception as exc:  # a Ctrl-C that Python wrapped outside the guard (a class body's __set_name__ as a
        from .cli.guard import caused_by_interrupt  # module loads: RuntimeError), as the guard treats it inside

        if not caused_by_interrupt(exc):
            raise
        sys.stderr.write(_INTERRUPTED)
        code = 130
    if _SIGINTS and code < 128:  # a Ctrl-C was lost on the way (see the module's docstring): still one
        sys.stderr.write(_INTERRUPTED)
        code = 130
    # the run is over and its outcome reported: a Ctrl-C from now on must not turn the exit into a
    # KeyboardInterrupt escaping the interpreter (which exits by SIGINT, not with this code)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if code >= 128:
        _INTERRUPTED_CODE.append(code)
    raise SystemExit(code)


def _leave_with_the_code() -> None:
    """After an interrupted run, end the process with its exit code once everything else has finished.

    CPython 3.11 marks a KeyboardInterrupt that strikes inside ``exec()`` of source text (which
    ``dataclasses`` and ``namedtuple`` do while modules load) as unhandled even when it is caught,
    and then ends the process by SIGINT after the exit code was chosen (-2 instead of 130).
    """
    if not _INTERRUPTED_CODE:
        return
    import os
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(_INTERRUPTED_CODE[-1])


def interrupted() -> None:
    """Say that a Ctrl-C stopped the start-up, and exit 130 (at once: nothing was done to clean up)."""
    import os
    import sys

    try:
        sys.stderr.write(_INTERRUPTED)
        sys.stderr.flush()
    finally:
        os._exit(130)  # not SystemExit: see _leave_with_the_code
