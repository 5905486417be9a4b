"""``python -m msprobe_core`` is the ``msprobe`` command."""

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while still importing: the same clean exit as later on
    import sys

    sys.stderr.write("msprobe: interrupted (Ctrl-C)\n")
    raise SystemExit(130) from None

raise SystemExit(main())
