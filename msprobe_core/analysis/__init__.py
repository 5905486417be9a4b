"""First-divergence analysis (``-da/--diff_analyze``): which call made the two runs part ways, and why.

Framework-neutral: it works on the result tables the engine builds (any mapper,
any framework plugin) and on the names of the dumped calls; communication ops
are recognised by rules plugins can extend (:mod:`msprobe_core.analysis.comm`). The run hands
``-da`` jobs to :func:`msprobe_core.analysis.runner.run_diff_analyze`.
"""
