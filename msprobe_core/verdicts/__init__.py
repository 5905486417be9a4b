"""Stage 4, verdicts: Result and Err_message per row, from the metric columns."""
