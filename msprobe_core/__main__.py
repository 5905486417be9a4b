"""``python -m msprobe_core`` is the ``msprobe`` command."""

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
raise SystemExit(code)
