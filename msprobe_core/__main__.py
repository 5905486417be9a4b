"""``python -m msprobe_core`` is the ``msprobe`` command."""

try:
    from .entry import run
except KeyboardInterrupt:  # Ctrl-C in the first instant (see msprobe_core.entry)
    import os

    os._exit(130)

run()
