"""Where work runs: executors (a local process pool, or a plugin's) and forked helper children."""
