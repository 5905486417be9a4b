"""Stage 3, metrics: the metric columns of matched pairs (statistics diffs, tensor metrics)."""
