"""The ``msprobe`` console script and ``python -m msprobe_core``: the CLI, with Ctrl-C handled from the first instant.

Nothing is imported at this module's import time and the package's ``__init__`` imports
nothing either: a Ctrl-C while the CLI's modules load (the first ~100 ms) is an ordinary
interrupt (exit 130, one line), not a traceback. (Before the interpreter has set up its own
handling, a Ctrl-C ends the process the default way: killed by SIGINT, without a word.)
"""

from __future__ import annotations

_INTERRUPTED = "msprobe: interrupted (Ctrl-C)\n"
#: the exit code of an interrupted run (Ctrl-C, SIGTERM, SIGHUP), once the CLI has reported it
_INTERRUPTED_CODE: list[int] = []


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
    except KeyboardInterrupt:  # Ctrl-C while still importing: the same clean exit as later on
        interrupted()
    try:
        code = main()
    except KeyboardInterrupt:  # Ctrl-C in the instant between the end of the run and the exit
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
