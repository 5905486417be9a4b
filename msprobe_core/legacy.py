"""Where the classic Python API went: the msprobe-classic plugin (``msprobe_classic``).

The core imports no plugin, so this module does not forward to it: importing it only
says, in one error, what to import instead.
"""

raise ImportError(
    "msprobe_core.legacy is now the msprobe-classic plugin: use 'from msprobe_classic import compare, "
    "compare_distributed, ms_compare, ms_compare_distributed' (pip install msprobe-classic)",
    name=__name__,
)
