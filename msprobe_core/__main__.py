"""``python -m msprobe_core`` is the ``msprobe`` command."""

from .cli import main

raise SystemExit(main())
