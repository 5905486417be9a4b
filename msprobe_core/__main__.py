"""``python -m msprobe_core`` is the ``msprobe`` command."""

import signal
import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while still importing: the same clean exit as later on
    sys.stderr.write("msprobe: interrupted (Ctrl-C)\n")
    raise SystemExit(130) from None

try:
    code = main()
except KeyboardInterrupt:  # Ctrl-C in the instant between the end of the run and the exit
    sys.stderr.write("msprobe: interrupted (Ctrl-C)\n")
    code = 130
# the run is over and its outcome reported: a Ctrl-C from now on must not turn the exit into a
# KeyboardInterrupt escaping the interpreter (which exits by SIGINT, not with this code)
signal.signal(signal.SIGINT, signal.SIG_IGN)
raise SystemExit(code)
