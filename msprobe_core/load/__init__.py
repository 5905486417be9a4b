"""Stage 1, discover and load: which dump files to compare, and each one read into a DumpTable."""
