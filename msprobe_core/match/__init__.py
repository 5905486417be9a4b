"""Stage 2, match: compare keys (name normalisation) and the mappers that pair target rows with golden rows."""
