"""Stage 5, write: result tables to CSV and xlsx files, atomically, in row chunks."""
