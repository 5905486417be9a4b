"""One job through the stages: load → match → metrics → verdicts → write (:mod:`msprobe_core.pipeline.job`)."""
