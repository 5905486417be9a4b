"""Stage 3, metrics: the metric stage (the metric sets of the modes are plugins: statistics_metrics, tensor_metrics)."""
