"""Stage 4, verdicts: the verdict stage, which runs the rules of a table's mode (msprobe's: the default plugin msprobe_verdicts)."""
